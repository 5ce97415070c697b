#!/usr/bin/env bash
# Installs the system parts the kit needs on Debian 12 (as root): python3 with
# venv, valkey-server from <codename>-backports, a C compiler, and (with
# --browser) Debian's chromium, (with --docker) docker.io.
# The backports suite reuses the URIs of this machine's own Debian sources, so
# no mirror host is ever written here.
set -euo pipefail

want_browser=0
want_docker=0
for a in "$@"; do
  case "$a" in
    --browser) want_browser=1 ;;
    --docker) want_docker=1 ;;
    *) echo "setup-system: unknown option $a" >&2; exit 2 ;;
  esac
done

need=()
# a fresh Debian has python3 (3.11) without ensurepip: `python3 -m venv` needs python3-venv
command -v python3 >/dev/null 2>&1 || need+=(python3)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need+=(python3-venv)
command -v valkey-server >/dev/null 2>&1 || need+=(valkey-server)
command -v cc >/dev/null 2>&1 || need+=(gcc libc6-dev make)
[ "$want_browser" = 1 ] && ! command -v chromium >/dev/null 2>&1 && need+=(chromium)
[ "$want_docker" = 1 ] && ! command -v dockerd >/dev/null 2>&1 && need+=(docker.io)
[ ${#need[@]} -eq 0 ] && exit 0

if [ ! -r /etc/os-release ] || ! grep -q '^ID=debian' /etc/os-release; then
  echo "setup-system: not Debian; install these yourself: ${need[*]} (Valkey 8 or newer)" >&2
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  echo "setup-system: run as root, or install these yourself: ${need[*]} (Valkey 8 from ${VERSION_CODENAME:-<codename>}-backports)" >&2
  exit 1
fi
. /etc/os-release
codename=${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}
bp=/etc/apt/sources.list.d/echomq-backports.sources

uris_of() { bash "$(dirname "${BASH_SOURCE[0]}")/debian-uris.sh" "$1"; }
# only Valkey comes from backports; a machine that lists the suite already keeps its own entry
if [[ " ${need[*]} " == *" valkey-server "* ]] && [ ! -e "$bp" ] && [ -z "$(uris_of "${codename}-backports")" ]; then
  # the URIs this machine already uses for the codename's own suite (mirror or snapshot alike)
  uris=$(uris_of "$codename" | tr '\n' ' ')
  if [ -z "$uris" ]; then
    echo "setup-system: no source in /etc/apt names the suite ${codename}; add ${codename}-backports yourself" >&2
    exit 1
  fi
  cat > "$bp" <<SRC
Types: deb
URIs: ${uris% }
Suites: ${codename}-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
for p in "${need[@]}"; do
  if [ "$p" = valkey-server ]; then
    apt-get install -y -qq -t "${codename}-backports" valkey-server >/dev/null
  else
    apt-get install -y -qq "$p" >/dev/null
  fi
done
# The package starts a system-wide service on 6379; the kit runs its own nodes.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet valkey-server 2>/dev/null; then
  systemctl stop valkey-server || true
fi
valkey-server --version
