#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Shell completion for bash, zsh and fish, generated from the command's
# definition and installed where each shell looks for vendors' scripts: each
# installed script is what `strata completion SHELL` prints, is syntactically
# valid (bash -n, zsh -n, fish --no-execute), and completes real subcommands
# and options when driven as its shell drives it (bash: COMP_WORDS/COMP_CWORD;
# zsh: words/CURRENT with _describe recording the candidates; fish: complete -C).
# Under CI=true a missing zsh or fish (scripts/bootstrap installs both) fails.
# Usage: completion.sh <build dir> <source dir>
source "$(dirname "$0")/common.sh"

install_prefix
strata=$prefix/bin/strata
declare -A installed=(
  [bash]=$prefix/share/bash-completion/completions/strata
  [zsh]=$prefix/share/zsh/vendor-completions/_strata
  [fish]=$prefix/share/fish/vendor_completions.d/strata.fish
)
for shell in bash zsh fish; do
  [[ -s "${installed[$shell]}" ]] || fail "no $shell completion installed at ${installed[$shell]}"
  "$strata" completion "$shell" | cmp - "${installed[$shell]}" ||
    fail "${installed[$shell]} is not what \`strata completion $shell\` prints"
done
"$strata" completion tcsh > /dev/null 2>&1 && fail "strata completion tcsh succeeded"
[[ $("$strata" completion tcsh > /dev/null 2>&1; echo $?) == 2 ]] || fail "strata completion tcsh: not a usage error (2)"

need() {
  if command -v "$1" > /dev/null; then return 0; fi
  [[ "${CI:-}" == true || "${CI:-}" == 1 ]] && fail "$1 is not installed (scripts/bootstrap)"
  echo "skipped: $1 is not installed" >&2
  return 1
}
export PATH=$prefix/bin:$PATH # `strata bench` suites are listed by the installed command

run bash -n "${installed[bash]}" || fail "bash -n ${installed[bash]}"
completed=$(bash -c 'source "$1"
  COMP_WORDS=(strata sh); COMP_CWORD=1; _strata; echo "${COMPREPLY[*]}"
  COMP_WORDS=(strata shm gc --o); COMP_CWORD=3; _strata; echo "${COMPREPLY[*]}"
  COMP_WORDS=(strata bench reg); COMP_CWORD=2; _strata; echo "${COMPREPLY[*]}"
  COMP_WORDS=(strata fs umount --a); COMP_CWORD=3; _strata; echo "${COMPREPLY[*]}"' _ "${installed[bash]}") ||
  fail "driving the bash completion"
[[ "$completed" == $'shm\n--ocr-db-dir\nregions\n--all' ]] || fail "bash completion: $completed"

if need zsh; then
  run zsh -n "${installed[zsh]}" || fail "zsh -n ${installed[zsh]}"
  completed=$(zsh -f -c 'compdef() { print "compdef $*" }
    _describe() { print -l -- "${(@P)${@[-1]}}" }
    _files() { print FILES }
    source "$1"
    words=(strata sh); CURRENT=2; _strata | grep "^sh"
    words=(strata shm gc --o); CURRENT=4; _strata | grep "^--o"
    words=(strata bench reg); CURRENT=3; _strata | grep "^reg"
    words=(strata fs umount --); CURRENT=4; _strata | grep "^--a"' _ "${installed[zsh]}") ||
    fail "driving the zsh completion: $completed"
  expected=$'compdef _strata strata\nshm:Shared-object segments: list them, remove those whose users died\n--ocr-db-dir:'
  [[ "$completed" == "$expected"* && "$completed" == *$'\nregions\n--all:Every strata-fsd mount' ]] ||
    fail "zsh completion: $completed"
fi

if need fish; then
  run fish --no-execute "${installed[fish]}" || fail "fish --no-execute ${installed[fish]}"
  completed=$(fish --no-config -c 'source $argv[1]
    complete -C "strata sh"; complete -C "strata shm gc --o"; complete -C "strata bench reg"
    complete -C "strata fs umount --a"' "${installed[fish]}") || fail "driving the fish completion: $completed"
  expected=$'shm\tShared-object segments: list them, remove those whose users died\n--ocr-db-dir\t'
  [[ "$completed" == "$expected"* && "$completed" == *$'\nregions\n--all\tEvery strata-fsd mount' ]] ||
    fail "fish completion: $completed"
fi
echo "completion: ok"
