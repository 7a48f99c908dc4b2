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
# Each device plugin that finds a device: its GEMMs through the plugin, and
# training throughput (small on OpenCL; tiny on Vulkan, for lavapipe's sake).
for b in opencl:small vulkan:tiny; do
  backend=${b%%:*} config=${b#*:}
  "$build/bin/kiln" devices 2>/dev/null | grep -A1 "^backend $backend " | grep -q "device 0" || continue
  echo "== $backend GEMM through the plugin"
  "$build/bin/bench_backend_gemm" --backend="$backend"
  echo "== training throughput, $backend backend ($config config)"
  BACKEND=$backend CONFIGS=$config bash "$(dirname "$0")/train_throughput.sh" "$build"
done
