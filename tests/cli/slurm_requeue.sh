#!/usr/bin/env bash
# examples/slurm/train.sbatch on a real one-node Slurm (tests/tools/
# slurm_cluster.sh), scaled to a tiny model by its environment overrides:
#   1. `srun --mpi=pmix` starts 2 ranks that train as one data-parallel job;
#   2. SIGUSR2 to the job's tasks (what --signal=USR2@600 sends before the
#      time limit) makes kiln save and exit 0; the script requeues the job,
#      which resumes from the checkpoint on the same trajectory (every loss
#      equals an uninterrupted run's, bit for bit);
#   3. the save trigger file saves and training goes on; the exit trigger file
#      saves and stops the job, which is not requeued;
#   4. a rank killed by SIGKILL fails the job, which is not requeued.
# Not under ASan: Slurm's daemons take its time, and kiln's signal, save and
#   resume paths run under ASan in cli.mpi_stop_signals and cli.resume.
set -euo pipefail
kiln=$1
here=$(dirname "$0")
source "$here/../tools/slurm_cluster.sh"
slurm_have || { echo "SKIP: Slurm is not installed (scripts/install-deps.sh installs slurmctld, slurmd, slurm-client, munge)"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: the test's Slurm runs its daemons as root"; exit 77; }
sbatch_file=$(cd "$here/../../examples/slurm" && pwd)/train.sbatch

tmp=$(mktemp -d /tmp/kiln-slurm.XXXXXX)
trap 'slurm_stop; rm -rf "$tmp"' EXIT
slurm_start "$tmp/cluster"
export KILN=$kiln KILN_CACHE_DIR=${KILN_CACHE_DIR:-$tmp/cache}
export KILN_ARGS="--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
  --global-batch-size 8 --log-interval 1 --eval-iters 0 --num-threads 1 --lr 1e-3 --hidden-dropout 0.1"

fail() { echo "FAIL: $*"; for f in "$tmp"/*.out; do echo "---- $f"; tail -n 30 "$f"; done; slurm_logs; exit 1; }
wait_until() {  # $1: condition (a shell command); $2: what it means; 60 s
  for _ in $(seq 600); do eval "$1" && return 0; sleep 0.1; done
  fail "timed out waiting until $2"
}
iterations() {
  local n
  n=$(grep -c '"iteration"' "$1" 2> /dev/null) || true
  echo "${n:-0}"
}
job_field() { scontrol show job "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }
submit() {  # submit NAME CKPT TRAIN_ITERS: prints the job id
  CKPT=$2 TRAIN_ITERS=$3 sbatch --parsable --job-name="$1" --nodes=1 --ntasks=2 --ntasks-per-node=2 --cpus-per-task=1 \
    --output="$tmp/$1.out" "$sbatch_file"
}
rank_pids() { pgrep -f -- "^[^ ]*kiln train .*--save $1 " || true; }  # the ranks, not srun

# The trajectory a requeued job must follow: the same flags, uninterrupted.
iters=800
# shellcheck disable=SC2086
srun --mpi=pmix --ntasks=2 --cpus-per-task=1 "$kiln" train $KILN_ARGS --train-iters $iters \
  --metrics-file "$tmp/reference.jsonl" > "$tmp/reference.out" 2>&1 || { cat "$tmp/reference.out"; fail "srun"; }
grep -q "data parallel: 2 ranks" "$tmp/reference.out" || fail "srun --mpi=pmix did not start one 2-rank job"
echo "srun --mpi=pmix: 2 ranks, $(iterations "$tmp/reference.jsonl") iterations"

# 2. SIGUSR2 mid-run: save, exit 0, requeue, resume.
job=$(submit requeue "$tmp/ck" $iters)
wait_until '[ "$(iterations "$tmp/ck/metrics.jsonl")" -ge 6 ]' "the job trains"
scancel --signal=USR2 "$job"
# Slurm holds a requeued job for 120 s (its BeginTime); the test lets it go at once.
wait_until '[ "$(job_field "$job" Restarts)" = 1 ] && [ "$(job_field "$job" JobState)" = PENDING ]' "the job is requeued"
# slurmd revokes the ended instance's credential with one-second resolution:
# a restart within that second is killed as "Job credential revoked".
sleep 2
scontrol update JobId="$job" StartTime=now
wait_until '[ "$(job_field "$job" JobState)" = COMPLETED ]' "the job completes after the requeue"
[ "$(job_field "$job" Restarts)" = 1 ] || fail "expected one requeue, got $(job_field "$job" Restarts)"
grep -q "received SIGTERM or SIGUSR2.*exiting at iteration" "$tmp/requeue.out" || fail "no signal exit line"
grep -q "requeueing to resume" "$tmp/requeue.out" || fail "the script did not requeue"
grep -q "training done at iteration $iters" "$tmp/requeue.out" || fail "the resumed run did not finish"
saved=$(grep -o "exiting at iteration [0-9]*" "$tmp/requeue.out" | head -n 1 | grep -o "[0-9]*$")
python3 - "$tmp/reference.jsonl" "$tmp/ck/metrics.jsonl" "$iters" <<'PY' || fail "the requeued job left the trajectory"
import json, sys
ref = {r["iteration"]: r["lm_loss"] for r in map(json.loads, open(sys.argv[1])) if "lm_loss" in r}
got = {}
for r in map(json.loads, open(sys.argv[2])):
    if "lm_loss" in r:
        got[r["iteration"]] = r["lm_loss"]  # the resumed run's value wins
n = int(sys.argv[3])
assert sorted(ref) == list(range(1, n + 1)), sorted(ref)
bad = [i for i in ref if got.get(i) != ref[i]]
assert not bad, [(i, ref[i], got.get(i)) for i in bad]
PY
echo "SIGUSR2: saved at iteration $saved, exited 0, requeued once, resumed to $iters on the same trajectory"

# 3. Trigger files.
job=$(submit triggers "$tmp/ck2" 1000000)
wait_until '[ "$(iterations "$tmp/ck2/metrics.jsonl")" -ge 4 ]' "the job trains"
touch "$tmp/ck2/kiln-save-now"
wait_until '[ -f "$tmp/ck2/latest_checkpointed_iteration.txt" ] && [ ! -e "$tmp/ck2/kiln-save-now" ]' \
  "the save trigger saves"
at=$(iterations "$tmp/ck2/metrics.jsonl")
wait_until '[ "$(iterations "$tmp/ck2/metrics.jsonl")" -gt $((at + 2)) ]' "training goes on after the save"
touch "$tmp/ck2/kiln-exit-now"
wait_until '[ "$(job_field "$job" JobState)" = COMPLETED ]' "the exit trigger ends the job"
[ "$(job_field "$job" Restarts)" = 0 ] || fail "the exit trigger's job was requeued"
grep -q "stopped by the exit trigger file" "$tmp/triggers.out" || fail "no exit-trigger line from the script"
echo "triggers: the save trigger saved at iteration $(cat "$tmp/ck2/latest_checkpointed_iteration.txt") and training went on;" \
  "the exit trigger saved, exited 0 and was not requeued"

# 4. A crashing rank.
job=$(submit crash "$tmp/ck3" 1000000)
wait_until '[ "$(iterations "$tmp/ck3/metrics.jsonl")" -ge 3 ]' "the job trains"
pids=$(rank_pids "$tmp/ck3")
[ "$(echo "$pids" | wc -w)" = 2 ] || fail "expected 2 rank processes, found: $pids"
kill -9 "$(echo "$pids" | head -n 1)"
wait_until '[ "$(job_field "$job" JobState)" = FAILED ]' "the job fails"
[ "$(job_field "$job" Restarts)" = 0 ] || fail "the crashed job was requeued"
grep -q "not requeueing" "$tmp/crash.out" || fail "no not-requeueing line"
echo "crash: a rank killed by SIGKILL failed the job ($(job_field "$job" ExitCode)), not requeued"
