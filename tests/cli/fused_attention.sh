#!/usr/bin/env bash
# --attention-backend on the device backends (Vulkan on lavapipe, OpenCL on
# PoCL): `fused` trains with each layer's attention as one ATTENTION node
# (ATTENTION_DROPOUT with --attention-dropout; the start-up line says
# which) and every one of 10 steps' loss (1e-4 relative) and gradient norm
# (1e-3) agrees with the cpu backend's chain, with and without attention
# dropout: the kernels draw DROPOUT_KEYED's mask bit for bit, so the two
# differ by summation order only, and a dropout of 0.5 moves the loss well
# past the tolerance when a mask is wrong (a mask shifted by one key in
# the OpenCL kernels: 3.9e-4 at step 1). `auto` keeps the chain on these
# CPU devices and says why. A backend without a device is skipped with a message.
# Usage: fused_attention.sh <path-to-kiln> <bad-plugin-dir>
set -u
kiln=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
# Two heads of 32 over 96 positions: several key tiles per row in the kernels.
args=(--num-layers 2 --hidden-size 64 --num-attention-heads 2 --seq-length 96 --micro-batch-size 2
      --global-batch-size 4 --hidden-dropout 0 --eval-iters 0 --eval-interval 1000 --train-iters 10
      --log-interval 1)
metric() { grep -o "\"$2\":[^,}]*" "$1" | cut -d: -f2; }

listing=$("$kiln" devices 2>&1)
for dropout in 0 0.5; do
  op=ATTENTION
  [ "$dropout" = 0 ] || op=ATTENTION_DROPOUT
  run=("${args[@]}" --attention-dropout "$dropout")
  rm -f "$tmp"/*.jsonl  # a metrics file is appended to
  if ! "$kiln" train --backend cpu "${run[@]}" --metrics-file "$tmp/cpu.jsonl" >"$tmp/cpu.log" 2>&1; then
    echo "FAIL: kiln train --backend cpu --attention-dropout $dropout exited non-zero:"
    tail -5 "$tmp/cpu.log"
    exit 1
  fi
  grep -q "attention: the unfused chain (backend cpu has no fused attention kernel" "$tmp/cpu.log" ||
    { echo "FAIL: cpu: no line saying attention runs as the chain"; fail=1; }

  for backend in vulkan opencl; do
    if ! grep -A1 -E "^backend $backend " <<<"$listing" | grep -q '^  device 0:'; then
      echo "SKIPPED $backend: no $backend device (kiln devices found no $backend device 0)"
      continue
    fi
    if [ "$dropout" = 0 ]; then
      if ! "$kiln" train --backend "$backend" "${run[@]}" --train-iters 1 >"$tmp/$backend-auto.log" 2>&1; then
        echo "FAIL: $backend: kiln train --attention-backend auto exited non-zero:"
        tail -5 "$tmp/$backend-auto.log"
        fail=1
      elif ! grep -q "attention: the unfused chain (--attention-backend auto on a CPU device" "$tmp/$backend-auto.log"; then
        echo "FAIL: $backend: auto on a CPU device should keep the chain and say why:"
        grep "attention:" "$tmp/$backend-auto.log"
        fail=1
      fi
    fi
    if ! "$kiln" train --backend "$backend" "${run[@]}" --attention-backend fused \
        --metrics-file "$tmp/$backend.jsonl" >"$tmp/$backend.log" 2>&1; then
      echo "FAIL: $backend: kiln train --attention-backend fused --attention-dropout $dropout exited non-zero:"
      tail -5 "$tmp/$backend.log"
      fail=1
      continue
    fi
    if ! grep -q "attention: fused ($op on backend $backend, --attention-backend fused)" "$tmp/$backend.log"; then
      # A backend with ATTENTION but no ATTENTION_DROPOUT trains the chain and says so.
      if [ "$dropout" != 0 ] && grep -q "has no fused attention kernel with dropout" "$tmp/$backend.log"; then
        echo "NOTE $backend: no fused attention kernel with dropout; the chain ran"
      else
        echo "FAIL: $backend: no line saying attention is fused as $op"
        fail=1
      fi
    fi
    for field in lm_loss grad_norm; do
      paste <(metric "$tmp/cpu.jsonl" $field) <(metric "$tmp/$backend.jsonl" $field) >"$tmp/$backend.pairs"
      if [ "$(grep -c . "$tmp/$backend.pairs")" -ne 10 ]; then
        echo "FAIL: $backend: expected 10 logged values of $field"
        fail=1
      fi
      tolerance=1e-4
      [ "$field" = grad_norm ] && tolerance=1e-3
      awk -v b="$backend" -v p="$dropout" -v f="$field" -v tol="$tolerance" '{ d = ($1 - $2) / $1; if (d < 0) d = -d;
            if (d > m) m = d;
            if (d > tol) { printf "FAIL: %s: step %d %s cpu %s fused %s (relative %.2e)\n", b, NR, f, $1, $2, d; bad = 1 } }
          END { printf "%s fused, attention dropout %s: max relative %s difference from cpu over %d steps: %.2e\n",
                       b, p, f, NR, m; exit bad }' "$tmp/$backend.pairs" || fail=1
    done
  done
done
exit $fail
