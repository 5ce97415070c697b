#!/usr/bin/env bash
# The node image without any registry: a FROM-scratch root filesystem assembled
# from the kit's own valkey-server (the pinned Valkey 9.1.2: tools/install-valkey.sh) and, when native/ compiles,
# the trafikey module, imported into the local Docker engine.
#
#   bash docker/build-offline.sh [--tag TAG] [--module auto|yes|no] [--rootfs DIR]
#
# --module auto (the default) adds trafikey when native/ builds and otherwise
# makes the scripted-only image; yes fails if it cannot be built. The image's
# label org.echomq.module says which (trafikey or none); the kit reads it.
# Needs DOCKER_HOST (or the default socket) to reach an engine.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
tag=${ECHOMQ_NODE_IMAGE:-echomq-node:local}
module=auto
rootfs=""
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag=$2; shift 2 ;;
    --module) module=$2; shift 2 ;;
    --rootfs) rootfs=$2; shift 2 ;;
    *) echo "build-offline: unknown option $1" >&2; exit 2 ;;
  esac
done
case "$module" in auto|yes|no) ;; *) echo "build-offline: --module auto|yes|no" >&2; exit 2 ;; esac

prog=build-offline
# rootfs_engine, rootfs_valkey_server, install_valkey_server, copy_libs, build_trafikey, rootfs_import
. "$here/rootfs.sh"
rootfs_engine
rootfs_valkey_server
python=${PYTHON:-$repo/.venv/bin/python}
[ -x "$python" ] || python=python3

keep_rootfs=1
if [ -z "$rootfs" ]; then
  rootfs=$(mktemp -d)
  keep_rootfs=0
fi
cleanup() { [ "$keep_rootfs" = 1 ] || rm -rf "$rootfs"; }
trap cleanup EXIT
rm -rf "${rootfs:?}"/*
mkdir -p "$rootfs/usr/local/bin" "$rootfs/usr/local/lib/valkey" "$rootfs/data" "$rootfs/etc/echomq"
chmod 1777 "$rootfs/data"

# /usr/local/bin/valkey-server, named so: the binary picks its mode from argv[0]
install_valkey_server "$rootfs"

label=none
so=$(build_trafikey "$module" "$python")
if [ -n "$so" ]; then
  # the server refuses a module file without its execute bit
  install -m 0755 "$so" "$rootfs/usr/local/lib/valkey/trafikey.so"
  copy_libs "$rootfs" "$so"
  label=trafikey
fi

# numeric owner so no /etc/passwd is needed; the kit may still run it as another uid
ms=$(rootfs_import "$rootfs" "$tag" "echomq node: valkey $valkey_version, module $label" \
  -c 'ENTRYPOINT ["/usr/local/bin/valkey-server"]' \
  -c 'USER 65534:65534' \
  -c 'WORKDIR /data' \
  -c "LABEL org.echomq.module=$label org.echomq.valkey=$valkey_version org.echomq.route=offline")
size=$(du -sh "$rootfs" | cut -f1)
echo "build-offline: $tag (valkey $valkey_version, module $label, $size, import $ms ms)" >&2
