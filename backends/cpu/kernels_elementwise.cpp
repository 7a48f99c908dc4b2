// FILL, ADD, MUL, SCALE, GELU, GELU_GRAD. Every output may be at the same
// address as an input: each W-wide block is loaded before it is stored.
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

}  // namespace kiln::cpu::KILN_CPU_ISA
