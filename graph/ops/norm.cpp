// Normalization over the last dim: LAYERNORM, RMSNORM and their gradients.
//
// For each op: its Graph builder, its VJP rule (none for ops that are
// themselves gradients or have no inputs to differentiate) and its
// reference evaluation, registered in register_norm_ops at the bottom.
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "graph/ops/op_def.h"
#include "graph/ops/vjp.h"
#include "graph/reference/reference_ctx.h"

namespace kiln::graph {

// ---------------------------------------------------------------- builders

ValueId Graph::layernorm(ValueId x, ValueId g, ValueId b, float eps) {
  return add_node(KILN_OP_LAYERNORM, {x, g, b}, {}, {eps})[0];
}
std::vector<ValueId> Graph::layernorm_grad(ValueId x, ValueId g, ValueId dy, float eps) {
  return add_node(KILN_OP_LAYERNORM_GRAD, {x, g, dy}, {}, {eps});
}
ValueId Graph::rmsnorm(ValueId x, ValueId g, float eps) { return add_node(KILN_OP_RMSNORM, {x, g}, {}, {eps})[0]; }
std::vector<ValueId> Graph::rmsnorm_grad(ValueId x, ValueId g, ValueId dy, float eps) {
  return add_node(KILN_OP_RMSNORM_GRAD, {x, g, dy}, {}, {eps});
}

namespace {

// ---------------------------------------------------------------- VJP rules

// y = layernorm(x, gamma, beta): one LAYERNORM_GRAD gives all three.
Grads vjp_layernorm(Graph& g, const VjpArgs& a) {
  std::vector<ValueId> r = g.layernorm_grad(a.in(0), a.in(1), a.dy[0], a.node.fattrs.at(0));
  Grads d = none_for(a);
  for (size_t i = 0; i < 3; ++i)
    if (a.need[i]) d[i] = r[i];
  return d;
}

// y = rmsnorm(x, gamma): one RMSNORM_GRAD gives dx and dgamma.
Grads vjp_rmsnorm(Graph& g, const VjpArgs& a) {
  std::vector<ValueId> r = g.rmsnorm_grad(a.in(0), a.in(1), a.dy[0], a.node.fattrs.at(0));
  Grads d = none_for(a);
  for (size_t i = 0; i < 2; ++i)
    if (a.need[i]) d[i] = r[i];
  return d;
}

// ---------------------------------------------------------------- reference

// Mean and 1/sqrt(biased variance + eps) of one row of length C.
std::pair<double, double> row_stats(const float* x, int64_t C, double eps) {
  double mean = 0.0;
  for (int64_t j = 0; j < C; ++j) mean += x[j];
  mean /= static_cast<double>(C);
  double var = 0.0;
  for (int64_t j = 0; j < C; ++j) var += (x[j] - mean) * (x[j] - mean);
  var /= static_cast<double>(C);
  return {mean, 1.0 / std::sqrt(var + eps)};
}

void op_layernorm(const ReferenceCtx& c) {
  const auto& x = c.f(0);
  const auto& gamma = c.f(1);
  const auto& beta = c.f(2);
  double eps = c.fa(0);
  int64_t C = c.shape_in(0).back();
  int64_t rows = static_cast<int64_t>(x.size()) / C;
  HostTensor& y = c.out(0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * C;
    auto [mean, rstd] = row_stats(xr, C, eps);
    for (int64_t j = 0; j < C; ++j)
      y.f32[static_cast<size_t>(r * C + j)] =
          static_cast<float>((xr[j] - mean) * rstd * gamma[static_cast<size_t>(j)] + beta[static_cast<size_t>(j)]);
  }
}

// With xhat = (x - mean) * rstd and g = dy * gamma:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),
//   dgamma = sum over rows of dy * xhat,  dbeta = sum over rows of dy.
void op_layernorm_grad(const ReferenceCtx& c) {
  const auto& x = c.f(0);
  const auto& gamma = c.f(1);
  const auto& dy = c.f(2);
  double eps = c.fa(0);
  int64_t C = c.shape_in(0).back();
  int64_t rows = static_cast<int64_t>(x.size()) / C;
  HostTensor& dx = c.out(0);
  std::vector<double> dgamma(static_cast<size_t>(C), 0.0), dbeta(static_cast<size_t>(C), 0.0);
  std::vector<double> xhat(static_cast<size_t>(C)), gv(static_cast<size_t>(C));
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * C;
    const float* dyr = dy.data() + r * C;
    auto [mean, rstd] = row_stats(xr, C, eps);
    double mean_g = 0.0, mean_gx = 0.0;
    for (int64_t j = 0; j < C; ++j) {
      size_t u = static_cast<size_t>(j);
      xhat[u] = (xr[j] - mean) * rstd;
      gv[u] = static_cast<double>(dyr[j]) * gamma[u];
      mean_g += gv[u];
      mean_gx += gv[u] * xhat[u];
      dgamma[u] += static_cast<double>(dyr[j]) * xhat[u];
      dbeta[u] += dyr[j];
    }
    mean_g /= static_cast<double>(C);
    mean_gx /= static_cast<double>(C);
    for (int64_t j = 0; j < C; ++j) {
      size_t u = static_cast<size_t>(j);
      dx.f32[static_cast<size_t>(r * C + j)] = static_cast<float>(rstd * (gv[u] - mean_g - xhat[u] * mean_gx));
    }
  }
  HostTensor& dg = c.out(1);
  HostTensor& db = c.out(2);
  for (size_t j = 0; j < static_cast<size_t>(C); ++j) {
    dg.f32[j] = static_cast<float>(dgamma[j]);
    db.f32[j] = static_cast<float>(dbeta[j]);
  }
}

// 1/sqrt(mean(x^2) + eps) of one row of length C.
double row_rms_rstd(const float* x, int64_t C, double eps) {
  double ss = 0.0;
  for (int64_t j = 0; j < C; ++j) ss += static_cast<double>(x[j]) * x[j];
  return 1.0 / std::sqrt(ss / static_cast<double>(C) + eps);
}

void op_rmsnorm(const ReferenceCtx& c) {
  const auto& x = c.f(0);
  const auto& gamma = c.f(1);
  const double eps = c.fa(0);
  const int64_t C = c.shape_in(0).back();
  const int64_t rows = static_cast<int64_t>(x.size()) / C;
  HostTensor& y = c.out(0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * C;
    const double rstd = row_rms_rstd(xr, C, eps);
    for (int64_t j = 0; j < C; ++j)
      y.f32[static_cast<size_t>(r * C + j)] = static_cast<float>(xr[j] * rstd * gamma[static_cast<size_t>(j)]);
  }
}

// With xhat = x * rstd and g = dy * gamma:
//   dx = rstd * (g - xhat * mean(g * xhat)),  dgamma = sum over rows of dy * xhat.
void op_rmsnorm_grad(const ReferenceCtx& c) {
  const auto& x = c.f(0);
  const auto& gamma = c.f(1);
  const auto& dy = c.f(2);
  const double eps = c.fa(0);
  const int64_t C = c.shape_in(0).back();
  const int64_t rows = static_cast<int64_t>(x.size()) / C;
  HostTensor& dx = c.out(0);
  std::vector<double> dgamma(static_cast<size_t>(C), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data() + r * C;
    const float* dyr = dy.data() + r * C;
    const double rstd = row_rms_rstd(xr, C, eps);
    double mean_gx = 0.0;
    for (int64_t j = 0; j < C; ++j) {
      const double xhat = xr[j] * rstd;
      mean_gx += static_cast<double>(dyr[j]) * gamma[static_cast<size_t>(j)] * xhat;
      dgamma[static_cast<size_t>(j)] += static_cast<double>(dyr[j]) * xhat;
    }
    mean_gx /= static_cast<double>(C);
    for (int64_t j = 0; j < C; ++j) {
      const double xhat = xr[j] * rstd;
      const double g = static_cast<double>(dyr[j]) * gamma[static_cast<size_t>(j)];
      dx.f32[static_cast<size_t>(r * C + j)] = static_cast<float>(rstd * (g - xhat * mean_gx));
    }
  }
  HostTensor& dg = c.out(1);
  for (size_t j = 0; j < static_cast<size_t>(C); ++j) dg.f32[j] = static_cast<float>(dgamma[j]);
}

}  // namespace

void register_norm_ops(OpDefs& defs) {
  defs[KILN_OP_LAYERNORM] = {vjp_layernorm, op_layernorm};
  defs[KILN_OP_LAYERNORM_GRAD] = {nullptr, op_layernorm_grad};
  defs[KILN_OP_RMSNORM] = {vjp_rmsnorm, op_rmsnorm};
  defs[KILN_OP_RMSNORM_GRAD] = {nullptr, op_rmsnorm_grad};
}

}  // namespace kiln::graph
