#!/usr/bin/env bash
# Megatron's --squared-relu on every backend. Its activation, squared_relu,
# is a composite op with no kernel on any backend: the executor expands it
# into clamp and mul before it places nodes, so a backend that runs those
# runs the whole model itself. A small GPT trains 20 steps on cpu, OpenCL
# and Vulkan with dropout off:
#   - no backend logs an op running on the cpu fallback;
#   - the loss falls on the cpu;
#   - every backend's final loss is the cpu's within 1e-4 relative;
#   - the run differs from the same model with GELU (the flag takes effect).
# A backend with no device is skipped with a message; the cpu part always runs.
# Usage: squared_relu_backends.sh <path-to-kiln> <bad-plugin-dir>
# Not under ASan: the model's ops (squared_relu expanded) are checked under
#   ASan by the gradient checks and Decompose.*; the run itself repeats on PoCL
#   and lavapipe, whose code ASan does not instrument.
set -u
kiln=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

listing=$("$kiln" devices 2>&1)
backends=(cpu)
for b in opencl vulkan; do
  if grep -A1 -E "^backend $b " <<<"$listing" | grep -q '^  device 0:'; then
    backends+=("$b")
  else
    echo "SKIPPED $b: kiln devices found no $b device 0"
  fi
done

# Small enough for lavapipe on 2 cores: one micro-batch of 2 x 32 tokens per step.
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --global-batch-size 2 --lr-warmup-iters 2 --eval-iters 0 --eval-interval 1000 --train-iters 20
        --log-interval 1 --hidden-dropout 0 --attention-dropout 0 --num-threads 2)

losses() { grep -o '"lm_loss":[^,}]*' "$1" | cut -d: -f2; }
relative() { awk -v a="$1" -v b="$2" 'BEGIN { d = (a - b) / a; if (d < 0) d = -d; printf "%.2e", d }'; }

# train NAME BACKEND ARGS...: 20 steps, metrics in $tmp/NAME.BACKEND.jsonl.
train() {
  local name=$1 backend=$2
  shift 2
  if ! "$kiln" train --backend "$backend" "${common[@]}" "$@" --metrics-file "$tmp/$name.$backend.jsonl" \
      >"$tmp/$name.$backend.log" 2>&1; then
    echo "FAIL: $name: kiln train --backend $backend exited non-zero:"
    tail -5 "$tmp/$name.$backend.log"
    fail=1
    return 1
  fi
  local steps
  steps=$(losses "$tmp/$name.$backend.jsonl" | grep -c .)
  if [ "$steps" -ne 20 ]; then
    echo "FAIL: $name: expected 20 logged steps on $backend, got $steps"
    fail=1
    return 1
  fi
}

for backend in "${backends[@]}"; do
  train sqrelu "$backend" --squared-relu || continue
  # setup.cpp logs each op a backend lacks: "<backend>: <op> runs on the cpu fallback".
  if grep -q "fallback" "$tmp/sqrelu.$backend.log"; then
    echo "FAIL: --squared-relu on $backend falls back to the cpu:"
    grep "fallback" "$tmp/sqrelu.$backend.log" | head -5
    fail=1
  fi
done

if [ -s "$tmp/sqrelu.cpu.jsonl" ]; then
  first=$(losses "$tmp/sqrelu.cpu.jsonl" | head -1)
  last=$(losses "$tmp/sqrelu.cpu.jsonl" | tail -1)
  echo "squared-relu: cpu loss $first -> $last over 20 steps"
  if ! awk -v f="$first" -v l="$last" 'BEGIN { exit !(l < f - 0.5) }'; then
    echo "FAIL: the loss did not fall by 0.5"
    fail=1
  fi
  for backend in "${backends[@]:1}"; do
    [ -s "$tmp/sqrelu.$backend.jsonl" ] || continue
    other=$(losses "$tmp/sqrelu.$backend.jsonl" | tail -1)
    rel=$(relative "$last" "$other")
    echo "squared-relu: final loss cpu $last $backend $other (relative $rel)"
    if ! awk -v r="$rel" 'BEGIN { exit !(r <= 1e-4) }'; then
      echo "FAIL: $backend's final loss is not the cpu's within 1e-4 relative"
      fail=1
    fi
  done
  if train gelu cpu; then
    gelu=$(losses "$tmp/gelu.cpu.jsonl" | tail -1)
    rel=$(relative "$gelu" "$last")
    echo "final loss GELU $gelu, --squared-relu $last (relative $rel)"
    if ! awk -v r="$rel" 'BEGIN { exit !(r > 1e-3) }'; then
      echo "FAIL: --squared-relu ends within 1e-3 of GELU: the flag has no effect"
      fail=1
    fi
  fi
fi

# One activation per MLP, as Megatron asserts.
if "$kiln" train --backend cpu "${common[@]}" --squared-relu --swiglu >"$tmp/both.log" 2>&1; then
  echo "FAIL: --squared-relu with --swiglu was accepted"
  fail=1
elif ! grep -q -- "--squared-relu replaces the MLP's activation" "$tmp/both.log"; then
  echo "FAIL: --squared-relu with --swiglu: the error does not say why:"
  tail -3 "$tmp/both.log"
  fail=1
fi
exit $fail
