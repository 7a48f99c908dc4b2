#!/usr/bin/env bash
# A Llama-style model -- RMSNorm, grouped-query attention (4 heads in 2
# groups), SwiGLU, an untied output layer, no linear biases, QK-LayerNorm,
# RoPE with Llama-3.1's scaling -- learns on the
# embedded corpus, and its checkpoint carries the whole model config:
# `kiln generate` samples from it without model flags, a resume with
# --use-checkpoint-args takes the model from it, and a resume with a
# different model flag is refused, naming the stored option. An MPT-style
# model (ALiBi, QKV clipping, no biases, QK-LayerNorm) learns too, and
# `kiln generate` samples from its checkpoint without model flags.
set -euo pipefail
# Resumes that change the schedule flags (--train-iters sets Megatron's weight-decay
# steps) take the flags' schedule: --override-opt_param-scheduler (docs/CHECKPOINTS.md).
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
model=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32
       --normalization RMSNorm --norm-epsilon 1e-6 --group-query-attention --num-query-groups 2
       --untie-embeddings-and-output-weights --disable-bias-linear --qk-layernorm --swiglu
       --position-embedding-type rope --rotary-base 500000 --use-rope-scaling)
run=(--micro-batch-size 8 --lr-warmup-iters 5 --log-interval 5 --eval-iters 2 --eval-interval 40 --num-threads 2)

"$kiln" train "${model[@]}" "${run[@]}" --train-iters 40 --save "$tmp/ck" --metrics-file "$tmp/m.jsonl" >"$tmp/log"
first=$(head -1 "$tmp/m.jsonl" | grep -o '"lm_loss":[^,]*' | cut -d: -f2)
last=$(tail -1 "$tmp/m.jsonl" | grep -o '"lm_loss":[^,]*' | cut -d: -f2)
echo "first logged loss $first, last $last"
awk -v f="$first" -v l="$last" 'BEGIN { exit !(f > 4.0 && l < f - 1.0) }' || { echo "loss did not fall enough"; exit 1; }

# The checkpoint holds Megatron-core's names and every option.
grep -Eq '"normalization": ?"RMSNorm"' "$tmp/ck/iter_0000040/meta.json" ||
  { echo "meta.json lacks the model options:"; cat "$tmp/ck/iter_0000040/meta.json"; exit 1; }
grep -Eq '"num_query_groups": ?2' "$tmp/ck/iter_0000040/meta.json"
grep -aq 'output_layer.weight' "$tmp/ck/iter_0000040/model.safetensors"
grep -aq 'self_attention.q_layernorm.weight' "$tmp/ck/iter_0000040/model.safetensors"

# generate needs no model flag.
"$kiln" generate --load "$tmp/ck" --prompt "The " --max-new-tokens 40 --num-threads 2 >"$tmp/gen.txt"
test "$(wc -c <"$tmp/gen.txt")" -gt 40 || { echo "generate wrote too little:"; cat "$tmp/gen.txt"; exit 1; }
echo "generated: $(head -c 60 "$tmp/gen.txt" | tr '\n' ' ')"

# Resuming with the same flags continues; with a different option it is refused by the config check.
# (--init-method-std differs: it only draws initial weights, which the load replaces.)
"$kiln" train "${model[@]}" "${run[@]}" --train-iters 45 --load "$tmp/ck" --override-opt_param-scheduler --metrics-file "$tmp/resumed.jsonl" \
  --init-method-std 0.05 >"$tmp/resumed.log"
grep -q "iteration       45/" "$tmp/resumed.log" || { echo "resume did not run on:"; cat "$tmp/resumed.log"; exit 1; }
# --use-checkpoint-args (Megatron's): the model comes from the checkpoint, no model flag at all; the
# training options (dropout, 0.1 by default) still come from the command line, so the run is the same.
"$kiln" train "${run[@]}" --use-checkpoint-args --train-iters 45 --load "$tmp/ck" --override-opt_param-scheduler --metrics-file "$tmp/ckargs.jsonl" \
  >"$tmp/ckargs.log"
grep -q "iteration       45/" "$tmp/ckargs.log" || { echo "--use-checkpoint-args did not resume:"; cat "$tmp/ckargs.log"; exit 1; }
cmp <(grep -o '"lm_loss":[^,]*' "$tmp/resumed.jsonl") <(grep -o '"lm_loss":[^,]*' "$tmp/ckargs.jsonl") ||
  { echo "--use-checkpoint-args trained differently from the same model flags"; exit 1; }
status=0
"$kiln" train "${model[@]/RMSNorm/LayerNorm}" "${run[@]}" --train-iters 45 --load "$tmp/ck" --override-opt_param-scheduler >"$tmp/bad.log" 2>&1 || status=$?
[ "$status" != 0 ] && grep -q '"normalization":"RMSNorm"' "$tmp/bad.log" ||
  { echo "a LayerNorm run loaded an RMSNorm checkpoint (status $status):"; cat "$tmp/bad.log"; exit 1; }
echo "llama-like model trained, generated and resumed"

# MPT's options: ALiBi and QKV clipping (kiln extensions), no biases, QK-LayerNorm.
"$kiln" train --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --disable-bias-linear \
  --qk-layernorm --clip-qkv 6 --position-embedding-type alibi "${run[@]}" --train-iters 40 --eval-iters 0 --metrics-file "$tmp/mpt.jsonl" \
  --save "$tmp/mpt" >/dev/null
first=$(head -1 "$tmp/mpt.jsonl" | grep -o '"lm_loss":[^,]*' | cut -d: -f2)
last=$(tail -1 "$tmp/mpt.jsonl" | grep -o '"lm_loss":[^,]*' | cut -d: -f2)
echo "MPT-like: first logged loss $first, last $last"
awk -v f="$first" -v l="$last" 'BEGIN { exit !(f > 4.0 && l < f - 1.0) }' || { echo "MPT-like loss did not fall"; exit 1; }

# The MPT checkpoint carries ALiBi and the clip bound: generate needs no model flag.
grep -Eq '"position_embedding_type": ?"alibi"' "$tmp/mpt/iter_0000040/meta.json" ||
  { echo "meta.json lacks ALiBi:"; cat "$tmp/mpt/iter_0000040/meta.json"; exit 1; }
grep -Eq '"clip_qkv": ?6' "$tmp/mpt/iter_0000040/meta.json"
"$kiln" generate --load "$tmp/mpt" --prompt "The " --max-new-tokens 40 --num-threads 2 >"$tmp/mpt_gen.txt"
test "$(wc -c <"$tmp/mpt_gen.txt")" -gt 40 || { echo "generate wrote too little:"; cat "$tmp/mpt_gen.txt"; exit 1; }
echo "MPT-like generated: $(head -c 60 "$tmp/mpt_gen.txt" | tr '\n' ' ')"
