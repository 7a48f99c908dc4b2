#!/usr/bin/env bash
# Megatron's --exit-signal-handler on 2 ranks: SIGTERM, and --exit-signal
# SIGUSR1, to the rank processes (as Slurm delivers them; OpenMPI's mpirun
# ends the job on SIGTERM and here does not forward SIGUSR1, only SIGUSR2)
# make every rank save at the next
# iteration and exit 0; the resume continues from that checkpoint and
# --exit-interval stops it, saving, at the next multiple.
set -euo pipefail
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --global-batch-size 8 --train-iters 100000 --lr-warmup-iters 2 --log-interval 1 --eval-iters 0
        --num-threads 1)
steps() { cat "$1" 2>/dev/null | grep -c '"iteration"' || true; }
step_at() { grep -o '"iteration":[0-9]*' "$1" | "$2" -1 | cut -d: -f2; }  # $2: head or tail
wait_until() {
  for _ in $(seq 600); do eval "$1" && return 0; sleep 0.1; done
  echo "timed out waiting until $2"; exit 1
}

stop_and_resume() {  # $1: how to deliver the signal; $2: the flags; $3: name
  local dir=$tmp/$3
  mkdir -p "$dir"
  # shellcheck disable=SC2086
  mpirun "${mpi_flags[@]}" -np 2 "$kiln" train "${common[@]}" $2 --save "$dir/ck" \
    --metrics-file "$dir/first.jsonl" >"$dir/first.log" 2>&1 &
  local launcher=$!
  wait_until '[ "$(steps "$dir/first.jsonl")" -ge 3 ]' "$3: step 3 is logged"
  $1 "$launcher"
  local status=0; wait "$launcher" || status=$?
  [ "$status" = 0 ] || { echo "$3: exit status $status"; cat "$dir/first.log"; exit 1; }
  grep -q "received SIGTERM.*exiting at iteration .* with its checkpoint in" "$dir/first.log" ||
    { echo "$3: no exit line"; cat "$dir/first.log"; exit 1; }
  local saved; saved=$(cat "$dir/ck/latest_checkpointed_iteration.txt")
  [ "$saved" = "$(step_at "$dir/first.jsonl" tail)" ] || { echo "$3: saved at $saved, not the last step"; exit 1; }
  mpi 2 "$kiln" train "${common[@]}" --load "$dir/ck" --save "$dir/ck" --exit-interval 2 \
    --metrics-file "$dir/resumed.jsonl" >"$dir/resumed.log" 2>&1
  local stop=$(( (saved / 2 + 1) * 2 ))
  [ "$(step_at "$dir/resumed.jsonl" head)" = $((saved + 1)) ] && [ "$(step_at "$dir/resumed.jsonl" tail)" = "$stop" ] &&
    [ "$(cat "$dir/ck/latest_checkpointed_iteration.txt")" = "$stop" ] ||
    { echo "$3: the resume did not run $((saved + 1))..$stop and save"; cat "$dir/resumed.log"; exit 1; }
  echo "$3: both ranks saved at iteration $saved and exited 0; resumed at $((saved + 1)), --exit-interval 2 saved at $stop"
}

# The rank processes are mpirun's children.
term_to_ranks() { pkill -TERM -P "$1" -f "kiln train"; }
usr1_to_ranks() { pkill -USR1 -P "$1" -f "kiln train"; }
stop_and_resume term_to_ranks "--exit-signal-handler" sigterm
stop_and_resume usr1_to_ranks "--exit-signal-handler --exit-signal SIGUSR1" sigusr1
