#!/usr/bin/env bash
# `kiln train --backend opencl --attention-backend fused --attention-dropout`:
# each layer's attention is one ATTENTION_DROPOUT node (and its gradient)
# run by the OpenCL kernels (the start-up line says so), and every one of 10
# steps' loss (1e-4 relative) and gradient norm (1e-3) agrees with the cpu
# backend's, which runs the unfused chain: the kernels draw DROPOUT_KEYED's
# mask bit for bit, so the two differ by summation order only. A dropout
# of 0.5 makes a wrong mask move the loss well past the tolerance.
# Prints SKIPPED and passes when the machine has no OpenCL device.
# Usage: opencl_fused_attention_dropout.sh <path-to-kiln> <bad-plugin-dir>
set -u
kiln=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

listing=$("$kiln" devices 2>&1)
if ! grep -A1 -E '^backend opencl ' <<<"$listing" | grep -q '^  device 0:'; then
  echo "SKIPPED: no OpenCL device (kiln devices found no opencl device 0)"
  exit 0
fi

# Two heads of 32 over 40 positions: two key tiles per row in the kernels.
args=(--num-layers 2 --hidden-size 64 --num-attention-heads 2 --seq-length 40 --micro-batch-size 2
      --global-batch-size 2 --attention-dropout 0.5 --hidden-dropout 0 --eval-iters 0 --eval-interval 1000
      --train-iters 10 --log-interval 1 --attention-backend fused)
for backend in cpu opencl; do
  if ! "$kiln" train --backend "$backend" "${args[@]}" --metrics-file "$tmp/$backend.jsonl" \
      >"$tmp/$backend.log" 2>&1; then
    echo "FAIL: kiln train --backend $backend exited non-zero:"
    tail -5 "$tmp/$backend.log"
    exit 1
  fi
done
grep -q "attention: the unfused chain (backend cpu has no fused attention kernel" "$tmp/cpu.log" ||
  { echo "FAIL: cpu: no line saying attention runs as the chain"; fail=1; }
grep -q "attention: fused (attention_dropout on backend opencl, --attention-backend fused)" "$tmp/opencl.log" ||
  { echo "FAIL: opencl: no line saying attention is fused with its dropout:"; grep "attention:" "$tmp/opencl.log"; fail=1; }

for field in lm_loss grad_norm; do
  metric() { grep -o "\"$field\":[^,}]*" "$1" | cut -d: -f2; }
  paste <(metric "$tmp/cpu.jsonl") <(metric "$tmp/opencl.jsonl") >"$tmp/$field.pairs"
  if [ "$(grep -c . "$tmp/$field.pairs")" -ne 10 ]; then
    echo "FAIL: expected 10 logged $field values from each backend"
    fail=1
  fi
  tolerance=1e-4
  [ "$field" = grad_norm ] && tolerance=1e-3
  awk -v field="$field" -v tol="$tolerance" '{ d = ($1 - $2) / $1; if (d < 0) d = -d; if (d > m) m = d;
        if (d > tol) { printf "FAIL: step %d %s cpu %s opencl %s (relative %.2e)\n", NR, field, $1, $2, d; bad = 1 } }
      END { printf "fused attention dropout: max relative %s difference from cpu over %d steps: %.2e\n", field, NR, m;
            exit bad }' "$tmp/$field.pairs" || fail=1
done
exit $fail
