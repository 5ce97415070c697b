#!/usr/bin/env bash
# Opens the course: JupyterLab on notebooks/, each kernel on its own embedded
# Valkey node (started by the kit, stopped when the kernel exits).
# It prints one short banner (the URL to open, how to reach it from another
# machine, how to stop); the set-up's and Jupyter's own logs go to .course/.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
logs="$root/.course"
mkdir -p "$logs" && chmod 700 "$logs"  # the log holds the token
echo "Setting up the course (log: .course/setup.log) ..."
if ! bash "$root/tools/bootstrap.sh" >"$logs/setup.log" 2>&1; then
  tail -n 20 "$logs/setup.log" >&2
  echo "The set-up failed; the whole log is in .course/setup.log" >&2
  exit 1
fi
# the course's JupyterLab defaults: no news question covering the first notebook (tools/jupyterlab/)
app_dir=$(.venv/bin/python -c 'from jupyterlab.commands import get_app_dir; print(get_app_dir())')
install -D -m 0644 tools/jupyterlab/overrides.json "$app_dir/settings/overrides.json"
extra=(--LabApp.news_url=None --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate)
# JupyterLab refuses root unless told; a classroom VM or container often is root
[ "$(id -u)" = 0 ] && extra+=(--allow-root)
# kernel websockets with TCP_NODELAY: a widget's redraw is not held back (echomq_teach/hub/lab_server.py)
nodelay=--ServerApp.kernel_websocket_connection_class=echomq_teach.hub.lab_server.NoDelayConnection
# the course's own notebooks open showing the widgets they stored (an untrusted one shows a line of text)
.venv/bin/jupyter trust notebooks/*.ipynb >>"$logs/setup.log" 2>&1
log="$logs/jupyter.log"
: >"$log"
.venv/bin/jupyter lab --ServerApp.root_dir="$root/notebooks" --ip 127.0.0.1 --no-browser \
  "$nodelay" "${extra[@]}" "$@" >>"$log" 2>&1 &
lab=$!
# Ctrl-C or a closing terminal stops JupyterLab (and so every kernel and node) by its PID
trap 'kill -TERM "$lab" 2>/dev/null; wait "$lab" 2>/dev/null; exit 0' INT TERM HUP
url=""
for _ in $(seq 1 600); do  # at most a minute
  url=$(grep -oE 'http://127\.0\.0\.1:[0-9]+/lab\?token=[0-9a-f]+' "$log" | head -n 1 || true)
  [ -n "$url" ] && break
  if ! kill -0 "$lab" 2>/dev/null; then
    tail -n 20 "$log" >&2
    echo "JupyterLab did not start; its log is .course/jupyter.log" >&2
    exit 1
  fi
  sleep 0.1
done
if [ -z "$url" ]; then
  echo "JupyterLab gave no URL within a minute; its log is .course/jupyter.log" >&2
  kill -TERM "$lab" 2>/dev/null || true
  exit 1
fi
port=$(echo "$url" | sed -E 's|http://127\.0\.0\.1:([0-9]+)/.*|\1|')
cat <<BANNER

  The Queue is open. Open this URL in a browser on this machine:

    $url

  From another machine: the server listens on 127.0.0.1 only, so forward the port over SSH,
    ssh -N -L $port:127.0.0.1:$port <user>@<this machine>
  then open the same URL there.

  Stop: Ctrl-C here (or kill $lab). Jupyter's log: .course/jupyter.log

BANNER
wait "$lab"
