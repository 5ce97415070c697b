#!/usr/bin/env bash
# Runs every notebook under pytest --nbval (stored outputs compared, notebooks/sanitize.cfg masks),
# several kernels at a time: pytest-xdist gives each worker whole notebooks (--dist loadfile), the
# longest first (tests/course_session.py). tools/test.sh runs it after the test session;
# bench/bench_course.py times it. Extra arguments go to pytest (-x, -k, --strict-skips, ...).
#
#   bash tools/nbtest.sh [pytest args]          # ECHOMQ_NB_WORKERS=1 runs the notebooks one after another
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
workers=${ECHOMQ_NB_WORKERS:-$(nproc)}  # one kernel per core by default
parallel=()
if [ "$workers" != 1 ]; then
  parallel=(-n "$workers" --dist loadfile --no-loadscope-reorder)
fi
PYTHONPATH="$root/tests${PYTHONPATH:+:$PYTHONPATH}" exec .venv/bin/python -m pytest notebooks --nbval \
  --nbval-current-env --nbval-sanitize-with notebooks/sanitize.cfg -p no:cacheprovider -p course_session \
  ${parallel[@]+"${parallel[@]}"} "$@"
