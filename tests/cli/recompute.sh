#!/usr/bin/env bash
# Activation recomputation (issue 17, docs/DISTRIBUTED.md), with dropout on:
# - --recompute-activations (selective) and --recompute-granularity full
#   --recompute-method uniform|block give losses and gradient norms bitwise
#   identical to a run without recomputation (the masks replay exactly),
#   in fp32 and in bf16;
# - Megatron's invalid combinations are refused with one line.
set -uo pipefail
kiln=$1
# Bitwise comparisons need each run to pick the same GEMM kernel per shape.
# The cpu backend's default choice between its own GEMM and oneDNN's is
# timed per shape at compile (backends/cpu/gemm_choice.h), and a recomputing
# step's pieces are other executables, so in bf16 (where the two kernels
# round differently) a run can pick otherwise than the one it is compared
# with. kiln's own GEMM everywhere is what --deterministic-mode selects;
# replay is bitwise with oneDNN's too (KILN_CPU_GEMM=library).
export KILN_CPU_GEMM=kiln
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
common=(--num-layers 3 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --global-batch-size 4 --train-iters 4 --eval-iters 0 --log-interval 1 --num-threads 1
        --hidden-dropout 0.2 --attention-dropout 0.2)
run() { local out=$1; shift; "$kiln" train "${common[@]}" "$@" --metrics-file "$tmp/$out.jsonl" >"$tmp/$out.log" 2>&1 ||
          { cat "$tmp/$out.log"; fail "run $out"; }; }
pick() { grep -o '"grad_norm":[^,]*\|"lm_loss":[^,]*' "$1"; }

run plain
[ "$(pick "$tmp/plain.jsonl" | grep -c lm_loss)" = 4 ] || fail "the plain run logged no 4 losses"
run selective --recompute-activations
run uniform --recompute-granularity full --recompute-method uniform --recompute-num-layers 1
run block --recompute-granularity full --recompute-method block --recompute-num-layers 2
for r in selective uniform block; do
  diff <(pick "$tmp/plain.jsonl") <(pick "$tmp/$r.jsonl") >/dev/null ||
    { paste <(pick "$tmp/plain.jsonl") <(pick "$tmp/$r.jsonl"); fail "$r recomputation changed the losses"; }
done
echo "ok: selective, full/uniform/1 and full/block/2 are bitwise identical to no recomputation ($(pick "$tmp/plain.jsonl" | tail -1))"
# In bf16 the replayed nodes compute in the same dtype, so the same holds.
run bf16 --bf16
run bf16_uniform --bf16 --recompute-granularity full --recompute-method uniform --recompute-num-layers 2
diff <(pick "$tmp/bf16.jsonl") <(pick "$tmp/bf16_uniform.jsonl") >/dev/null || fail "bf16 full recomputation changed the losses"
echo "ok: bf16, full/uniform/2 bitwise identical to no recomputation"

refused() {  # expected message part, then flags
  local want=$1; shift
  if "$kiln" train "${common[@]}" --train-iters 1 "$@" >"$tmp/bad.log" 2>&1; then fail "accepted: $*"; fi
  grep -qF -- "$want" "$tmp/bad.log" || { cat "$tmp/bad.log"; fail "no '$want' for: $*"; }
  [ "$(grep -c . "$tmp/bad.log")" = 1 ] || { cat "$tmp/bad.log"; fail "more than one line for: $*"; }
}
refused "recompute_method must be" --recompute-granularity full --recompute-num-layers 1
refused "recompute_num_layers must be between 1 and num_layers_per_pipeline_rank: 3" \
  --recompute-granularity full --recompute-method uniform
refused "num_layers_per_pipeline_rank: 3" --recompute-granularity full --recompute-method block --recompute-num-layers 4
refused "recompute method is not yet supported for selective" --recompute-activations --recompute-method uniform
refused "recompute_num_layers must be None" --recompute-granularity selective --recompute-num-layers 1
refused "means --recompute-granularity selective" --recompute-activations --recompute-granularity full \
  --recompute-method uniform --recompute-num-layers 1
refused "apply with --recompute-granularity full" --recompute-method uniform
refused "is not one of selective, full" --recompute-granularity everything
echo "ok: invalid combinations refused with one line"
