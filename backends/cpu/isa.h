// Which instruction-set path a cpu device runs: chosen once per device open
// from CPUID and what the OS enables, or forced lower with KILN_CPU_ISA so
// every path the machine supports can be tested on it.
//
//   baseline  portable kernels (SSE2 on any x86-64); no library GEMM
//   avx2      kiln's AVX2+FMA kernels; oneDNN limited to AVX2
//   avx512    kiln's AVX-512 kernels (16 lanes), and oneDNN's AVX-512 GEMM
//             (with AVX512-BF16 where the CPU has it)
//   amx       as avx512, and oneDNN's AMX-BF16 tile GEMM
//
// The path is part of the device fingerprint (so of every compile-cache
// key) and is recorded in each executable: one compiled for a higher path
// is refused at load, in one line, never run into SIGILL.
#pragma once

#include <string>

#pragma GCC visibility push(hidden)

namespace kiln::cpu {

// Ordered: each path may use everything the ones below it use.
enum class CpuIsa : int { kBaseline = 0, kAvx2 = 1, kAvx512 = 2, kAmx = 3 };

const char* isa_name(CpuIsa isa);

// The highest path this CPU and OS support (cached; AMX asks Linux for the
// tile-data permission once, which it must have before any AMX instruction).
CpuIsa detected_isa();

// Whether the CPU has AVX512-BF16 (vdpbf16ps), shown beside the avx512 path.
bool has_avx512_bf16();

struct IsaChoice {
  CpuIsa isa = CpuIsa::kBaseline;
  std::string error;  // non-empty: KILN_CPU_ISA asks for what this CPU lacks, or is not a path name
};

// The path a device opened now runs: KILN_CPU_ISA=baseline|avx2|avx512|amx
// where set (a path above detected_isa() is an error), else
// KILN_CPU_DISABLE_AVX2=1 (the older spelling of baseline), else the
// detected path. Read at every open, not cached, so tests can open devices
// on several paths in one process.
IsaChoice chosen_isa();

// Parses a path name; false for anything else.
bool parse_isa(const std::string& name, CpuIsa* isa);

}  // namespace kiln::cpu

#pragma GCC visibility pop
