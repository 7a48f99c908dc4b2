// The bulk of the Megatron compatibility table (trainer/megatron_compat_flags.h),
// split by topic into trainer/megatron_compat_{model,perf,parallel,data,
// runtime,scripts,legacy}.cpp: every flag of Megatron's argument list
// (tests/data/megatron_flags.txt) that `kiln train` does not implement has a
// row there or in megatron_compat_flags.cpp. Each file is a constant table of
// CompatRowSpec, so adding a flag is adding a line.
#pragma once

#include <cstddef>
#include <vector>

#include "trainer/megatron_compat_flags.h"

namespace kiln::trainer {

struct CompatRowSpec {
  const char* name;
  CompatArity arity;
  CompatValue value;
  const char* choices;  // Megatron's, comma-separated ("" : any value of the type)
  CompatKind kind;
  const char* why;
  const char* kiln_values;  // KilnValue rows: comma-separated
};

std::vector<CompatFlag> to_rows(const CompatRowSpec* rows, size_t count);
template <size_t N>
std::vector<CompatFlag> to_rows(const CompatRowSpec (&rows)[N]) {
  return to_rows(rows, N);
}

// The reasons rows in several files share.
inline constexpr const char* kOneKernel =
    "kiln has one implementation of this kernel per backend; fusing or not changes speed, not the result";
inline constexpr const char* kOneAttention =
    "kiln's fused attention is its own kernel per backend (--attention-backend); every backend computes the same "
    "softmax(QK^T/sqrt(d))V";
inline constexpr const char* kNoGc = "kiln is C++ and has no garbage collector to schedule";
inline constexpr const char* kFp8 =
    "kiln's FP8 training is per-tensor scaling (--fp8-recipe delayed or tensorwise) of every transformer layer's "
    "linear layers, wgrad included (docs/MIXED_PRECISION.md); it has no such option";
inline constexpr const char* kMoe = "kiln has no mixture-of-experts (MoE) layers";

std::vector<CompatFlag> compat_model_rows();     // model features kiln lacks
std::vector<CompatFlag> compat_perf_rows();      // CUDA, NCCL and kernel tuning (no effect)
std::vector<CompatFlag> compat_parallel_rows();  // parallelism and memory layouts
std::vector<CompatFlag> compat_data_rows();      // data, tokenizer and checkpoint options
std::vector<CompatFlag> compat_runtime_rows();   // training loop, logging, resilience
std::vector<CompatFlag> compat_scripts_rows();   // Megatron's other scripts, optimizers, inference
std::vector<CompatFlag> compat_legacy_rows();    // gone from Megatron before tests/data/megatron_flags.txt's commit

}  // namespace kiln::trainer
