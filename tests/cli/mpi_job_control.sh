#!/usr/bin/env bash
# Out-of-schedule saves and exits on 2 ranks: the save trigger file (checked
# every --log-interval steps) saves a checkpoint, is removed, and training
# goes on; the exit trigger file saves and exits 0; --exit-duration-in-mins
# saves and exits 0 once the time is up.
set -euo pipefail
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --global-batch-size 8 --train-iters 1000000 --log-interval 2 --eval-iters 0 --num-threads 1)
steps() { cat "$1" 2>/dev/null | grep -c '"iteration"' || true; }
wait_until() {  # $1: condition (a shell command); $2: what it means
  for _ in $(seq 600); do eval "$1" && return 0; sleep 0.1; done
  echo "timed out waiting until $2"; exit 1
}

mpirun "${mpi_flags[@]}" -np 2 "$kiln" train "${common[@]}" --save "$tmp/ck" --metrics-file "$tmp/m.jsonl" \
  >"$tmp/run.log" 2>&1 &
launcher=$!
wait_until '[ "$(steps "$tmp/m.jsonl")" -ge 2 ]' "step 4 is logged"
touch "$tmp/ck/kiln-save-now"
wait_until '[ -f "$tmp/ck/latest_checkpointed_iteration.txt" ]' "the save trigger saves"
saved=$(cat "$tmp/ck/latest_checkpointed_iteration.txt")
[ $((saved % 2)) = 0 ] || { echo "saved at step $saved, not at a log interval"; exit 1; }
wait_until '[ ! -e "$tmp/ck/kiln-save-now" ]' "the save trigger file is removed"
at=$(steps "$tmp/m.jsonl")
wait_until '[ "$(steps "$tmp/m.jsonl")" -gt $((at + 2)) ]' "training continues after the save"
kill -0 "$launcher"
echo "save trigger: checkpoint at iteration $saved, file removed, training continued"

touch "$tmp/ck/kiln-exit-now"
status=0; wait "$launcher" || status=$?
[ "$status" = 0 ] || { echo "exit trigger: status $status"; cat "$tmp/run.log"; exit 1; }
grep -q "found the exit trigger file .*exiting at iteration" "$tmp/run.log" || { cat "$tmp/run.log"; exit 1; }
[ ! -e "$tmp/ck/kiln-exit-now" ] || { echo "exit trigger file left behind (a requeued job would exit at once)"; exit 1; }
last=$(cat "$tmp/ck/latest_checkpointed_iteration.txt")
[ "$last" -gt "$saved" ] || { echo "exit trigger did not save"; exit 1; }
echo "exit trigger: saved at iteration $last and exited 0"

status=0
mpi 2 "$kiln" train "${common[@]}" --exit-duration-in-mins 0.05 --save "$tmp/ck2" >"$tmp/run2.log" 2>&1 || status=$?
[ "$status" = 0 ] || { echo "exit duration: status $status"; cat "$tmp/run2.log"; exit 1; }
grep -q "ran for --exit-duration-in-mins 0.05: exiting at iteration" "$tmp/run2.log" || { cat "$tmp/run2.log"; exit 1; }
echo "exit duration: saved at iteration $(cat "$tmp/ck2/latest_checkpointed_iteration.txt") and exited 0"
