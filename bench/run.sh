#!/usr/bin/env bash
# `make bench`: every benchmark, in one go. Figures go in docs/PERFORMANCE.md.
set -euo pipefail
build=${1:-build}
echo "== CPU GEMM (kiln vs OpenBLAS)"
"$build/bin/bench_gemm" --benchmark_counters_tabular=true
echo "== tokenizer"
"$build/bin/bench_tokenizer"
echo "== training throughput"
bash "$(dirname "$0")/train_throughput.sh" "$build"
if [ -x "$build/bin/bench_opencl" ] && "$build/bin/kiln" devices 2>/dev/null | grep -q '^backend opencl'; then
  echo "== OpenCL GEMM through the plugin"
  "$build/bin/bench_opencl" --backend=opencl
  echo "== training throughput, OpenCL backend (small config)"
  BACKEND=opencl CONFIGS=small bash "$(dirname "$0")/train_throughput.sh" "$build"
fi
