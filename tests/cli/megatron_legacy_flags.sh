#!/usr/bin/env bash
# Flags that left Megatron's arguments.py before the commit of
# tests/data/megatron_flags.txt but that launch scripts still pass (AWS's GPT-3
# sbatch and Kubernetes template: --log-batch-size-to-tensorboard; NVIDIA's
# 2021-2024 examples: --DDP-impl, --no-scatter-gather-tensors-in-pipeline,
# --no-async-tensor-model-parallel-allreduce, --use-legacy-models; Llama
# scripts: --no-query-key-layer-scaling) train with kiln as their rows say
# (trainer/megatron_compat_legacy.cpp), and the 2021 names of the scheduler
# override flags act as the new ones, as --layernorm-epsilon and
# --checkpoint-num-layers do.
set -euo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

tiny=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --micro-batch-size 2 --train-iters 2
      --log-interval 1 --eval-iters 0 --num-threads 2)
old=(--log-batch-size-to-tensorboard --no-log-learnig-rate-to-tensorboard --DDP-impl torch
     --no-async-tensor-model-parallel-allreduce --no-scatter-gather-tensors-in-pipeline --use-legacy-models
     --no-query-key-layer-scaling --mmap-warmup)
"$kiln" train "${tiny[@]}" "${old[@]}" --tensorboard-dir "$tmp/tb" >"$tmp/out" 2>"$tmp/err" ||
  { cat "$tmp/err"; fail "the old flags did not train"; }
[ "$(grep -c '] iteration ' "$tmp/out")" -eq 2 ] || { cat "$tmp/out"; fail "expected 2 iteration lines"; }
info=$(grep 'Megatron flags accepted with no effect' "$tmp/err") || { cat "$tmp/err"; fail "no no-effect info line"; }
for flag in --log-batch-size-to-tensorboard '--DDP-impl torch' --no-async-tensor-model-parallel-allreduce \
  --no-scatter-gather-tensors-in-pipeline --use-legacy-models --no-query-key-layer-scaling --mmap-warmup; do
  case "$info" in *"$flag"*) ;; *) fail "info line lacks $flag: $info" ;; esac
done
grep -q -- '--no-log-learnig-rate-to-tensorboard ignored: kiln writes the learning rate to TensorBoard' "$tmp/err" ||
  { cat "$tmp/err"; fail "no warning for --no-log-learnig-rate-to-tensorboard"; }
# --DDP-impl keeps Megatron's choices; the old recompute sharding is refused as its new name is.
for bad in "--DDP-impl fsdp:not one of Megatron's choices (local, torch)" \
  "--distribute-checkpointed-activations:kiln does not shard recomputed layers' saved inputs"; do
  flag=${bad%%:*} want=${bad#*:}
  # shellcheck disable=SC2086  # the flag and its value split into words
  if "$kiln" train "${tiny[@]}" $flag >"$tmp/out" 2>"$tmp/err"; then fail "$flag was accepted"; fi
  grep -q -- "$want" "$tmp/err" || { cat "$tmp/err"; fail "$flag: expected '$want'"; }
done

# A resume with another --lr-decay-iters is refused unless an override is
# given; the 2021 names (Megatron before 04ecc83465) are accepted as the new ones.
"$kiln" train "${tiny[@]}" --lr-decay-iters 4 --save "$tmp/ck" >/dev/null 2>&1 || fail "the first run"
if "$kiln" train "${tiny[@]}" --train-iters 3 --lr-decay-iters 6 --load "$tmp/ck" >/dev/null 2>"$tmp/err"; then
  fail "a resume with another --lr-decay-iters was accepted"
fi
for override in --override-lr-scheduler --use-checkpoint-lr-scheduler; do
  "$kiln" train "${tiny[@]}" --train-iters 3 --lr-decay-iters 6 --load "$tmp/ck" "$override" >"$tmp/out" 2>"$tmp/err" ||
    { cat "$tmp/err"; fail "$override did not resume"; }
  grep -q '] iteration        3/' "$tmp/out" || { cat "$tmp/out"; fail "$override: no iteration 3"; }
done
# The old names of kiln train flags train as the new ones: --layernorm-epsilon
# (--norm-epsilon) and --checkpoint-num-layers (chunks of --checkpoint-activations).
"$kiln" train "${tiny[@]}" --layernorm-epsilon 1e-6 --checkpoint-activations --checkpoint-num-layers 2 \
  --save "$tmp/old_names" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err"; fail "the old names did not train"; }
grep -q -- "--checkpoint-activations: recomputing as --recompute-granularity full --recompute-method uniform --recompute-num-layers 2" \
  "$tmp/err" || { cat "$tmp/err"; fail "--checkpoint-num-layers 2 was not the chunk size"; }
# (meta.json holds the model's float 1e-6 as a double.)
grep -Eq '"layernorm_epsilon": ?9.99999997[0-9]*e-07' "$tmp/old_names/iter_0000002/meta.json" ||
  { cat "$tmp/old_names/iter_0000002/meta.json"; fail "--layernorm-epsilon 1e-6 not in the checkpoint"; }
echo "ok: the old flags trained as their rows say; --override-lr-scheduler and --use-checkpoint-lr-scheduler resumed"
