// ADAMW: one fused pass over param, grad, m, v. The outputs usually are the
// inputs (in-place update), so each block of all four inputs is loaded
// before any output block is stored.
#include "kernels.h"

namespace kiln::cpu::KILN_CPU_ISA {

using namespace simd;

void adamw(const Ctx& ctx, const float* p, const float* g, const float* m, const float* v, const float* hparams,
           float* p_out, float* m_out, float* v_out, int64_t n, float beta1, float beta2, float eps,
           bool apply_weight_decay) {
  // hparams live in device memory and change every step (lr schedule,
  // bias corrections), so they are read here, not at load.
  const V lr = set1(hparams[0]), wd = set1(apply_weight_decay ? hparams[1] : 0.0f);
  const V c1 = set1(hparams[2]), c2 = set1(hparams[3]), gs = set1(hparams[4]);
  const V b1 = set1(beta1), b2 = set1(beta2), ob1 = set1(1.0f - beta1), ob2 = set1(1.0f - beta2);
  const V ve = set1(eps);
  auto step = [&](V pv, V gv, V mv, V vv, V* po, V* mo, V* vo) {
    V gg = gv * gs;
    V m2 = fma(b1, mv, ob1 * gg);
    V v2 = fma(b2, vv, ob2 * gg * gg);
    V upd = fma(wd, pv, (m2 * c1) / (sqrt(v2 * c2) + ve));
    *po = fnma(lr, upd, pv);
    *mo = m2;
    *vo = v2;
  };
  // Three streams in, three out per element: a 64 KiB chunk of each is
  // plenty to amortize the fork/join.
  for_chunks(ctx, n, 16384, [&](int64_t, int64_t s, int64_t e) {
    int64_t i = s;
    V po, mo, vo;
    for (; i + W <= e; i += W) {
      step(load(p + i), load(g + i), load(m + i), load(v + i), &po, &mo, &vo);
      store(p_out + i, po);
      store(m_out + i, mo);
      store(v_out + i, vo);
    }
    if (i < e) {
      int64_t t = e - i;
      step(load_partial(p + i, t), load_partial(g + i, t), load_partial(m + i, t), load_partial(v + i, t), &po, &mo,
           &vo);
      store_partial(p_out + i, po, t);
      store_partial(m_out + i, mo, t);
      store_partial(v_out + i, vo, t);
    }
  });
}

}  // namespace kiln::cpu::KILN_CPU_ISA
