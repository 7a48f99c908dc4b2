#!/usr/bin/env bash
# Training throughput of kiln on the two reference shapes (mock data), with
# MFU against a stated fp32 peak, and the same model in PyTorch when Debian's
# python3-torch is installed, measured in the same run.
#   usage: bench/train_throughput.sh [build-dir] [iters]
# PEAK_GFLOPS (default 205: the measured FMA peak of the 2-core reference
# machine) and THREADS (default: all cores) may be set in the environment;
# BACKEND (default cpu) picks the backend and CONFIGS (default "124M small
# llama") the shapes: e.g. BACKEND=vulkan CONFIGS=tiny on lavapipe. The
# PyTorch comparison runs for the cpu backend only. `llama` is the small shape
# as a Llama-style model (RMSNorm, SwiGLU, RoPE, 2 KV groups, untied, no
# biases), kiln and PyTorch both with Megatron's defaults for the rest.
# PRECISIONS (default "fp32 bf16") runs each shape in each: bf16 is kiln's
# --bf16 and PyTorch's bf16 autocast (bench/pytorch_gpt.py --dtype bf16), as
# each framework's users train. The CPU model and the cpu backend's ISA path
# (kiln devices) head the output: every figure is quoted with them.
set -euo pipefail
build=${1:-build}; iters=${2:-6}
peak=${PEAK_GFLOPS:-205}; threads=${THREADS:-$(nproc)}
backend=${BACKEND:-cpu}; configs=${CONFIGS:-124M small llama}
precisions=${PRECISIONS:-fp32 bf16}
kiln=$build/bin/kiln
here=$(cd "$(dirname "$0")" && pwd)
# Debian's python3-torch lives under the system interpreter, which may not be
# the first python3 on PATH.
py=""
for cand in python3 /usr/bin/python3; do
  if "$cand" -c "import torch" 2>/dev/null; then py=$cand; break; fi
done

flops_per_token() {  # layers hidden vocab seq: 6 * params + 12 * L * T * C
  awk -v L="$1" -v C="$2" -v V="$3" -v T="$4" 'BEGIN {
    n = V*C + T*C + L*(12*C*C + 13*C) + 2*C; printf "%.0f", 6*n + 12*L*T*C }'
}

# The Llama-style shape: the output layer's V*C and the matmul weights (QKV
# with G K/V heads, projection, SwiGLU's fc1 of 2F and fc2) count; the input
# embedding is a lookup, not a matmul, so unlike the tied GPT-2 count it
# adds no FLOPs.
llama_flops_per_token() {  # layers hidden heads groups vocab seq
  awk -v L="$1" -v C="$2" -v H="$3" -v G="$4" -v V="$5" -v T="$6" 'BEGIN {
    D = C / H; F = int(4 * C * 2 / 3 / 64) * 64
    n = V*C + L*(C*(H + 2*G)*D + C*C + 3*C*F + 2*C) + C; printf "%.0f", 6*n + 12*L*T*C }'
}

# Flags of the Llama-style model, for kiln and for bench/pytorch_gpt.py.
llama_kiln=(--normalization RMSNorm --swiglu --position-embedding-type rope --group-query-attention
            --num-query-groups 2 --untie-embeddings-and-output-weights --disable-bias-linear)
llama_torch=(--rmsnorm --swiglu --rope --query-groups 2 --untie --no-bias)

run_config() {  # name layers hidden heads vocab seq micro [llama]
  local name=$1 L=$2 C=$3 H=$4 V=$5 T=$6 B=$7 family=${8:-gpt2}
  local prec
  for prec in $precisions; do run_precision "$prec" "$@"; done
}

run_precision() {  # precision name layers hidden heads vocab seq micro [llama]
  local prec=$1 name=$2 L=$3 C=$4 H=$5 V=$6 T=$7 B=$8 family=${9:-gpt2}
  local kiln_model=() torch_model=() fpt kiln_prec=()
  if [ "$family" = llama ]; then
    kiln_model=("${llama_kiln[@]}"); torch_model=("${llama_torch[@]}")
    fpt=$(llama_flops_per_token "$L" "$C" "$H" 2 "$V" "$T")
  else
    fpt=$(flops_per_token "$L" "$C" "$V" "$T")
  fi
  case $prec in
    fp32) ;;
    bf16) kiln_prec=(--bf16) ;;
    *) echo "unknown precision $prec (fp32, bf16)" >&2; exit 2 ;;
  esac
  local log; log=$(mktemp)
  "$kiln" train --backend "$backend" --mock-data --vocab-size "$V" --num-layers "$L" --hidden-size "$C" --num-attention-heads "$H" \
    --seq-length "$T" --micro-batch-size "$B" --train-iters "$iters" --log-interval 1 --eval-iters 0 \
    --lr-warmup-iters 1 --num-threads "$threads" --metrics-file "$log" "${kiln_model[@]}" "${kiln_prec[@]}" \
    --hidden-dropout 0 --attention-dropout 0 >/dev/null  # bench/pytorch_gpt.py has no dropout
  # Skip the first step (allocation, first-touch), average the rest.
  local ms; ms=$(tail -n +2 "$log" | grep -o '"ms_per_iteration":[^,]*' | cut -d: -f2 | awk '{s+=$1} END {printf "%.1f", s/NR}')
  rm -f "$log"
  local tps; tps=$(awk -v ms="$ms" -v B="$B" -v T="$T" 'BEGIN {printf "%.1f", B*T*1000/ms}')
  local mfu; mfu=$(awk -v t="$tps" -v f="$fpt" -v p="$peak" 'BEGIN {printf "%.1f", 100*t*f/(p*1e9)}')
  printf "%-6s %-4s kiln %s %8.1f ms/step %8.1f tokens/s  MFU %5.1f%% (peak %s GFLOP/s, %s threads)\n" "$name" "$prec" "$backend" "$ms" "$tps" "$mfu" "$peak" "$threads"
  if [ "$backend" != cpu ]; then
    return
  elif [ -n "$py" ]; then
    local pt; pt=$(OMP_WAIT_POLICY=PASSIVE "$py" "$here/pytorch_gpt.py" --layers "$L" --hidden "$C" --heads "$H" \
      --vocab "$V" --seq "$T" --micro-batch "$B" --iters "$iters" --threads "$threads" --dtype "$prec" "${torch_model[@]}")
    local pt_ms; pt_ms=$(echo "$pt" | awk '{print $1}')
    local pt_tps; pt_tps=$(awk -v ms="$pt_ms" -v B="$B" -v T="$T" 'BEGIN {printf "%.1f", B*T*1000/ms}')
    printf "%-6s %-4s pytorch %8.1f ms/step %8.1f tokens/s  -> kiln/pytorch speed ratio %.2fx\n" "$name" "$prec" "$pt_ms" "$pt_tps" \
      "$(awk -v a="$pt_ms" -v b="$ms" 'BEGIN {print a/b}')"
  else
    echo "$name pytorch: python3-torch not installed (apt-get install python3-torch to compare)"
  fi
}

echo "cpu: $(lscpu | sed -nE 's/^Model name: +//p' | head -1); kiln device: $("$kiln" devices 2>/dev/null | grep -m1 -Eo 'driver cpu-[^|]*' || echo '?')"
for c in $configs; do
  case $c in
    124M) run_config 124M 12 768 12 50304 64 4 ;;
    small) run_config small 6 384 6 50304 256 4 ;;
    llama) run_config llama 6 384 6 50304 256 4 llama ;;
    tiny) run_config tiny 2 64 4 512 64 4 ;;
    *) echo "unknown config $c (124M, small, llama, tiny)" >&2; exit 2 ;;
  esac
done
