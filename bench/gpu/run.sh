#!/usr/bin/env bash
# kiln on a real GPU, in one call: sets up the Vulkan and OpenCL loaders,
# lists devices, runs the conformance suite, checks 20 training steps
# against the cpu backend, and times GEMMs and 124M training against
# PyTorch on the same GPU. Every figure goes to RESULTS (markdown); logs go
# beside it. Nothing here runs in CI: CI has no GPU.
#
#   bench/gpu/run.sh DIST OUTDIR [STAGES]
#
# DIST is what bench/gpu/bundle.sh packed (kiln, plugins, shared libraries);
# STAGES (default "env check train gemm torch-gemm throughput profile")
# picks stages; `throughput` trains 124M on each GPU backend in each of
# TRAIN_DTYPES (default "fp32 bf16 fp16"), ITERS steps, against PyTorch
# eager fp32 and bf16 autocast, and Vulkan once more in each of
# DROPOUT_DTYPES (default "bf16") with Megatron's default dropouts (0.1 on
# hidden states and attention probabilities: ATTENTION_DROPOUT's fused
# kernel where auto fuses); `profile` times each Vulkan shader over two
# 124M steps in each of PROFILE_DTYPES (default "fp32 bf16";
# KILN_VULKAN_PROFILE=1: every dispatch waited for on its own).
# `coopmat` (not in the default list) checks and times only the Vulkan
# tensor-core GEMM (gemm_coopmat.comp, issue 33 item 4) in a few minutes:
#   bench/gpu/run.sh .gpu "$OUT" "env coopmat"
# On the device machine (see docs/PERFORMANCE.md, "GPU"):
#   bench/gpu/run.sh .gpu "$OUT"
set -uo pipefail
dist=$(cd "$1" && pwd) out=$2
stages=${3:-env check train gemm torch-gemm throughput profile}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
results=$out/results.md
kiln=$dist/bin/kiln
py=${PYTHON:-python3}
note() { echo "$*" | tee -a "$results"; }
has() { [[ " $stages " == *" $1 "* ]]; }

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
  note "# kiln on a GPU: $(date -u '+%Y-%m-%d %H:%M UTC')"
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

if has check; then
  note ""
  note "## Conformance"
  for b in ${CHECK_BACKENDS:-${backends[@]}}; do
    timeout 300 "$kiln" check-backend "$b" >"$out/check-$b.txt" 2>&1
    note "- \`kiln check-backend $b\`: exit $?; $(tail -1 "$out/check-$b.txt")"
    # The 16-bit suites; on Vulkan bf16 and f16 GEMMs default to
    # gemm_coopmat.comp (tensor cores) where the device has
    # VK_NV_cooperative_matrix.
    for dt in f16 bf16; do
      timeout 300 "$kiln" check-backend "$b" --dtype "$dt" >"$out/check-$b-$dt.txt" 2>&1
      note "- \`kiln check-backend $b --dtype $dt\`: exit $?; $(tail -1 "$out/check-$b-$dt.txt")"
    done
  done
  # Every 16-bit GEMM forced onto the tensor cores, small ones included:
  # fails in one line naming what is missing where the device lacks them.
  if [[ " ${backends[*]} " == *" vulkan "* ]]; then
    for dt in f16 bf16; do
      log=$out/check-vulkan-coopmat-$dt.txt
      KILN_VULKAN_GEMM=coopmat timeout 300 "$kiln" check-backend vulkan --dtype $dt --filter matmul,gpt_train_step \
        >"$log" 2>&1
      note "- \`KILN_VULKAN_GEMM=coopmat kiln check-backend vulkan --dtype $dt --filter matmul,gpt_train_step\`:" \
        "exit $?; $(grep -m1 -i 'cooperative' "$log")$(tail -1 "$log")"
    done
  fi
fi

# --- The tensor-core GEMM alone: what the device offers (the driver string
# of kiln devices: "coopmat: NV f16 <shapes>, KHR .., NV2 ..,
# shader_bfloat16 .."), the f16 and bf16 matmul cases on the default
# choice (coopmat from 64 x 64, its 128 x 128 build from 128 x 128),
# forced onto it (small products too, and a train step) and on its
# emulated build, then f16 and bf16 GEMM timings, tiled against coopmat.
if has coopmat && [[ " ${backends[*]} " == *" vulkan "* ]]; then
  note ""
  note "## Vulkan tensor-core GEMM (gemm_coopmat.comp)"
  note ""
  note "- kiln devices: $("$kiln" devices 2>&1 | grep -A1 '^backend vulkan' | grep -o 'driver .*| fingerprint' | head -1)"
  for dt in f16 bf16; do
    for kernel in "" coopmat coopmat-emulated; do
      filter=matmul
      [ "$kernel" = coopmat ] && filter=matmul,gpt_train_step
      log=$out/coopmat-check-$dt-${kernel:-default}.txt
      KILN_VULKAN_GEMM=$kernel timeout 300 "$kiln" check-backend vulkan --dtype $dt --filter "$filter" >"$log" 2>&1
      note "- \`KILN_VULKAN_GEMM=$kernel kiln check-backend vulkan --dtype $dt --filter $filter\`: exit $?;" \
        "$(grep -m1 -i 'cooperative\|^FAIL' "$log")" "$(tail -1 "$log")"
    done
  done
  # Stops at the first shape with the compile error on a device without it.
  for dt in f16 bf16; do
    note ""
    timeout 300 "$dist/bin/bench_backend_gemm" --backend=vulkan --set=gpu --rounds=10 --dtype=$dt \
      "--variants=KILN_VULKAN_GEMM=tiled,coopmat" >"$out/coopmat-gemm-$dt.md" 2>&1
    tee -a "$results" <"$out/coopmat-gemm-$dt.md"
  done
fi

# --- 20 steps of the small config (6 x 384, seq 256, micro-batch 4, mock
# data) on each backend; every step's loss against the cpu backend's.
if has train; then
  note ""
  note "## 20 training steps against the cpu backend (small config)"
  small=(--mock-data --vocab-size 50304 --num-layers 6 --hidden-size 384 --num-attention-heads 6 --seq-length 256
         --micro-batch-size 4 --train-iters 20 --log-interval 1 --eval-iters 0 --lr-warmup-iters 2)
  for b in cpu "${backends[@]}"; do
    timeout 300 "$kiln" train --backend "$b" "${small[@]}" --metrics-file "$out/train-$b.jsonl" >"$out/train-$b.log" 2>&1 ||
      note "- $b: kiln train failed: $(tail -1 "$out/train-$b.log")"
  done
  loss() { grep -o '"lm_loss":[^,}]*' "$1" | cut -d: -f2; }
  for b in "${backends[@]}"; do
    paste <(loss "$out/train-cpu.jsonl") <(loss "$out/train-$b.jsonl") | awk -v b="$b" '
      { d = ($1 - $2) / $1; if (d < 0) d = -d; if (d > m) m = d; n++ }
      END { printf "- %s: %d steps, max relative loss difference %.2e (%s 1e-4), final loss cpu %s %s %s\n",
            b, n, m, (n == 20 && m <= 1e-4) ? "within" : "NOT within", $1, b, $2 }' | tee -a "$results"
  done
fi

if has gemm; then
  note ""
  note "## kiln GEMM through the plugin (GPT-2 124M at 8192 tokens)"
  # Vulkan twice: gemm_tiled.comp (the GPU default) and gemm.comp.
  runs=()
  for b in "${backends[@]}"; do
    if [ "$b" = vulkan ]; then
      for k in ${GEMM_KERNELS:-tiled simple}; do runs+=("vulkan:$k"); done
    else
      runs+=("$b:")
    fi
  done
  for r in "${runs[@]}"; do
    b=${r%%:*} kernel=${r#*:}
    note ""
    [ -n "$kernel" ] && note "KILN_VULKAN_GEMM=$kernel"
    KILN_VULKAN_GEMM=$kernel timeout 200 "$dist/bin/bench_backend_gemm" --backend="$b" --set=gpu --rounds=20 \
      >"$out/gemm-$b$kernel.md" 2>&1
    tee -a "$results" <"$out/gemm-$b$kernel.md"
  done
  # The GEMMs of --fp16 and --bf16 steps: on Vulkan, on gemm_tiled.comp and
  # on the tensor cores side by side (gemm_coopmat.comp, where kiln
  # devices' driver string lists the extension with its feature: on a
  # device without it the compile error would stop the whole table).
  coopmat_device=$("$kiln" devices 2>/dev/null | grep -A1 '^backend vulkan' | grep -c 'coopmat: NV f16')
  for b in "${backends[@]}"; do
    for dt in f16 bf16; do
      variants=()
      [ "$b" = vulkan ] && [ "$coopmat_device" -gt 0 ] &&
        variants=("--variants=KILN_VULKAN_GEMM=tiled,coopmat")
      note ""
      note "$b, --dtype=$dt ${variants[*]}"
      timeout 300 "$dist/bin/bench_backend_gemm" --backend="$b" --set=gpu --rounds=20 --dtype="$dt" "${variants[@]}" \
        >"$out/gemm-$b-$dt.md" 2>&1
      tee -a "$results" <"$out/gemm-$b-$dt.md"
    done
  done
fi

if has torch-gemm; then
  note ""
  note "## cuBLAS through PyTorch at the same shapes"
  note ""
  timeout 300 "$py" "$here/torch_gemm.py" >"$out/gemm-torch.md" 2>&1
  tee -a "$results" <"$out/gemm-torch.md"
fi

# --- GPT-2 124M at seq 1024, micro-batch 8, mock data, no dropout (the
# PyTorch model has none).
m124=(--mock-data --vocab-size 50304 --num-layers 12 --hidden-size 768 --num-attention-heads 12 --seq-length 1024
      --micro-batch-size 8 --log-interval 1 --eval-iters 0 --lr-warmup-iters 1 --hidden-dropout 0 --attention-dropout 0)
# One 124M run of kiln: train_124m BACKEND PRECISION LABEL [FLAGS...] notes
# "- kiln LABEL: ms/step, tokens/s (the attention line)", steps after the
# first averaged, or why it failed.
train_124m() {
  local b=$1 dt=$2 label=$3 log ms attention
  shift 3
  log=$out/tp-${label// /-}
  log=${log//,/}
  # shellcheck disable=SC2046 # precision's words are separate flags
  timeout "${TRAIN_TIMEOUT:-200}" "$kiln" train --backend "$b" "${m124[@]}" $(precision "$dt") "$@" \
    --train-iters "$iters" --metrics-file "$log.jsonl" >"$log.log" 2>&1 ||
    note "- kiln $label: failed: $(tail -1 "$log.log")"
  ms=$(tail -n +2 "$log.jsonl" 2>/dev/null | grep -o '"ms_per_iteration":[^,]*' | cut -d: -f2 |
       awk '{s+=$1} END {if (NR) printf "%.1f", s/NR}')
  attention=$(grep -o 'attention: [a-z ]*[a-z]' "$log.log" | head -1)
  [ -n "$ms" ] && note "- kiln $label: $ms ms/step, $(awk -v ms="$ms" 'BEGIN {printf "%.0f", 8192*1000/ms}') tokens/s ($attention)"
}
if has throughput; then
  note ""
  note "## Training throughput, GPT-2 124M, seq 1024, micro-batch 8"
  note ""
  iters=${ITERS:-6}
  # kiln in each precision its users train in (TRAIN_DTYPES: fp32 bf16
  # fp16). The attention line says which core ran (auto fuses on a GPU
  # backend that has the kernel).
  for b in "${backends[@]}"; do
    for dt in ${TRAIN_DTYPES:-fp32 bf16 fp16}; do train_124m "$b" "$dt" "$b $dt"; done
  done
  # Megatron's default dropouts, which users' launch scripts keep: what the
  # fused kernel's mask costs against the same precision without them.
  if [[ " ${backends[*]} " == *" vulkan "* ]]; then
    for dt in ${DROPOUT_DTYPES:-bf16}; do
      train_124m vulkan "$dt" "vulkan $dt, dropout 0.1" --hidden-dropout 0.1 --attention-dropout 0.1
    done
  fi
  for dt in fp32 bf16; do
    ms=$(timeout 300 "$py" "$here/../pytorch_gpt.py" --layers 12 --hidden 768 --heads 12 --vocab 50304 --seq 1024 \
         --micro-batch 8 --iters 10 --threads "$(nproc)" --device cuda --dtype "$dt" 2>"$out/tp-torch-$dt.log")
    [ -n "$ms" ] && note "- PyTorch cuda $dt: $ms ms/step, $(awk -v ms="$ms" 'BEGIN {printf "%.0f", 8192*1000/ms}') tokens/s"
  done
fi

if has profile && [[ " ${backends[*]} " == *" vulkan "* ]]; then
  for dt in ${PROFILE_DTYPES:-fp32 bf16}; do
    note ""
    note "## Where a 124M $dt step goes on Vulkan (KILN_VULKAN_PROFILE=1, 2 steps, each dispatch waited for)"
    note ""
    # shellcheck disable=SC2046 # precision's words are separate flags
    KILN_VULKAN_PROFILE=1 timeout 200 "$kiln" train --backend vulkan "${m124[@]}" $(precision "$dt") --train-iters 2 \
      >"$out/profile-vulkan-$dt.log" 2>&1
    note '```'
    grep -A40 'kiln vulkan profile' "$out/profile-vulkan-$dt.log" | tee -a "$results"
    grep 'iteration .*2/' "$out/profile-vulkan-$dt.log" | tee -a "$results"
    note '```'
  done
fi
