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
