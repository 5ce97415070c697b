#!/usr/bin/env bash
# Prints, one per line, the URIs of the Debian archive this machine already uses for
# CODENAME's main suite: the sources that list the suite CODENAME itself (not
# CODENAME-security, -updates or another archive), enabled, in deb822 (*.sources) or
# one-line (sources.list, *.list) form. tools/setup-system.sh adds CODENAME-backports
# on these URIs, so the mirror (or snapshot) the machine was set up with is reused and
# no host name is written in this repository.
#
#   bash tools/debian-uris.sh CODENAME [APT_DIR]      (APT_DIR: /etc/apt)
set -euo pipefail
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 CODENAME [APT_DIR]" >&2; exit 2; }
codename=$1
apt_dir=${2:-/etc/apt}

{
  for f in "$apt_dir"/sources.list.d/*.sources; do
    [ -e "$f" ] || continue
    # one stanza per paragraph: its URIs when its Suites name the codename and it is not disabled
    awk -v cn="$codename" '
      BEGIN { RS = "" }
      {
        uris = ""; suites = " "; enabled = "yes"
        n = split($0, lines, "\n")
        for (i = 1; i <= n; i++) {
          line = lines[i]
          if (line ~ /^[ \t]*#/) continue
          if (line ~ /^URIs:/) { sub(/^URIs:[ \t]*/, "", line); uris = line }
          else if (line ~ /^Suites:/) { sub(/^Suites:[ \t]*/, "", line); suites = " " line " " }
          else if (line ~ /^Enabled:/) { sub(/^Enabled:[ \t]*/, "", line); enabled = tolower(line) }
        }
        gsub(/[ \t]+/, " ", suites)
        if (enabled != "no" && index(suites, " " cn " ")) {
          m = split(uris, u, /[ \t]+/)
          for (j = 1; j <= m; j++) if (u[j] != "") print u[j]
        }
      }' "$f"
  done
  for f in "$apt_dir"/sources.list "$apt_dir"/sources.list.d/*.list; do
    [ -e "$f" ] || continue
    # deb [options] URI SUITE COMPONENTS...
    awk -v cn="$codename" '
      $1 == "deb" {
        sub(/\[[^]]*\]/, "")
        if ($3 == cn) print $2
      }' "$f"
  done
} | sed 's|/*$||' | awk '!seen[$0]++'
