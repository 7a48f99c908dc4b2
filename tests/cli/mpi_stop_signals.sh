#!/usr/bin/env bash
# SIGUSR2 to mpirun (which forwards it to every rank) and SIGTERM to one
# rank alone (as a batch system may deliver it) both make every rank agree,
# at the next step boundary, to save a checkpoint and exit 0 with a message;
# resuming from it continues exactly as a run that was never interrupted.
set -euo pipefail
# The resumes change --train-iters (Megatron's weight-decay steps), so they take
# the flags' schedule: --override-opt_param-scheduler (docs/CHECKPOINTS.md).
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
# The schedule must not depend on --train-iters, so fix the decay length.
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --global-batch-size 8 --lr-warmup-iters 2 --lr-decay-iters 100000 --log-interval 1 --eval-iters 0
        --num-threads 1)
pick() { grep -o '"grad_norm":[^,]*\|"iteration":[0-9]*\|"lm_loss":[^,]*' "$1" | paste -d' ' - - - ; }
wait_for_step() {  # until the metrics file $1 has logged step $2
  for _ in $(seq 600); do
    [ "$(cat "$1" 2>/dev/null | grep -c '"iteration"' || true)" -ge "$2" ] && return 0; sleep 0.1
  done
  echo "training never reached step $2"; exit 1
}

stop_and_resume() {  # $1: how to deliver the signal; $2: name
  local dir=$tmp/$2
  mkdir -p "$dir"
  mpirun "${mpi_flags[@]}" -np 2 "$kiln" train "${common[@]}" --train-iters 100000 --save "$dir/ck" --metrics-file "$dir/first.jsonl" \
    >"$dir/first.log" 2>&1 &
  local launcher=$!
  wait_for_step "$dir/first.jsonl" 3
  $1 "$launcher"
  local status=0; wait "$launcher" || status=$?
  [ "$status" = 0 ] || { echo "$2: exit status $status"; cat "$dir/first.log"; exit 1; }
  grep -q "received SIGTERM or SIGUSR2.*exiting at iteration" "$dir/first.log" ||
    { echo "$2: no exit message"; cat "$dir/first.log"; exit 1; }
  local saved; saved=$(cat "$dir/ck/latest_checkpointed_iteration.txt")
  echo "$2: saved at iteration $saved and exited 0: $(grep -o 'received.*' "$dir/first.log" | tail -1)"
  local end=$((saved + 4))
  mpi 2 "$kiln" train "${common[@]}" --train-iters $end --load "$dir/ck" --override-opt_param-scheduler --metrics-file "$dir/resumed.jsonl" >/dev/null
  mpi 2 "$kiln" train "${common[@]}" --train-iters $end --metrics-file "$dir/straight.jsonl" >/dev/null
  local want; want=$(pick "$dir/straight.jsonl" | tail -4)
  local got; got=$(pick "$dir/resumed.jsonl")
  [ "$(echo "$got" | wc -l)" = 4 ] && [ "$want" = "$got" ] ||
    { echo "$2: resumed run diverged"; diff <(echo "$want") <(echo "$got"); exit 1; }
  echo "$2: resumed steps $((saved + 1))..$end identical to an uninterrupted run"
}

usr2_to_mpirun() { kill -USR2 "$1"; }
term_to_one_rank() {  # the rank processes are mpirun's children
  local rank; rank=$(pgrep -P "$1" -f "kiln train" | head -1)
  kill -TERM "$rank"
}
stop_and_resume usr2_to_mpirun sigusr2
stop_and_resume term_to_one_rank sigterm_one_rank
