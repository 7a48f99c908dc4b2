# Sourced by the mixed-precision tests of each backend (mixed_precision.sh,
# opencl_mixed_precision.sh, vulkan_mixed_precision.sh).
#
# train_in_three_precisions DIR LABEL ARGS...: `kiln train ARGS` for 30 steps
# in fp32, bf16 and fp16 (fp16 from a loss scale of 4096: Megatron's default
# 2^32 would spend its first ~18 steps halving), logs and metrics in DIR.
# Returns non-zero, saying why, unless each run exits 0, each 16-bit run's
# final loss is within 5% of fp32's (issue 16's bound), and the bf16 log
# line carries Megatron's "loss scale: 1.0" after the loss.
# Needs $kiln.
final_loss() { grep -o '"lm_loss":[^,}]*' "$1" | tail -1 | cut -d: -f2; }
train_in_three_precisions() {
  local dir=$1 label=$2 p
  shift 2
  local -A flags=([fp32]="" [bf16]="--bf16" [fp16]="--fp16 --initial-loss-scale 4096")
  for p in fp32 bf16 fp16; do
    # shellcheck disable=SC2086  # the flags split into words
    if ! "$kiln" train "$@" --train-iters 30 ${flags[$p]} --metrics-file "$dir/$p.jsonl" >"$dir/$p.log" 2>&1; then
      echo "FAIL: $label: kiln train $* ${flags[$p]} exited non-zero:"
      tail -5 "$dir/$p.log"
      return 1
    fi
  done
  for p in bf16 fp16; do
    awk -v a="$(final_loss "$dir/fp32.jsonl")" -v b="$(final_loss "$dir/$p.jsonl")" -v p="$p" -v l="$label" 'BEGIN {
      r = (b - a) / a; if (r < 0) r = -r
      printf "%s final loss fp32 %.4f, %s %.4f: %.2f%% apart\n", l, a, p, b, 100 * r; exit !(r < 0.05) }' || return 1
  done
  if ! grep ' lm loss: [^|]* | loss scale: 1.0 | grad norm: ' "$dir/bf16.log" >/dev/null; then
    echo "FAIL: $label: the bf16 log line has no 'loss scale: 1.0' after the loss:"
    tail -2 "$dir/bf16.log"
    return 1
  fi
}
