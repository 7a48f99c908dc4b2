// Which GEMM a MATMUL node runs: kiln's own (gemm.h) or oneDNN's
// (library_gemm.h), chosen per shape by measurement when the graph is
// compiled and stored in the executable, so a cached executable keeps its
// choice and every process that loads it computes the same bits.
//
// KILN_CPU_GEMM selects the policy (read at compile; part of the device
// fingerprint, so of the cache key):
//   measure  (default) time both on this machine, once per shape per
//            process; the library wins only if at least kLibraryMargin faster,
//            so a near tie keeps the same choice run after run
//   kiln     kiln's kernel everywhere: bitwise-reproducible on any machine
//            (Megatron's --deterministic-mode selects it)
//   library  oneDNN wherever it has an implementation (tests of that path)
#pragma once

#include <cstdint>
#include <string>

#include "isa.h"
#include "library_gemm.h"
#include "thread_pool.h"

#pragma GCC visibility push(hidden)

namespace kiln::cpu {

enum class GemmKernel : uint8_t { kKiln = 0, kLibrary = 1 };
enum class GemmPolicy { kMeasure, kKiln, kLibrary };

inline constexpr double kLibraryMargin = 1.05;

struct GemmPolicyChoice {
  GemmPolicy policy = GemmPolicy::kMeasure;
  std::string error;  // KILN_CPU_GEMM is set to something else
};
GemmPolicyChoice gemm_policy();
const char* gemm_policy_name(GemmPolicy p);

struct GemmDecision {
  GemmKernel kernel = GemmKernel::kKiln;
  double kiln_seconds = 0, library_seconds = 0;  // measured (0: not measured)
  std::string why;                               // when the library was not an option
};

// The kernel for one batch item of `shape` on the `isa` path under `policy`.
// Batched products (attention's many small items) stay on kiln's kernel,
// which spreads the items over the threads.
GemmDecision choose_gemm(const GemmShape& shape, int64_t batch, CpuIsa isa, GemmPolicy policy);

}  // namespace kiln::cpu

#pragma GCC visibility pop
