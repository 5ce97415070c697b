#!/usr/bin/env bash
# CI hook for the container provider (as root, no registry needed):
#   1. installs Debian's docker.io when dockerd is missing (a docker CLI elsewhere
#      on PATH, e.g. /usr/local/bin, is fine: any CLI talks to this engine);
#   2. starts a private dockerd (no bridge, no iptables) under its own folder;
#   3. builds the node image offline from this machine's valkey-server (+ trafikey
#      when native/ compiles);
#   4. runs pytest -m container; 5. stops that dockerd by its PID, whatever happened.
#
#   bash tools/ci-containers.sh [extra pytest args]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
python=${PYTHON:-$root/.venv/bin/python}

if ! command -v dockerd >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # the package's service is not started here (no init in CI); we run our own engine
  apt-get install -y -qq docker.io >/dev/null
fi
if ! "$python" -c 'import testcontainers, docker' 2>/dev/null; then
  "$python" -m pip install -q 'testcontainers>=4.8' 'docker>=7'
fi

# short: the engine's socket path must fit a Unix socket name
dir=$(mktemp -d /tmp/emq-docker.XXXXXX)
finish() {
  bash "$root/tools/dockerd.sh" stop "$dir" || true
  rm -rf "$dir"
}
trap finish EXIT
t0=$(date +%s%3N)
eval "$(bash tools/dockerd.sh start "$dir")"
t1=$(date +%s%3N)
bash docker/build-offline.sh
t2=$(date +%s%3N)
echo "ci-containers: engine up in $((t1 - t0)) ms, node image in $((t2 - t1)) ms" >&2
"$python" -m pytest -m container tests/test_container.py -p no:cacheprovider "$@"
