#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Debian package (cmake/StrataPackage.cmake): cpack makes it; its Depends
# names the Debian package of every library that its programs and libraries
# link (found here with ldconfig and dpkg -S, not from the package's own
# metadata); `dpkg -i` installs it — into a private root with a copy of this
# machine's package database, so dpkg checks the Depends against what is
# installed here and the machine itself is not changed — and the installed
# `strata doctor` runs, the bash, zsh and fish completions are in place; `dpkg -r`
# then removes every file it installed.
# Usage: deb.sh <build dir> <source dir>
source "$(dirname "$0")/common.sh"

run cpack --config "$build/CPackConfig.cmake" -G DEB -B "$tmp/pkg" > "$tmp/cpack.log" 2>&1 ||
  { cat "$tmp/cpack.log"; fail "cpack -G DEB"; }
debs=("$tmp"/pkg/strata_*.deb)
[[ -f "${debs[0]}" ]] || fail "cpack made no strata_*.deb: $(ls "$tmp/pkg")"
deb=${debs[0]}
[[ "$(dpkg-deb -f "$deb" Package)" == strata ]] || fail "Package: $(dpkg-deb -f "$deb" Package)"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
# The package names of Depends, without versions and alternatives' bars.
depended_lines=$(tr ',|' '\n\n' <<< "$depends" | sed -E 's/\(.*\)//; s/^ +//; s/ +$//; /^$/d')

# The package owning a library file, whichever of /lib and /usr/lib (merged /usr) dpkg recorded.
owner_of() {
  local p candidate
  for p in "$1" "$(readlink -f "$1")"; do
    for candidate in "$p" "${p/#\/usr\/lib\//\/lib\/}" "${p/#\/lib\//\/usr\/lib\/}"; do
      if out=$(dpkg -S "$candidate" 2>/dev/null); then
        echo "${out%%$'\n'*}"
        return 0
      fi
    done
  done
  return 1
}

dpkg-deb -x "$deb" "$tmp/x"
checked=0
declare -A seen=()
while IFS= read -r -d '' f; do
  [[ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" == "177ELF" ]] || continue
  readelf -h "$f" | has "Machine:.*BPF" && continue
  while read -r lib; do
    [[ "$lib" == libstrata* || -n "${seen[$lib]:-}" ]] && continue
    seen[$lib]=1
    # awk reads to the end: an early exit would SIGPIPE ldconfig and, with pipefail, end the script silently.
    path=$(/sbin/ldconfig -p | awk -v l="$lib" '!found && $1 == l && /x86-64|AArch64|64bit/ { print $NF; found = 1 }')
    [[ -n "$path" ]] || fail "$f needs $lib, which ldconfig does not know"
    owner=$(owner_of "$path") || fail "$lib ($path): no Debian package owns it"
    package=${owner%%:*}
    # The package, or a virtual package it provides (libspdlog1.10 provides libspdlog1.10-fmt9).
    mapfile -t names < <(
      echo "$package"
      dpkg-query -W -f='${Provides}' "$package" | tr ',' '\n' | sed -E 's/\(.*\)//; s/^ +//; s/ +$//; /^$/d'
    )
    found=""
    for name in "${names[@]}"; do
      grep -qx -- "$name" <<< "$depended_lines" && found=$name
    done
    [[ -n "$found" ]] || fail "$f needs $lib from $package, which Depends ($depends) does not name"
    checked=$((checked + 1))
  done < <(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
done < <(find "$tmp/x/usr" -type f -print0)
((checked >= 8)) || fail "only $checked libraries checked"
echo "every one of the $checked libraries linked is in Depends"
for p in mpich fuse3; do
  grep -qx -- "$p" <<< "$depended_lines" || fail "Depends does not name $p (mpiexec, fusermount3)"
done

# dpkg -i into a private root holding a copy of this machine's package database;
# the maintainer scripts run without chroot (they do nothing: cmake/debian/postinst).
mkdir -p "$tmp/root/var/lib"
cp -a /var/lib/dpkg "$tmp/root/var/lib/dpkg"
rm -f "$tmp/root/var/lib/dpkg/lock" "$tmp/root/var/lib/dpkg/lock-frontend"
dpkg_private=(dpkg --root="$tmp/root" --log="$tmp/dpkg.log" --no-triggers --force-script-chrootless)
run "${dpkg_private[@]}" -i "$deb" || fail "dpkg -i $deb (its Depends are checked against this machine's packages)"
[[ "$("${dpkg_private[@]}" -s strata | sed -n 's/^Status: //p')" == "install ok installed" ]] ||
  fail "dpkg does not have strata installed"
run "$tmp/root/usr/bin/strata" --version | has "^strata " || fail "the installed strata --version"
run "$tmp/root/usr/bin/strata" doctor || fail "the installed strata doctor exited non-zero"
run "$tmp/root/usr/bin/strata" bench --list | has "^regions " || fail "the installed strata bench --list"
# Shell completion where Debian's bash-completion, zsh and fish look for it.
for completion in bash-completion/completions/strata zsh/vendor-completions/_strata \
  fish/vendor_completions.d/strata.fish; do
  [[ -s "$tmp/root/usr/share/$completion" ]] || fail "the package has no /usr/share/$completion"
done
run "${dpkg_private[@]}" -r strata || fail "dpkg -r strata"
left=$(find "$tmp/root" -path "$tmp/root/var/lib/dpkg" -prune -o \( -type f -o -type l \) -print)
[[ -z "$left" ]] || fail "dpkg -r left files: $left"
echo "deb: ok"
