#!/usr/bin/env bash
# Opens the course: JupyterLab on notebooks/, each kernel on its own embedded
# Valkey node (started by the kit, stopped when the kernel exits).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/tools/bootstrap.sh"
cd "$root"
# the course's JupyterLab defaults: no news question covering the first notebook (tools/jupyterlab/)
app_dir=$(.venv/bin/python -c 'from jupyterlab.commands import get_app_dir; print(get_app_dir())')
install -D -m 0644 tools/jupyterlab/overrides.json "$app_dir/settings/overrides.json"
extra=(--LabApp.news_url=None --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate)
# JupyterLab refuses root unless told; a classroom VM or container often is root
[ "$(id -u)" = 0 ] && extra+=(--allow-root)
# kernel websockets with TCP_NODELAY: a widget's redraw is not held back (echomq_teach/hub/lab_server.py)
nodelay=--ServerApp.kernel_websocket_connection_class=echomq_teach.hub.lab_server.NoDelayConnection
exec .venv/bin/jupyter lab --ServerApp.root_dir="$root/notebooks" --ip 127.0.0.1 "$nodelay" "${extra[@]}" "$@"
