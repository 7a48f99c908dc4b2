// FILL, ADD, MUL, SCALE, GELU, GELU_ERF, SILU, CLAMP and their gradients. Every output
// may be at the same address as an input: each W-wide block is loaded before
// it is stored.
#include <cmath>

#include "kernels.h"

namespace kiln::cpu::KILN_CPU_ISA {

using namespace simd;

namespace {

// Elementwise work is memory bound; a chunk of this many floats (64 KiB)
// amortizes the fork/join.
constexpr int64_t kGrain = 16384;

// GELU(x) = x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), written as
// x * sigmoid(2u), which needs one exp and stays accurate where 1 + tanh(u)
// would cancel (large negative x).
constexpr float kGeluK = 0.7978845608028654f;  // sqrt(2/pi)
constexpr float kGeluC = 0.044715f;
// -2u is clamped here so sigmoid stays a normal float (no denormal stalls);
// the lost tail is below 1e-34 in absolute terms.
constexpr float kMaxNeg2u = 80.0f;

inline V gelu_v(V x) {
  V x2 = x * x;
  V u = x * fma(x2, set1(kGeluK * kGeluC), set1(kGeluK));
  V e = exp(min(set1(kMaxNeg2u), u * set1(-2.0f)));
  return x / (set1(1.0f) + e);
}

// d/dx [x s(2u)] = s + x s (1 - s) 2 u',  s = 1 / (1 + e), 1 - s = e s.
inline V gelu_grad_v(V x, V dy) {
  V x2 = x * x;
  V u = x * fma(x2, set1(kGeluK * kGeluC), set1(kGeluK));
  V du = fma(x2, set1(3.0f * kGeluK * kGeluC), set1(kGeluK));
  V e = exp(min(set1(kMaxNeg2u), u * set1(-2.0f)));
  V s = set1(1.0f) / (set1(1.0f) + e);
  V d = fma(x * (e * s) * s, du * set1(2.0f), s);
  return dy * d;
}

// SiLU's sigmoid is exactly 0 below this x (where it is < 2e-35): it stays a
// normal float, and silu(-inf) = -inf * 0 = NaN as the formula gives.
constexpr float kSiluFlushBelow = -80.0f;

// sigmoid(x) = 1 / (1 + e), e = exp(-x) capped at e^80; returns s and sets e.
inline V silu_sigmoid_v(V x, V& e) {
  e = exp(min(set1(-kSiluFlushBelow), set1(0.0f) - x));
  return zero_below(set1(1.0f) / (set1(1.0f) + e), x, set1(kSiluFlushBelow));
}

inline V silu_v(V x) {
  V e;
  return x * silu_sigmoid_v(x, e);
}

// dy s (1 + x (1 - s)), with 1 - s = e s (no cancellation as s -> 1); at
// +-inf x (1 - s) is inf * 0 = NaN, as in the formula.
inline V silu_grad_v(V x, V dy) {
  V e;
  V s = silu_sigmoid_v(x, e);
  return dy * (s * fma(x, e * s, set1(1.0f)));
}

// y = a op b with b repeating every `inner` elements.
template <class Op>
void broadcast(const Ctx& ctx, const float* a, const float* b, float* y, int64_t n, int64_t inner, Op op) {
  if (inner == n) {
    for_chunks(ctx, n, kGrain, [&](int64_t, int64_t s, int64_t e) { map2(a + s, b + s, y + s, e - s, op); });
    return;
  }
  if (inner == 1) {
    V vb = set1(b[0]);
    for_chunks(ctx, n, kGrain,
               [&](int64_t, int64_t s, int64_t e) { map1(a + s, y + s, e - s, [&](V va) { return op(va, vb); }); });
    return;
  }
  if (inner < 4 * W) {
    // Rows too short for the vector path to pay off.
    for_chunks(ctx, n, kGrain, [&](int64_t, int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) {
        float t[W];
        store(t, op(set1(a[i]), set1(b[i % inner])));
        y[i] = t[0];
      }
    });
    return;
  }
  int64_t rows = n / inner;
  for_chunks(ctx, rows, grain_for(inner), [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) map2(a + r * inner, b, y + r * inner, inner, op);
  });
}

}  // namespace

void fill(const Ctx& ctx, float* y, int64_t n, float value) {
  V v = set1(value);
  for_chunks(ctx, n, kGrain, [&](int64_t, int64_t s, int64_t e) {
    int64_t i = s;
    for (; i + W <= e; i += W) store(y + i, v);
    for (; i < e; ++i) y[i] = value;
  });
}

void add(const Ctx& ctx, const float* a, const float* b, float* y, int64_t n, int64_t inner) {
  broadcast(ctx, a, b, y, n, inner, [](V p, V q) { return p + q; });
}

void mul(const Ctx& ctx, const float* a, const float* b, float* y, int64_t n, int64_t inner) {
  broadcast(ctx, a, b, y, n, inner, [](V p, V q) { return p * q; });
}

void scale(const Ctx& ctx, const float* x, float* y, int64_t n, float s) {
  for_chunks(ctx, n, kGrain, [&](int64_t, int64_t b, int64_t e) { simd::scale(x + b, s, y + b, e - b); });
}

void gelu(const Ctx& ctx, const float* x, float* y, int64_t n) {
  // exp + divide: ~4x the arithmetic of a plain elementwise op.
  for_chunks(ctx, n, kGrain / 4, [&](int64_t, int64_t s, int64_t e) { map1(x + s, y + s, e - s, gelu_v); });
}

void gelu_grad(const Ctx& ctx, const float* x, const float* dy, float* dx, int64_t n) {
  for_chunks(ctx, n, kGrain / 4,
             [&](int64_t, int64_t s, int64_t e) { map2(x + s, dy + s, dx + s, e - s, gelu_grad_v); });
}

// The exact GELU is scalar: the SIMD layer has no erf, and libm's erff is
// correctly rounded to within an ulp. 0.5 erfc(-x / sqrt 2) is the normal CDF
// without the cancellation 1 + erf(x / sqrt 2) suffers at large negative x.
constexpr float kGeluErfInvSqrt2 = 0.70710678118654752f;
constexpr float kGeluErfInvSqrt2Pi = 0.39894228040143268f;

void gelu_erf(const Ctx& ctx, const float* x, float* y, int64_t n) {
  for_chunks(ctx, n, kGrain / 8, [&](int64_t, int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) {
      const float v = x[i];
      y[i] = v * 0.5f * std::erfc(-v * kGeluErfInvSqrt2);
    }
  });
}

void gelu_erf_grad(const Ctx& ctx, const float* x, const float* dy, float* dx, int64_t n) {
  for_chunks(ctx, n, kGrain / 8, [&](int64_t, int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) {
      const float v = x[i];
      const float cdf = 0.5f * std::erfc(-v * kGeluErfInvSqrt2);
      const float pdf = kGeluErfInvSqrt2Pi * std::exp(-0.5f * v * v);
      dx[i] = dy[i] * (cdf + v * pdf);
    }
  });
}

void silu(const Ctx& ctx, const float* x, float* y, int64_t n) {
  // exp + divide, like GELU.
  for_chunks(ctx, n, kGrain / 4, [&](int64_t, int64_t s, int64_t e) { map1(x + s, y + s, e - s, silu_v); });
}

void silu_grad(const Ctx& ctx, const float* x, const float* dy, float* dx, int64_t n) {
  for_chunks(ctx, n, kGrain / 4,
             [&](int64_t, int64_t s, int64_t e) { map2(x + s, dy + s, dx + s, e - s, silu_grad_v); });
}

void clamp(const Ctx& ctx, const float* x, float* y, int64_t n, float lo, float hi) {
  // x second: the x86 min/max return their second operand when either is NaN.
  V vlo = set1(lo), vhi = set1(hi);
  for_chunks(ctx, n, kGrain, [&](int64_t, int64_t s, int64_t e) {
    map1(x + s, y + s, e - s, [&](V v) { return min(vhi, max(vlo, v)); });
  });
}

void clamp_grad(const Ctx& ctx, const float* x, const float* dy, float* dx, int64_t n, float lo, float hi) {
  V vlo = set1(lo), vhi = set1(hi);
  for_chunks(ctx, n, kGrain, [&](int64_t, int64_t s, int64_t e) {
    map2(x + s, dy + s, dx + s, e - s, [&](V v, V d) { return keep_between(d, v, vlo, vhi); });
  });
}

}  // namespace kiln::cpu::KILN_CPU_ISA
