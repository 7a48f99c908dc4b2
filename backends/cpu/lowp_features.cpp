#include "lowp_features.h"

#include <cpuid.h>

#include "convert16.h"
#include "kiln/plugin.h"

namespace kiln::cpu {

namespace {

// CPUID leaf 7 bits (Intel SDM vol. 2A, "Structured Extended Feature
// Flags"): spelled out because not every compiler's <cpuid.h> or
// __builtin_cpu_supports names them yet.
constexpr unsigned kLeaf7Edx_Avx512Fp16 = 1u << 23;  // subleaf 0, EDX
constexpr unsigned kLeaf7Eax_Avx512Bf16 = 1u << 5;   // subleaf 1, EAX

bool leaf7(unsigned subleaf, unsigned* a, unsigned* b, unsigned* c, unsigned* d) {
  return __get_cpuid_max(0, nullptr) >= 7 && __get_cpuid_count(7, subleaf, a, b, c, d) != 0;
}

}  // namespace

uint32_t low_precision_features() {
  uint32_t bits = KILN_LOWP_16BIT_STORAGE;
  if (f16c_in_use()) bits |= KILN_LOWP_F16_CONVERT;
  __builtin_cpu_init();
  // The AVX-512 instructions need the OS to save ZMM state, which the
  // builtin's avx512f answer includes (it checks XCR0).
  if (!__builtin_cpu_supports("avx512f")) return bits;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (leaf7(0, &a, &b, &c, &d) && (d & kLeaf7Edx_Avx512Fp16) != 0) bits |= KILN_LOWP_F16_ARITHMETIC;
  if (leaf7(1, &a, &b, &c, &d) && (a & kLeaf7Eax_Avx512Bf16) != 0) bits |= KILN_LOWP_BF16_ARITHMETIC;
  return bits;
}

}  // namespace kiln::cpu
