#!/usr/bin/env bash
# A one-machine Slurm cluster for the market (issue 34): install Debian's slurm-wlm and munge if
# missing, write /etc/slurm/slurm.conf from the market's resource types (manage.py slurm_config),
# create a munge key if missing, start munged, slurmctld and slurmd, and wait until sinfo shows the
# node ready. Idempotent: with the same config and the daemons up it changes nothing; a changed
# config restarts the daemons (running jobs survive in StateSaveLocation). Run as root.
#
# Environment:
#   SLURM_SCHED=default   Debian's scheduler defaults (sched/backfill, default intervals) instead of
#                         the tuned builtin scheduler (for measuring the difference).
#   SLURM_PARTITIONS      "map:40 reduce:20": the partitions when manage.py cannot run (no venv).
#   SLURM_NODE_CPUS       CPUs the one node claims (default 64; at least the capacities' sum).
set -euo pipefail
cd "$(dirname "$0")/../.."
started=$(date +%s.%N)
say() { echo "slurm-up: $*"; }
fail() { echo "slurm-up: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "run as root (it installs packages and starts daemons)"

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  say "installing slurm-wlm and munge from Debian"
  # waits for another apt/dpkg run instead of failing on its lock
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq slurm-wlm munge >/dev/null
fi

node=$(hostname -s)
node_cpus=${SLURM_NODE_CPUS:-64}
if [ -x .venv/bin/python ] && partitions=$(.venv/bin/python manage.py slurm_config --node "$node" --node-cpus "$node_cpus" 2>/tmp/slurm-config.err); then
  :
else
  say "manage.py slurm_config did not run ($(tail -n1 /tmp/slurm-config.err 2>/dev/null || echo 'no .venv')); using SLURM_PARTITIONS"
  spec=${SLURM_PARTITIONS:-map:40 reduce:20}
  partitions="# from SLURM_PARTITIONS: $spec"$'\n'"NodeName=$node CPUs=$node_cpus Sockets=1 CoresPerSocket=$node_cpus ThreadsPerCore=1 RealMemory=16000 State=UNKNOWN"
  default=YES
  for p in $spec; do
    partitions+=$'\n'"PartitionName=${p%%:*} Nodes=$node MaxCPUsPerNode=${p##*:} Default=$default MaxTime=INFINITE State=UP OverSubscribe=NO"
    default=NO
  done
fi

if [ "${SLURM_SCHED:-tuned}" = default ]; then
  sched="# Debian's scheduler defaults (SLURM_SCHED=default)"
else
  # the builtin FIFO scheduler, run on every submission and completion: about twice the start rate
  # of the backfill defaults for short array tasks on a small machine (bench/bench_slurm_array.py)
  sched=$'SchedulerType=sched/builtin\nSchedulerParameters=sched_min_interval=0,batch_sched_delay=0,sched_interval=1'
fi

conf=$(mktemp)
cat >"$conf" <<CONF
# Written by make slurm-up (docker/slurm/slurm-up.sh); edits are overwritten.
ClusterName=market
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
# a container without systemd or cgroups: plain process tracking, no task confinement
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# finished jobs stay in squeue for 10 minutes: without an accounting database (no sacct) that is
# where the market reads completions and exit codes
MinJobAge=600
MaxJobCount=100000
MaxArraySize=100001
# one node claims more CPUs than the machine has; the partitions cap each resource type
SlurmdParameters=config_overrides
$sched
$partitions
CONF

mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
changed=0
if ! cmp -s "$conf" /etc/slurm/slurm.conf; then
  install -m 644 "$conf" /etc/slurm/slurm.conf
  changed=1
  say "wrote /etc/slurm/slurm.conf"
fi
rm -f "$conf"

running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

if [ ! -s /etc/munge/munge.key ]; then
  say "creating a munge key"
  mkdir -p /etc/munge
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
fi
chown -R munge:munge /etc/munge /run/munge /var/log/munge /var/lib/munge 2>/dev/null || true
chmod 700 /etc/munge && chmod 400 /etc/munge/munge.key
if ! running /run/munge/munged.pid && ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  say "starting munged"
  runuser -u munge -- /usr/sbin/munged
fi

if [ "$changed" = 1 ]; then
  # a new node or partition layout needs fresh daemons (scontrol reconfigure does not add nodes)
  bash docker/slurm/slurm-down.sh --keep-munge >/dev/null
fi
if ! running /run/slurmctld.pid; then say "starting slurmctld"; slurmctld; fi
if ! running /run/slurmd.pid; then say "starting slurmd"; slurmd; fi

for _ in $(seq 1 60); do
  state=$(sinfo -h -n "$node" -o %T 2>/dev/null | head -n1 || true)
  case "$state" in
    idle|mixed|allocated|completing) break ;;
    down*|drain*) scontrol update NodeName="$node" State=RESUME 2>/dev/null || true ;;
  esac
  sleep 0.5
done
case "${state:-}" in
  idle|mixed|allocated|completing) ;;
  *) fail "node $node is '${state:-unknown}' after 30 s; see /var/log/slurm/slurmctld.log and slurmd.log" ;;
esac
sinfo
say "ready in $(echo "$(date +%s.%N) - $started" | bc 2>/dev/null || echo '?') s ($(sinfo -V))"
