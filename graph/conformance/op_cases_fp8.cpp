// Built-in cases for CAST_FP8, which is bit exact in every dtype: both
// formats, a given scale (the delayed recipe) and the tensor's own (the
// tensorwise one), on inputs that land on each rounding rule of the scaled
// value (ties to even, subnormals and the values below them, saturation,
// infinities and NaN) besides random ones; and scales whose reciprocal is
// subnormal or whose amax passes over NaN. FP8_GRAD_CAST, a composite, is
// the identity forward.
#include <cmath>
#include <string>
#include <vector>

#include "graph/conformance/op_cases.h"
#include "kiln/fp8.h"

namespace kiln::conformance {

using graph::Graph;
using graph::HostTensor;
using graph::Shape;

namespace {

// Scaled values on each format's rounding edges, then random values of
// mixed magnitude; divided by `scale` so that x * scale lands near them.
std::vector<float> fp8_inputs(CaseMaker& m, kiln_fp8_format f, float scale, size_t count) {
  std::vector<float> scaled = {0.0f, -0.0f, 1.0f, -2.5f, INFINITY, -INFINITY, NAN};
  if (f == KILN_FP8_E4M3) {
    // 1 + 1/16 ties to 1, 1 + 3/16 to 1.25; 2^-9 is the smallest subnormal,
    // 2^-10 ties to 0, 3 x 2^-11 rounds up to it; 448 is the largest, and
    // everything past it saturates.
    for (float v : {1.0625f, 1.1875f, -1.1875f, 0x1p-9f, 0x1p-10f, 0x1.8p-10f, 0x1.4p-9f, 0x1p-6f, 0x1.1p-6f, 448.0f,
                    464.0f, 480.0f, 1e6f, -3e38f})
      scaled.push_back(v);
  } else {
    for (float v : {1.125f, 1.375f, -1.375f, 0x1p-16f, 0x1p-17f, 0x1.8p-17f, 0x1.4p-16f, 0x1p-14f, 0x1.2p-14f, 57344.0f,
                    61440.0f, 65536.0f, 1e9f, -3e38f})
      scaled.push_back(v);
  }
  std::vector<float> x;
  for (float v : scaled) x.push_back(static_cast<float>(static_cast<double>(v) / scale));
  while (x.size() < count) {
    const float magnitude = std::ldexp(1.0f, static_cast<int>(m.rng.next(-20.0f, 12.0f)));
    x.push_back(m.rng.next(-1.0f, 1.0f) * magnitude);
  }
  return x;
}

void add_cast(CaseMaker& m, const std::string& what, kiln_dtype dtype, kiln_fp8_format f, bool current,
              const std::vector<float>& x, float scale) {
  const Shape s{3, static_cast<int64_t>(x.size() / 3)};
  Graph g;
  const Graph::Fp8Cast c = g.cast_fp8(g.input("x", dtype, s), g.input("s", KILN_F32, {1}), f, current);
  g.output("y", c.y);
  g.output("amax", c.amax);
  m.add(KILN_OP_CAST_FP8, what, std::move(g), {{"x", HostTensor::from_f32(dtype, s, x)}, {"s", m.rng.scalar(scale)}});
}

}  // namespace

void add_fp8_cases(Suite& suite) {
  CaseMaker m(suite, 2048);
  for (kiln_dtype dtype : {KILN_F32, KILN_BF16, KILN_F16})
    for (kiln_fp8_format f : {KILN_FP8_E4M3, KILN_FP8_E5M2}) {
      const std::string name = std::string(f == KILN_FP8_E4M3 ? "e4m3 " : "e5m2 ") + kiln_dtype_name(dtype);
      // A power of two keeps the edges exact; 3 puts x * scale between them.
      for (float scale : {4.0f, 3.0f})
        add_cast(m, name + " scale " + std::to_string(static_cast<int>(scale)), dtype, f, false,
                 fp8_inputs(m, f, scale, 3 * 67), scale);
      // Tensorwise: the scale input is ignored and the amax passes over NaN
      // (the edge values hold infinities, so the random values alone give a
      // finite amax here).
      std::vector<float> random = fp8_inputs(m, f, 1.0f, 3 * 67 + 21);
      random.erase(random.begin(), random.begin() + 21);
      random[5] = NAN;
      add_cast(m, name + " current", dtype, f, true, random, 1234.0f);
    }
  // The scale's reciprocal is subnormal (an amax of 1e-37: the scale is the
  // largest float); every element 0 (amax 0, scale 1); an infinite amax.
  std::vector<float> tiny(3 * 5, 1e-37f), zero(3 * 5, 0.0f), inf(3 * 5, 2.0f);
  tiny[4] = -0.5e-37f;
  inf[7] = -INFINITY;
  add_cast(m, "e4m3 f32 current tiny amax", KILN_F32, KILN_FP8_E4M3, true, tiny, 1.0f);
  add_cast(m, "e5m2 f32 current zeros", KILN_F32, KILN_FP8_E5M2, true, zero, 1.0f);
  add_cast(m, "e4m3 f32 current infinite amax", KILN_F32, KILN_FP8_E4M3, true, inf, 1.0f);
  add_cast(m, "e4m3 f32 delayed huge scale", KILN_F32, KILN_FP8_E4M3, false, tiny, 3.4e38f);
  // Long enough for a device's reduction to split it (workgroups, threads).
  std::vector<float> many = fp8_inputs(m, KILN_FP8_E4M3, 1.0f, 3 * 40001);
  add_cast(m, "e4m3 f32 current [3, 40001]", KILN_F32, KILN_FP8_E4M3, true, many, 1.0f);
  add_cast(m, "e5m2 bf16 scale 3 [3, 40001]", KILN_BF16, KILN_FP8_E5M2, false, many, 3.0f);
  for (kiln_dtype dtype : {KILN_F32, KILN_BF16}) {
    Graph g;
    const graph::ValueId x = g.input("x", dtype, {5, 33});
    g.output("y", g.fp8_grad_cast(x, g.input("s", KILN_F32, {1}), KILN_FP8_E5M2, false));
    m.add(KILN_OP_FP8_GRAD_CAST, kiln_dtype_name(dtype), std::move(g),
          {{"x", HostTensor::from_f32(dtype, {5, 33}, m.rng.uniform({5, 33}).f32)}, {"s", m.rng.scalar(2.0f)}});
  }
}

}  // namespace kiln::conformance
