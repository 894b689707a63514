#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for the tests marked `slurm` (make test-slurm).
#
#   scripts/slurm-cluster.sh start   install Debian's slurmctld/slurmd/slurm-client/munge when
#                                    missing (as root), write a config under $PEAR_SLURM_DIR
#                                    (default /tmp/pear-slurm), start munged, slurmctld and
#                                    slurmd, wait until the node is idle; prints the line
#                                    `export SLURM_CONF=...` that clients need
#   scripts/slurm-cluster.sh stop    stop the daemons this script started
#   scripts/slurm-cluster.sh status  sinfo of the cluster
#
# PEAR_SLURM_NODE_MB sets the node's memory (default: this machine's less 512 MB; make
# test-slurm uses 8000, a node too small for a fixed 8G job).
# No systemd, no cgroups, no accounting database (so no sacct: squeue / scontrol show job).
# The node declares 4 GPUs backed by dummy device files, and its partition oversubscribes
# (FORCE:4) so that several small tasks share two cores.  Not a production configuration.
set -euo pipefail
DIR=${PEAR_SLURM_DIR:-/tmp/pear-slurm}
CONF=$DIR/slurm.conf
NODE=$(hostname -s)
PARTITION=${PEAR_SLURM_PARTITION:-debug}

install() {
  if command -v slurmctld >/dev/null && command -v slurmd >/dev/null \
     && command -v sbatch >/dev/null && command -v munged >/dev/null; then return; fi
  if [ "$(id -u)" != 0 ]; then
    echo "slurm-cluster: Slurm is not installed and this is not root: install slurmctld slurmd slurm-client munge" >&2
    exit 1
  fi
  echo "slurm-cluster: installing slurmctld slurmd slurm-client munge" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q slurmctld slurmd slurm-client munge >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null && apt-get install -y -q slurmctld slurmd slurm-client munge >/dev/null; }
}

write_config() {
  mkdir -p "$DIR"/{state,spool,log,run,dev}
  local cpus mem
  cpus=$(nproc)
  mem=${PEAR_SLURM_NODE_MB:-$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 512 ))}
  for i in 0 1 2 3; do : > "$DIR/dev/gpu$i"; done
  cat > "$CONF" <<CONF
ClusterName=pear
SlurmctldHost=$NODE
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldPort=${PEAR_SLURMCTLD_PORT:-6817}
SlurmdPort=${PEAR_SLURMD_PORT:-6818}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
MinJobAge=600
KillWait=10
MaxArraySize=10001
GresTypes=gpu
NodeName=$NODE CPUs=$cpus RealMemory=$mem Gres=gpu:4 State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
  {
    for i in 0 1 2 3; do echo "NodeName=$NODE Name=gpu File=$DIR/dev/gpu$i"; done
  } > "$DIR/gres.conf"
}

start() {
  local t0; t0=$(date +%s.%N)
  install
  stop_daemons quiet
  write_config
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown root:root /var/log/munge /var/log/munge/munged.log 2>/dev/null || true
  [ -s /etc/munge/munge.key ] || { dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 2>/dev/null; chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key; }
  if [ ! -S /run/munge/munge.socket.2 ] || ! pgrep -x munged >/dev/null; then
    munged --force
    touch "$DIR/run/started-munged"
  fi
  for _ in $(seq 1 40); do [ -S /run/munge/munge.socket.2 ] && break; sleep 0.25; done
  export SLURM_CONF=$CONF
  slurmctld -f "$CONF"
  slurmd -f "$CONF"
  local ok=
  for _ in $(seq 1 120); do
    if timeout 5 scontrol update nodename="$NODE" gres=gpu:4 >/dev/null 2>&1 \
       && timeout 5 sinfo -h -N -o '%t' 2>/dev/null | grep -qx 'idle'; then ok=1; break; fi
    sleep 0.25
  done
  if [ -z "$ok" ]; then
    echo "slurm-cluster: the node did not become idle; logs in $DIR/log" >&2
    tail -n 5 "$DIR/log/slurmctld.log" "$DIR/log/slurmd.log" >&2 || true
    exit 1
  fi
  printf 'slurm-cluster: up in %.1f s (node %s, partition %s, 4 dummy GPUs)\n' \
    "$(echo "$(date +%s.%N) - $t0" | bc)" "$NODE" "$PARTITION" >&2
  echo "export SLURM_CONF=$CONF"
}

stop_daemons() {
  for pidfile in "$DIR/run/slurmd.pid" "$DIR/run/slurmctld.pid"; do
    if [ -s "$pidfile" ]; then
      local pid; pid=$(cat "$pidfile")
      if kill -0 "$pid" 2>/dev/null; then
        kill "$pid"
        for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
      fi
      rm -f "$pidfile"
    fi
  done
  if [ -f "$DIR/run/started-munged" ] && [ -s /run/munge/munged.pid ]; then
    local mpid; mpid=$(cat /run/munge/munged.pid)
    kill "$mpid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$mpid" 2>/dev/null || break; sleep 0.25; done
  fi
  rm -f "$DIR/run/started-munged"
  [ "${1:-}" = quiet ] || echo "slurm-cluster: stopped" >&2
}

case "${1:-}" in
  start) start ;;
  stop) stop_daemons ;;
  status) SLURM_CONF=$CONF sinfo ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
