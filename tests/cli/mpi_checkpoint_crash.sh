#!/usr/bin/env bash
# kill -9 of the writing rank in the middle of a checkpoint write (caught by
# watching for the temporary directory) leaves the previous checkpoint
# loadable and the latest-iteration file pointing at it; the job still ends.
set -euo pipefail
# The resumes change --train-iters (Megatron's weight-decay steps), so they take
# the flags' schedule: --override-opt_param-scheduler (docs/CHECKPOINTS.md).
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
# Big enough (about 25 MiB per checkpoint) that a write takes a while.
common=(--num-layers 4 --hidden-size 128 --num-attention-heads 4 --seq-length 32 --micro-batch-size 1
        --global-batch-size 2 --log-interval 1 --eval-iters 0 --num-threads 1)
mpirun "${mpi_flags[@]}" -np 2 "$kiln" train "${common[@]}" --train-iters 1000 --save-interval 2 --save "$tmp/ck" >"$tmp/run.log" 2>&1 &
launcher=$!
# Rank 0 writes; wait until a checkpoint exists and the next one is being written.
rank0=""
for _ in $(seq 200); do
  for pid in $(pgrep -P "$launcher" -f "kiln train" || true); do
    tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=0 && rank0=$pid
  done
  [ -n "$rank0" ] && break; sleep 0.05
done
[ -n "$rank0" ] || { echo "cannot find rank 0"; cat "$tmp/run.log"; exit 1; }
caught=""
for _ in $(seq 200000); do
  if [ -f "$tmp/ck/latest_checkpointed_iteration.txt" ] && compgen -G "$tmp/ck/.tmp_iter_*" >/dev/null; then
    kill -9 "$rank0"; caught=$(compgen -G "$tmp/ck/.tmp_iter_*" | head -1); break
  fi
  kill -0 "$launcher" 2>/dev/null || { echo "job ended early"; cat "$tmp/run.log"; exit 1; }
done
[ -n "$caught" ] || { echo "never saw a checkpoint being written"; exit 1; }
status=0; wait "$launcher" || status=$?
[ "$status" != 0 ] || { echo "job exited 0 after losing rank 0"; exit 1; }
latest=$(cat "$tmp/ck/latest_checkpointed_iteration.txt")
echo "killed rank 0 while writing $(basename "$caught"); latest file says $latest"
# The checkpoint it names is complete: training resumes from it.
"$kiln" train "${common[@]}" --train-iters $((latest + 1)) --load "$tmp/ck" --override-opt_param-scheduler --metrics-file "$tmp/resumed.jsonl" \
  >/dev/null
grep -q "\"iteration\":$((latest + 1))," "$tmp/resumed.jsonl" || { echo "resume from $latest failed"; exit 1; }
echo "resumed from iteration $latest and trained step $((latest + 1))"
