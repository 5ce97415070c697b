#!/usr/bin/env bash
# A plain Python without any registry: the interpreter the project's venv is made from, its whole
# standard library with ensurepip (so `python3 -m venv` gives a venv with pip), the libraries they
# need and those a manylinux wheel may assume (glibc's, libgcc_s, libstdc++), and a user `learner` (uid
# 1000) — no compiler, no pip packages, no valkey-server, no kit.
# It stands for a learner's machine, or a hub's single-user image before the instructor extends it:
# tests/course/test_pip_course.py installs the kit's wheel into it with pip alone.
#
#   bash docker/build-python-offline.sh [--tag TAG]        (TAG: echomq-python:local)
#
# Assembled from this machine as the other offline images are (docker/rootfs.sh) and imported
# into the local Docker engine (DOCKER_HOST). Needs the venv (bash tools/bootstrap.sh).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
tag=echomq-python:local
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag=$2; shift 2 ;;
    *) echo "build-python-offline: unknown option $1" >&2; exit 2 ;;
  esac
done

prog=build-python-offline
# rootfs_engine, rootfs_venv_python, rootfs_python, copy_libs, rootfs_strip_python, rootfs_compile, rootfs_user,
# rootfs_locale, rootfs_import
. "$here/rootfs.sh"
t_start=$(date +%s%3N)
rootfs_engine
rootfs_venv_python "${PYTHON:-$repo/.venv/bin/python}"

rootfs=$(mktemp -d)
trap 'rm -rf "$rootfs"' EXIT
mkdir -p "$rootfs"/{tmp,home/learner}
chmod 1777 "$rootfs/tmp"
rootfs_python "$rootfs" yes
COPY_LIBS_SKIP="${relocated[*]}" copy_libs "$rootfs" "$rootfs/usr/local/bin/python$pyver" \
  "$rootfs/usr/local/lib/python$pyver"/lib-dynload/*.so
# the system libraries a manylinux wheel may assume (the policy's list without X11: glibc's, which
# Debian's libc6 holds, libgcc_s and libstdc++), which any Debian with Python has: copied with what
# they need, at the path the loader looks in (rpds-py, numpy, pyzmq link them)
extra=()
for name in libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 libutil.so.1 libgcc_s.so.1 libstdc++.so.6; do
  # the first match, reading to the end: an early exit would SIGPIPE ldconfig and, with pipefail, the script
  lib=$(/sbin/ldconfig -p | awk -v n="$name" '$1 == n && /x86-64|64bit/ && !seen {print $NF; seen = 1}')
  [ -n "$lib" ] || { echo "$prog: this machine has no $name (Debian: libc6, libgcc-s1, libstdc++6)" >&2; exit 1; }
  mkdir -p "$rootfs$(dirname "$lib")"
  cp -L "$lib" "$rootfs$lib"
  extra+=("$lib")
done
copy_libs "$rootfs" "${extra[@]}"
rootfs_strip_python "$rootfs"
# as Debian's python3 package does when it installs: the stdlib's bytecode, which no learner can write
rootfs_compile "$rootfs" "$rootfs/usr/local/lib/python$pyver"
rootfs_user "$rootfs" 1000 1000 /home/learner
rootfs_locale "$rootfs"

size=$(du -sh "$rootfs" | cut -f1)
ms=$(rootfs_import "$rootfs" "$tag" "echomq plain python $pyver with ensurepip" \
  --user-tree home/learner 1000:1000 \
  -c 'USER 1000:1000' \
  -c 'WORKDIR /home/learner' \
  -c "ENV PATH=/usr/local/bin HOME=/home/learner $lang_env" \
  -c 'CMD ["/usr/local/bin/python3"]' \
  -c "LABEL org.echomq.route=offline org.echomq.image=python")
t_end=$(date +%s%3N)
echo "$prog: $tag (python $pyver, $size; import $ms ms, total $((t_end - t_start)) ms)" >&2
