// What this CPU offers for 16-bit floats (kiln_device_properties'
// low_precision, KILN_LOWP_* in kiln/plugin.h), for `kiln devices`.
#pragma once

#include <cstdint>

namespace kiln::cpu {

// KILN_LOWP_16BIT_STORAGE always (the kernels read and write bf16 and f16),
// plus F16C, AVX512-FP16 and AVX512-BF16 where CPUID and the OS (saved
// YMM/ZMM state) allow them.
uint32_t low_precision_features();

}  // namespace kiln::cpu
