# A one-node Slurm cluster on localhost, in a scratch directory, for tests.
# Source this file, then:
#   slurm_start DIR   munged, slurmctld and slurmd with every file under DIR,
#                     on free ports; exports SLURM_CONF; returns once the
#                     node is idle (or fails, printing the daemons' logs)
#   slurm_stop        stops the three daemons (also safe in an EXIT trap)
# Runs as root (the daemons' users are root, as in a container's Slurm).
# Nothing outside DIR is touched: no systemd, no /etc/slurm, no /run/munge.
# Debian's packages: slurmctld slurmd slurm-client munge (install-deps.sh).

slurm_have() {  # every program the cluster needs is installed
  local p
  for p in munged slurmctld slurmd srun sbatch scontrol squeue sinfo scancel; do
    command -v "$p" > /dev/null || return 1
  done
}

slurm_free_port() {  # a TCP port nothing listens on, from a range tests don't use
  local p
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 20000))
    (: < "/dev/tcp/127.0.0.1/$p") 2> /dev/null || { echo "$p"; return 0; }
  done
  return 1
}

slurm_logs() {
  local f
  for f in "$SLURM_DIR"/log/*.log; do echo "---- $f"; tail -n 20 "$f"; done
}

slurm_start() {
  SLURM_DIR=$1
  mkdir -p "$SLURM_DIR"/{state,spool,log}
  chmod 711 "$SLURM_DIR"
  head -c 1024 /dev/urandom > "$SLURM_DIR/munge.key"
  chmod 600 "$SLURM_DIR/munge.key"
  munged --force --socket="$SLURM_DIR/munge.sock" --key-file="$SLURM_DIR/munge.key" \
    --pid-file="$SLURM_DIR/munged.pid" --log-file="$SLURM_DIR/log/munged.log" \
    --seed-file="$SLURM_DIR/munge.seed" || { echo "slurm_cluster: munged did not start"; return 1; }
  local node ctld_port slurmd_port
  node=$(hostname -s)
  ctld_port=$(slurm_free_port) && slurmd_port=$(slurm_free_port) || { echo "slurm_cluster: no free port"; return 1; }
  cat > "$SLURM_DIR/slurm.conf" <<CONF
ClusterName=kilntest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SLURM_DIR/munge.sock
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/log/slurmctld.log
SlurmdLogFile=$SLURM_DIR/log/slurmd.log
PlugStackConfig=$SLURM_DIR/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
MinJobAge=600
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
CONF
  : > "$SLURM_DIR/plugstack.conf"
  # PMIx's per-step directory defaults to /tmp/spmix_appdir_<uid>_<job>.<step>:
  # two test clusters (jobs numbered from 1 in each) or a killed earlier run
  # would share it, and the second step then fails to launch ("File exists").
  # Each cluster keeps its own.
  mkdir -p "$SLURM_DIR/pmix"
  printf 'PMIxCliTmpDirBase=%s\n' "$SLURM_DIR/pmix" > "$SLURM_DIR/mpi.conf"
  # slurmd 22.05 always initialises a cgroup plugin, and its default
  # (autodetect) fails where nothing is mounted on /sys/fs/cgroup (a chroot,
  # some containers). Naming cgroup/v1 only loads the plugin: with
  # proctrack/linuxproc and task/none nothing creates a cgroup.
  printf 'CgroupPlugin=cgroup/v1\nCgroupAutomount=no\n' > "$SLURM_DIR/cgroup.conf"
  export SLURM_CONF=$SLURM_DIR/slurm.conf
  slurmctld -f "$SLURM_CONF" || { slurm_logs; return 1; }
  slurmd -f "$SLURM_CONF" || { slurm_logs; return 1; }
  for _ in $(seq 300); do
    [ "$(sinfo -h -o %t 2> /dev/null)" = idle ] && return 0
    sleep 0.1
  done
  echo "slurm_cluster: the node did not become idle in 30 s"
  slurm_logs
  return 1
}

slurm_stop() {
  [ -n "${SLURM_DIR:-}" ] || return 0
  local f pid
  scancel --full --user "$(id -un)" 2> /dev/null || true
  for f in slurmd slurmctld munged; do
    pid=$(cat "$SLURM_DIR/$f.pid" 2> /dev/null) || continue
    kill "$pid" 2> /dev/null || true
  done
  for _ in $(seq 50); do
    pgrep -f "$SLURM_DIR" > /dev/null || return 0
    sleep 0.1
  done
  pkill -9 -f "$SLURM_DIR" 2> /dev/null || true
}
