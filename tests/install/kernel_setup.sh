#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/kernel-setup on a machine where the kernel interfaces are absent: in
# a private mount namespace, /dev becomes an empty tmpfs (no shm, fuse,
# loop-control or userfaultfd) and the cgroup v1 hierarchies are unmounted;
# kernel-setup must set every one up again, say so, and `--check` must pass
# afterwards. Before it, `--check` must fail naming each one. Everything it
# made lives in the namespace and goes with it; the machine is checked
# unchanged at the end.
set -euo pipefail
source="$2"
setup="$source/scripts/kernel-setup"
[[ $EUID -eq 0 ]] || { echo "kernel_setup: needs root (mount namespaces)"; [[ ${CI:-} == true ]] && exit 1; exit 77; }

# Only what kernel-setup could touch: other tests mount FUSE file systems and
# namespaces beside this one, which must not fail it.
touched_mounts() { findmnt -rn -o TARGET,FSTYPE | grep -E '^(/dev|/sys/fs/cgroup)(/| |$)' | sort; }
before=$(touched_mounts)
out=$(mktemp -d /tmp/strata-kernel-setup-XXXXXX)
trap 'rm -rf "$out"' EXIT

unshare --mount --propagation private bash -s "$setup" "$out" <<'INNER'
set -euo pipefail
setup=$1 out=$2
for c in cpu cpuacct memory blkio cpuset; do umount "/sys/fs/cgroup/$c"; done
mount -t tmpfs -o mode=0755 strata-empty-dev /dev
mknod -m 0666 /dev/null c 1 3
if "$setup" --check >"$out/check-before" 2>&1; then echo "FAIL: --check passed with nothing set up"; exit 1; fi
for name in shm fuse loop userfaultfd cgroup-cpu cgroup-cpuacct cgroup-memory cgroup-blkio cgroup-cpuset; do
  grep -q "^kernel-setup: $name  *MISSING" "$out/check-before" ||
    { echo "FAIL: --check did not name $name as missing:"; cat "$out/check-before"; exit 1; }
done
"$setup" >"$out/setup" 2>&1 || { echo "FAIL: kernel-setup failed:"; cat "$out/setup"; exit 1; }
"$setup" --check >"$out/check-after" 2>&1 || { echo "FAIL: --check after set-up:"; cat "$out/check-after"; exit 1; }
[[ -c /dev/fuse && -c /dev/loop-control && -c /dev/userfaultfd ]] || { echo "FAIL: device nodes not made"; exit 1; }
[[ $(stat -f -c %T /dev/shm) == tmpfs ]] || { echo "FAIL: /dev/shm is not a tmpfs"; exit 1; }
# The set-up is real: a memory cgroup can be made and removed, and /dev/shm takes a file.
mkdir /sys/fs/cgroup/memory/strata-kernel-setup-$$ && rmdir /sys/fs/cgroup/memory/strata-kernel-setup-$$
: >/dev/shm/strata-kernel-setup-$$ && rm /dev/shm/strata-kernel-setup-$$
INNER
cat "$out/setup"
after=$(touched_mounts)
[[ $before == "$after" ]] || { echo "FAIL: the machine's mounts under /dev or /sys/fs/cgroup changed:"; diff <(echo "$before") <(echo "$after"); exit 1; }
echo "kernel_setup: every interface hidden in a mount namespace was set up again; the machine is unchanged"
