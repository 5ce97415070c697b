#!/usr/bin/env bash
# What a classroom's JupyterHub needs (and the hub test, pytest -m hub): jupyterhub, the
# native authenticator and DockerSpawner in the venv (the project's 'hub' extra), and
# npm's configurable-http-proxy in a project-local folder (build/hub-proxy, ignored by
# git). Where npm is missing, Debian's nodejs and npm are installed first (as root,
# tools/setup-system.sh --npm).
# Idempotent; prints the proxy's path.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=${PYTHON:-$root/.venv/bin/python}
prefix=${ECHOMQ_CHP_PREFIX:-$root/build/hub-proxy}

if ! "$python" -c 'import jupyterhub, nativeauthenticator, dockerspawner' 2>/dev/null; then
  "$python" -m pip install -q -e "$root[hub]"
fi
chp=$prefix/node_modules/.bin/configurable-http-proxy
if [ ! -x "$chp" ]; then
  command -v npm >/dev/null 2>&1 || bash "$root/tools/setup-system.sh" --npm
  # a version whose declared engines the installed node meets: 5.3.0 wants node 20 (what a
  # node-20 machine gets), 5.1.0 is the newest that declares node 18 (Debian 12's nodejs); npm
  # itself only warns on an unmet engine. Both ran tests/classroom/test_hub.py, 5.1.0 on Debian's node 18.
  node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  if [ "$node_major" -ge 20 ]; then
    chp_version=5.3.0
  elif [ "$node_major" -ge 18 ]; then
    chp_version=5.1.0
  else
    echo "install-hub: configurable-http-proxy needs node 18 or newer; this node is $(node --version 2>/dev/null || echo missing)" >&2
    exit 1
  fi
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "configurable-http-proxy@$chp_version" >/dev/null
fi
echo "$chp"
