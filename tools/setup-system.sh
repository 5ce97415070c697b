#!/usr/bin/env bash
# Installs the system parts the kit needs on Debian 12 (as root): valkey-server
# from <codename>-backports, a C compiler, and (with --browser) Debian's chromium.
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

if [ ! -e "$bp" ]; then
  # The URIs of every Debian archive source already configured (deb822 or
  # one-line), leaving out the security archive, which has no backports suite.
  uris=$(
    { for f in /etc/apt/sources.list.d/*.sources; do
        [ -e "$f" ] || continue
        awk '/^URIs:/ {for (i = 2; i <= NF; i++) print $i}' "$f"
      done
      for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -e "$f" ] || continue
        awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i !~ /\]$/) { print $i; break } }' "$f"
      done
    } | grep -E '/debian/?$' | grep -v security | sort -u | tr '\n' ' '
  )
  if [ -z "$uris" ]; then
    echo "setup-system: found no Debian archive URI in /etc/apt to reuse for ${codename}-backports" >&2
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
