# Shared by the offline image builds (docker/build-offline.sh for the node image,
# docker/build-course-offline.sh for the course image, docker/build-python-offline.sh for a plain
# Python with pip): source it, never run it.
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

# rootfs_import ROOTFS TAG MESSAGE [--user-tree PATH UID[:GID]] [-c CHANGE]...: one layer from
# ROOTFS, owned by root (numeric, so no /etc/passwd is needed), except PATH (relative to
# ROOTFS), which belongs to UID (and GID, else group UID); prints the milliseconds the import took
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
      && tar --numeric-owner --owner="${uid%%:*}" --group="${uid##*:}" -C "$rootfs" -rf "$archive" "./$tree" \
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

# rootfs_venv_python VENV_PYTHON: the venv's own prefix and the interpreter it was made from;
# sets $venv (its prefix: site-packages, share/jupyter), $base, $pyver (3.11) and $py_bin
rootfs_venv_python() {
  local venv_python=$1
  if [ ! -x "$venv_python" ]; then
    echo "$prog: no venv at $repo/.venv (bash tools/bootstrap.sh), or set PYTHON" >&2
    return 1
  fi
  read -r venv base pyver < <("$venv_python" -c \
    'import sys; print(sys.prefix, sys.base_prefix, "%d.%d" % sys.version_info[:2])')
  py_bin=$base/bin/python$pyver
  [ -x "$py_bin" ] || { echo "$prog: no interpreter at $py_bin" >&2; return 1; }
}

# rootfs_python ROOTFS ENSUREPIP(yes|no): $py_bin as /usr/local/bin/python$pyver (python3, python
# beside it), and its stdlib in /usr/local/lib/python$pyver without tests, idlelib, tkinter and
# lib2to3 (nor Debian's sitecustomize.py, a link into the host's /etc). ENSUREPIP yes keeps ensurepip
# and the pip wheel it installs (its own _bundled one, or Debian's /usr/share/python-wheels, where
# Debian's ensurepip looks), so `python3 -m venv` makes a venv with pip; no leaves it out. A shared
# build's libpython (in the prefix's lib/, named by a runpath to the host's prefix) goes beside libc,
# where the loader looks with no ld.so.cache; sets $libdir and $relocated (those libraries, for
# COPY_LIBS_SKIP). Needs rootfs_venv_python first.
rootfs_python() {
  local rootfs=$1 ensurepip=$2 lib stdlib
  local skip=(--exclude=./ensurepip)
  [ "$ensurepip" = yes ] && skip=()
  libdir=$(ldd "$py_bin" | awk '$1 ~ /^libc\.so/ {print $3}' | xargs dirname)
  mkdir -p "$rootfs/usr/local/bin"
  cp -L "$py_bin" "$rootfs/usr/local/bin/python$pyver"
  ln -sf "python$pyver" "$rootfs/usr/local/bin/python3"
  ln -sf "python$pyver" "$rootfs/usr/local/bin/python"
  relocated=()
  for lib in $(ldd "$py_bin" | awk '$3 ~ /^\// {print $3}'); do
    if [ "$(dirname "$lib")" = "$base/lib" ]; then
      mkdir -p "$rootfs$libdir"
      cp -L "$lib" "$rootfs$libdir/"
      relocated+=("$lib")
    fi
  done
  stdlib=$base/lib/python$pyver
  mkdir -p "$rootfs/usr/local/lib/python$pyver"
  tar -C "$stdlib" -c \
    --exclude=./site-packages --exclude=./dist-packages --exclude=./sitecustomize.py \
    --exclude='./config-*' --exclude=__pycache__ \
    --exclude=test --exclude=tests --exclude=./idlelib --exclude=./tkinter --exclude=./turtledemo \
    --exclude=./turtle.py "${skip[@]}" --exclude=./lib2to3 \
    --exclude='./lib-dynload/_tkinter*' --exclude='./lib-dynload/_test*' --exclude='./lib-dynload/xx*' \
    --exclude='./lib-dynload/_ctypes_test*' \
    . | tar -C "$rootfs/usr/local/lib/python$pyver" -x
  if [ "$ensurepip" = yes ] && ! ls "$stdlib"/ensurepip/_bundled/pip-*.whl >/dev/null 2>&1; then
    if ! ls /usr/share/python-wheels/pip-*.whl >/dev/null 2>&1; then
      echo "$prog: $py_bin's ensurepip has no pip wheel (Debian: python3-venv)" >&2
      return 1
    fi
    mkdir -p "$rootfs/usr/share/python-wheels"
    cp /usr/share/python-wheels/*.whl "$rootfs/usr/share/python-wheels/"
  fi
}

# rootfs_strip_python ROOTFS: pyenv and source builds keep their debug symbols (three quarters of
# libpython's size); strip the interpreter, libpython and the stdlib's extension modules
rootfs_strip_python() {
  local rootfs=$1
  if command -v strip >/dev/null 2>&1; then
    strip --strip-unneeded "$rootfs/usr/local/bin/python$pyver" "$rootfs$libdir"/libpython* \
      "$rootfs/usr/local/lib/python$pyver"/lib-dynload/*.so 2>/dev/null || true
  fi
}

# rootfs_user ROOTFS UID GID HOME: /etc/passwd and /etc/group with root and `learner` (UID, primary
# group GID, home HOME, no shell), and `users` (100), the group Zero to JupyterHub's fsGroup gives
rootfs_user() {
  local rootfs=$1 uid=$2 gid=$3 home=$4
  mkdir -p "$rootfs/etc"
  printf 'root:x:0:0:root:/root:/nonexistent\nlearner:x:%s:%s:learner:%s:/nonexistent\n' \
    "$uid" "$gid" "$home" >"$rootfs/etc/passwd"
  if [ "$gid" = 100 ]; then
    printf 'root:x:0:\nusers:x:100:learner\n' >"$rootfs/etc/group"
  else
    printf 'root:x:0:\nusers:x:100:learner\nlearner:x:%s:\n' "$gid" >"$rootfs/etc/group"
  fi
}

# rootfs_locale ROOTFS: glibc's C.UTF-8 for Python and for valkey-server (which refuses a LANG it
# cannot load); sets $lang_env to the ENV line that turns it on (PYTHONUTF8=1 where the host has none)
rootfs_locale() {
  local rootfs=$1
  lang_env=PYTHONUTF8=1
  if [ -d /usr/lib/locale/C.utf8 ]; then
    mkdir -p "$rootfs/usr/lib/locale"
    cp -r /usr/lib/locale/C.utf8 "$rootfs/usr/lib/locale/"
    lang_env=LANG=C.UTF-8
  fi
}

# rootfs_compile ROOTFS DIR...: bytecode for every .py under each DIR (inside ROOTFS), compiled once
# by the venv's interpreter (the image's, so the same magic number) and recorded under the image's
# paths; unchecked-hash: valid whatever the mtimes after import, never rewritten. A learner cannot
# write under /usr/local: without it every process compiles its imports again.
rootfs_compile() {
  local rootfs=$1
  shift
  "$venv/bin/python" -m compileall -q -j 0 --invalidation-mode unchecked-hash -s "$rootfs" -p / "$@" >/dev/null
}
