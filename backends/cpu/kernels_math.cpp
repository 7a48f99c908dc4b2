// EXP, LOG, TANH, ERF, MAXIMUM and SELECT: the math primitives the activations
// decompose into (graph/ops/math.cpp). The cpu runs the activations with
// fused kernels of their own (kernels_elementwise.cpp), so these run only
// where a graph uses them directly; they are plain loops over libm, which
// is within an ulp of the reference. Every output may be at an input's
// address: element i is read before it is written.
#include <cmath>

#include "kernels.h"

namespace kiln::cpu::KILN_CPU_ISA {

namespace {

// libm calls cost ~20x an add: chunks of this many elements pay for a fork.
constexpr int64_t kMathGrain = 2048;

template <class F>
void map_unary(const Ctx& ctx, const float* x, float* y, int64_t n, F f) {
  for_chunks(ctx, n, kMathGrain, [&](int64_t, int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) y[i] = f(x[i]);
  });
}

}  // namespace

void exp_kernel(const Ctx& ctx, const float* x, float* y, int64_t n) {
  map_unary(ctx, x, y, n, [](float v) { return std::exp(v); });
}

void log_kernel(const Ctx& ctx, const float* x, float* y, int64_t n) {
  map_unary(ctx, x, y, n, [](float v) { return std::log(v); });
}

void tanh_kernel(const Ctx& ctx, const float* x, float* y, int64_t n) {
  map_unary(ctx, x, y, n, [](float v) { return std::tanh(v); });
}

void erf_kernel(const Ctx& ctx, const float* x, float* y, int64_t n) {
  map_unary(ctx, x, y, n, [](float v) { return std::erf(v); });
}

// b repeats every `inner` elements. Written out rather than with the SIMD
// max, which returns its second operand for a NaN in either.
void maximum_kernel(const Ctx& ctx, const float* a, const float* b, float* y, int64_t n, int64_t inner) {
  for_chunks(ctx, n, kMathGrain * 8, [&](int64_t, int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) {
      const float av = a[i], bv = b[i % inner];
      y[i] = std::isnan(av) || std::isnan(bv) ? NAN : (av < bv ? bv : av);
    }
  });
}

void select_kernel(const Ctx& ctx, const float* a, const float* b, const float* x, const float* y, float* z,
                   int64_t n) {
  for_chunks(ctx, n, kMathGrain * 8, [&](int64_t, int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) z[i] = a[i] <= b[i] ? x[i] : y[i];
  });
}

}  // namespace kiln::cpu::KILN_CPU_ISA
