#!/usr/bin/env bash
# What the browser tests' accessibility audit needs (tests/a11y_support.py): axe-core at the version
# of tools/axe.lock, installed with npm into a project-local folder (build/axe, ignored by git) and
# checked against the lock's SHA-256. Where npm is missing, Debian's nodejs and npm are installed
# first (as root, tools/setup-system.sh --npm). Idempotent; prints the script's path.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prefix=${ECHOMQ_AXE_PREFIX:-$root/build/axe}
lock=$root/tools/axe.lock
version=$(sed -n 's/^version=//p' "$lock")
want=$(sed -n 's/^axe_min_sha256=//p' "$lock")
script=$prefix/node_modules/axe-core/axe.min.js

have() { [ -f "$script" ] && [ "$(sha256sum "$script" | cut -d' ' -f1)" = "$want" ]; }
if ! have; then
  command -v npm >/dev/null 2>&1 || bash "$root/tools/setup-system.sh" --npm
  mkdir -p "$prefix"
  # no package.json and no lock file of npm's own: the version is pinned here and the digest checked below
  npm install --prefix "$prefix" --no-audit --no-fund --no-save --no-package-lock --loglevel=error \
    "axe-core@$version" >/dev/null
  if ! have; then
    echo "install-axe: $script is not axe-core $version as tools/axe.lock pins it (SHA-256 differs)" >&2
    exit 1
  fi
fi
echo "$script"
