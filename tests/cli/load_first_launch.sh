#!/usr/bin/env bash
# `--save D --load D` on a first launch, as nearly every Megatron script runs:
# a missing or empty D prints Megatron's warning and starts from random
# (the same run as no --load at all); the next identical launch resumes from
# what the first saved. --exit-on-missing-checkpoint and --finetune refuse a
# D with no checkpoint; a file as --load stays an error.
set -euo pipefail
# The second launch extends --train-iters (Megatron's weight-decay steps), so it takes
# the flags' schedule: --override-opt_param-scheduler (docs/CHECKPOINTS.md).
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --global-batch-size 4 --train-iters 3 --log-interval 1 --eval-iters 0 --num-threads 1)
fail() { echo "FAIL: $*"; exit 1; }
# Each step's iteration, loss, grad norm and learning rate (not its timings).
steps() { grep -o '"grad_norm":[^,]*\|"iteration":[0-9]*\|"learning_rate":[^,]*\|"lm_loss":[^,]*' "$1"; }
first_iteration() { grep -o '"iteration":[0-9]*' "$1" | head -n 1 | cut -d: -f2; }
warned() {  # the run's stdout holds Megatron's two lines, once each
  local n1 n2
  n1=$(grep -c "^WARNING: could not find the metadata file $2/latest_checkpointed_iteration.txt" "$1" || true)
  n2=$(grep -c '^    will not load any checkpoints and will start from random$' "$1" || true)
  [ "$n1" = 1 ] && [ "$n2" = 1 ]
}

"$kiln" train "${common[@]}" --metrics-file "$tmp/scratch.jsonl" >/dev/null

# A missing D: warning, iteration 1 first, the same losses as no --load, a save.
d=$tmp/missing/ck
"$kiln" train "${common[@]}" --save "$d" --load "$d" --metrics-file "$tmp/first.jsonl" >"$tmp/out" 2>"$tmp/err"
warned "$tmp/out" "$d" || { cat "$tmp/out"; fail "no warning for a missing --load"; }
if grep -q "resumed from" "$tmp/err"; then fail "a missing --load resumed"; fi
[ "$(first_iteration "$tmp/first.jsonl")" = 1 ] || fail "a missing --load did not start at iteration 1"
[ "$(steps "$tmp/scratch.jsonl")" = "$(steps "$tmp/first.jsonl")" ] || fail "a missing --load trained otherwise than no --load"
[ "$(cat "$d/latest_checkpointed_iteration.txt")" = 3 ] || fail "the first launch did not save iteration 3"
echo "ok: missing --load started from random and saved iteration 3"

# The second identical launch (6 iterations now) resumes from that save.
"$kiln" train "${common[@]}" --train-iters 6 --save "$d" --load "$d" --override-opt_param-scheduler --metrics-file "$tmp/second.jsonl" \
  >"$tmp/out" 2>"$tmp/err"
grep -q "resumed from $d/iter_0000003 at iteration 3" "$tmp/err" || { cat "$tmp/err"; fail "no resume"; }
if grep -q "could not find the metadata file" "$tmp/out"; then fail "warned although a checkpoint was there"; fi
[ "$(first_iteration "$tmp/second.jsonl")" = 4 ] || fail "the second launch did not go on at iteration 4"
echo "ok: the second launch resumed at iteration 3"

# An empty D starts fresh as well.
mkdir -p "$tmp/empty"
"$kiln" train "${common[@]}" --save "$tmp/empty" --load "$tmp/empty" --metrics-file "$tmp/empty.jsonl" >"$tmp/out"
warned "$tmp/out" "$tmp/empty" || fail "no warning for an empty --load"
[ "$(steps "$tmp/scratch.jsonl")" = "$(steps "$tmp/empty.jsonl")" ] || fail "an empty --load trained otherwise than no --load"
echo "ok: empty --load started from random"

# Refusals: one line on stderr naming the directory and the fix, non-zero exit.
refuses() {
  local want=$1; shift
  if "$kiln" train "${common[@]}" "$@" >"$tmp/out" 2>"$tmp/err"; then fail "accepted: $*"; fi
  [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q -- "$want" "$tmp/err" || { cat "$tmp/err"; fail "wrong error for: $*"; }
  echo "ok: $(cat "$tmp/err")"
}
refuses "--load $tmp/nope does not exist and --exit-on-missing-checkpoint" --load "$tmp/nope" --exit-on-missing-checkpoint
refuses "--load $tmp/empty2 holds no checkpoint and --exit-on-missing-checkpoint" \
  --load "$(mkdir -p "$tmp/empty2" && echo "$tmp/empty2")" --exit-on-missing-checkpoint
refuses "--finetune starts from a checkpoint" --load "$tmp/nope" --finetune
echo x >"$tmp/file"
refuses "is not a directory" --load "$tmp/file"
[ ! -e "$tmp/nope" ] || fail "a refused run created --load"

# Under mpirun: the warning once (the last rank's), then a run and a save.
d2=$tmp/mpi/ck
mpi 2 "$kiln" train "${common[@]}" --save "$d2" --load "$d2" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err"; fail "mpirun"; }
warned "$tmp/out" "$d2" || { cat "$tmp/out"; fail "not one warning under mpirun -np 2"; }
[ "$(cat "$d2/latest_checkpointed_iteration.txt")" = 3 ] || fail "mpirun -np 2 did not save iteration 3"
echo "ok: mpirun -np 2 with a missing --load warned once and saved"
