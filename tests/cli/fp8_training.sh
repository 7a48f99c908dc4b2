#!/usr/bin/env bash
# FP8 training (docs/MIXED_PRECISION.md, "FP8"): NVIDIA's Llama-3 8B FP8
# example (tests/tools/llama3_8b_fp8_example.sh), scaled in shape only,
# trains as written on cpu, OpenCL and Vulkan, on both data branches.
#   - On the real-data branch, 50 iterations with its DTYPE_ARGS (--fp8-format
#     hybrid, delayed scaling over 1024 intervals of amax history, max) stay
#     within 3% of the same 50 iterations in bf16 (its other DTYPE), loss by loss.
#   - The scales and amax histories are in the checkpoint: a run resumed at
#     iteration 25 logs iterations 26-50 exactly as the uninterrupted run.
#   - The start-up log names the recipe and says the backend has no FP8 units.
#   - OpenCL and Vulkan train both branches; their first losses are the cpu's
#     within 1% (the casts are bit exact; the GEMMs' sums differ in order).
#   - --fp8-recipe tensorwise trains; a checkpoint without FP8 state is refused
#     in one line, unless --no-load-optim.
# Not under ASan: 2 x 50 + 6 iterations of a model with a 128K vocabulary
#   and PoCL/lavapipe compiles; FP8's host code (Fp8State, the casts) runs
#   under ASan in Fp8Cast.* and cli.megatron_compat_flags.
set -euo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/../tools/llama3_8b_fp8_example.sh"
make_example_data

# shellcheck disable=SC2207  # the words of the example's groups
bf16=($(example_model_training 100 100 2) $(example_parallel_args))
# shellcheck disable=SC2207
fp8=($(example_model_training 100 100 2) $(example_dtype_args) $(example_parallel_args))
run() {  # NAME ARGS...: kiln train, its metrics in $tmp/NAME.jsonl
  local name=$1; shift
  "$kiln" train "$@" --metrics-file "$tmp/$name.jsonl" >"$tmp/$name.out" 2>"$tmp/$name.err" ||
    { echo "FAIL: $name did not train:"; tail -5 "$tmp/$name.err"; exit 1; }
}
# shellcheck disable=SC2046  # example_logging's words
run bf16 "${bf16[@]}" "${real_data[@]}" $(example_logging "$tmp/ck_bf16" "$tmp/tb")
# shellcheck disable=SC2046
run fp8 "${fp8[@]}" "${real_data[@]}" $(example_logging "$tmp/ck_fp8" "$tmp/tb") --save-interval 25
python3 - "$tmp/bf16.jsonl" "$tmp/fp8.jsonl" <<'PY'
import json, sys
bf16, fp8 = ([json.loads(line)["lm_loss"] for line in open(p)] for p in sys.argv[1:])
assert len(bf16) == len(fp8) == 50, (len(bf16), len(fp8))
worst = max(abs(f - b) / b for b, f in zip(bf16, fp8))
print(f"50 iterations: bf16 {bf16[0]:.4f} -> {bf16[-1]:.4f}, fp8 {fp8[0]:.4f} -> {fp8[-1]:.4f}; "
      f"worst gap {100 * worst:.2f}%")
assert worst < 0.03, "FP8 is more than 3% from bf16"
assert fp8 != bf16, "FP8 gave bf16's losses exactly: no cast ran"
PY
grep -q 'FP8: --fp8-format hybrid (E4M3 inputs and weights, E5M2 gradients), delayed scaling (amax history 1024, max, margin 0), on 8 linear layers' \
  "$tmp/fp8.err" || { echo "FAIL: no FP8 recipe line:"; cat "$tmp/fp8.err"; exit 1; }
grep -q 'FP8: the cpu backend has no FP8 units' "$tmp/fp8.err" || { echo "FAIL: no FP8 units line"; exit 1; }

# The checkpoint holds each cast tensor's scale and history (24 tensors: 2
# layers x 4 linear layers x input, weight, output gradient).
python3 - "$tmp/ck_fp8/iter_0000025/optimizer.safetensors" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
header = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
hist = {k: v for k, v in header.items() if k.startswith("fp8.") and k.endswith(".amax_history")}
scales = {k: v for k, v in header.items() if k.startswith("fp8.") and k.endswith(".scale")}
assert len(hist) == len(scales) == 24, (len(hist), len(scales))
assert all(v["shape"] == [1024] for v in hist.values()), hist
assert "fp8.decoder.layers.1.mlp.linear_fc2.grad_output.scale" in scales, sorted(scales)
PY
# Resumed at 25, iterations 26-50 are the uninterrupted run's, bit for bit.
cp -r "$tmp/ck_fp8" "$tmp/ck_resume" && echo 25 >"$tmp/ck_resume/latest_checkpointed_iteration.txt"
rm -rf "$tmp/ck_resume/iter_0000050"
# shellcheck disable=SC2046
run resumed "${fp8[@]}" "${real_data[@]}" $(example_logging "$tmp/ck_resume" "$tmp/tb")
python3 - "$tmp/fp8.jsonl" "$tmp/resumed.jsonl" <<'PY'
import json, sys
whole, resumed = ([json.loads(line) for line in open(p)] for p in sys.argv[1:])
assert [m["iteration"] for m in resumed] == list(range(26, 51)), [m["iteration"] for m in resumed]
for a, b in zip(whole[25:], resumed):
    assert a["lm_loss"] == b["lm_loss"] and a["grad_norm"] == b["grad_norm"], (a, b)
print("resumed at 25: iterations 26-50 equal the uninterrupted run's")
PY

# The tensorwise recipe, 3 iterations.
# shellcheck disable=SC2207
short=($(example_model_training 6 6 2) $(example_dtype_args) $(example_parallel_args))
# shellcheck disable=SC2046
run tensorwise "${short[@]}" --fp8-recipe tensorwise "${real_data[@]}" $(example_logging "$tmp/ck_tw" "$tmp/tb")
grep -q 'tensorwise scaling, on 8 linear layers' "$tmp/tensorwise.err" || { echo "FAIL: no tensorwise line"; exit 1; }
# A bf16 checkpoint has no FP8 state: resuming it with FP8 is refused in one line, or starts the scales afresh.
# shellcheck disable=SC2046
if "$kiln" train "${fp8[@]}" "${real_data[@]}" $(example_logging "$tmp/ck_bf16" "$tmp/tb") --train-samples 102 --override-opt_param-scheduler \
  >"$tmp/refused.out" 2>"$tmp/refused.err"; then
  echo "FAIL: FP8 resumed a checkpoint without FP8 state"; exit 1
fi
grep -q 'kiln: error: .*optimizer.safetensors has no FP8 scaling state for decoder.layers.0.[a-z0-9_.]* (saved without --fp8-format.*--no-load-optim' \
  "$tmp/refused.err" || { echo "FAIL: no one-line refusal:"; cat "$tmp/refused.err"; exit 1; }

# OpenCL and Vulkan, both branches, 3 iterations each: the cpu's losses within 1%.
# shellcheck disable=SC2046
run cpu_mock "${short[@]}" "${mock_data[@]}" $(example_logging "$tmp/ck_cpu_mock" "$tmp/tb")
# shellcheck disable=SC2046
run cpu_real "${short[@]}" "${real_data[@]}" $(example_logging "$tmp/ck_cpu_real" "$tmp/tb")
"$kiln" devices >"$tmp/devices" 2>&1
for backend in opencl vulkan; do
  if ! awk -v b="$backend" '$1 == "backend" { on = ($2 == b) } on && /^  device 0:/ { found = 1 } END { exit !found }' \
    "$tmp/devices"; then
    echo "SKIPPED $backend: kiln devices lists no $backend device 0"
    continue
  fi
  for branch in mock real; do
    data=("${mock_data[@]}"); [ "$branch" = real ] && data=("${real_data[@]}")
    # shellcheck disable=SC2046
    run "${backend}_$branch" "${short[@]}" "${data[@]}" $(example_logging "$tmp/ck_${backend}_$branch" "$tmp/tb") \
      --backend "$backend"
    python3 - "$tmp/cpu_$branch.jsonl" "$tmp/${backend}_$branch.jsonl" "$backend $branch" <<'PY'
import json, sys
cpu, other = ([json.loads(line)["lm_loss"] for line in open(p)] for p in sys.argv[1:3])
assert len(cpu) == len(other) == 3, (cpu, other)
gap = max(abs(a - b) / a for a, b in zip(cpu, other))
print(f"{sys.argv[3]}: {other} against cpu {cpu}: {100 * gap:.3f}% apart")
assert gap < 0.01
PY
  done
done
echo "FP8: the Llama-3 8B example trains as written"
