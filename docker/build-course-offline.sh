#!/usr/bin/env bash
# The course image without any registry: JupyterLab, the kit, valkey-server and
# a prebuilt trafikey module in a FROM-scratch root filesystem assembled from
# this machine (the interpreter the project's venv is made from, the venv's
# runtime packages, the kit's pinned valkey-server 9.1.2), imported into the local
# Docker engine as echomq-course:local.
#
#   bash docker/build-course-offline.sh [--tag TAG] [--module auto|yes|no] [--rootfs DIR] [--bytecode yes|no]
#
# Run it (host networking; JupyterLab binds 127.0.0.1 only, the token from the
# environment or a file):
#   docker run --rm --network host -e JUPYTER_TOKEN=... -e JUPYTER_PORT=8888 echomq-course:local
#
# What goes in (docs/containers.md has the why):
#   /usr/local/bin/python3.X     the venv's base interpreter; its libpython beside libc
#   /usr/local/lib/python3.X     the stdlib without test, idlelib, tkinter, ensurepip, lib2to3
#     site-packages              the kit's runtime dependencies as installed in .venv (dist-packages
#                                when the interpreter is Debian's python3: where its site.py looks)
#                                (docker/runtime_files.py: RECORD files of the closure)
#   /usr/local/share/jupyter     JupyterLab's app, the widgets extension, the kernel spec
#   /usr/local/bin/jupyterhub-singleuser  a classroom hub's per-student server (when the venv has jupyterhub)
#   /usr/local/bin/valkey-server each kernel's embedded node (docker/rootfs.sh, as the node image)
#   /opt/the-queue               echomq_teach, echomq_widgets, native/ and, in cache/, trafikey
#                                prebuilt for these sources (ECHOMQ_CACHE_DIR; no compiler inside)
#   /opt/the-queue/{notebooks,docs,tools/valkey.lock}  what `python -m echomq_teach.course init` copies
#   /home/learner/the-queue      the learner's copy (course init), owned by the learner (uid 1000, group 100)
#   /etc/passwd, /etc/group, /tmp (1777)
# --bytecode yes (the default) compiles the .py files once, so a kernel starts
# without compiling JupyterLab's and matplotlib's imports; no is smaller.
# Needs the venv with its valkey-server (bash tools/bootstrap.sh) and DOCKER_HOST.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
tag=${ECHOMQ_COURSE_IMAGE:-echomq-course:local}
module=auto
rootfs=""
bytecode=yes
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag=$2; shift 2 ;;
    --module) module=$2; shift 2 ;;
    --rootfs) rootfs=$2; shift 2 ;;
    --bytecode) bytecode=$2; shift 2 ;;
    *) echo "build-course-offline: unknown option $1" >&2; exit 2 ;;
  esac
done
case "$module" in auto|yes|no) ;; *) echo "build-course-offline: --module auto|yes|no" >&2; exit 2 ;; esac
case "$bytecode" in yes|no) ;; *) echo "build-course-offline: --bytecode yes|no" >&2; exit 2 ;; esac

prog=build-course-offline
# rootfs_engine, rootfs_valkey_server, install_valkey_server, copy_libs, build_trafikey, rootfs_import
. "$here/rootfs.sh"
t_start=$(date +%s%3N)
rootfs_engine
rootfs_valkey_server

venv_python=${PYTHON:-$repo/.venv/bin/python}
# sets venv, base, pyver, py_bin (the interpreter the venv is made from)
rootfs_venv_python "$venv_python"
py_full=$("$venv_python" -c 'import platform; print(platform.python_version())')

# as Zero to JupyterHub's KubeSpawner starts a single-user pod: uid 1000, group 100 (its fsGroup)
uid=1000
gid=100
learner_home=home/learner
course=$learner_home/the-queue
kit=opt/the-queue

keep_rootfs=1
if [ -z "$rootfs" ]; then
  rootfs=$(mktemp -d)
  keep_rootfs=0
fi
mkdir -p "$rootfs"
rootfs=$(cd "$rootfs" && pwd)  # absolute: compileall records paths relative to it
if [ "$rootfs" = / ]; then
  echo "$prog: --rootfs / would empty this machine's root" >&2
  exit 2
fi
list=$(mktemp)
cleanup() {
  rm -f "$list"
  [ "$keep_rootfs" = 1 ] || rm -rf "$rootfs"
}
trap cleanup EXIT
rm -rf "${rootfs:?}"/*
mkdir -p "$rootfs"/{etc,tmp,usr/local/bin,"$kit"/cache,"$course"}
chmod 1777 "$rootfs/tmp"
chmod 0755 "$rootfs/$learner_home"

# -- the interpreter ---------------------------------------------------------------------------------------
# sets libdir and relocated (libpython, placed beside libc)
rootfs_python "$rootfs" no

# -- the runtime packages, as the venv has them ----------------------------------------------------------
# and JupyterHub's single-user server, when the venv has it (the 'hub' extra): a classroom's hub
# spawns one container per student from this image (echomq_teach/hub/spawner.py)
also=()
"$venv_python" -c 'import jupyterhub' 2>/dev/null && also=(--also jupyterhub)
"$venv_python" "$here/runtime_files.py" "${also[@]}" >"$list"
# the folder the image's interpreter reads packages from under /usr/local: site-packages for a
# source build (pyenv, python.org), dist-packages for Debian's python3, whose site.py is patched so
site_dir=$("$py_bin" -c 'import site, sys
v = "%d.%d" % sys.version_info[:2]
print(next(p for p in site.getsitepackages(["/usr/local"]) if p.startswith(f"/usr/local/lib/python{v}/")))')
tar -C "$venv" --null -T "$list" -c \
  | tar -C "$rootfs/usr/local" -x --transform "s|^lib/python$pyver/site-packages/|${site_dir#/usr/local/}/|"
# console scripts name the venv's interpreter; point them at the image's
for f in "$rootfs"/usr/local/bin/*; do
  [ -f "$f" ] && [ ! -L "$f" ] || continue
  if head -c 2 "$f" | grep -q '^#!'; then
    sed -i "1s|^#!.*python.*$|#!/usr/local/bin/python$pyver|" "$f"
  fi
done

# every library the interpreter, its extension modules and valkey-server need, from this machine
mapfile -t sos < <(find "$rootfs/usr/local" -name '*.so*' -type f)
COPY_LIBS_SKIP="${relocated[*]}" copy_libs "$rootfs" "$rootfs/usr/local/bin/python$pyver" "${sos[@]}"
install_valkey_server "$rootfs"

rootfs_strip_python "$rootfs"

# -- the kit -----------------------------------------------------------------------------------------
tar -C "$repo" -c --exclude=__pycache__ --exclude='*.pyc' echomq_teach | tar -C "$rootfs/$kit" -x
tar -C "$repo/widgets" -c --exclude=__pycache__ --exclude='*.pyc' . \
  | { mkdir -p "$rootfs/$kit/echomq_widgets" && tar -C "$rootfs/$kit/echomq_widgets" -x; }
tar -C "$repo" -c --exclude=build --exclude='*.so' --exclude='*.o' native | tar -C "$rootfs/$kit" -x
# what the editable install does in the venv: the kit's folder on sys.path
echo "/$kit" >"$rootfs$site_dir/the-queue.pth"

label=none
so=$(build_trafikey "$module" "$venv_python")
if [ -n "$so" ]; then
  # native.build() in the image hashes the same sources to the same name and finds it here;
  # the server refuses a module file without its execute bit
  install -m 0755 "$so" "$rootfs/$kit/cache/$(basename "$so")"
  copy_libs "$rootfs" "$so"
  label=trafikey
fi

# the course's JupyterLab defaults (tools/jupyterlab/): no news question covering the first notebook
install -D -m 0644 "$repo/tools/jupyterlab/overrides.json" "$rootfs/usr/local/share/jupyter/lab/settings/overrides.json"

# -- the learner ---------------------------------------------------------------------------------------
# what `python -m echomq_teach.course init` copies from (echomq_teach.shipped: the layout of a checkout)
mkdir -p "$rootfs/$kit/notebooks" "$rootfs/$kit/tools"
cp "$repo"/notebooks/*.ipynb "$repo/notebooks/sanitize.cfg" "$rootfs/$kit/notebooks/"
cp -r "$repo/notebooks/solutions" "$rootfs/$kit/notebooks/solutions"
cp -r "$repo/docs" "$rootfs/$kit/docs"
cp "$repo/tools/valkey.lock" "$rootfs/$kit/tools/"
find "$rootfs/$kit" -name __pycache__ -prune -exec rm -rf {} +
# the learner's copy, made as a learner makes one (the notebooks, solutions/, and docs/, which the
# notebooks link as docs/…), trusted in the learner's own Jupyter data folder (HOME=/home/learner):
# the notebooks open showing their widgets. A chart's fresh home volume hides it: the same command
# makes it again there (docs/classroom.md, Zero to JupyterHub)
JUPYTER_DATA_DIR="$rootfs/$learner_home/.local/share/jupyter" "$venv_python" -m echomq_teach.course init \
  "$rootfs/$course" >/dev/null
rootfs_user "$rootfs" "$uid" "$gid" "/$learner_home"
rootfs_locale "$rootfs"

if [ "$bytecode" = yes ]; then
  rootfs_compile "$rootfs" "$rootfs/usr/local/lib/python$pyver" "$rootfs/$kit"
fi

size=$(du -sh "$rootfs" | cut -f1)
ms=$(rootfs_import "$rootfs" "$tag" "echomq course: python $py_full, valkey $valkey_version, module $label" \
  --user-tree "$learner_home" "$uid:$gid" \
  -c 'CMD ["/usr/local/bin/python3", "-m", "jupyterlab", "--ip=127.0.0.1", "--no-browser", "--ServerApp.port_retries=0", "--ServerApp.root_dir=/home/learner/the-queue", "--ServerApp.terminals_enabled=False", "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.extension_manager=readonly", "--ServerApp.kernel_websocket_connection_class=echomq_teach.hub.lab_server.NoDelayConnection", "--KernelManager.transport=ipc"]' \
  -c "USER $uid:$gid" \
  -c 'WORKDIR /home/learner/the-queue' \
  -c "ENV PATH=/usr/local/bin HOME=/home/learner $lang_env ECHOMQ_CACHE_DIR=/opt/the-queue/cache JUPYTER_PORT=8888" \
  -c "LABEL org.echomq.module=$label org.echomq.valkey=$valkey_version org.echomq.python=$py_full org.echomq.route=offline org.echomq.image=course")
t_end=$(date +%s%3N)
echo "$prog: $tag (python $py_full, valkey $valkey_version, module $label, bytecode $bytecode, $size;" \
  "import $ms ms, total $((t_end - t_start)) ms)" >&2
