#include "graph/conformance/compare.h"

#include <fmt/format.h>

#include <cmath>

namespace kiln::conformance {

double threshold_for(kiln_op op) {
  const kiln_op_info* info = kiln_op_find(op);
  switch (info ? info->tolerance : KILN_TOL_ELEMENTWISE) {
    case KILN_TOL_EXACT: return kExact;
    case KILN_TOL_GEMM: return kTolGemm;
    case KILN_TOL_ELEMENTWISE: break;
  }
  return kTolElementwise;
}

std::string format_nmse(double nmse) { return std::isinf(nmse) ? "inf" : fmt::format("{:.3g}", nmse); }

Comparison compare(const graph::HostTensor& want, const graph::HostTensor& got) {
  Comparison c;
  if (want.dtype != got.dtype || want.shape != got.shape) {
    c.nmse = INFINITY;
    c.where = "shape or dtype differs from the reference's " + graph::to_string(want.shape);
    return c;
  }
  if (want.dtype == KILN_I32) {
    for (size_t i = 0; i < want.i32.size(); ++i)
      if (want.i32[i] != got.i32[i]) {
        c.nmse = INFINITY;
        c.where = fmt::format("element {}: reference {}, got {}", i, want.i32[i], got.i32[i]);
        return c;
      }
    return c;
  }
  double num = 0.0, den = 0.0, worst = -1.0;
  size_t worst_at = 0;
  for (size_t i = 0; i < want.f32.size(); ++i) {
    const float r = want.f32[i], g = got.f32[i];
    const bool rf = std::isfinite(r), gf = std::isfinite(g);
    // Non-finite values must agree in kind: NaN with NaN, +inf with +inf.
    if (rf != gf || (!rf && !(std::isnan(r) && std::isnan(g)) && r != g)) {
      c.nmse = INFINITY;
      c.where = fmt::format("non-finite mismatch at element {}: reference {}, got {}", i, r, g);
      return c;
    }
    if (!rf) continue;
    if (c.bits_differ.empty() && std::signbit(r) != std::signbit(g))
      c.bits_differ = fmt::format("element {}: reference {}, got {}", i, r, g);
    const double d = static_cast<double>(r) - g;
    num += d * d;
    den += static_cast<double>(r) * r;
    if (std::abs(d) > worst) worst = std::abs(d), worst_at = i;
  }
  c.nmse = den > 0.0 ? num / den : (num == 0.0 ? 0.0 : INFINITY);
  if (worst >= 0.0)
    c.where = fmt::format("largest difference at element {}: reference {}, got {}", worst_at, want.f32[worst_at],
                          got.f32[worst_at]);
  return c;
}

}  // namespace kiln::conformance
