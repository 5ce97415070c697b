#!/usr/bin/env bash
# The node image without any registry: a FROM-scratch root filesystem assembled
# from this machine's own valkey-server (Valkey 8) and, when native/ compiles,
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

server=${ECHOMQ_VALKEY_SERVER:-$(command -v valkey-server || true)}
if [ -z "$server" ]; then
  echo "build-offline: no valkey-server on this machine (Debian: bash tools/setup-system.sh)" >&2
  exit 1
fi
if ! "$server" --version | grep -q 'v=8\.'; then
  echo "build-offline: $server is not Valkey 8: $("$server" --version)" >&2
  exit 1
fi
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

# every library ldd names, at the path the loader will look for it; -L follows
# the symlinks so the file itself lands in the image
copy_libs() {
  ldd "$1" | awk '/=> \// {print $3} /^[[:space:]]*\/[^ ]+ \(0x/ {print $1}' | while read -r lib; do
    [ -e "$rootfs$lib" ] && continue
    mkdir -p "$rootfs$(dirname "$lib")"
    cp -L "$lib" "$rootfs$lib"
  done
}

# the binary picks its mode from argv[0]: the copy must be named valkey-server
# (the Debian file is valkey-check-rdb behind a symlink)
cp -L "$server" "$rootfs/usr/local/bin/valkey-server"
chmod 0755 "$rootfs/usr/local/bin/valkey-server"
copy_libs "$server"

label=none
if [ "$module" != no ]; then
  if so=$(cd "$repo" && "$python" -c 'from echomq_teach import native; print(native.build())' 2>"$rootfs.err"); then
    # the server refuses a module file without its execute bit
    install -m 0755 "$so" "$rootfs/usr/local/lib/valkey/trafikey.so"
    copy_libs "$so"
    label=trafikey
  elif [ "$module" = yes ]; then
    echo "build-offline: the trafikey module did not build:" >&2
    cat "$rootfs.err" >&2
    rm -f "$rootfs.err"
    exit 1
  else
    echo "build-offline: no trafikey module yet ($(tail -n 1 "$rootfs.err")); building the scripted-only image" >&2
  fi
  rm -f "$rootfs.err"
fi

version=$("$server" --version | sed -n 's/.*v=\([0-9.]*\).*/\1/p')
t0=$(date +%s%3N)
# numeric owner so no /etc/passwd is needed; the kit may still run it as another uid
tar --numeric-owner --owner=0 --group=0 -C "$rootfs" -c . | docker import \
  -c 'ENTRYPOINT ["/usr/local/bin/valkey-server"]' \
  -c 'USER 65534:65534' \
  -c 'WORKDIR /data' \
  -c "LABEL org.echomq.module=$label org.echomq.valkey=$version org.echomq.route=offline" \
  -m "echomq node: valkey $version, module $label" \
  - "$tag" >/dev/null
t1=$(date +%s%3N)
size=$(du -sh "$rootfs" | cut -f1)
echo "build-offline: $tag (valkey $version, module $label, $size, import $((t1 - t0)) ms)" >&2
