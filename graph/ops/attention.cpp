// Attention's softmax: CAUSAL_SOFTMAX (scaled, masked above the diagonal)
// and its gradient; DOCUMENT_SOFTMAX, masked before each query's document
// too; ALIBI, the per-head linear position bias added to the
// scores before it (MPT); ATTENTION and ATTENTION_GRAD, the whole causal
// core as composites of those ops, for backends with a fused kernel.
//
// For each op: its Graph builder, its VJP rule (none for ops that are
// themselves gradients or have no inputs to differentiate) and its
// reference evaluation, registered in register_attention_ops at the bottom.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "graph/ops/op_def.h"
#include "graph/ops/vjp.h"
#include "graph/reference/reference_ctx.h"
#include "kiln/philox.h"

namespace kiln::graph {

// ---------------------------------------------------------------- builders

ValueId Graph::causal_softmax(ValueId x, float s) { return add_node(KILN_OP_CAUSAL_SOFTMAX, {x}, {}, {s})[0]; }
ValueId Graph::document_softmax(ValueId x, ValueId starts, float s) {
  return add_node(KILN_OP_DOCUMENT_SOFTMAX, {x, starts}, {}, {s})[0];
}
ValueId Graph::softmax_grad(ValueId y, ValueId dy, float s) {
  return add_node(KILN_OP_SOFTMAX_GRAD, {y, dy}, {}, {s})[0];
}
ValueId Graph::alibi(ValueId x, ValueId slopes) { return add_node(KILN_OP_ALIBI, {x, slopes})[0]; }
ValueId Graph::attention(ValueId q, ValueId k, ValueId v, float s) {
  return add_node(KILN_OP_ATTENTION, {q, k, v}, {}, {s})[0];
}
std::vector<ValueId> Graph::attention_grad(ValueId q, ValueId k, ValueId v, ValueId dy, float s) {
  return add_node(KILN_OP_ATTENTION_GRAD, {q, k, v, dy}, {}, {s});
}
ValueId Graph::attention_dropout(ValueId q, ValueId k, ValueId v, ValueId key, float s, float p, int64_t period,
                                 int64_t stride) {
  return add_node(KILN_OP_ATTENTION_DROPOUT, {q, k, v, key}, {period, stride}, {s, p})[0];
}
std::vector<ValueId> Graph::attention_dropout_grad(ValueId q, ValueId k, ValueId v, ValueId dy, ValueId key, float s,
                                                   float p, int64_t period, int64_t stride) {
  return add_node(KILN_OP_ATTENTION_DROPOUT_GRAD, {q, k, v, dy, key}, {period, stride}, {s, p});
}

namespace {

// ---------------------------------------------------------------- VJP rules

// y = causal_softmax(x): dx = scale * y * (dy - sum(dy * y)), from y itself.
Grads vjp_causal_softmax(Graph& g, const VjpArgs& a) {
  return {g.softmax_grad(a.out(0), a.dy[0], a.node.fattrs.at(0))};
}

// The same for DOCUMENT_SOFTMAX: its masked entries of y are 0 too. The
// starts are positions, with no gradient.
Grads vjp_document_softmax(Graph& g, const VjpArgs& a) {
  Grads dx = none_for(a);
  dx[0] = g.softmax_grad(a.out(0), a.dy[0], a.node.fattrs.at(0));
  return dx;
}

// y = x + bias(slopes): dx = dy. The slopes are constants of the model
// (computed on the host from the head count), so they get no gradient.
Grads vjp_alibi(Graph&, const VjpArgs& a) {
  Grads dx = none_for(a);
  dx[0] = a.dy[0];
  return dx;
}

// y = attention(q, k, v): ATTENTION_GRAD gives all three gradients at once
// (a fused kernel recomputes p once for them), whichever are needed.
Grads vjp_attention(Graph& g, const VjpArgs& a) {
  const float scale = a.node.fattrs.at(0);
  const std::vector<ValueId> d = g.attention_grad(a.in(0), a.in(1), a.in(2), a.dy[0], scale);
  return {d[0], d[1], d[2]};
}

// The same with dropout; the key, an integer input, gets no gradient.
Grads vjp_attention_dropout(Graph& g, const VjpArgs& a) {
  const auto& ia = a.node.iattrs;
  const auto& fa = a.node.fattrs;
  const std::vector<ValueId> d =
      g.attention_dropout_grad(a.in(0), a.in(1), a.in(2), a.dy[0], a.in(3), fa.at(0), fa.at(1), ia.at(0), ia.at(1));
  Grads dx = none_for(a);
  for (size_t i = 0; i < 3; ++i) dx[i] = d[i];
  return dx;
}

// ---------------------------------------------------------------- decomposition

// Both compute in f32 and round each output once, as the op is defined: a
// 16-bit node's inputs are widened first and its outputs narrowed last (in
// f32 the casts are left out, and the decomposition is the chain the model
// builds without ATTENTION, node for node: the same bits).
ValueId widened(Graph& g, ValueId x) { return g.value(x).dtype == KILN_F32 ? x : g.cast(x, KILN_F32); }
ValueId narrowed(Graph& g, ValueId x, kiln_dtype dt) { return dt == KILN_F32 ? x : g.cast(x, dt); }

std::vector<ValueId> decompose_attention(Graph& g, const Node& n) {
  const float scale = n.fattrs.at(0);
  const kiln_dtype dt = g.value(n.inputs[0]).dtype;
  const ValueId q = widened(g, n.inputs[0]), k = widened(g, n.inputs[1]), v = widened(g, n.inputs[2]);
  const ValueId p = g.causal_softmax(g.matmul(q, k, false, true), scale);
  return {narrowed(g, g.matmul(p, v), dt)};
}

// The chain's gradient as autodiff writes it (vjp_matmul, then
// vjp_causal_softmax, then vjp_matmul), after recomputing p from q and k.
std::vector<ValueId> decompose_attention_grad(Graph& g, const Node& n) {
  const float scale = n.fattrs.at(0);
  const kiln_dtype dt = g.value(n.inputs[0]).dtype;
  const ValueId q = widened(g, n.inputs[0]), k = widened(g, n.inputs[1]), v = widened(g, n.inputs[2]);
  const ValueId dy = widened(g, n.inputs[3]);
  const ValueId p = g.causal_softmax(g.matmul(q, k, false, true), scale);
  const ValueId dp = g.matmul(dy, v, false, true);
  const ValueId dv = g.matmul(p, dy, true, false);
  const ValueId ds = g.softmax_grad(p, dp, scale);
  const ValueId dq = g.matmul(ds, k, false, false);
  const ValueId dk = g.matmul(ds, q, true, false);
  return {narrowed(g, dq, dt), narrowed(g, dk, dt), narrowed(g, dv, dt)};
}

// ATTENTION_DROPOUT's chain: DROPOUT_KEYED between the softmax and @ v,
// where the model's chain has it (trainer/model/gpt.cpp), node for node.
std::vector<ValueId> decompose_attention_dropout(Graph& g, const Node& n) {
  const float scale = n.fattrs.at(0), p = n.fattrs.at(1);
  const int64_t period = n.iattrs.at(0), stride = n.iattrs.at(1);
  const kiln_dtype dt = g.value(n.inputs[0]).dtype;
  const ValueId q = widened(g, n.inputs[0]), k = widened(g, n.inputs[1]), v = widened(g, n.inputs[2]);
  const ValueId probs = g.causal_softmax(g.matmul(q, k, false, true), scale);
  const ValueId dropped = g.dropout_keyed(probs, n.inputs[3], p, period, stride);
  return {narrowed(g, g.matmul(dropped, v), dt)};
}

// Its gradient as autodiff writes the chain's (vjp_matmul, vjp_dropout_keyed,
// vjp_causal_softmax, vjp_matmul), after recomputing the probabilities.
std::vector<ValueId> decompose_attention_dropout_grad(Graph& g, const Node& n) {
  const float scale = n.fattrs.at(0), p = n.fattrs.at(1);
  const int64_t period = n.iattrs.at(0), stride = n.iattrs.at(1);
  const ValueId key = n.inputs[4];
  const kiln_dtype dt = g.value(n.inputs[0]).dtype;
  const ValueId q = widened(g, n.inputs[0]), k = widened(g, n.inputs[1]), v = widened(g, n.inputs[2]);
  const ValueId dy = widened(g, n.inputs[3]);
  const ValueId probs = g.causal_softmax(g.matmul(q, k, false, true), scale);
  const ValueId dropped = g.dropout_keyed(probs, key, p, period, stride);
  const ValueId ddropped = g.matmul(dy, v, false, true);
  const ValueId dv = g.matmul(dropped, dy, true, false);
  const ValueId ds = g.softmax_grad(probs, g.dropout_keyed(ddropped, key, p, period, stride), scale);
  const ValueId dq = g.matmul(ds, k, false, false);
  const ValueId dk = g.matmul(ds, q, true, false);
  return {narrowed(g, dq, dt), narrowed(g, dk, dt), narrowed(g, dv, dt)};
}

// ---------------------------------------------------------------- reference

// Row i of matrix m: the softmax over first(m, i) <= j <= i.
template <typename First>
void masked_softmax_rows(const ReferenceCtx& c, First first) {
  const auto& x = c.f(0);
  double scale = c.fa(0);
  int64_t T = c.shape_in(0).back();
  int64_t mats = static_cast<int64_t>(x.size()) / (T * T);
  HostTensor& y = c.out(0);  // zero-initialized: masked entries stay exactly 0
  std::vector<double> e(static_cast<size_t>(T));
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < T; ++i) {
      const float* xr = x.data() + (m * T + i) * T;
      float* yr = y.f32.data() + (m * T + i) * T;
      const int64_t j0 = first(m, i);
      double mx = -INFINITY;
      for (int64_t j = j0; j <= i; ++j) mx = std::max(mx, scale * xr[j]);
      double sum = 0.0;
      for (int64_t j = j0; j <= i; ++j) {
        e[static_cast<size_t>(j)] = std::exp(scale * xr[j] - mx);
        sum += e[static_cast<size_t>(j)];
      }
      for (int64_t j = j0; j <= i; ++j) yr[j] = static_cast<float>(e[static_cast<size_t>(j)] / sum);
    }
}

void op_causal_softmax(const ReferenceCtx& c) {
  masked_softmax_rows(c, [](int64_t, int64_t) { return int64_t{0}; });
}

// Sample b's matrices are the b-th 1/B of them; a start is clamped to [0, i].
void op_document_softmax(const ReferenceCtx& c) {
  const auto& starts = c.ids(1);
  const int64_t B = c.shape_in(1)[0], T = c.shape_in(1)[1];
  const int64_t mats_per_sample = static_cast<int64_t>(c.f(0).size()) / (T * T) / B;
  masked_softmax_rows(c, [&](int64_t m, int64_t i) {
    const int64_t s = starts[static_cast<size_t>(m / mats_per_sample * T + i)];
    return std::clamp<int64_t>(s, 0, i);
  });
}

// dx = scale * y * (dy - sum_j dy*y), rows over the last dim.
void op_softmax_grad(const ReferenceCtx& c) {
  const auto& y = c.f(0);
  const auto& dy = c.f(1);
  double scale = c.fa(0);
  int64_t T = c.shape_in(0).back();
  int64_t rows = static_cast<int64_t>(y.size()) / T;
  HostTensor& dx = c.out(0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* yr = y.data() + r * T;
    const float* dr = dy.data() + r * T;
    double dot = 0.0;
    for (int64_t j = 0; j < T; ++j) dot += static_cast<double>(dr[j]) * yr[j];
    for (int64_t j = 0; j < T; ++j)
      dx.f32[static_cast<size_t>(r * T + j)] = static_cast<float>(scale * yr[j] * (dr[j] - dot));
  }
}

// y[..., h, i, j] = x[..., h, i, j] + bias, the sum in double. The op
// defines bias = slopes[h] * (j - i) rounded to f32 (so a bias beyond the f32
// range is infinite, as on every backend): the double product of a float
// and an integer below 2^29 is exact, so one rounding gives it.
void op_alibi(const ReferenceCtx& c) {
  const auto& x = c.f(0);
  const auto& slopes = c.f(1);
  const Shape& s = c.shape_in(0);
  const int64_t T = s.back();
  const int64_t H = s[s.size() - 3];
  HostTensor& y = c.out(0);
  for (size_t k = 0; k < x.size(); ++k) {
    const auto e = static_cast<int64_t>(k);
    const int64_t j = e % T, i = e / T % T, h = e / (T * T) % H;
    const auto bias =
        static_cast<float>(static_cast<double>(slopes[static_cast<size_t>(h)]) * static_cast<double>(j - i));
    y.f32[k] = static_cast<float>(static_cast<double>(x[k]) + static_cast<double>(bias));
  }
}

// The probabilities of one matrix's rows (queries x keys, causal), in double.
std::vector<double> causal_probabilities(const float* q, const float* k, int64_t T, int64_t D, double scale) {
  std::vector<double> p(static_cast<size_t>(T * T), 0.0);
  for (int64_t i = 0; i < T; ++i) {
    double* row = p.data() + i * T;
    double mx = -INFINITY;
    for (int64_t j = 0; j <= i; ++j) {
      double s = 0.0;
      for (int64_t e = 0; e < D; ++e) s += static_cast<double>(q[i * D + e]) * k[j * D + e];
      row[j] = scale * s;
      mx = std::max(mx, row[j]);
    }
    double sum = 0.0;
    for (int64_t j = 0; j <= i; ++j) sum += row[j] = std::exp(row[j] - mx);
    for (int64_t j = 0; j <= i; ++j) row[j] /= sum;
  }
  return p;
}

// The factor of each probability p[m][i, j]: 1 (ATTENTION), or
// ATTENTION_DROPOUT's keep factor m[i, j], DROPOUT_KEYED's at element
// (m * T + i) * T + j of the probabilities, from its key input `key_at`.
class ProbabilityFactors {
 public:
  ProbabilityFactors(const ReferenceCtx& c, int64_t T) : T_(T) {
    if (c.node.op != KILN_OP_ATTENTION_DROPOUT && c.node.op != KILN_OP_ATTENTION_DROPOUT_GRAD) return;
    const size_t key_at = c.node.inputs.size() - 1;
    const auto& words = c.ids(key_at);
    if (words.size() != 5) c.fail("key must hold 5 words");
    dropout_ = true;
    key_ = kiln_dropout_key_from(words.data());
    site_ = static_cast<uint32_t>(words[4]);
    period_ = static_cast<uint64_t>(c.ia(0));
    stride_ = static_cast<uint64_t>(c.ia(1));
    threshold_ = kiln_dropout_threshold(c.fa(1));
    scale_ = kiln_dropout_scale(c.fa(1));
  }
  double at(int64_t m, int64_t i, int64_t j) const {
    if (!dropout_) return 1.0;
    const auto e = static_cast<uint64_t>((m * T_ + i) * T_ + j);
    const uint64_t g = kiln_dropout_index(e, period_, stride_, key_.offset);
    return kiln_dropout_keep(kiln_dropout_bits(key_, site_, g), threshold_) != 0 ? scale_ : 0.0;
  }

 private:
  int64_t T_;
  bool dropout_ = false;
  kiln_dropout_key key_{};
  uint32_t site_ = 0, threshold_ = 0;
  uint64_t period_ = 1, stride_ = 1;
  double scale_ = 1.0;
};

// ATTENTION and ATTENTION_DROPOUT.
void op_attention(const ReferenceCtx& c) {
  const auto& q = c.f(0);
  const auto& k = c.f(1);
  const auto& v = c.f(2);
  const Shape& s = c.shape_in(0);
  const int64_t T = s[s.size() - 2], D = s.back(), mats = static_cast<int64_t>(q.size()) / (T * D);
  const ProbabilityFactors factor(c, T);
  HostTensor& y = c.out(0);
  for (int64_t m = 0; m < mats; ++m) {
    const int64_t at = m * T * D;
    const std::vector<double> p = causal_probabilities(q.data() + at, k.data() + at, T, D, c.fa(0));
    for (int64_t i = 0; i < T; ++i)
      for (int64_t e = 0; e < D; ++e) {
        double acc = 0.0;
        for (int64_t j = 0; j <= i; ++j)
          acc += p[static_cast<size_t>(i * T + j)] * factor.at(m, i, j) * v[static_cast<size_t>(at + j * D + e)];
        y.f32[static_cast<size_t>(at + i * D + e)] = static_cast<float>(acc);
      }
  }
}

// The gradient from p, in double, for both ops: with the factor f = m[i, j]
// (1 without dropout), dp_ij = f dy_i . v_j and D_i = sum_j p_ij dp_ij.
void op_attention_grad(const ReferenceCtx& c) {
  const auto& q = c.f(0);
  const auto& k = c.f(1);
  const auto& v = c.f(2);
  const auto& dy = c.f(3);
  const Shape& s = c.shape_in(0);
  const double scale = c.fa(0);
  const int64_t T = s[s.size() - 2], D = s.back(), mats = static_cast<int64_t>(q.size()) / (T * D);
  const ProbabilityFactors factor(c, T);
  HostTensor &dq_out = c.out(0), &dk_out = c.out(1), &dv_out = c.out(2);  // zeroed at each out() call: once
  std::vector<double> dq(static_cast<size_t>(T * D)), dk(dq.size()), dv(dq.size()), ds(static_cast<size_t>(T * T));
  for (int64_t m = 0; m < mats; ++m) {
    const int64_t at = m * T * D;
    const float *Q = q.data() + at, *K = k.data() + at, *V = v.data() + at, *DY = dy.data() + at;
    const std::vector<double> p = causal_probabilities(Q, K, T, D, scale);
    std::fill(dq.begin(), dq.end(), 0.0);
    std::fill(dk.begin(), dk.end(), 0.0);
    std::fill(dv.begin(), dv.end(), 0.0);
    for (int64_t i = 0; i < T; ++i) {
      double dot = 0.0;  // D_i
      for (int64_t j = 0; j <= i; ++j) {
        double dp = 0.0;
        for (int64_t e = 0; e < D; ++e) dp += static_cast<double>(DY[i * D + e]) * V[j * D + e];
        ds[static_cast<size_t>(i * T + j)] = dp * factor.at(m, i, j);
        dot += p[static_cast<size_t>(i * T + j)] * ds[static_cast<size_t>(i * T + j)];
      }
      for (int64_t j = 0; j <= i; ++j) {
        const double pij = p[static_cast<size_t>(i * T + j)];
        const double dsij = scale * pij * (ds[static_cast<size_t>(i * T + j)] - dot);
        const double kept = pij * factor.at(m, i, j);
        for (int64_t e = 0; e < D; ++e) {
          dq[static_cast<size_t>(i * D + e)] += dsij * K[j * D + e];
          dk[static_cast<size_t>(j * D + e)] += dsij * Q[i * D + e];
          dv[static_cast<size_t>(j * D + e)] += kept * DY[i * D + e];
        }
      }
    }
    for (size_t e = 0; e < dq.size(); ++e) {
      dq_out.f32[static_cast<size_t>(at) + e] = static_cast<float>(dq[e]);
      dk_out.f32[static_cast<size_t>(at) + e] = static_cast<float>(dk[e]);
      dv_out.f32[static_cast<size_t>(at) + e] = static_cast<float>(dv[e]);
    }
  }
}

}  // namespace

void register_attention_ops(OpDefs& defs) {
  defs[KILN_OP_CAUSAL_SOFTMAX] = {vjp_causal_softmax, op_causal_softmax};
  defs[KILN_OP_DOCUMENT_SOFTMAX] = {vjp_document_softmax, op_document_softmax};
  defs[KILN_OP_SOFTMAX_GRAD] = {nullptr, op_softmax_grad};
  defs[KILN_OP_ALIBI] = {vjp_alibi, op_alibi};
  defs[KILN_OP_ATTENTION] = {vjp_attention, op_attention, decompose_attention};
  defs[KILN_OP_ATTENTION_GRAD] = {nullptr, op_attention_grad, decompose_attention_grad};
  defs[KILN_OP_ATTENTION_DROPOUT] = {vjp_attention_dropout, op_attention, decompose_attention_dropout};
  defs[KILN_OP_ATTENTION_DROPOUT_GRAD] = {nullptr, op_attention_grad, decompose_attention_dropout_grad};
}

}  // namespace kiln::graph
