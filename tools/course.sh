#!/usr/bin/env bash
# Opens the course: JupyterLab on notebooks/, each kernel on its own embedded
# Valkey node (started by the kit, stopped when the kernel exits).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/tools/bootstrap.sh"
cd "$root"
extra=()
# JupyterLab refuses root unless told; a classroom VM or container often is root
[ "$(id -u)" = 0 ] && extra+=(--allow-root)
# kernel websockets with TCP_NODELAY: a widget's redraw is not held back (echomq_teach/lab_server.py)
nodelay=--ServerApp.kernel_websocket_connection_class=echomq_teach.lab_server.NoDelayConnection
exec .venv/bin/jupyter lab --ServerApp.root_dir="$root/notebooks" --ip 127.0.0.1 "$nodelay" "${extra[@]}" "$@"
