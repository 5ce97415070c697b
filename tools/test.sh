#!/usr/bin/env bash
# Runs the whole test suite: unit, property, fault, browser, container (when a
# Docker engine answers) and every notebook under pytest --nbval.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/tools/bootstrap.sh" --browser
cd "$root"
.venv/bin/ruff check echomq_teach widgets tests bench tools notebooks/src notebooks/solutions
.venv/bin/python tools/nbbuild.py --check
exec .venv/bin/python -m pytest tests notebooks --nbval --nbval-current-env \
  --nbval-sanitize-with notebooks/sanitize.cfg -p no:cacheprovider "$@"
