#!/usr/bin/env bash
# kiln export / import --format hf for MPT-style models (issue 18): ALiBi
# with 6 heads (not a power of two, so HF's slope reordering is exercised),
# no linear biases, LayerNorm without bias, the exact erf GELU and --clip-qkv.
# An independent NumPy MptForCausalLM (tests/tools/hf_mpt_numpy.py, written
# from HF's semantics) reads the export and matches kiln generate's logits
# within 1e-4 relative and its greedy continuation; the reference with the
# clamp removed does not (the clip is active). Import of the export gives back
# model.safetensors byte for byte and the same validation loss.
set -euo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ref="$(cd "$(dirname "$0")/../tools" && pwd)/hf_mpt_numpy.py"
source "$(dirname "$0")/../tools/hf_export_checks.sh"

mpt=(--num-layers 2 --hidden-size 48 --num-attention-heads 6 --seq-length 32 --position-embedding-type alibi
     --disable-bias-linear --disable-bias-layernorm --exact-gelu --clip-qkv 0.6 --hidden-dropout 0
     --attention-dropout 0)
train=(--micro-batch-size 4 --global-batch-size 8 --lr-warmup-iters 5 --lr 0.005 --eval-iters 0 --num-threads 2)
"$kiln" train "${mpt[@]}" "${train[@]}" --train-iters 150 --save "$tmp/ck" >/dev/null 2>&1
"$kiln" export --load "$tmp/ck" --format hf --output "$tmp/hf" >/dev/null
kiln_generate_reference "$tmp/ck"
check_logits "$tmp/hf" 1e-4
check_greedy "$tmp/hf"
grep -q '"model_type": "mpt"' "$tmp/hf/config.json"
grep -q '"clip_qkv": 0.6' "$tmp/hf/config.json"
grep -q '"no_bias": true' "$tmp/hf/config.json"
"$py" "$ref" tensors "$tmp/hf" >"$tmp/hf_tensors"  # to a file: grep -q would end a pipe early (SIGPIPE)
grep -q '^transformer.blocks.1.attn.Wqkv.weight F32 \[144, 48\]$' "$tmp/hf_tensors" ||
  { echo "Wqkv is not [3 * 48, 48]"; exit 1; }
grep -Eq 'bias|lm_head' "$tmp/hf_tensors" && { echo "the export wrote a bias or lm_head"; exit 1; }

# The clamp matters: without it the reference leaves kiln's logits.
mkdir "$tmp/unclipped"
"$py" -c 'import json, sys; c = json.load(open(sys.argv[1])); c["attn_config"]["clip_qkv"] = None
json.dump(c, open(sys.argv[2], "w"))' "$tmp/hf/config.json" "$tmp/unclipped/config.json"
ln -s "$tmp/hf/model.safetensors" "$tmp/unclipped/model.safetensors"
"$py" "$ref" logits "$tmp/unclipped" "$prompt" >"$tmp/unclipped_logits.json"
if compare_logits "$tmp/kiln_logits.json" "$tmp/unclipped_logits.json" 1e-3; then
  echo "--clip-qkv 0.6 clipped nothing; the test does not check the clamp"
  exit 1
fi

# Import: the same tensors bit for bit, and the same validation loss.
"$kiln" import --format hf --input "$tmp/hf" --save "$tmp/imported" >/dev/null
cmp "$tmp/ck/iter_0000150/model.safetensors" "$tmp/imported/iter_0000000/model.safetensors" ||
  { echo "import of the export changed the model tensors"; exit 1; }
original_loss=$(validation_loss "$tmp/ck" "${mpt[@]}")
imported_loss=$(validation_loss "$tmp/imported" "${mpt[@]}")
echo "validation loss: original $original_loss, imported $imported_loss"
[ -n "$original_loss" ] && [ "$original_loss" = "$imported_loss" ] ||
  { echo "the import does not start from the original's loss"; exit 1; }
echo "hf mpt export/import: logits, greedy, clamp, round trip and loss all match"
