#!/usr/bin/env bash
# kiln on a real GPU, in one call: sets up the Vulkan and OpenCL loaders,
# lists devices, runs the conformance suite, checks 20 training steps
# against the cpu backend, and times GEMMs and 124M training against
# PyTorch on the same GPU. Every figure goes to RESULTS (markdown); logs go
# beside it. Nothing here runs in CI: CI has no GPU.
#
#   bench/gpu/run.sh DIST OUTDIR [STAGES]
#
# DIST is what bench/gpu/bundle.sh packed (kiln, plugins, shared libraries).
# A device session is short (issue 33: about 15 minutes of device time, all
# tries together), so the whole run keeps within BUDGET_S seconds (default
# 540, under the device tool's 600 s per call): every command's timeout is
# its own cap or what is left, whichever is less, and a command with too
# little left is skipped with a line in RESULTS saying so. The stages run in
# the order of what the acceptance needs first (STAGES, default
# "env throughput gemm check train profile extra"):
#   env         the card, driver, loaders and `kiln devices`
#   throughput  GPT-2 124M, seq 1024 x micro-batch 8: Vulkan bf16 (the
#               attention core auto picks, and the unfused chain, whose
#               attention GEMMs run on the tensor cores; each again on
#               gemm_tiled if it fails), Vulkan fp32, PyTorch eager fp32
#               and bf16 autocast, OpenCL fp32
#   gemm        bf16 GEMMs at the step's shapes: Vulkan gemm_tiled against
#               gemm_coopmat (its 128 x 128 tiles where C fills them, and
#               64 x 64 only), cuBLAS (bench/gpu/torch_gemm.py), and their
#               sums over one step (gemm_by_time.py)
#   check       check-backend vulkan and opencl in fp32 and bf16 (and the
#               16-bit matmul cases forced onto the tensor cores)
#   train       20 steps of a small config on cpu, vulkan and opencl, every
#               step's loss against cpu's
#   profile     where a 124M bf16 step goes on Vulkan (KILN_VULKAN_PROFILE=1:
#               every dispatch waited for on its own)
#   extra       the rest: f16 suites, fp16 and bf16 training elsewhere,
#               Megatron's default dropouts, f32 and f16 GEMM tables, an fp32
#               profile
# `coopmat` (not in the default list) checks and times only the Vulkan
# tensor-core GEMM (gemm_coopmat.comp, issue 33 item 4) in a few minutes:
#   bench/gpu/run.sh .gpu "$OUT" "env coopmat"
# A second call can pick up what the first skipped, e.g. "env check train".
# On the device machine (see docs/PERFORMANCE.md, "GPU"):
#   bench/gpu/run.sh .gpu "$OUT"
set -uo pipefail
dist=$(cd "$1" && pwd) out=$2
stages=${3:-env throughput gemm check train profile extra}
budget=${BUDGET_S:-540}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
results=$out/results.md
kiln=$dist/bin/kiln
bench_gemm=$dist/bin/bench_backend_gemm
py=${PYTHON:-python3}
# RESULTS and the console (fd 3), also from a command whose output goes to
# a log.
exec 3>&1
note() { echo "$*" | tee -a "$results" >&3; }
has() { [[ " $stages " == *" $1 "* ]]; }

# timed CAP LABEL CMD...: CMD under a timeout of CAP seconds or what is left
# of the budget (SECONDS counts from the script's start), whichever is
# less (less the 10 s a stopped command gets to end). With under 20 s left
# it is not started: RESULTS says so and it returns 125. RESULTS also says
# when the timeout stopped it (124, or 137 if it had to be killed).
timed() {
  local cap=$1 label=$2 t rc
  shift 2
  t=$((budget - SECONDS - 10))
  if ((t < 20)); then
    note "- skipped, ${SECONDS} s of the ${budget} s budget spent: $label"
    return 125
  fi
  ((t > cap)) && t=$cap
  # kiln train ends its step on SIGTERM before it exits (Megatron's exit on
  # a signal); -k kills what has not ended 10 s later.
  timeout -k 10 "$t" "$@"
  rc=$?
  ((rc == 124 || rc == 137)) && note "- stopped after $t s (timeout): $label"
  return $rc
}
# Whether timed's status is a failure of the command itself (not skipped, not
# stopped by the budget: those have their lines already).
failed() { (($1 != 0 && $1 != 124 && $1 != 125 && $1 != 137)); }

# --- Loaders. The bundle's libraries first; its libstdc++ only where the
# machine's own is older than the one kiln was built against.
export LD_LIBRARY_PATH=$dist/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if ! "$kiln" --help >/dev/null 2>&1; then
  export LD_LIBRARY_PATH=$dist/lib:$dist/lib-fallback${LD_LIBRARY_PATH#"$dist/lib"}
fi
# NVIDIA's Vulkan ICD manifest: where the loader looks, or the driver's
# folder (container images mount it under /usr/local/nvidia).
icd=$(find /usr/share/vulkan/icd.d /etc/vulkan/icd.d /usr/local/nvidia -name 'nvidia_icd*.json' 2>/dev/null | head -1)
[ -n "$icd" ] && export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd
# NVIDIA's OpenCL ICD alone (an image may also register PoCL, whose CPU
# device would otherwise be device 0).
opencl_icd=$(find /usr/lib /usr/lib64 /usr/local/nvidia /usr/lib/x86_64-linux-gnu -name 'libnvidia-opencl.so.1' 2>/dev/null | head -1)
if [ -n "$opencl_icd" ]; then
  mkdir -p "$out/ocl-vendors" && echo "$opencl_icd" >"$out/ocl-vendors/nvidia.icd"
  export OCL_ICD_VENDORS=$out/ocl-vendors
fi

# kiln train's flags for a precision name (fp32 bf16 fp16).
precision() { case $1 in bf16) echo --bf16 ;; fp16) echo --fp16 --initial-loss-scale 65536 ;; esac; }

has_device() { "$kiln" devices 2>/dev/null | grep -A1 "^backend $1 " | grep -q '^  device 0:'; }

if has env; then
  note "# kiln on a GPU: $(date -u '+%Y-%m-%d %H:%M UTC') (stages: $stages; budget ${budget} s)"
  note ""
  note "- machine: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
  note "- host: $(nproc) cores, $(uname -r), $(ldd --version 2>&1 | head -1)"
  note "- Vulkan ICD: ${VK_DRIVER_FILES:-found by the loader}; OpenCL ICD: ${opencl_icd:-none found}"
  note "- PyTorch: $("$py" -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>&1 | tail -1)"
  note ""
  # Why a driver might not load: its missing libraries, the loader's errors.
  glx=$(find /usr/lib /usr/local/nvidia /usr/lib/x86_64-linux-gnu -name 'libGLX_nvidia.so.0' 2>/dev/null | head -1)
  [ -n "$glx" ] && ldd "$glx" | grep 'not found' | sed 's/^/- missing for the Vulkan driver: /' | tee -a "$results"
  VK_LOADER_DEBUG=error,warn "$kiln" devices >"$out/devices.txt" 2>"$out/devices-loader.txt"
  note '```'
  tee -a "$results" <"$out/devices.txt"
  note '```'
fi

backends=()
for b in vulkan opencl; do has_device "$b" && backends+=("$b"); done
note ""
note "GPU backends with a device: ${backends[*]:-none}"
on() { [[ " ${backends[*]} " == *" $1 "* ]]; }
stage_start() { note ""; note "## $1 (from ${SECONDS} s)"; note ""; }

# --- check-backend BACKEND DTYPE [ENV...]: one conformance suite, its
# summary line (and the first line naming cooperative matrices) in RESULTS.
# With ENV (VAR=VALUE words) only the matmul cases run.
check() {
  local b=$1 dt=$2 log rc
  shift 2
  log=$out/check-$b-$dt${1:+-${1#*=}}.txt
  local flags=(--dtype "$dt")
  [ "$dt" = f32 ] && flags=()
  [ $# -gt 0 ] && flags+=(--filter matmul)
  local what="${*:+$* }kiln check-backend $b ${flags[*]}"
  timed 150 "$what" env "$@" "$kiln" check-backend "$b" "${flags[@]}" >"$log" 2>&1
  rc=$?
  ((rc == 125)) && return
  note "- \`$what\`: exit $rc; $(grep -m1 -i 'cooperative\|^FAIL' "$log") $(tail -1 "$log")"
}

# --- GPT-2 124M at seq 1024, micro-batch 8, mock data, no dropout (the
# PyTorch model has none).
m124=(--mock-data --vocab-size 50304 --num-layers 12 --hidden-size 768 --num-attention-heads 12 --seq-length 1024
      --micro-batch-size 8 --log-interval 1 --eval-iters 0 --lr-warmup-iters 1 --hidden-dropout 0 --attention-dropout 0)
iters=${ITERS:-6}
# One 124M run of kiln: train_124m BACKEND PRECISION LABEL [FLAGS...] notes
# "- kiln LABEL: ms/step, tokens/s (the attention line)", steps after the
# first averaged, or why it failed.
train_124m() {
  local b=$1 dt=$2 label=$3 log ms attention rc
  shift 3
  log=$out/tp-${label// /-}
  log=${log//,/}
  # shellcheck disable=SC2046 # precision's words are separate flags
  timed "${TRAIN_TIMEOUT:-150}" "kiln $label" "$kiln" train --backend "$b" "${m124[@]}" $(precision "$dt") "$@" \
    --train-iters "$iters" --metrics-file "$log.jsonl" >"$log.log" 2>&1
  rc=$?
  ((rc == 125)) && return
  failed $rc && note "- kiln $label: failed (exit $rc): $(tail -1 "$log.log")"
  ms=$(tail -n +2 "$log.jsonl" 2>/dev/null | grep -o '"ms_per_iteration":[^,]*' | cut -d: -f2 |
       awk '{s+=$1} END {if (NR) printf "%.1f", s/NR}')
  attention=$(grep -o 'attention: [a-z ]*[a-z]' "$log.log" | head -1)
  [ -n "$ms" ] && note "- kiln $label: $ms ms/step, $(awk -v ms="$ms" 'BEGIN {printf "%.0f", 8192*1000/ms}') tokens/s" \
    "($attention; loss $(grep -o '"lm_loss":[^,}]*' "$log.jsonl" | tail -1 | cut -d: -f2))"
  ! failed $rc  # 1 only where kiln itself failed (not skipped, not stopped)
}
# The same model in PyTorch eager (bench/pytorch_gpt.py prints ms/step).
torch_124m() {
  local dt=$1 ms rc
  timed 150 "PyTorch cuda $dt" "$py" "$here/../pytorch_gpt.py" --layers 12 --hidden 768 --heads 12 --vocab 50304 \
    --seq 1024 --micro-batch 8 --iters 10 --threads "$(nproc)" --device cuda --dtype "$dt" \
    >"$out/tp-torch-$dt.txt" 2>"$out/tp-torch-$dt.log"
  rc=$?
  ((rc == 125)) && return
  failed $rc && note "- PyTorch cuda $dt: failed (exit $rc): $(tail -1 "$out/tp-torch-$dt.log")"
  ms=$(tail -1 "$out/tp-torch-$dt.txt")
  [ -n "$ms" ] && note "- PyTorch cuda $dt: $ms ms/step, $(awk -v ms="$ms" 'BEGIN {printf "%.0f", 8192*1000/ms}') tokens/s"
}

# --- gemm_table NAME BACKEND DTYPE [VARIANTS]: bench_backend_gemm at the
# step's shapes into NAME.md and RESULTS.
gemm_table() {
  local name=$1 b=$2 dt=$3 v=${4:-}
  local args=(--backend="$b" --set=gpu --rounds=10 --dtype="$dt")
  [ -n "$v" ] && args+=("--variants=$v")
  note ""
  note "$b, --dtype=$dt $v"
  timed 120 "bench_backend_gemm $b $dt $v" "$bench_gemm" "${args[@]}" >"$out/$name.md" 2>&1
  tee -a "$results" <"$out/$name.md"
}
# Whether kiln devices lists the NV extension with its feature (on a device
# without it the compile error would stop a coopmat table at its first shape).
coopmat_device() { "$kiln" devices 2>/dev/null | grep -A1 '^backend vulkan' | grep -q 'coopmat: NV f16'; }

if has throughput; then
  stage_start "Training throughput, GPT-2 124M, seq 1024, micro-batch 8"
  if on vulkan; then
    # gemm_coopmat has never run on a GPU: if the driver rejects it or a
    # step fails, the same run on gemm_tiled keeps the call's bf16 figure
    # and says whether the tensor-core GEMM was the cause.
    train_124m vulkan bf16 "vulkan bf16" ||
      KILN_VULKAN_GEMM=tiled train_124m vulkan bf16 "vulkan bf16, gemm_tiled (the run above failed)"
    train_124m vulkan bf16 "vulkan bf16, unfused attention" --attention-backend unfused ||
      KILN_VULKAN_GEMM=tiled train_124m vulkan bf16 "vulkan bf16, unfused attention, gemm_tiled (the run above failed)" \
        --attention-backend unfused
    train_124m vulkan fp32 "vulkan fp32"
  fi
  torch_124m bf16
  torch_124m fp32
  on opencl && train_124m opencl fp32 "opencl fp32"
fi

if has gemm; then
  stage_start "bf16 GEMMs at GPT-2 124M's shapes (8192 tokens): kiln against cuBLAS"
  kiln_gemm=
  if on vulkan; then
    kiln_gemm=$out/gemm-vulkan-bf16.md
    if coopmat_device; then
      gemm_table gemm-vulkan-bf16 vulkan bf16 KILN_VULKAN_GEMM=tiled,coopmat,coopmat-64
    else
      gemm_table gemm-vulkan-bf16 vulkan bf16
    fi
  fi
  note ""
  timed 150 "torch_gemm.py" "$py" "$here/torch_gemm.py" --reps 20 >"$out/gemm-torch.md" 2>&1
  tee -a "$results" <"$out/gemm-torch.md"
  if [ -n "$kiln_gemm" ]; then
    note ""
    "$py" "$here/gemm_by_time.py" "$kiln_gemm" "$out/gemm-torch.md" 2>&1 | tee -a "$results"
  fi
fi

if has check; then
  stage_start "Conformance"
  # bf16 and f16 GEMMs default to gemm_coopmat.comp (tensor cores) where
  # the device has VK_NV_cooperative_matrix; forced onto it, small
  # products too (fails in one line naming what is missing where the
  # device lacks them).
  if on vulkan; then
    check vulkan bf16 KILN_VULKAN_GEMM=coopmat
    check vulkan f16 KILN_VULKAN_GEMM=coopmat
  fi
  for b in ${CHECK_BACKENDS:-${backends[@]}}; do
    check "$b" f32
    check "$b" bf16
  done
fi

# --- 20 steps of the small config (6 x 384, seq 256, micro-batch 4, mock
# data) on each backend; every step's loss against the cpu backend's.
if has train; then
  stage_start "20 training steps against the cpu backend (small config)"
  small=(--mock-data --vocab-size 50304 --num-layers 6 --hidden-size 384 --num-attention-heads 6 --seq-length 256
         --micro-batch-size 4 --train-iters 20 --log-interval 1 --eval-iters 0 --lr-warmup-iters 2)
  for b in cpu "${backends[@]}"; do
    timed 120 "kiln train --backend $b (small)" "$kiln" train --backend "$b" "${small[@]}" \
      --metrics-file "$out/train-$b.jsonl" >"$out/train-$b.log" 2>&1
    rc=$?
    failed $rc && note "- $b: kiln train failed (exit $rc): $(tail -1 "$out/train-$b.log")"
  done
  loss() { grep -o '"lm_loss":[^,}]*' "$1" 2>/dev/null | cut -d: -f2; }
  for b in "${backends[@]}"; do
    if [ ! -s "$out/train-cpu.jsonl" ] || [ ! -s "$out/train-$b.jsonl" ]; then continue; fi
    paste <(loss "$out/train-cpu.jsonl") <(loss "$out/train-$b.jsonl") | awk -v b="$b" '
      { d = ($1 - $2) / $1; if (d < 0) d = -d; if (d > m) m = d; n++ }
      END { printf "- %s: %d steps, max relative loss difference %.2e (%s 1e-4), final loss cpu %s %s %s\n",
            b, n, m, (n == 20 && m <= 1e-4) ? "within" : "NOT within", $1, b, $2 }' | tee -a "$results"
  done
fi

# profile_124m PRECISION: the per-shader table of two 124M steps.
profile_124m() {
  local dt=$1 log=$out/profile-vulkan-$1.log
  note ""
  note "Where a 124M $dt step goes on Vulkan (KILN_VULKAN_PROFILE=1, 2 steps, each dispatch waited for):"
  note ""
  # shellcheck disable=SC2046 # precision's words are separate flags
  timed 150 "profile $dt" env KILN_VULKAN_PROFILE=1 "$kiln" train --backend vulkan "${m124[@]}" $(precision "$dt") \
    --train-iters 2 >"$log" 2>&1
  note '```'
  grep -A40 'kiln vulkan profile' "$log" | tee -a "$results"
  grep 'iteration .*2/' "$log" | tee -a "$results"
  note '```'
}
if has profile && on vulkan; then
  stage_start "Profile"
  profile_124m bf16
fi

if has extra; then
  stage_start "Extra: f16 suites, other precisions, dropout, f32 and f16 GEMMs"
  for b in "${backends[@]}"; do check "$b" f16; done
  on vulkan && train_124m vulkan fp16 "vulkan fp16"
  # Megatron's default dropouts, which users' launch scripts keep: what the
  # fused kernel's mask costs against the same precision without them.
  on vulkan && train_124m vulkan bf16 "vulkan bf16, dropout 0.1" --hidden-dropout 0.1 --attention-dropout 0.1
  if on opencl; then
    train_124m opencl bf16 "opencl bf16"
    train_124m opencl fp16 "opencl fp16"
  fi
  on vulkan && gemm_table gemm-vulkan-f32 vulkan f32 KILN_VULKAN_GEMM=tiled
  if on vulkan && coopmat_device; then gemm_table gemm-vulkan-f16 vulkan f16 KILN_VULKAN_GEMM=tiled,coopmat; fi
  on opencl && gemm_table gemm-opencl-bf16 opencl bf16
  on vulkan && profile_124m fp32
fi

# --- The tensor-core GEMM alone: what the device offers (the driver string
# of kiln devices: "coopmat: NV f16 <shapes>, KHR .., NV2 ..,
# shader_bfloat16 .."), the f16 and bf16 matmul cases on the default
# choice (coopmat from 64 x 64, its 128 x 128 build from 128 x 128),
# forced onto it and on its emulated build, then f16 and bf16 GEMM
# timings, tiled against coopmat.
if has coopmat && on vulkan; then
  stage_start "Vulkan tensor-core GEMM (gemm_coopmat.comp)"
  note "- kiln devices: $("$kiln" devices 2>&1 | grep -A1 '^backend vulkan' | grep -o 'driver .*| fingerprint' | head -1)"
  for dt in f16 bf16; do
    for kernel in "" coopmat coopmat-emulated; do check vulkan $dt "KILN_VULKAN_GEMM=$kernel"; done
  done
  for dt in f16 bf16; do gemm_table "coopmat-gemm-$dt" vulkan $dt KILN_VULKAN_GEMM=tiled,coopmat; done
fi

note ""
note "Done at ${SECONDS} s of the ${budget} s budget."
