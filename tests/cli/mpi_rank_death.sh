#!/usr/bin/env bash
# A job never hangs on a lost rank. kill -9 of one rank: the job exits
# non-zero well within 60 s, naming the dead rank. A rank that stops
# responding without dying (SIGSTOP, as a hung node): the others' collective
# deadline (--distributed-timeout-minutes) ends the job, and the message
# names the silent rank from the heartbeats.
set -euo pipefail
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --global-batch-size 8 --train-iters 1000000 --log-interval 1 --eval-iters 0 --num-threads 1)
wait_for_step() {
  for _ in $(seq 600); do
    [ "$(cat "$1" 2>/dev/null | grep -c '"iteration"' || true)" -ge "$2" ] && return 0; sleep 0.1
  done
  echo "training never reached step $2"; exit 1
}

lose_a_rank() {  # $1: signal; $2: name; $3: pattern the output must hold
  mpirun "${mpi_flags[@]}" -np 2 "$kiln" train "${common[@]}" --distributed-timeout-minutes 0.2 --metrics-file "$tmp/$2.jsonl" \
    >"$tmp/$2.log" 2>&1 &
  local launcher=$!
  wait_for_step "$tmp/$2.jsonl" 3
  # Rank 1: the kiln process of this job (its --metrics-file is in its
  # command line) whose environment says OMPI_COMM_WORLD_RANK=1. Looked for
  # among all processes, for a while: only matching mpirun's direct
  # children once missed it in a clean-clone CI run ("cannot find rank 1").
  local victim=""
  for _ in $(seq 50); do
    for pid in $(pgrep -f "kiln train.*$tmp/$2.jsonl" || true); do
      tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 && victim=$pid
    done
    [ -n "$victim" ] && break
    sleep 0.1
  done
  [ -n "$victim" ] || { echo "cannot find rank 1"; ps -ef | grep "[k]iln train" || true; exit 1; }
  local start=$SECONDS
  kill "-$1" "$victim"
  local status=0
  for _ in $(seq 600); do kill -0 "$launcher" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$launcher" 2>/dev/null; then echo "$2: job still running after 60 s"; cat "$tmp/$2.log"; exit 1; fi
  wait "$launcher" || status=$?
  kill -9 "$victim" 2>/dev/null || true
  local took=$((SECONDS - start))
  [ "$status" != 0 ] || { echo "$2: exit status 0"; exit 1; }
  grep -q "$3" "$tmp/$2.log" || { echo "$2: no message matching '$3':"; cat "$tmp/$2.log"; exit 1; }
  echo "$2: job exited with status $status after ${took} s: $(grep -m1 "$3" "$tmp/$2.log")"
}

lose_a_rank KILL kill9 "rank 1.*\(exited on signal 9\|Killed\)"
lose_a_rank STOP stopped "rank 1 sent no heartbeat"
