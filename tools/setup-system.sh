#!/usr/bin/env bash
# Installs the system parts the kit needs on Debian 12 (as root): python3 with
# venv, a C compiler, and (with --browser) Debian's chromium, (with --docker) docker.io, (with
# --npm) nodejs and npm (the hub's proxy and the browser tests' axe-core come from npm).
# valkey-server is not among them: Debian 12 offers Valkey 8.0.1, which a script can
# crash (docs/classroom.md); tools/bootstrap.sh installs the pinned Valkey 9.1.2 into
# the venv instead (tools/install-valkey.sh). Should a part ever need <codename>-backports,
# the suite is added on the URIs of this machine's own Debian sources
# (tools/debian-uris.sh), so no mirror host is ever written here.
set -euo pipefail

want_browser=0
want_docker=0
want_npm=0
for a in "$@"; do
  case "$a" in
    --browser) want_browser=1 ;;
    --docker) want_docker=1 ;;
    --npm) want_npm=1 ;;
    *) echo "setup-system: unknown option $a" >&2; exit 2 ;;
  esac
done

need=()
# a fresh Debian has python3 (3.11) without ensurepip: `python3 -m venv` needs python3-venv
command -v python3 >/dev/null 2>&1 || need+=(python3)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need+=(python3-venv)
command -v cc >/dev/null 2>&1 || need+=(gcc libc6-dev make)
[ "$want_browser" = 1 ] && ! command -v chromium >/dev/null 2>&1 && need+=(chromium)
[ "$want_docker" = 1 ] && ! command -v dockerd >/dev/null 2>&1 && need+=(docker.io)
[ "$want_npm" = 1 ] && ! command -v npm >/dev/null 2>&1 && need+=(nodejs npm)
[ ${#need[@]} -eq 0 ] && exit 0

if [ ! -r /etc/os-release ] || ! grep -q '^ID=debian' /etc/os-release; then
  echo "setup-system: not Debian; install these yourself: ${need[*]}" >&2
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  echo "setup-system: run as root, or install these yourself: ${need[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${need[@]}" >/dev/null
