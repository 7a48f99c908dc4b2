#!/usr/bin/env bash
# Dropout (issue 15), on by default at Megatron's 0.1:
# - it acts: the losses differ from a run with --hidden-dropout 0 --attention-dropout 0;
# - a run resumed from a checkpoint is bitwise identical to the uninterrupted run;
# - the masks do not depend on how the global batch is cut into micro-batches;
# - cpu, OpenCL and Vulkan train to the same losses (the conformance suite
#   compares the masks themselves bit for bit: kiln check-backend --filter dropout);
# - the validation loss is computed without dropout (GptGraphs.* unit tests
#   check the graphs; here: evaluating twice gives the same value).
set -uo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
losses() { grep -o '"lm_loss":[^,}]*' "$1" | cut -d: -f2; }
common=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --global-batch-size 8
        --log-interval 1 --lr-decay-iters 10 --num-threads 1)
run() { local out=$1; shift; "$kiln" train "${common[@]}" "$@" --metrics-file "$tmp/$out.jsonl" >"$tmp/$out.log" 2>&1 ||
          { cat "$tmp/$out.log"; fail "run $out"; }; }

run full --micro-batch-size 4 --train-iters 10 --eval-iters 2 --eval-interval 5
run off --micro-batch-size 4 --train-iters 10 --eval-iters 0 --hidden-dropout 0 --attention-dropout 0
[ "$(losses "$tmp/full.jsonl" | sed -n 10p)" != "$(losses "$tmp/off.jsonl" | sed -n 10p)" ] || fail "dropout changed nothing"

run first --micro-batch-size 4 --train-iters 5 --eval-iters 2 --eval-interval 5 --save "$tmp/ck"
"$kiln" train "${common[@]}" --micro-batch-size 4 --train-iters 10 --eval-iters 2 --eval-interval 5 --load "$tmp/ck" --override-opt_param-scheduler \
  --metrics-file "$tmp/first.jsonl" >"$tmp/second.log" 2>&1 || { cat "$tmp/second.log"; fail "resume"; }
pick() { grep -o '"grad_norm":[^,]*\|"lm_loss":[^,]*' "$1"; }
diff <(pick "$tmp/full.jsonl") <(pick "$tmp/first.jsonl") >/dev/null || fail "the resumed run is not bitwise identical"
v_full=$(grep -o "validation loss at iteration 10 | lm loss value: [^ ]*" "$tmp/full.log")
v_resumed=$(grep -o "validation loss at iteration 10 | lm loss value: [^ ]*" "$tmp/second.log")
[ -n "$v_full" ] && [ "$v_full" = "$v_resumed" ] || fail "validation differs: '$v_full' vs '$v_resumed'"
echo "ok: resumed at iteration 5, bitwise identical to the uninterrupted run ($v_full)"

run mb2 --micro-batch-size 2 --train-iters 10 --eval-iters 0
paste <(losses "$tmp/full.jsonl") <(losses "$tmp/mb2.jsonl") | awk '
  { d = $1 - $2; if (d < 0) d = -d; if (d / $1 > worst) worst = d / $1; n++ }
  END { printf "micro-batch 4 vs 2 x accumulation: %d steps, worst relative difference %.2e\n", n, worst; exit !(n == 10 && worst < 1e-5) }' ||
  fail "the masks depend on the micro-batch size"

for backend in opencl vulkan; do
  if ! "$kiln" devices 2>/dev/null | grep -q "^backend $backend "; then echo "SKIP $backend: no device"; continue; fi
  run "$backend" --micro-batch-size 4 --train-iters 10 --eval-iters 0 --backend "$backend"
  grep -q "cpu fallback" "$tmp/$backend.log" && { grep "cpu fallback" "$tmp/$backend.log"; fail "$backend falls back"; }
  paste <(losses "$tmp/full.jsonl") <(losses "$tmp/$backend.jsonl") | awk -v b="$backend" '
    { d = $1 - $2; if (d < 0) d = -d; if (d / $1 > worst) worst = d / $1; n++ }
    END { printf "cpu vs %s: %d steps, worst relative difference %.2e\n", b, n, worst; exit !(n == 10 && worst < 1e-4) }' ||
    fail "cpu and $backend disagree"
done
