#!/usr/bin/env bash
# kiln export / import --format hf for Llama-style models (issue 18): an
# independent NumPy LlamaForCausalLM (tests/tools/hf_llama_numpy.py, written
# from HF's semantics) reads the export and matches kiln generate's logits
# within 1e-4 relative and its greedy continuation, for RoPE with and without
# Llama-3.1 scaling, GQA with 2 groups, tied and untied heads, with and
# without biases, and kiln's interleaved rotary pairing (permuted into HF's
# rotate_half order). Import of the export gives back model.safetensors byte
# for byte and the same validation loss; sharding and bf16/f16 as GPT-2's.
set -euo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ref="$(cd "$(dirname "$0")/../tools" && pwd)/hf_llama_numpy.py"
source "$(dirname "$0")/../tools/hf_export_checks.sh"

llama=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --normalization RMSNorm
       --norm-epsilon 1e-6 --swiglu --group-query-attention --num-query-groups 2 --position-embedding-type rope
       --hidden-dropout 0 --attention-dropout 0)
train=(--micro-batch-size 4 --global-batch-size 8 --lr-warmup-iters 5 --lr 0.005 --eval-iters 0 --num-threads 2)

# Llama-3.1 style: scaled RoPE (rotary base 500000: the head's 4 frequencies
# fall in the kept, interpolated and divided bands), untied, no biases.
scaled=("${llama[@]}" --rotary-base 500000 --use-rope-scaling --rope-scaling-factor 8
        --untie-embeddings-and-output-weights --disable-bias-linear)
"$kiln" train "${scaled[@]}" "${train[@]}" --train-iters 300 --save "$tmp/ck" >/dev/null 2>&1
"$kiln" export --load "$tmp/ck" --format hf --output "$tmp/hf" >/dev/null
kiln_generate_reference "$tmp/ck"
check_logits "$tmp/hf" 1e-4
check_greedy "$tmp/hf"
grep -q '"model_type": "llama"' "$tmp/hf/config.json"
grep -q '"rope_type": "llama3"' "$tmp/hf/config.json"
grep -q '"tie_word_embeddings": false' "$tmp/hf/config.json"
test -f "$tmp/hf/generation_config.json"
"$py" "$ref" tensors "$tmp/hf" >"$tmp/hf_tensors"
grep -q '^model.layers.1.self_attn.k_proj.weight F32 \[16, 32\]$' "$tmp/hf_tensors" ||
  { echo "k_proj is not [2 groups * head dim 8, 32]"; exit 1; }

# Import: the same tensors bit for bit, and the same validation loss.
"$kiln" import --format hf --input "$tmp/hf" --save "$tmp/imported" >/dev/null
cmp "$tmp/ck/iter_0000300/model.safetensors" "$tmp/imported/iter_0000000/model.safetensors" ||
  { echo "import of the export changed the model tensors"; exit 1; }
original_loss=$(validation_loss "$tmp/ck" "${scaled[@]}")
imported_loss=$(validation_loss "$tmp/imported" "${scaled[@]}")
echo "validation loss: original $original_loss, imported $imported_loss"
[ -n "$original_loss" ] && [ "$original_loss" = "$imported_loss" ] ||
  { echo "the import does not start from the original's loss"; exit 1; }

# Sharded, and bf16/f16.
export_sharded "$tmp/ck" "$tmp/sharded"
check_logits "$tmp/sharded" 1e-4
"$kiln" import --format hf --input "$tmp/sharded" --save "$tmp/imported_sharded" >/dev/null
cmp "$tmp/ck/iter_0000300/model.safetensors" "$tmp/imported_sharded/iter_0000000/model.safetensors"
check_narrow_dtypes "$tmp/ck" "$tmp/hf"

# Plain RoPE, tied, with biases and interleaved rotary pairs: the export
# permutes q and k rows into rotate_half order; its import (rotate_half,
# --rotary-interleaved off) gives kiln the same logits.
plain=("${llama[@]}" --rotary-interleaved)
"$kiln" train "${plain[@]}" "${train[@]}" --train-iters 150 --save "$tmp/ck2" >/dev/null 2>&1
"$kiln" export --load "$tmp/ck2" --format hf --output "$tmp/hf2" >/dev/null
kiln_generate_reference "$tmp/ck2"
check_logits "$tmp/hf2" 1e-4
check_greedy "$tmp/hf2"
grep -q '"rope_scaling": null' "$tmp/hf2/config.json"
grep -q '"tie_word_embeddings": true' "$tmp/hf2/config.json"
grep -q '"attention_bias": true' "$tmp/hf2/config.json"
"$py" "$ref" tensors "$tmp/hf2" >"$tmp/hf2_tensors"  # to a file: grep -q would end a pipe early (SIGPIPE)
grep -q '^model.layers.0.mlp.gate_proj.bias F32 \[64\]$' "$tmp/hf2_tensors"
grep -q '^lm_head' "$tmp/hf2_tensors" && { echo "a tied export wrote lm_head"; exit 1; }
"$kiln" import --format hf --input "$tmp/hf2" --save "$tmp/imported2" >/dev/null
cp "$tmp/kiln_logits.json" "$tmp/original_logits.json"
kiln_generate_reference "$tmp/imported2/iter_0000000"
compare_logits "$tmp/kiln_logits.json" "$tmp/original_logits.json" 1e-5 ||
  { echo "the import of an interleaved export does not give kiln's logits"; exit 1; }
echo "hf llama export/import: logits, greedy, round trip, loss, shards and bf16/f16 all match"
