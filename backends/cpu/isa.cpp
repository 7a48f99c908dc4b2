#include "isa.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace kiln::cpu {

namespace {

// CPUID bits (Intel SDM vol. 2A, "CPUID"), spelled out because not every
// compiler's <cpuid.h> or __builtin_cpu_supports names them all yet.
constexpr unsigned kLeaf1Ecx_Fma = 1u << 12;
constexpr unsigned kLeaf1Ecx_OsXsave = 1u << 27;
constexpr unsigned kLeaf7Ebx_Avx2 = 1u << 5;
constexpr unsigned kLeaf7Ebx_Avx512F = 1u << 16;
constexpr unsigned kLeaf7Ebx_Avx512Dq = 1u << 17;
constexpr unsigned kLeaf7Ebx_Avx512Bw = 1u << 30;
constexpr unsigned kLeaf7Ebx_Avx512Vl = 1u << 31;
constexpr unsigned kLeaf7Edx_AmxBf16 = 1u << 22;
constexpr unsigned kLeaf7Edx_AmxTile = 1u << 24;
constexpr unsigned kLeaf7Sub1Eax_Avx512Bf16 = 1u << 5;

// XCR0: the register state the OS saves on a context switch. An ISA whose
// state it does not save cannot be used, whatever CPUID says.
constexpr uint64_t kXcr0_Avx = 0x6;         // SSE and AVX (YMM upper halves)
constexpr uint64_t kXcr0_Avx512 = 0xe0;     // opmask, ZMM upper halves, ZMM16-31
constexpr uint64_t kXcr0_Amx = 0x60000;     // XTILECFG, XTILEDATA
constexpr long kArchReqXcompPerm = 0x1023;  // Linux arch_prctl: ask for an xstate feature
constexpr long kXfeatureXtileData = 18;

struct Cpuid {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

Cpuid cpuid(unsigned leaf, unsigned subleaf) {
  Cpuid r;
  if (static_cast<unsigned>(__get_cpuid_max(0, nullptr)) < leaf ||
      __get_cpuid_count(leaf, subleaf, &r.a, &r.b, &r.c, &r.d) == 0)
    return {};
  return r;
}

uint64_t xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

bool all(unsigned have, unsigned want) { return (have & want) == want; }

struct Detected {
  CpuIsa isa = CpuIsa::kBaseline;
  bool avx512_bf16 = false;
};

Detected detect() {
  Detected det;
#if defined(__x86_64__)
  const Cpuid l1 = cpuid(1, 0), l7 = cpuid(7, 0), l7s1 = cpuid(7, 1);
  if (!all(l1.c, kLeaf1Ecx_OsXsave)) return det;
  const uint64_t os = xcr0();
  if ((os & kXcr0_Avx) != kXcr0_Avx || !all(l1.c, kLeaf1Ecx_Fma) || !all(l7.b, kLeaf7Ebx_Avx2)) return det;
  det.isa = CpuIsa::kAvx2;
  const unsigned avx512 = kLeaf7Ebx_Avx512F | kLeaf7Ebx_Avx512Dq | kLeaf7Ebx_Avx512Bw | kLeaf7Ebx_Avx512Vl;
  if ((os & kXcr0_Avx512) != kXcr0_Avx512 || !all(l7.b, avx512)) return det;
  det.isa = CpuIsa::kAvx512;
  det.avx512_bf16 = all(l7s1.a, kLeaf7Sub1Eax_Avx512Bf16);
  if ((os & kXcr0_Amx) != kXcr0_Amx || !all(l7.d, kLeaf7Edx_AmxTile | kLeaf7Edx_AmxBf16)) return det;
  // Linux keeps the 8 KiB tile state off until a process asks for it; an
  // AMX instruction before that is a SIGILL. Refused (old kernel, seccomp):
  // no AMX path.
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData) != 0) return det;
  det.isa = CpuIsa::kAmx;
#endif
  return det;
}

const Detected& detected() {
  static const Detected d = detect();
  return d;
}

}  // namespace

const char* isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kBaseline: return "baseline";
    case CpuIsa::kAvx2: return "avx2";
    case CpuIsa::kAvx512: return "avx512";
    case CpuIsa::kAmx: return "amx";
  }
  return "?";
}

bool parse_isa(const std::string& name, CpuIsa* isa) {
  for (CpuIsa i : {CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kAvx512, CpuIsa::kAmx})
    if (name == isa_name(i)) {
      *isa = i;
      return true;
    }
  return false;
}

CpuIsa detected_isa() { return detected().isa; }

bool has_avx512_bf16() { return detected().avx512_bf16; }

IsaChoice chosen_isa() {
  IsaChoice c;
  c.isa = detected_isa();
  const char* forced = std::getenv("KILN_CPU_ISA");
  if (forced != nullptr && *forced != '\0') {
    CpuIsa want = CpuIsa::kBaseline;
    if (!parse_isa(forced, &want)) {
      c.error = std::string("KILN_CPU_ISA=") + forced + " is not a cpu path; use baseline, avx2, avx512 or amx";
    } else if (static_cast<int>(want) > static_cast<int>(c.isa)) {
      c.error = std::string("KILN_CPU_ISA=") + forced + ": this CPU runs at most the " + isa_name(c.isa) +
                " path; unset it or pick a lower one";
    } else {
      c.isa = want;
    }
    return c;
  }
  const char* off = std::getenv("KILN_CPU_DISABLE_AVX2");
  if (off != nullptr && *off != '\0' && std::strcmp(off, "0") != 0) c.isa = CpuIsa::kBaseline;
  return c;
}

}  // namespace kiln::cpu
