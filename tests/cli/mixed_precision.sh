#!/usr/bin/env bash
# --bf16 and --fp16 on the cpu backend (docs/MIXED_PRECISION.md):
#  1. each trains the default model to a final loss within 5% of fp32's;
#  2. an fp16 run whose gradients overflow at iteration 3 (the test hook
#     KILN_TEST_GRAD_OVERFLOW_AT) skips that step, halves the loss scale
#     (--hysteresis 1), logs both as Megatron does, and goes on; its skip
#     line names the poisoned gradient, and a loss scale beyond f16's range
#     names the tensor where the overflow begins (the loss gradient);
#  3. a bf16 checkpoint resumes in fp32 and an fp32 one in bf16;
#  4. --bf16 with --fp16, and loss-scaling flags without --fp16, are refused;
#  (a device that cannot store 16-bit values refuses --bf16 at setup:
#  tests/cli/vulkan_mixed_precision.sh, with a test hook hiding the feature).
set -euo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 8
        --lr 1e-2 --log-interval 1 --eval-iters 0 --num-threads 2 --hidden-dropout 0 --attention-dropout 0)
source "$(dirname "$0")/../tools/precisions.sh"

# 1. Final loss after 30 steps, fp32 against bf16 and fp16.
train_in_three_precisions "$tmp" cpu "${common[@]}"

# 2. The injected overflow: iteration 3 skipped, scale 4096 -> 2048, the
# skip counted (not as a nan iteration), training goes on.
KILN_TEST_GRAD_OVERFLOW_AT=3 "$kiln" train "${common[@]}" --train-iters 6 --fp16 --initial-loss-scale 4096 \
  --hysteresis 1 --save "$tmp/ck16" >"$tmp/overflow.log" 2>"$tmp/overflow.err"
line() { grep "iteration *$1/ *6 |" "$tmp/overflow.log"; }
line 2 | grep -q ' loss scale: 4096.0 | grad norm: [^|]* | number of skipped iterations:   0 | number of nan iterations:   0 |' ||
  { echo "iteration 2 before the overflow:"; line 2; exit 1; }
line 3 | grep -q ' global batch size: *8 | loss scale: 2048.0 | number of skipped iterations:   1 | number of nan iterations:   0 |' ||
  { echo "iteration 3 is not a skipped step with the halved scale:"; line 3; exit 1; }
line 6 | grep -q ' lm loss: [^|]* | loss scale: 2048.0 | grad norm: ' || { echo "no recovery:"; line 6; exit 1; }
tr -d ' \n' <"$tmp/ck16/iter_0000006/meta.json" >"$tmp/meta"
grep -q '"grad_scaler":{"growth_tracker":3,"hysteresis_tracker":0,"scale":2048.0}' "$tmp/meta" ||
  { echo "checkpoint holds no grad scaler state:"; cat "$tmp/ck16/iter_0000006/meta.json"; exit 1; }
want='iteration 3 skipped at loss scale 4096: first non-finite gradient: grad.embedding.word_embeddings.weight; first non-finite value: none in this rank.s step graph'
grep -q "$want" "$tmp/overflow.err" || { echo "no skip line naming the poisoned gradient:"; cat "$tmp/overflow.err"; exit 1; }
echo "overflow at iteration 3: skipped, loss scale 4096 -> 2048, saved in the checkpoint, the gradient named"
# A real overflow: 2^40 / 256 rows is far beyond 65504, so the loss
# gradient, the backward's first 16-bit tensor, is where it begins.
"$kiln" train "${common[@]}" --train-iters 1 --fp16 --initial-loss-scale 1099511627776 >/dev/null 2>"$tmp/scale.err"
want='iteration 1 skipped at loss scale 1099511627776: first non-finite gradient: grad\.[^;]*; first non-finite value: outside the layers: cross_entropy_grad (f16 \[256, 256\], reading targets), micro-batch 0'
grep -q "$want" "$tmp/scale.err" || { echo "no skip line naming the loss gradient:"; cat "$tmp/scale.err"; exit 1; }
grep "iteration 1 skipped" "$tmp/scale.err"

# 3. Resume across precisions: 4 steps saved in one, 4 more in the other,
# against 8 straight in the second precision. The checkpoint holds f32 main
# parameters and moments only, so the resumed run continues from them; the
# two differ only by bf16 rounding in 4 of the 8 steps. Measured: under 1e-4
# relative. The bound, 1e-3, is half of bf16's unit rounding (2^-9) and far
# below what a lost or misread state would move the loss.
for pair in "bf16 fp32" "fp32 bf16"; do
  set -- $pair
  flag() { [ "$1" = bf16 ] && echo --bf16 || true; }
  rm -rf "$tmp/ck"
  "$kiln" train "${common[@]}" --train-iters 8 $(flag "$2") --metrics-file "$tmp/straight.jsonl" >/dev/null
  "$kiln" train "${common[@]}" --train-iters 8 $(flag "$1") --save "$tmp/ck" \
    --save-interval 4 >/dev/null
  rm -rf "$tmp/ck/iter_0000008"; echo 4 >"$tmp/ck/latest_checkpointed_iteration.txt"
  "$kiln" train "${common[@]}" --train-iters 8 $(flag "$2") --load "$tmp/ck" --metrics-file "$tmp/resumed.jsonl" \
    >/dev/null
  awk -v a="$(final_loss "$tmp/straight.jsonl")" -v b="$(final_loss "$tmp/resumed.jsonl")" -v w="$1 -> $2" 'BEGIN {
    r = (b - a) / a; if (r < 0) r = -r
    printf "resume %s: final loss %.5f against %.5f straight (%.2e relative)\n", w, b, a, r; exit !(r < 1e-3) }'
done

# 4. Refusals, one line each, before any work.
expect_refusal() {
  local want=$1; shift
  if "$kiln" train "${common[@]}" --train-iters 1 "$@" >"$tmp/out" 2>&1; then echo "accepted: $*"; exit 1; fi
  grep -q -- "$want" "$tmp/out" || { echo "for $*, expected '$want', got:"; cat "$tmp/out"; exit 1; }
}
expect_refusal "--bf16 and --fp16 choose different compute dtypes" --bf16 --fp16
expect_refusal "apply to --fp16 only" --bf16 --loss-scale 128
expect_refusal "--hysteresis must be positive" --fp16 --hysteresis 0
echo "bad combinations refused"
