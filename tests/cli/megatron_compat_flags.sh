#!/usr/bin/env bash
# A real Megatron launch script's flags (examples/llama/train_llama3_8b_h100_fp8.sh,
# its --mock-data branch, shrunk to a tiny model) train with kiln: the flags
# that pick a Megatron implementation detail are accepted and listed in one
# start-up info line (nothing per step), the outputs kiln lacks are warned
# about once, --log-throughput adds Megatron's TFLOP/s/GPU, --decoupled-lr, --grad-reduce-in-bf16 and
# --calculate-per-token-loss train (their numerics: mpi_decoupled_lr.sh, mpi_bf16_main_grads.sh,
# mpi_per_token_loss.sh) and its FP8 flags train (fp8_training.sh); the flags asking for what kiln lacks
# are each refused in one line.
# As the script passes them: its samples flags (2 iterations of 2 here), --load of
# a first launch, and its "--split '99,1,0'" whose quotes its word splitting keeps.
set -euo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/../tools/llama3_8b_fp8_example.sh"
# The script as written: its DTYPE is "fp8", so DTYPE_ARGS are in (their numerics: fp8_training.sh).
# shellcheck disable=SC2207  # the words of the example's groups
model_training=($(example_model_training 4 4 2) $(example_dtype_args) $(example_parallel_args))
logging() { example_logging "$@"; }
# shellcheck disable=SC2207  # the paths are mktemp's, without spaces
llama3=("${model_training[@]}" "${mock_data[@]}" $(logging "$tmp/ckpt" "$tmp/tb"))
run_only=(--metrics-file "$tmp/metrics.jsonl")

"$kiln" train "${llama3[@]}" "${run_only[@]}" >"$tmp/out" 2>"$tmp/err" || { echo "llama3 flags did not train:"; cat "$tmp/err"; exit 1; }
iterations=$(grep -c '] iteration ' "$tmp/out" || true)
[ "$iterations" -eq 2 ] || { echo "expected 2 iteration lines, got $iterations:"; cat "$tmp/out"; exit 1; }
grep -q 'saved checkpoint at iteration 2' "$tmp/out" || { echo "no checkpoint:"; cat "$tmp/out"; exit 1; }
# One info line lists the flags accepted with no effect, with their values, in the table's order.
info=$(grep 'Megatron flags accepted with no effect' "$tmp/err" || true)
[ "$(grep -c 'Megatron flags accepted with no effect' "$tmp/err" || true)" -eq 1 ] ||
  { echo "expected one no-effect info line:"; cat "$tmp/err"; exit 1; }
for flag in '--use-mcore-models' '--cross-entropy-loss-fusion' '--manual-gc' \
  '--num-workers 1' '--no-mmap-bin-files' '--empty-unused-memory-level 1' '--tiktoken-pattern v2' \
  '--no-create-attention-mask-in-dataloader' '--context-parallel-size 1'; do
  case "$info" in *"$flag"*) ;; *) echo "info line lacks $flag: $info"; exit 1 ;; esac
done
# Outputs kiln does not produce: one warning per reason, naming the flags.
# --log-throughput: Megatron's TFLOP/s/GPU field, its FLOP count of this model (2 x 32 tokens,
# 2 layers, GQA 4/2 heads of 16, SwiGLU 224, padded vocab 128384) over the iteration's time.
[ "$(grep -c '] iteration .* elapsed time per iteration (ms): [0-9.]* | throughput per GPU (TFLOP/s/GPU): [0-9.]* | throughput (tokens/s)' "$tmp/out" || true)" -eq 2 ] ||
  { echo "no TFLOP/s/GPU field:"; cat "$tmp/out"; exit 1; }
python3 - "$tmp/metrics.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    flops = m["tflops_per_gpu"] * m["ms_per_iteration"] / 1000 * 1e12
    assert abs(flops / 3199205376.0 - 1) < 1e-9, (flops, m)
PY
# Megatron's --profile is kiln's: its table at the end; the nsys step range is not.
grep -q -- '--profile-step-start 4, --profile-step-end 6 ignored: kiln has no nsys or PyTorch profiler hooks' \
  "$tmp/err" || { echo "no --profile-step-start warning:"; cat "$tmp/err"; exit 1; }
grep -q '^kiln profile: iteration 2 ' "$tmp/out" || { echo "no kiln profile table:"; cat "$tmp/out"; exit 1; }
grep -q -- '--ckpt-format torch_dist ignored: kiln writes its own checkpoint format' "$tmp/err" ||
  { echo "no --ckpt-format warning:"; cat "$tmp/err"; exit 1; }
# Nothing of the table's appears per step.
mentions=$(grep -v '\] iteration \|^ *validation\|^-*$\|saved checkpoint' "$tmp/out" | grep -c -- '--' || true)
[ "$mentions" -eq 0 ] || { echo "compat flags mentioned on stdout:"; cat "$tmp/out"; exit 1; }

# The flags of the script that ask for what kiln lacks: each refused in one line naming it, before any work.
refused() {
  local want=$1; shift
  if "$kiln" train "${llama3[@]}" "$@" >"$tmp/out" 2>"$tmp/err"; then echo "$* was accepted"; exit 1; fi
  [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q -- "$want" "$tmp/err" && [ ! -s "$tmp/out" ] ||
    { echo "$* -> stderr:"; cat "$tmp/err"; exit 1; }
  echo "ok: $(cat "$tmp/err")"
}
refused '--fp8-recipe mxfp8: kiln implements per-tensor scaling only' --fp8-recipe mxfp8
refused "--no-fp8-wgrad: kiln's FP8 training is per-tensor scaling" --no-fp8-wgrad
refused "--attention-backend fuse is not one of auto, flash, fused, unfused, local" --attention-backend fuse
refused "--transformer-impl te: not one of Megatron's choices" --transformer-impl te
refused '--context-parallel-size 2: kiln has no context parallelism' --context-parallel-size 2

# --help counts them in their own section, and --help-all lists them there.
"$kiln" train --help >"$tmp/help"
grep -q '^Megatron flags accepted for compatibility' "$tmp/help" || { echo "no compat section in --help"; exit 1; }
grep -qE '^  [0-9]+ rows: [0-9]+ no effect .*, [0-9]+ only the value kiln implements' "$tmp/help" ||
  { echo "no row counts in --help"; exit 1; }
grep -q 'kiln train --help-all lists each' "$tmp/help" || { echo "--help does not name --help-all"; exit 1; }
if grep -q '^  --transformer-impl' "$tmp/help"; then echo "--help lists the rows"; exit 1; fi
[ "$(wc -l <"$tmp/help")" -lt 200 ] || { echo "--help is $(wc -l <"$tmp/help") lines"; exit 1; }
grep -q '^  --lr-decay-style' "$tmp/help" || { echo "--help lacks kiln's own flags"; exit 1; }
"$kiln" train --help-all >"$tmp/help-all"
grep -q '^  --transformer-impl S  *\[no effect\]' "$tmp/help-all" || { echo "--help-all lacks the rows"; exit 1; }
grep -q '^  --lr-decay-style' "$tmp/help-all" || { echo "--help-all lacks kiln's own flags"; exit 1; }
# The script's real-data branch: a Megatron dataset made by kiln preprocess
# (kiln's docs, one document a paragraph) with a Hugging Face tokenizer.
make_example_data
# shellcheck disable=SC2046  # logging's words
"$kiln" train "${model_training[@]}" "${real_data[@]}" $(logging "$tmp/ckpt_real" "$tmp/tb_real") >"$tmp/out" \
  2>"$tmp/err" || { echo "llama3 flags did not train on real data:"; cat "$tmp/err"; exit 1; }
[ "$(grep -c '] iteration ' "$tmp/out" || true)" -eq 2 ] && grep -q 'saved checkpoint at iteration 2' "$tmp/out" ||
  { echo "real-data branch: expected 2 iterations and a checkpoint:"; cat "$tmp/out"; exit 1; }
# Its --vocab-size 128256 is Megatron's NullTokenizer flag: beside a tokenizer's own vocabulary, ignored, as there.
grep -q -- "--vocab-size 128256 ignored: the vocabulary is --tokenizer-type HuggingFaceTokenizer's" "$tmp/err" ||
  { echo "real-data branch: no --vocab-size warning:"; cat "$tmp/err"; exit 1; }
echo "llama3 flags: trained 2 steps on mock and real data; refusals in one line"
