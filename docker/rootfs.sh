# Shared by the offline image builds (docker/build-offline.sh for the node image,
# docker/build-course-offline.sh for the course image): source it, never run it.
# Each function puts what this machine has into a root filesystem for a
# FROM-scratch image, and rootfs_import hands that folder to `docker import`.

# rootfs_valkey_server: the valkey-server to copy, the one the kit itself runs (ECHOMQ_VALKEY_SERVER,
# else the venv's: tools/install-valkey.sh), checked to be the release tools/valkey.lock pins;
# sets $server and $valkey_version
rootfs_valkey_server() {
  local want
  want=$(sed -n 's/^version=//p' "$repo/tools/valkey.lock")
  server=${ECHOMQ_VALKEY_SERVER:-}
  if [ -z "$server" ] && [ -x "$repo/.venv/bin/valkey-server" ]; then
    server=$repo/.venv/bin/valkey-server
  fi
  if [ -z "$server" ] || [ ! -x "$server" ]; then
    echo "$prog: no valkey-server $want (bash tools/bootstrap.sh, or bash tools/install-valkey.sh DIR" \
      "and ECHOMQ_VALKEY_SERVER=DIR/valkey-server)" >&2
    return 1
  fi
  valkey_version=$("$server" --version | sed -n 's/.*v=\([0-9.]*\).*/\1/p')
  if [ "$valkey_version" != "$want" ]; then
    echo "$prog: $server is Valkey ${valkey_version:-?}, not the pinned $want (tools/valkey.lock)" >&2
    return 1
  fi
}

# rootfs_engine: fail at once, before any copying, when no Docker engine answers
rootfs_engine() {
  if ! docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
    echo "$prog: no Docker engine answers at ${DOCKER_HOST:-the default socket}" \
      '(as root: eval "$(bash tools/dockerd.sh start /tmp/echomq-docker)")' >&2
    return 1
  fi
}

# copy_libs ROOTFS FILE...: every library ldd names for each FILE, at the path the loader
# will look for it (-L copies the file a symlink names). A library that resolves inside
# ROOTFS (an $ORIGIN runpath: a wheel's own .libs folder) is already there; so is any
# library named in $COPY_LIBS_SKIP (space-separated paths placed elsewhere by the caller).
copy_libs() {
  local rootfs=$1 lib
  shift
  for f in "$@"; do
    ldd "$f" 2>/dev/null | awk '/=> \// {print $3} /^[[:space:]]*\/[^ ]+ \(0x/ {print $1}'
  done | sort -u | while read -r lib; do
    case "$lib" in "$rootfs"/*) continue ;; esac
    case " ${COPY_LIBS_SKIP:-} " in *" $lib "*) continue ;; esac
    [ -e "$rootfs$lib" ] && continue
    mkdir -p "$rootfs$(dirname "$lib")"
    cp -L "$lib" "$rootfs$lib"
  done
}

# install_valkey_server ROOTFS: /usr/local/bin/valkey-server and its libraries. The binary
# picks its mode from argv[0], so the copy must be named valkey-server (the Debian file is
# valkey-check-rdb behind a symlink).
install_valkey_server() {
  local rootfs=$1
  mkdir -p "$rootfs/usr/local/bin"
  cp -L "$server" "$rootfs/usr/local/bin/valkey-server"
  chmod 0755 "$rootfs/usr/local/bin/valkey-server"
  copy_libs "$rootfs" "$server"
}

# build_trafikey MODE PYTHON [VAR=VALUE...]: trafikey.build() with MODE auto|yes|no (and the
# environment given, e.g. ECHOMQ_CACHE_DIR); prints the .so's path, or nothing when the module
# is not built (auto says why on stderr; yes fails)
build_trafikey() {
  local mode=$1 python=$2 err so
  shift 2
  [ "$mode" = no ] && return 0
  err=$(mktemp)
  if so=$(cd "$repo" && env "$@" "$python" -c 'from echomq_teach.nodes import trafikey; print(trafikey.build())' 2>"$err"); then
    rm -f "$err"
    echo "$so"
  elif [ "$mode" = yes ]; then
    echo "$prog: the trafikey module did not build:" >&2
    cat "$err" >&2
    rm -f "$err"
    return 1
  else
    echo "$prog: no trafikey module yet ($(tail -n 1 "$err")); building without it" >&2
    rm -f "$err"
  fi
}

# rootfs_import ROOTFS TAG MESSAGE [--user-tree PATH UID] [-c CHANGE]...: one layer from
# ROOTFS, owned by root (numeric, so no /etc/passwd is needed), except PATH (relative to
# ROOTFS), which belongs to UID; prints the milliseconds the import took
rootfs_import() {
  local rootfs=$1 tag=$2 message=$3 tree="" uid="" t0 t1 archive before
  shift 3
  local changes=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --user-tree) tree=$2; uid=$3; shift 3 ;;
      -c) changes+=(-c "$2"); shift 2 ;;
      *) echo "rootfs_import: unknown option $1" >&2; return 2 ;;
    esac
  done
  # the image the tag named before, removed below once nothing names or runs it
  before=$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
  t0=$(date +%s%3N)
  # called as $(rootfs_import ...), where set -e does not hold: every step says if it failed
  if [ -z "$tree" ]; then
    tar --numeric-owner --owner=0 --group=0 -C "$rootfs" -c . \
      | docker import "${changes[@]}" -m "$message" - "$tag" >/dev/null || return 1
  else
    # one archive, two owners: everything as root, then the user's tree appended as UID
    archive=$(mktemp --suffix=.tar) || return 1
    if ! { tar --numeric-owner --owner=0 --group=0 -C "$rootfs" --exclude="./$tree" -cf "$archive" . \
      && tar --numeric-owner --owner="$uid" --group="$uid" -C "$rootfs" -rf "$archive" "./$tree" \
      && docker import "${changes[@]}" -m "$message" "$archive" "$tag" >/dev/null; }; then
      rm -f "$archive"
      return 1
    fi
    rm -f "$archive"
  fi
  t1=$(date +%s%3N)
  if [ -n "$before" ] && [ "$before" != "$(docker image inspect --format '{{.Id}}' "$tag")" ]; then
    docker image rm "$before" >/dev/null 2>&1 || true  # refused while another tag or a container uses it
  fi
  echo $((t1 - t0))
}
