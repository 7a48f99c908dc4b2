#!/usr/bin/env bash
# --bf16 --use-precision-aware-optimizer --main-grads-dtype bf16
# (docs/MIXED_PRECISION.md, "bf16 main gradients"):
#   1. one process, 4 micro-batches, 21 iterations: the gradients kiln
#      reduces are bitwise an independent NumPy reference of Megatron's
#      rounding points (bf16 accumulation per micro-batch, bf16 clipping,
#      FusedAdam's f32 upcast), and its parameters stay within 1e-5 of the
#      reference's own trajectory over the 20 checked steps
#      (bf16_main_grads_reference.py, from KILN_TEST_DUMP_GRADIENTS);
#   2. the same under mpirun with DP=2 (2 micro-batches a rank), the
#      reference adding the two ranks' bf16 sums in bf16;
#   3. DP=2 follows one process: with one micro-batch a rank (a global batch
#      of 2 micro-batches) and an untied head, every parameter gradient is a
#      bf16 value already, so one process's bf16(bf16(g0) + g1) is DP=2's
#      bf16(bf16(g0) + bf16(g1)): the same losses and parameters, exactly;
#      also with --use-distributed-optimizer (bf16 reduce-scatter); a
#      checkpoint resumes exactly (it holds no gradients);
#   4. the combinations Megatron refuses are refused;
#   5. --grad-reduce-in-bf16 (NVIDIA's Llama-3 8B FP8 example): the same bf16
#      accumulation and reduction, but the optimizer clips an f32 copy, one
#      process and DP=2 against the reference's --clip-in f32 (which also
#      checks that clipping in bf16 would be told apart), the distributed
#      optimizer against one process; with
#      --use-precision-aware-optimizer it is --main-grads-dtype bf16 exactly.
set -euo pipefail
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3; [ -x "$py" ] || py=python3
ref="$(dirname "$0")/bf16_main_grads_reference.py"
bf16=(--bf16 --use-precision-aware-optimizer --main-grads-dtype bf16)
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --lr 1e-2 --lr-warmup-iters 2 --log-interval 1 --eval-iters 0 --num-threads 1
        --hidden-dropout 0 --attention-dropout 0 --weight-decay 0.1 --clip-grad 0.5)

# 1. One process.
mkdir "$tmp/one"
KILN_TEST_DUMP_GRADIENTS="$tmp/one" "$kiln" train "${common[@]}" "${bf16[@]}" --global-batch-size 8 \
  --train-iters 21 >/dev/null
"$py" "$ref" "$tmp/one" --ranks 1 --clip-grad 0.5 --weight-decay 0.1

# 2. DP=2.
mkdir "$tmp/dp2"
KILN_TEST_DUMP_GRADIENTS="$tmp/dp2" mpi 2 "$kiln" train "${common[@]}" "${bf16[@]}" --global-batch-size 8 \
  --train-iters 21 >/dev/null
"$py" "$ref" "$tmp/dp2" --ranks 2 --clip-grad 0.5 --weight-decay 0.1

# 3. DP=2 against one process, exactly.
pair=(--global-batch-size 4 --train-iters 10 --untie-embeddings-and-output-weights)
"$kiln" train "${common[@]}" "${bf16[@]}" "${pair[@]}" --metrics-file "$tmp/a.jsonl" --save "$tmp/ca" >/dev/null
mpi 2 "$kiln" train "${common[@]}" "${bf16[@]}" "${pair[@]}" --metrics-file "$tmp/b.jsonl" --save "$tmp/cb" >/dev/null
mpi 2 "$kiln" train "${common[@]}" "${bf16[@]}" "${pair[@]}" --use-distributed-optimizer \
  --metrics-file "$tmp/c.jsonl" >/dev/null
same_trajectory "$tmp/a.jsonl" "$tmp/b.jsonl" 10 "bf16 main grads DP=2 vs 1 process" 1e-12
same_trajectory "$tmp/a.jsonl" "$tmp/c.jsonl" 10 "bf16 main grads DP=2 distributed optimizer vs 1 process" 1e-12
cmp "$tmp/ca/iter_0000010/model.safetensors" "$tmp/cb/iter_0000010/model.safetensors" ||
  { echo "DP=2 parameters differ from one process's"; exit 1; }

# 3b. A checkpoint holds no gradients: saved at 5 and resumed, the run
# follows the straight one (a.jsonl) exactly.
"$kiln" train "${common[@]}" "${bf16[@]}" "${pair[@]}" --exit-interval 5 --save "$tmp/cr" >/dev/null
"$kiln" train "${common[@]}" "${bf16[@]}" "${pair[@]}" --load "$tmp/cr" \
  --metrics-file "$tmp/r.jsonl" >/dev/null
[ "$(losses "$tmp/a.jsonl" | tail -5)" = "$(losses "$tmp/r.jsonl")" ] ||
  { echo "resumed losses differ:"; losses "$tmp/a.jsonl"; losses "$tmp/r.jsonl"; exit 1; }
echo "bf16 main grads: resumed at 5, iterations 6-10 the same as the straight run"

# 4. Refusals, one line each.
refused() {  # expected-text flags...
  local want=$1; shift
  if "$kiln" train "${common[@]}" --train-iters 3 "$@" >"$tmp/r.out" 2>"$tmp/r.err"; then
    echo "accepted: $*"; exit 1
  fi
  grep -q "$want" "$tmp/r.err" || { echo "no '$want' for $*:"; cat "$tmp/r.err"; exit 1; }
}
refused "needs --bf16" --use-precision-aware-optimizer --main-grads-dtype bf16
refused "needs --use-precision-aware-optimizer" --bf16 --main-grads-dtype bf16
refused "ask for different gradient dtypes" "${bf16[@]}" --accumulate-allreduce-grads-in-fp32
refused "give fp32 or bf16" --main-grads-dtype fp16
refused "grad-reduce-in-bf16 needs --bf16" --grad-reduce-in-bf16
refused "ask for different gradient dtypes" --bf16 --grad-reduce-in-bf16 --accumulate-allreduce-grads-in-fp32

# 5. --grad-reduce-in-bf16: bf16 sums, an f32 copy clipped in f32.
reduce=(--bf16 --grad-reduce-in-bf16)
mkdir "$tmp/r1" "$tmp/r2"
KILN_TEST_DUMP_GRADIENTS="$tmp/r1" "$kiln" train "${common[@]}" "${reduce[@]}" --global-batch-size 8 \
  --train-iters 21 >/dev/null
"$py" "$ref" "$tmp/r1" --ranks 1 --clip-grad 0.5 --weight-decay 0.1 --clip-in f32
KILN_TEST_DUMP_GRADIENTS="$tmp/r2" mpi 2 "$kiln" train "${common[@]}" "${reduce[@]}" --global-batch-size 8 \
  --train-iters 21 >/dev/null
"$py" "$ref" "$tmp/r2" --ranks 2 --clip-grad 0.5 --weight-decay 0.1 --clip-in f32
# The distributed optimizer (not dumped) follows one process exactly, as in 3.
"$kiln" train "${common[@]}" "${reduce[@]}" "${pair[@]}" --metrics-file "$tmp/g1.jsonl" >/dev/null
mpi 2 "$kiln" train "${common[@]}" "${reduce[@]}" "${pair[@]}" --use-distributed-optimizer \
  --metrics-file "$tmp/g2.jsonl" >/dev/null
same_trajectory "$tmp/g1.jsonl" "$tmp/g2.jsonl" 10 "--grad-reduce-in-bf16 DP=2 distributed optimizer vs 1 process" 1e-12
"$kiln" train "${common[@]}" "${reduce[@]}" --use-precision-aware-optimizer "${pair[@]}" \
  --metrics-file "$tmp/p.jsonl" >/dev/null
[ "$(losses "$tmp/a.jsonl")" = "$(losses "$tmp/p.jsonl")" ] ||
  { echo "--grad-reduce-in-bf16 --use-precision-aware-optimizer differs from --main-grads-dtype bf16"; exit 1; }
echo "bf16 main gradients and --grad-reduce-in-bf16: reference, DP=2 and refusals pass"
