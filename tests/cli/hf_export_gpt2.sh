#!/usr/bin/env bash
# kiln export --format hf / kiln import --format hf for GPT-2 (issue 18):
# an independent NumPy GPT-2 (tests/tools/hf_gpt2_numpy.py, written from HF's
# semantics) reads the export and matches kiln generate's logits within 1e-4
# relative and its greedy continuation; import of the export gives back the
# original model.safetensors byte for byte, and kiln train --load --finetune
# starts from it at the original's loss; sharding above --max-shard-size;
# bf16/f16 are round-to-nearest-even; --exact-gelu exports as "gelu".
set -euo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ref="$(cd "$(dirname "$0")/../tools" && pwd)/hf_gpt2_numpy.py"
source "$(dirname "$0")/../tools/hf_export_checks.sh"
model=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32)
common=("${model[@]}" --micro-batch-size 4 --global-batch-size 8 --lr-warmup-iters 5 --lr 0.005 --eval-iters 0
        --num-threads 2)
# 300 steps (about a second): enough that the greedy continuation is words, not one repeated byte.
"$kiln" train "${common[@]}" --train-iters 300 --save "$tmp/ck" >/dev/null 2>&1

# f32 export: logits and greedy continuation.
"$kiln" export --load "$tmp/ck" --format hf --output "$tmp/hf" >/dev/null
kiln_generate_reference "$tmp/ck"
check_logits "$tmp/hf" 1e-4
check_greedy "$tmp/hf"
grep -q '"model_type": "gpt2"' "$tmp/hf/config.json"
test -f "$tmp/hf/generation_config.json"

# Import of the export: the same tensors, bit for bit, and kiln train continues from it.
"$kiln" import --format hf --input "$tmp/hf" --save "$tmp/imported" >/dev/null
cmp "$tmp/ck/iter_0000300/model.safetensors" "$tmp/imported/iter_0000000/model.safetensors" ||
  { echo "import of the export changed the model tensors"; exit 1; }
# An import is a model only (Megatron's converted checkpoints): --finetune
# starts from it with the loss the original checkpoint has on the same batch.
"$kiln" train "${common[@]}" --train-iters 10 --load "$tmp/imported" --finetune --log-interval 1 \
  --metrics-file "$tmp/continued.jsonl" >/dev/null 2>&1
grep -q '"iteration":10' "$tmp/continued.jsonl" || { echo "kiln train --load --finetune of the import did not run"; exit 1; }
"$kiln" train "${common[@]}" --train-iters 10 --load "$tmp/ck" --finetune --log-interval 1 \
  --metrics-file "$tmp/original.jsonl" >/dev/null 2>&1
first_loss=$(grep -o '"lm_loss":[^,}]*' "$tmp/continued.jsonl" | head -1 | cut -d: -f2)
original_loss=$(grep -o '"lm_loss":[^,}]*' "$tmp/original.jsonl" | head -1 | cut -d: -f2)
[ "$first_loss" = "$original_loss" ] ||
  { echo "the import starts at loss $first_loss, the original checkpoint at $original_loss"; exit 1; }
# ... which is the trained model's: a fresh model's first loss is about ln(256) = 5.5.
"$py" -c "import sys; sys.exit(0 if float('$first_loss') < 4 else 1)" ||
  { echo "the imported checkpoint's first loss $first_loss is a fresh model's"; exit 1; }
if "$kiln" train "${common[@]}" --train-iters 10 --load "$tmp/imported" >/dev/null 2>"$tmp/err"; then
  echo "a plain --load of an import (no optimizer state) was accepted"; exit 1
fi
grep -q 'has no optimizer state .*pass --no-load-optim or --finetune' "$tmp/err" || { cat "$tmp/err"; exit 1; }
# The same validation loss as the original (the same batches, weights as loaded).
original_loss=$(validation_loss "$tmp/ck" "${model[@]}")
imported_loss=$(validation_loss "$tmp/imported" "${model[@]}")
echo "validation loss: original $original_loss, imported $imported_loss"
[ -n "$original_loss" ] && [ "$original_loss" = "$imported_loss" ] ||
  { echo "the import does not start from the original's loss"; exit 1; }

# Sharded: more than one shard and an index; the same logits and tensors.
export_sharded "$tmp/ck" "$tmp/sharded"
check_logits "$tmp/sharded" 1e-4
"$kiln" import --format hf --input "$tmp/sharded" --save "$tmp/imported_sharded" >/dev/null
cmp "$tmp/ck/iter_0000300/model.safetensors" "$tmp/imported_sharded/iter_0000000/model.safetensors"

# bf16 and f16: every tensor in that dtype, each value f32 rounded to nearest even.
check_narrow_dtypes "$tmp/ck" "$tmp/hf"

# --exact-gelu: exported as activation_function "gelu" (erf), the reference's
# exact GELU matches kiln's, and the import reads it back as --exact-gelu.
"$kiln" train "${common[@]}" --exact-gelu --train-iters 30 --save "$tmp/erf" >/dev/null 2>&1
"$kiln" export --load "$tmp/erf" --format hf --output "$tmp/hf_erf" >/dev/null
grep -q '"activation_function": "gelu"' "$tmp/hf_erf/config.json"
kiln_generate_reference "$tmp/erf"
check_logits "$tmp/hf_erf" 1e-4
"$kiln" import --format hf --input "$tmp/hf_erf" --save "$tmp/imported_erf" >/dev/null
grep -q '"exact_gelu": true' "$tmp/imported_erf/iter_0000000/meta.json" ||
  { echo "the import of an exact-GELU export lost --exact-gelu"; exit 1; }
echo "hf export/import: logits, greedy, round trip, shards and bf16/f16 all match"
