// ADAMW: one fused pass over param, grad, m, v. The outputs usually are the
// inputs (in-place update), so each block of all four inputs is loaded
// before any output block is stored. ADAMW_CLIP is the same pass over a
// gradient first multiplied by the clip factor and rounded to its own dtype,
// a block at a time on the stack: a bf16 gradient is never copied whole.
#include <algorithm>

#include "convert16.h"
#include "kernels.h"

namespace kiln::cpu::KILN_CPU_ISA {

using namespace simd;

namespace {

// The update of elements [s, e), with the gradient at g + s.
struct AdamwStep {
  V lr, wd, c1, c2, gs, b1, b2, ob1, ob2, ve;

  AdamwStep(const float* hparams, float beta1, float beta2, float eps, bool apply_weight_decay)
      // hparams live in device memory and change every step (lr schedule,
      // bias corrections), so they are read here, not at load.
      : lr(set1(hparams[0])),
        wd(set1(apply_weight_decay ? hparams[1] : 0.0f)),
        c1(set1(hparams[2])),
        c2(set1(hparams[3])),
        gs(set1(hparams[4])),
        b1(set1(beta1)),
        b2(set1(beta2)),
        ob1(set1(1.0f - beta1)),
        ob2(set1(1.0f - beta2)),
        ve(set1(eps)) {}

  void one(V pv, V gv, V mv, V vv, V* po, V* mo, V* vo) const {
    V gg = gv * gs;
    V m2 = fma(b1, mv, ob1 * gg);
    V v2 = fma(b2, vv, ob2 * gg * gg);
    V upd = fma(wd, pv, (m2 * c1) / (sqrt(v2 * c2) + ve));
    *po = fnma(lr, upd, pv);
    *mo = m2;
    *vo = v2;
  }

  void range(const float* p, const float* g, const float* m, const float* v, float* p_out, float* m_out, float* v_out,
             int64_t s, int64_t e) const {
    int64_t i = s;
    V po, mo, vo;
    for (; i + W <= e; i += W) {
      one(load(p + i), load(g + i - s), load(m + i), load(v + i), &po, &mo, &vo);
      store(p_out + i, po);
      store(m_out + i, mo);
      store(v_out + i, vo);
    }
    if (i < e) {
      int64_t t = e - i;
      one(load_partial(p + i, t), load_partial(g + i - s, t), load_partial(m + i, t), load_partial(v + i, t), &po, &mo,
          &vo);
      store_partial(p_out + i, po, t);
      store_partial(m_out + i, mo, t);
      store_partial(v_out + i, vo, t);
    }
  }
};

// Three streams in, three out per element: a 64 KiB chunk of each is
// plenty to amortize the fork/join.
constexpr int64_t kAdamwGrain = 16384;
// ADAMW_CLIP's clipped gradient block, on each worker's stack.
constexpr int64_t kClipBlock = 1024;

}  // namespace

void adamw(const Ctx& ctx, const float* p, const float* g, const float* m, const float* v, const float* hparams,
           float* p_out, float* m_out, float* v_out, int64_t n, float beta1, float beta2, float eps,
           bool apply_weight_decay) {
  const AdamwStep step(hparams, beta1, beta2, eps, apply_weight_decay);
  for_chunks(ctx, n, kAdamwGrain,
             [&](int64_t, int64_t s, int64_t e) { step.range(p, g + s, m, v, p_out, m_out, v_out, s, e); });
}

void adamw_clip(const Ctx& ctx, const float* p, const void* g, kiln_dtype g_dtype, const float* m, const float* v,
                const float* hparams, const float* clip, float* p_out, float* m_out, float* v_out, int64_t n,
                float beta1, float beta2, float eps, bool apply_weight_decay) {
  const AdamwStep step(hparams, beta1, beta2, eps, apply_weight_decay);
  const V factor = set1(clip[0]);
  for_chunks(ctx, n, kAdamwGrain, [&](int64_t, int64_t s, int64_t e) {
    alignas(64) float block[kClipBlock];
    uint16_t narrow[kClipBlock];
    for (int64_t b = s; b < e; b += kClipBlock) {
      const int64_t len = std::min(kClipBlock, e - b);
      if (g_dtype == KILN_F32)
        std::copy_n(static_cast<const float*>(g) + b, len, block);
      else
        widen_row(g_dtype, static_cast<const uint16_t*>(g) + b, block, len);
      int64_t i = 0;
      for (; i + W <= len; i += W) store(block + i, load(block + i) * factor);
      if (i < len) store_partial(block + i, load_partial(block + i, len - i) * factor, len - i);
      // The product rounded to the gradient's dtype (exact for f32).
      if (g_dtype != KILN_F32) {
        narrow_row(g_dtype, block, narrow, len);
        widen_row(g_dtype, narrow, block, len);
      }
      step.range(p, block, m, v, p_out, m_out, v_out, b, b + len);
    }
  });
}

}  // namespace kiln::cpu::KILN_CPU_ISA
