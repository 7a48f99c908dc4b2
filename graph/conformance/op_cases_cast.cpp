// Built-in cases for CAST, which is bit exact: every direction between f32,
// bf16 and f16, on inputs that hit each rounding rule (ties to even,
// f16 subnormals and the values below them, overflow to inf at f16's 65520
// and bf16's top, infinities and NaN) besides random values.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "graph/conformance/op_cases.h"

namespace kiln::conformance {

using graph::Graph;
using graph::HostTensor;

namespace {

float float_of(uint32_t u) {
  float f = 0;
  std::memcpy(&f, &u, 4);
  return f;
}

// The edge values, then random ones of mixed magnitude, count in all.
std::vector<float> cast_inputs(CaseMaker& m, size_t count) {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -2.5f};
  // Ties and near ties for bf16 (1 + 2^-8 ...) and for f16 (1 + 2^-11 ...).
  for (uint32_t u : {0x3F808000u, 0x3F818000u, 0x3F807FFFu, 0x3F808001u}) v.push_back(float_of(u));
  for (float f : {1.0f + 0x1p-11f, 1.0f + 0x1.8p-10f, 1.0f + 0x1p-11f + 0x1p-23f}) v.push_back(f);
  // f16's smallest normal and its subnormals, ties to zero among them.
  for (float f : {0x1p-14f, 0x1.ff8p-15f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-26f, 0x1.4p-24f, 0x1.8p-24f})
    v.push_back(f);
  // Overflow: f16's largest finite 65504 and its threshold 65520; bf16's.
  for (float f : {65504.0f, 65519.0f, 65520.0f, 65536.0f, -1e6f, 3.3e38f, float_of(0x7F7F8000)}) v.push_back(f);
  // f32 subnormals, infinities, NaNs.
  for (float f : {float_of(0x00000001), float_of(0x807FFFFF), INFINITY, -INFINITY, NAN, -NAN}) v.push_back(f);
  while (v.size() < count) {
    const float scale = std::ldexp(1.0f, static_cast<int>(m.rng.next(-30.0f, 20.0f)));
    v.push_back(m.rng.next(-1.0f, 1.0f) * scale);
  }
  return v;
}

}  // namespace

void add_cast_cases(Suite& suite) {
  CaseMaker m(suite, 1616);
  const kiln_dtype floats[] = {KILN_F32, KILN_BF16, KILN_F16};
  for (kiln_dtype from : floats)
    for (kiln_dtype to : floats) {
      Graph g;
      g.output("y", g.cast(g.input("x", from, {3, 67}), to));
      const std::string what = std::string(kiln_dtype_name(from)) + " to " + kiln_dtype_name(to);
      m.add(KILN_OP_CAST, what, std::move(g), {{"x", HostTensor::from_f32(from, {3, 67}, cast_inputs(m, 3 * 67))}});
    }
}

}  // namespace kiln::conformance
