#!/usr/bin/env bash
# A private Docker engine for tests and classrooms, under one folder DIR:
#   tools/dockerd.sh start DIR   start dockerd, wait until it answers, print DOCKER_HOST
#   tools/dockerd.sh stop DIR    stop that dockerd by its PID, unmount what it left
#   tools/dockerd.sh env DIR     print the export line for an engine already started
#
# The engine never touches the host's network: no bridge, no iptables rules,
# no ip_forward or masquerading; containers get host networking and bind
# 127.0.0.1 themselves. Its data-root, exec-root, pidfile, socket and log all
# live in DIR, so it never meets a system-wide dockerd. Run as root.
set -euo pipefail

usage() {
  echo "usage: $0 start|stop|env DIR" >&2
  exit 2
}
[ $# -eq 2 ] || usage
cmd=$1
mkdir -p "$2"
dir=$(cd "$2" && pwd)
sock=$dir/docker.sock
pidfile=$dir/dockerd.pid
log=$dir/dockerd.log
host=unix://$sock
START_TIMEOUT_S=${DOCKERD_START_TIMEOUT_S:-30}

# the socket path must fit sun_path (108 bytes), or dockerd fails obscurely
if [ ${#sock} -gt 100 ]; then
  echo "dockerd.sh: $sock is too long for a Unix socket; choose a shorter DIR" >&2
  exit 2
fi

# our dockerd's PID, only if the pidfile names a live dockerd (never a reused PID)
our_pid() {
  [ -s "$pidfile" ] || return 1
  local pid
  pid=$(cat "$pidfile")
  [ -d "/proc/$pid" ] || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ] || return 1
  echo "$pid"
}

unmount_under_dir() {
  # nsfs at exec-root/netns/default and any overlay left by a container; deepest first
  local m
  for m in $(awk -v d="$dir/" 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || echo "dockerd.sh: could not unmount $m" >&2
  done
}

start() {
  if pid=$(our_pid); then
    echo "dockerd.sh: already running (pid $pid)" >&2
    echo "export DOCKER_HOST=$host"
    return 0
  fi
  if ! command -v dockerd >/dev/null 2>&1; then
    echo "dockerd.sh: no dockerd; on Debian: apt-get install -y docker.io" >&2
    exit 1
  fi
  [ "$(id -u)" = 0 ] || { echo "dockerd.sh: dockerd needs root" >&2; exit 1; }
  mkdir -p "$dir/data" "$dir/exec"
  rm -f "$sock" "$pidfile"
  # setsid: the engine survives the shell that started it; stop is by PID
  setsid dockerd \
    --data-root "$dir/data" \
    --exec-root "$dir/exec" \
    --pidfile "$pidfile" \
    -H "$host" \
    --bridge=none \
    --iptables=false \
    --ip6tables=false \
    --ip-forward=false \
    --ip-masq=false \
    --userland-proxy=false \
    >"$log" 2>&1 </dev/null &
  local launched=$! t0
  t0=$(date +%s)
  until DOCKER_HOST=$host docker info >/dev/null 2>&1; do
    if ! kill -0 "$launched" 2>/dev/null; then
      echo "dockerd.sh: dockerd exited while starting; the end of $log:" >&2
      tail -n 20 "$log" >&2
      exit 1
    fi
    if [ $(($(date +%s) - t0)) -ge "$START_TIMEOUT_S" ]; then
      echo "dockerd.sh: dockerd did not answer within ${START_TIMEOUT_S}s; stopping it" >&2
      tail -n 20 "$log" >&2
      kill -TERM "$launched" 2>/dev/null || true
      exit 1
    fi
    sleep 0.1
  done
  echo "dockerd.sh: dockerd pid $(cat "$pidfile"), storage $(DOCKER_HOST=$host docker info --format '{{.Driver}}' 2>/dev/null)" >&2
  echo "export DOCKER_HOST=$host"
}

stop() {
  local pid
  if pid=$(our_pid); then
    kill -TERM "$pid"
    # dockerd stops its containers and its containerd child, then exits (about 2 s)
    for _ in $(seq 1 150); do
      [ -d "/proc/$pid" ] || break
      sleep 0.1
    done
    if [ -d "/proc/$pid" ]; then
      echo "dockerd.sh: dockerd $pid ignored SIGTERM for 15 s; sending SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  else
    echo "dockerd.sh: no dockerd running for $dir" >&2
  fi
  unmount_under_dir
  rm -f "$pidfile" "$sock"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  env) echo "export DOCKER_HOST=$host" ;;
  *) usage ;;
esac
