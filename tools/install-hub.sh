#!/usr/bin/env bash
# What the JupyterHub smoke test (pytest -m hub) needs: jupyterhub in the venv
# and npm's configurable-http-proxy in a project-local folder (build/hub-proxy,
# ignored by git). Idempotent; prints the proxy's path.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=${PYTHON:-$root/.venv/bin/python}
prefix=${ECHOMQ_CHP_PREFIX:-$root/build/hub-proxy}

if ! "$python" -c 'import jupyterhub' 2>/dev/null; then
  "$python" -m pip install -q 'jupyterhub>=5'
fi
chp=$prefix/node_modules/.bin/configurable-http-proxy
if [ ! -x "$chp" ]; then
  command -v npm >/dev/null 2>&1 || { echo "install-hub: npm is missing (Debian: apt-get install -y npm)" >&2; exit 1; }
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error configurable-http-proxy >/dev/null
fi
echo "$chp"
