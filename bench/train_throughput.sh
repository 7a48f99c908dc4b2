#!/usr/bin/env bash
# Training throughput of kiln on the two reference shapes (mock data), with
# MFU against a stated fp32 peak, and the same model in PyTorch when Debian's
# python3-torch is installed, measured in the same run.
#   usage: bench/train_throughput.sh [build-dir] [iters]
# PEAK_GFLOPS (default 205: the measured FMA peak of the 2-core reference
# machine) and THREADS (default: all cores) may be set in the environment;
# BACKEND (default cpu) picks the backend and CONFIGS (default "124M small")
# the shapes: e.g. BACKEND=vulkan CONFIGS=tiny on lavapipe. The PyTorch
# comparison runs for the cpu backend only.
set -euo pipefail
build=${1:-build}; iters=${2:-6}
peak=${PEAK_GFLOPS:-205}; threads=${THREADS:-$(nproc)}
backend=${BACKEND:-cpu}; configs=${CONFIGS:-124M small}
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

run_config() {  # name layers hidden heads vocab seq micro
  local name=$1 L=$2 C=$3 H=$4 V=$5 T=$6 B=$7
  local log; log=$(mktemp)
  "$kiln" train --backend "$backend" --mock-data --vocab-size "$V" --num-layers "$L" --hidden-size "$C" --num-attention-heads "$H" \
    --seq-length "$T" --micro-batch-size "$B" --train-iters "$iters" --log-interval 1 --eval-iters 0 \
    --lr-warmup-iters 1 --num-threads "$threads" --metrics-file "$log" \
    --hidden-dropout 0 --attention-dropout 0 >/dev/null  # bench/pytorch_gpt.py has no dropout
  # Skip the first step (allocation, first-touch), average the rest.
  local ms; ms=$(tail -n +2 "$log" | grep -o '"ms_per_iteration":[^,]*' | cut -d: -f2 | awk '{s+=$1} END {printf "%.1f", s/NR}')
  rm -f "$log"
  local tps; tps=$(awk -v ms="$ms" -v B="$B" -v T="$T" 'BEGIN {printf "%.1f", B*T*1000/ms}')
  local fpt; fpt=$(flops_per_token "$L" "$C" "$V" "$T")
  local mfu; mfu=$(awk -v t="$tps" -v f="$fpt" -v p="$peak" 'BEGIN {printf "%.1f", 100*t*f/(p*1e9)}')
  printf "%-6s kiln %s %8.1f ms/step %8.1f tokens/s  MFU %5.1f%% (peak %s GFLOP/s, %s threads)\n" "$name" "$backend" "$ms" "$tps" "$mfu" "$peak" "$threads"
  if [ "$backend" != cpu ]; then
    return
  elif [ -n "$py" ]; then
    local pt; pt=$(OMP_WAIT_POLICY=PASSIVE "$py" "$here/pytorch_gpt.py" --layers "$L" --hidden "$C" --heads "$H" \
      --vocab "$V" --seq "$T" --micro-batch "$B" --iters "$iters" --threads "$threads")
    local pt_ms; pt_ms=$(echo "$pt" | awk '{print $1}')
    local pt_tps; pt_tps=$(awk -v ms="$pt_ms" -v B="$B" -v T="$T" 'BEGIN {printf "%.1f", B*T*1000/ms}')
    printf "%-6s pytorch %8.1f ms/step %8.1f tokens/s  -> kiln/pytorch speed ratio %.2fx\n" "$name" "$pt_ms" "$pt_tps" \
      "$(awk -v a="$pt_ms" -v b="$ms" 'BEGIN {print a/b}')"
  else
    echo "$name pytorch: python3-torch not installed (apt-get install python3-torch to compare)"
  fi
}

for c in $configs; do
  case $c in
    124M) run_config 124M 12 768 12 50304 64 4 ;;
    small) run_config small 6 384 6 50304 256 4 ;;
    tiny) run_config tiny 2 64 4 512 64 4 ;;
    *) echo "unknown config $c (124M, small, tiny)" >&2; exit 2 ;;
  esac
done
