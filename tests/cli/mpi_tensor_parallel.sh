#!/usr/bin/env bash
# Tensor parallelism under a real mpirun (Megatron's layout: QKV and fc1
# column-parallel, attention-proj and fc2 row-parallel, vocab-parallel
# embedding and cross-entropy, all-reduces as graph nodes):
#   - TP=2 follows the 1-process loss trajectory over 20 steps within 1e-5
#     (the split matmuls add their partial sums in another order);
#   - DP=2 x TP=2 on 4 ranks does too;
#   - with oneDNN's GEMM forced on every matmul (KILN_CPU_GEMM=library, the
#     cpu backend's per-shape library path), TP=2 follows one process within
#     1e-6 (docs/PERFORMANCE.md, "CPU matrix units": the documented bound);
#   - a checkpoint saved under TP=2 resumes in 1 process and one saved by
#     1 process resumes under TP=2, each on the uninterrupted trajectory;
#   - layouts that do not fit fail with a one-line error.
set -euo pipefail
# Resumes that change the schedule flags (--train-iters sets Megatron's weight-decay
# steps) take the flags' schedule: --override-opt_param-scheduler (docs/CHECKPOINTS.md).
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --global-batch-size 8 --lr-warmup-iters 2 --log-interval 1 --eval-iters 2 --eval-interval 10
        --num-threads 1)

"$kiln" train "${common[@]}" --train-iters 20 --metrics-file "$tmp/one.jsonl" >"$tmp/one.log"
mpi 2 "$kiln" train "${common[@]}" --train-iters 20 --tensor-model-parallel-size 2 \
  --metrics-file "$tmp/tp2.jsonl" >"$tmp/tp2.log" 2>&1
same_trajectory "$tmp/one.jsonl" "$tmp/tp2.jsonl" 20 "TP=2 vs 1 process"
grep -q "tensor parallel: 2 ranks per model replica" "$tmp/tp2.log" ||
  { echo "TP=2 run did not report its layout:"; cat "$tmp/tp2.log"; exit 1; }
# Validation losses agree too (printed by the last rank).
paste <(grep -o "lm loss value: [^ ]*" "$tmp/one.log" | cut -d' ' -f4) \
      <(grep -o "lm loss value: [^ ]*" "$tmp/tp2.log" | cut -d' ' -f4) |
  awk '{ d = $1 - $2; if (d < 0) d = -d; if (d / $1 > 1e-5) bad = 1; k++ }
       END { printf "validation: %d evaluations compared\n", k; exit bad || k != 2 }'

mpi 4 "$kiln" train "${common[@]}" --train-iters 20 --tensor-model-parallel-size 2 \
  --check-weight-hash-across-dp-replicas-interval 10 --metrics-file "$tmp/dp2tp2.jsonl" >"$tmp/dp2tp2.log"
same_trajectory "$tmp/one.jsonl" "$tmp/dp2tp2.jsonl" 20 "DP=2 x TP=2 vs 1 process"
grep -q "parameters identical on all 2 ranks at iteration 20" "$tmp/dp2tp2.log" ||
  { echo "no data-parallel parameter check:"; cat "$tmp/dp2tp2.log"; exit 1; }

KILN_CPU_GEMM=library "$kiln" train "${common[@]}" --train-iters 20 --metrics-file "$tmp/one-lib.jsonl" >/dev/null
KILN_CPU_GEMM=library mpi 2 "$kiln" train "${common[@]}" --train-iters 20 --tensor-model-parallel-size 2 \
  --metrics-file "$tmp/tp2-lib.jsonl" >/dev/null
same_trajectory "$tmp/one-lib.jsonl" "$tmp/tp2-lib.jsonl" 20 "TP=2 vs 1 process, oneDNN GEMMs" 1e-6

# Checkpoints hold full tensors whatever the layout.
after6() { grep -E '"iteration":([7-9]|1[0-2])[,}]' "$1"; }
short=(--train-iters 6 --lr-decay-iters 20)
resume=(--train-iters 12 --lr-decay-iters 20)
after6 "$tmp/one.jsonl" >"$tmp/one_after6.jsonl"
mpi 2 "$kiln" train "${common[@]}" "${short[@]}" --tensor-model-parallel-size 2 --save "$tmp/tp2" >/dev/null
test "$(cat "$tmp/tp2/latest_checkpointed_iteration.txt")" = 6
"$kiln" train "${common[@]}" "${resume[@]}" --load "$tmp/tp2" --override-opt_param-scheduler --metrics-file "$tmp/from_tp2.jsonl" >/dev/null
same_trajectory "$tmp/one_after6.jsonl" "$tmp/from_tp2.jsonl" 6 "saved under TP=2, resumed by 1 process"

"$kiln" train "${common[@]}" "${short[@]}" --save "$tmp/tp1" >/dev/null
mpi 2 "$kiln" train "${common[@]}" "${resume[@]}" --tensor-model-parallel-size 2 --load "$tmp/tp1" --override-opt_param-scheduler \
  --metrics-file "$tmp/from_tp1.jsonl" >/dev/null
same_trajectory "$tmp/one_after6.jsonl" "$tmp/from_tp1.jsonl" 6 "saved by 1 process, resumed under TP=2"

# A Llama-style model (RMSNorm, 2 query groups of 2 heads: one per rank,
# SwiGLU, RoPE, untied vocab-parallel output layer, no biases, and QK-LayerNorm) follows its 1-process
# trajectory too, and its TP=2 checkpoint resumes in one process.
llama+=(--qk-layernorm)
"$kiln" train "${common[@]}" "${llama[@]}" --train-iters 20 --metrics-file "$tmp/llama_one.jsonl" >/dev/null
mpi 2 "$kiln" train "${common[@]}" "${llama[@]}" --train-iters 20 --tensor-model-parallel-size 2 \
  --metrics-file "$tmp/llama_tp2.jsonl" >/dev/null
same_trajectory "$tmp/llama_one.jsonl" "$tmp/llama_tp2.jsonl" 20 "Llama-style TP=2 vs 1 process"
after6 "$tmp/llama_one.jsonl" >"$tmp/llama_one_after6.jsonl"
mpi 2 "$kiln" train "${common[@]}" "${llama[@]}" "${short[@]}" --tensor-model-parallel-size 2 --save "$tmp/llama_tp2" \
  >/dev/null
"$kiln" train "${common[@]}" "${llama[@]}" "${resume[@]}" --load "$tmp/llama_tp2" --override-opt_param-scheduler \
  --metrics-file "$tmp/llama_from_tp2.jsonl" >/dev/null
same_trajectory "$tmp/llama_one_after6.jsonl" "$tmp/llama_from_tp2.jsonl" 6 "Llama-style saved under TP=2, resumed by 1 process"

# An MPT-style model (ALiBi, no biases, QK-LayerNorm, QKV clipping at 0.2,
# which clips from the first step at this size) does too. Each rank holds 2
# of the 4 heads, so its ALiBi slopes must be those of its own heads (the
# slopes of heads 0 and 1 on both ranks would leave the 1-process trajectory).
mpt=(--position-embedding-type alibi --disable-bias-linear --qk-layernorm --clip-qkv 0.2)
"$kiln" train "${common[@]}" "${mpt[@]}" --train-iters 20 --metrics-file "$tmp/mpt_one.jsonl" >/dev/null
mpi 2 "$kiln" train "${common[@]}" "${mpt[@]}" --train-iters 20 --tensor-model-parallel-size 2 \
  --metrics-file "$tmp/mpt_tp2.jsonl" >/dev/null
same_trajectory "$tmp/mpt_one.jsonl" "$tmp/mpt_tp2.jsonl" 20 "MPT-style TP=2 vs 1 process"
after6 "$tmp/mpt_one.jsonl" >"$tmp/mpt_one_after6.jsonl"
mpi 2 "$kiln" train "${common[@]}" "${mpt[@]}" "${short[@]}" --tensor-model-parallel-size 2 --save "$tmp/mpt_tp2" \
  >/dev/null
"$kiln" train "${common[@]}" "${mpt[@]}" "${resume[@]}" --load "$tmp/mpt_tp2" --override-opt_param-scheduler \
  --metrics-file "$tmp/mpt_from_tp2.jsonl" >/dev/null
same_trajectory "$tmp/mpt_one_after6.jsonl" "$tmp/mpt_from_tp2.jsonl" 6 "MPT-style saved under TP=2, resumed by 1 process"

# Layouts that do not fit: one line, non-zero exit.
expect_error() {  # expect_error PATTERN COMMAND...
  local pattern=$1 status=0; shift
  "$@" >"$tmp/bad.log" 2>&1 || status=$?
  [ "$status" != 0 ] && grep -q -- "$pattern" "$tmp/bad.log" ||
    { echo "expected a failure matching '$pattern' (status $status):"; cat "$tmp/bad.log"; exit 1; }
}
expect_error "tensor-model-parallel-size 2 does not divide the 3 ranks" \
  mpi 3 "$kiln" train "${common[@]}" --train-iters 1 --tensor-model-parallel-size 2
expect_error "num-attention-heads 2 is not divisible by --tensor-model-parallel-size 4" \
  mpi 4 "$kiln" train --num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 32 --train-iters 1 \
  --tensor-model-parallel-size 4
expect_error "num-query-groups 1 is not divisible by --tensor-model-parallel-size 2" \
  mpi 2 "$kiln" train "${common[@]}" --train-iters 3 --tensor-model-parallel-size 2 --group-query-attention \
  --num-query-groups 1
echo "mismatched layouts rejected with one-line errors"
