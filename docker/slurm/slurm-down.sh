#!/usr/bin/env bash
# Stop the one-machine Slurm cluster of make slurm-up: slurmd, slurmctld, then munged (unless
# --keep-munge). Jobs still queued stay in StateSaveLocation for the next start. Stops the daemons
# by the ids in their pid files, and waits until each is gone.
set -euo pipefail
stop() {  # stop NAME PIDFILE
  local pid
  [ -f "$2" ] || return 0
  pid=$(cat "$2")
  if kill -0 "$pid" 2>/dev/null; then
    echo "slurm-down: stopping $1 ($pid)"
    kill "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { echo "slurm-down: $1 ($pid) did not stop" >&2; return 1; }
  fi
  rm -f "$2"
}
stop slurmd /run/slurmd.pid
stop slurmctld /run/slurmctld.pid
[ "${1:-}" = --keep-munge ] || stop munged /run/munge/munged.pid
