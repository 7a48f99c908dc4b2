#include "gemm_choice.h"

#include <cstdlib>
#include <cstring>

namespace kiln::ocl {
namespace {

// kiln's kernel runs a MATMUL under `auto` on a CPU device when m * n * k
// per batch entry is at most this. Measured on PoCL 3.1 (2-core AMD EPYC,
// AVX-512, load average 0.5-1.9) against CLBlast with kiln's PoCL tuning,
// bench_backend_gemm --variants=KILN_OPENCL_GEMM=clblast,kiln (docs/OPENCL.md
// "kiln's GEMM kernel"): there is no crossover. kiln's kernel was 1.2x to
// 6.5x as fast at every shape, from the hidden-64 test model's attention
// products (8 x 32 x 32 x 16: 1.9x) through GPT-2 124M at 8192 tokens,
// whose largest GEMM is the LM head's 8192 x 50304 x 768 = 3.2e11 (2.5x /
// 2.3x / 2.3x forward / data / weight gradient). Past 2^39 = 5.5e11 it is
// unmeasured, and CLBlast stays.
constexpr double kKilnMaxMnk = 549755813888.0;  // 2^39

const char* env_text() {
  const char* v = std::getenv("KILN_OPENCL_GEMM");
  return v == nullptr || *v == '\0' ? "auto" : v;
}

}  // namespace

const char* gemm_policy_name(GemmPolicy p) {
  switch (p) {
    case GemmPolicy::Auto: return "auto";
    case GemmPolicy::Kiln: return "kiln";
    case GemmPolicy::Clblast: return "clblast";
  }
  return "?";
}

GemmPolicy gemm_policy() {
  const char* v = env_text();
  for (GemmPolicy p : {GemmPolicy::Auto, GemmPolicy::Kiln, GemmPolicy::Clblast})
    if (std::strcmp(v, gemm_policy_name(p)) == 0) return p;
  fail(KILN_ERR_INVALID_ARGUMENT,
       std::string("KILN_OPENCL_GEMM=") + v + " is not a GEMM policy; use auto, kiln or clblast");
}

std::string gemm_policy_key() { return env_text(); }

bool kiln_gemm_wins(const NodeInfo& inf, bool cpu_device) {
  // GPUs keep CLBlast: kiln's kernel is written for CPU devices (a register
  // tile per work item, no local memory) and was not measured on one.
  if (!cpu_device) return false;
  const double mnk = static_cast<double>(inf.m) * static_cast<double>(inf.n) * static_cast<double>(inf.k);
  return mnk <= kKilnMaxMnk;
}

}  // namespace kiln::ocl
