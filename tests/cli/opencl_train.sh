#!/usr/bin/env bash
# `kiln train --backend opencl` against `--backend cpu` on a small model:
# the loss (1e-4 relative) and gradient norm (1e-3) of every one of 20
# steps must agree, with kiln's GEMM and with CLBlast's. Also,
# with no OpenCL platform at all, `--backend opencl` fails with a one-line
# reason while the cpu backend still trains.
# Prints SKIPPED and passes when the machine has no OpenCL device (or the
# plugin was not built).
# Usage: opencl_train.sh <path-to-kiln> <bad-plugin-dir>
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

# compare NAME ARGS...: 20 steps on cpu and on opencl, every step's loss
# within 1e-4 relative and gradient norm within 1e-3 (a wrong gradient
# moves the loss too little in a few steps to see; the norm sums in another
# order on each backend). OPENCL_ENV (an env assignment list)
# applies to the opencl run only.
compare() {
  local name=$1
  shift
  for backend in cpu opencl; do
    local env_list=()
    [ "$backend" = opencl ] && read -ra env_list <<<"${OPENCL_ENV:-}"
    if ! env "${env_list[@]}" "$kiln" train --backend "$backend" "$@" --train-iters 20 --log-interval 1 \
        --metrics-file "$tmp/$name.$backend.jsonl" >"$tmp/$name.$backend.log" 2>&1; then
      echo "FAIL: $name: kiln train --backend $backend exited non-zero:"
      tail -5 "$tmp/$name.$backend.log"
      fail=1
      return
    fi
  done
  for field in lm_loss grad_norm; do
    metric() { grep -o "\"$field\":[^,}]*" "$1" | cut -d: -f2; }
    paste <(metric "$tmp/$name.cpu.jsonl") <(metric "$tmp/$name.opencl.jsonl") >"$tmp/$name.pairs"
    local steps
    steps=$(grep -c . "$tmp/$name.pairs")
    if [ "$steps" -ne 20 ]; then
      echo "FAIL: $name: expected 20 logged $field values from each backend, got $steps"
      fail=1
    fi
    local tolerance=1e-4
    [ "$field" = grad_norm ] && tolerance=1e-3
    if ! awk -v name="$name" -v field="$field" -v tol="$tolerance" '{ d = ($1 - $2) / $1; if (d < 0) d = -d; if (d > m) m = d;
                if (d > tol) { printf "FAIL: %s: step %d %s cpu %s opencl %s (relative %.2e)\n", name, NR, field, $1, $2, d; bad = 1 } }
              END { printf "%s: max relative %s difference over %d steps: %.2e\n", name, field, NR, m; exit bad }' \
        "$tmp/$name.pairs"; then
      fail=1
    fi
  done
}

# The default job (embedded corpus, default model), first 20 steps.
compare default-job
# Sequences of 256 with one 64-wide head make attention's batched GEMMs big
# and tile-aligned: the CLBlast path whose batched form needed a workaround.
args=(--num-layers 2 --hidden-size 64 --num-attention-heads 1 --seq-length 256 --micro-batch-size 4
      --eval-iters 0 --eval-interval 1000)
compare long-sequence "${args[@]}"
# CLBlast (the GEMM on GPUs) at seq 384: attention's batched GEMMs take
# CLBlast's indirect path, where its strided-batched GEMM dropped the offset
# of an operand it used in place (wrong gradients, right losses). Then with
# every operand past a 4096-element offset handed over as a sub-buffer, the
# path that keeps CLBlast's 32-bit offsets small in a large arena.
clblast=(--num-layers 1 --hidden-size 64 --num-attention-heads 4 --seq-length 384 --micro-batch-size 1
         --eval-iters 0 --eval-interval 1000 --mock-data --vocab-size 1024 --hidden-dropout 0 --attention-dropout 0)
OPENCL_ENV="KILN_OPENCL_GEMM=clblast" compare clblast-batched "${clblast[@]}"
OPENCL_ENV="KILN_OPENCL_GEMM=clblast KILN_OPENCL_CLBLAST_MAX_OFFSET=4096" compare clblast-sub-buffers "${clblast[@]}"

# No platform: the ICD loader reads vendors from an empty directory.
mkdir "$tmp/no-icd"
out=$(OCL_ICD_VENDORS=$tmp/no-icd "$kiln" train --backend opencl --train-iters 1 --eval-iters 0 2>&1)
status=$?
echo "without a platform: $out"
if [ "$status" -eq 0 ]; then echo "FAIL: --backend opencl without a platform succeeded"; fail=1; fi
if [ "$(grep -c . <<<"$out")" -ne 1 ]; then echo "FAIL: the reason is not one line"; fail=1; fi
if ! grep -q "opencl.*no devices" <<<"$out"; then echo "FAIL: the reason does not say opencl has no devices"; fail=1; fi
if ! OCL_ICD_VENDORS=$tmp/no-icd "$kiln" train --backend cpu "${args[@]}" --train-iters 2 >/dev/null 2>&1; then
  echo "FAIL: the cpu backend did not train without an OpenCL platform"
  fail=1
fi
exit $fail
