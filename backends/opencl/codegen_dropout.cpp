// DROPOUT's (and DROPOUT_KEYED's) mask of kiln/philox.h in OpenCL C: the
// keep factor of one element, used by the fused elementwise kernels
// (dropout_lines) and by the fused attention kernels (ATTENTION_DROPOUT's
// probabilities, codegen_attention.cpp). The rounds mirror
// kiln_philox4x32_10 line for line (and backends/vulkan/shaders/dropout.comp
// mirrors both); the conformance cases compare all of them bit for bit with
// the C one. The scale and threshold are computed here, on the host, in
// double: a kernel never divides (OpenCL's fp32 division is not correctly
// rounded).
#include <cstdio>

#include "emit.h"
#include "kiln/philox.h"

namespace kiln::ocl {
namespace {

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08Xu", v);
  return std::string(buf);
}

std::string u64(uint64_t v) { return std::to_string(v) + "ul"; }

}  // namespace

std::vector<std::string> dropout_factor_lines(const std::string& f, const std::string& e, const std::string& key,
                                              const DropoutMask& mask) {
  return {
      "{",
      "  const ulong e = (ulong)(" + e + ");",
      "  const ulong off = (ulong)(uint)" + key + "[3] << 32 | (ulong)(uint)" + key + "[2];",
      "  const ulong g = e / " + u64(mask.period) + " * " + u64(mask.stride) + " + e % " + u64(mask.period) + " + off;",
      "  const ulong block = g >> 2;",
      "  uint c0 = (uint)block, c1 = (uint)(block >> 32), c2 = (uint)" + key + "[1], c3 = 0u;",
      "  uint k0 = (uint)" + key + "[0], k1 = " + mask.site + ";",
      "  for (int round = 0; round < " + std::to_string(KILN_PHILOX_ROUNDS) + "; ++round) {",
      "    if (round > 0) {",
      "      k0 += " + hex(KILN_PHILOX_W0) + ";",
      "      k1 += " + hex(KILN_PHILOX_W1) + ";",
      "    }",
      "    const uint hi0 = mul_hi(" + hex(KILN_PHILOX_M0) + ", c0), lo0 = " + hex(KILN_PHILOX_M0) + " * c0;",
      "    const uint hi1 = mul_hi(" + hex(KILN_PHILOX_M1) + ", c2), lo1 = " + hex(KILN_PHILOX_M1) + " * c2;",
      "    c0 = hi1 ^ c1 ^ k0;",
      "    c1 = lo1;",
      "    c2 = hi0 ^ c3 ^ k1;",
      "    c3 = lo0;",
      "  }",
      "  const uint w = (uint)g & 3u;",
      "  const uint bits = w == 0u ? c0 : w == 1u ? c1 : w == 2u ? c2 : c3;",
      "  " + f + " = (bits >> 8) >= " + num(kiln_dropout_threshold(mask.p)) + " ? " + flt(kiln_dropout_scale(mask.p)) +
          " : 0.0f;",
      "}",
  };
}

std::string keyed_site(const std::string& key) { return "(uint)" + key + "[4]"; }

std::vector<std::string> dropout_lines(const std::string& y, const std::string& x, const std::string& key,
                                       const std::string& i, const ir::DecodedNode& n, const NodeInfo& inf) {
  // DROPOUT's site is a constant of the kernel; DROPOUT_KEYED's is the
  // key's word 4, so one kernel serves every layer.
  const DropoutMask mask{n.fattrs[0], static_cast<uint64_t>(inf.period), static_cast<uint64_t>(inf.stride),
                         n.op == KILN_OP_DROPOUT_KEYED ? keyed_site(key) : hex(static_cast<uint32_t>(inf.site))};
  std::vector<std::string> lines = {"float " + y + ";", "{", "  float keep;"};
  for (const std::string& l : dropout_factor_lines("keep", i, key, mask)) lines.push_back("  " + l);
  lines.push_back("  " + y + " = " + x + " * keep;");
  lines.emplace_back("}");
  return lines;
}

}  // namespace kiln::ocl
