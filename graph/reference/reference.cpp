// The reference interpreter. One function per op, each a direct transcription
// of the op's definition in kiln/ir.h: plain loops over row-major tensors,
// sums and dot products accumulated in double, results rounded to f32 once.
// Speed matters only enough that a small GPT step runs in well under a
// second; everything else yields to being obviously correct.
#include "graph/reference/reference.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <utility>

#include "core/error.h"

namespace kiln::graph {

// ---------------------------------------------------------------- HostTensor

HostTensor HostTensor::zeros(kiln_dtype dtype, Shape shape) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  size_t n = static_cast<size_t>(graph::numel(t.shape));
  if (dtype == KILN_F32)
    t.f32.assign(n, 0.0f);
  else if (dtype == KILN_I32)
    t.i32.assign(n, 0);
  else
    throw Error("HostTensor: unknown dtype " + std::to_string(static_cast<int>(dtype)));
  return t;
}

const void* HostTensor::data() const {
  return dtype == KILN_I32 ? static_cast<const void*>(i32.data()) : static_cast<const void*>(f32.data());
}

void* HostTensor::data() { return dtype == KILN_I32 ? static_cast<void*>(i32.data()) : static_cast<void*>(f32.data()); }

namespace {

const char* dtype_name(kiln_dtype d) {
  switch (d) {
    case KILN_F32: return "f32";
    case KILN_I32: return "i32";
  }
  return "unknown dtype";
}

std::string describe(kiln_dtype d, const Shape& s) { return std::string(dtype_name(d)) + " " + to_string(s); }

size_t holds(const HostTensor& t) { return t.dtype == KILN_I32 ? t.i32.size() : t.f32.size(); }

// ---------------------------------------------------------------- helpers

// Everything a kernel needs about the node it evaluates.
struct Ctx {
  const Graph& g;
  const Node& node;
  std::vector<HostTensor>& vals;

  [[noreturn]] void fail(const std::string& why) const {
    throw Error(std::string("reference: ") + op_name(node.op) + ": " + why);
  }
  const HostTensor& in(size_t i) const { return vals[static_cast<size_t>(node.inputs.at(i))]; }
  // Input i as f32 data; throws if it is not f32.
  const std::vector<float>& f(size_t i) const {
    const HostTensor& t = in(i);
    if (t.dtype != KILN_F32) fail("input " + std::to_string(i) + " must be f32");
    return t.f32;
  }
  const std::vector<int32_t>& ids(size_t i) const {
    const HostTensor& t = in(i);
    if (t.dtype != KILN_I32) fail("input " + std::to_string(i) + " must be i32");
    return t.i32;
  }
  const Shape& shape_in(size_t i) const { return in(i).shape; }
  // Allocates output o with the dtype and shape the graph declares.
  HostTensor& out(size_t o) const {
    ValueId v = node.outputs.at(o);
    const Value& val = g.value(v);
    vals[static_cast<size_t>(v)] = HostTensor::zeros(val.dtype, val.shape);
    return vals[static_cast<size_t>(v)];
  }
  float fa(size_t i) const {
    if (i >= node.fattrs.size()) fail("missing float attribute " + std::to_string(i));
    return node.fattrs[i];
  }
  int64_t ia(size_t i) const {
    if (i >= node.iattrs.size()) fail("missing int attribute " + std::to_string(i));
    return node.iattrs[i];
  }
};

int64_t prod(const Shape& s, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= s[i];
  return n;
}

double gelu(double x) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

double gelu_derivative(double x) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  double u = k * (x + 0.044715 * x * x * x);
  double t = std::tanh(u);
  double du = k * (1.0 + 3.0 * 0.044715 * x * x);
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du;
}

// ---------------------------------------------------------------- kernels

void op_fill(const Ctx& c) {
  HostTensor& y = c.out(0);
  std::fill(y.f32.begin(), y.f32.end(), c.fa(0));
}

// ADD / MUL: b's shape is a suffix of a's, so b repeats every numel(b).
void op_binary(const Ctx& c, bool is_add) {
  const auto& a = c.f(0);
  const auto& b = c.f(1);
  HostTensor& y = c.out(0);
  size_t nb = b.size();
  if (nb == 0 || a.size() % nb != 0) c.fail("b does not broadcast over a");
  for (size_t k = 0; k < a.size(); ++k) {
    double av = a[k], bv = b[k % nb];
    y.f32[k] = static_cast<float>(is_add ? av + bv : av * bv);
  }
}

void op_scale(const Ctx& c) {
  const auto& x = c.f(0);
  double s = c.fa(0);
  HostTensor& y = c.out(0);
  for (size_t k = 0; k < x.size(); ++k) y.f32[k] = static_cast<float>(x[k] * s);
}

void op_gelu(const Ctx& c) {
  const auto& x = c.f(0);
  HostTensor& y = c.out(0);
  for (size_t k = 0; k < x.size(); ++k) y.f32[k] = static_cast<float>(gelu(x[k]));
}

void op_gelu_grad(const Ctx& c) {
  const auto& x = c.f(0);
  const auto& dy = c.f(1);
  HostTensor& dx = c.out(0);
  for (size_t k = 0; k < x.size(); ++k)
    dx.f32[k] = static_cast<float>(static_cast<double>(dy[k]) * gelu_derivative(x[k]));
}

// y[.., M, N] = op(a)[.., M, K] @ op(b)[.., K, N].
void op_matmul(const Ctx& c) {
  const auto& a = c.f(0);
  const auto& b = c.f(1);
  const Shape& as = c.shape_in(0);
  const Shape& bs = c.shape_in(1);
  bool ta = c.ia(0) != 0, tb = c.ia(1) != 0;
  size_t r = as.size();
  int64_t M = ta ? as[r - 1] : as[r - 2];
  int64_t K = ta ? as[r - 2] : as[r - 1];
  int64_t N = tb ? bs[r - 2] : bs[r - 1];
  int64_t batch = prod(as, 0, r - 2);
  HostTensor& y = c.out(0);
  std::vector<double> arow(static_cast<size_t>(K)), row(static_cast<size_t>(N));
  std::vector<float> bt(tb ? static_cast<size_t>(K * N) : 0);
  for (int64_t p = 0; p < batch; ++p) {
    const float* A = a.data() + p * M * K;
    const float* B = b.data() + p * K * N;
    float* Y = y.f32.data() + p * M * N;
    if (tb) {  // materialize op(b) = b^T as a row-major [K, N]
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k) bt[static_cast<size_t>(k * N + n)] = B[n * K + k];
      B = bt.data();
    }
    for (int64_t i = 0; i < M; ++i) {
      // Row i of op(a), gathered once.
      for (int64_t k = 0; k < K; ++k) arow[static_cast<size_t>(k)] = ta ? A[k * M + i] : A[i * K + k];
      // i-k-j: row i of y accumulates arow[k] * (row k of op(b)).
      std::fill(row.begin(), row.end(), 0.0);
      for (int64_t k = 0; k < K; ++k) {
        double aik = arow[static_cast<size_t>(k)];
        const float* Bk = B + k * N;
        for (int64_t j = 0; j < N; ++j) row[static_cast<size_t>(j)] += aik * Bk[j];
      }
      for (int64_t j = 0; j < N; ++j) Y[i * N + j] = static_cast<float>(row[static_cast<size_t>(j)]);
    }
  }
}

void check_id(const Ctx& c, int32_t id, int64_t vocab, size_t at) {
  if (id < 0 || id >= vocab)
    c.fail("id " + std::to_string(id) + " at position " + std::to_string(at) + " is out of range [0, " +
           std::to_string(vocab) + ")");
}

void op_embedding(const Ctx& c) {
  const auto& table = c.f(0);
  const auto& ids = c.ids(1);
  int64_t V = c.shape_in(0)[0], C = c.shape_in(0)[1];
  HostTensor& y = c.out(0);
  for (size_t i = 0; i < ids.size(); ++i) {
    check_id(c, ids[i], V, i);
    std::copy_n(table.begin() + ids[i] * C, C, y.f32.begin() + static_cast<int64_t>(i) * C);
  }
}

void op_embedding_grad(const Ctx& c) {
  const auto& dy = c.f(0);
  const auto& ids = c.ids(1);
  int64_t V = c.ia(0);
  int64_t C = c.shape_in(0).back();
  std::vector<double> acc(static_cast<size_t>(V * C), 0.0);
  for (size_t i = 0; i < ids.size(); ++i) {
    check_id(c, ids[i], V, i);
    for (int64_t j = 0; j < C; ++j)
      acc[static_cast<size_t>(ids[i] * C + j)] += dy[i * static_cast<size_t>(C) + static_cast<size_t>(j)];
  }
  HostTensor& dt = c.out(0);
  for (size_t k = 0; k < acc.size(); ++k) dt.f32[k] = static_cast<float>(acc[k]);
}

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

void op_layernorm(const Ctx& c) {
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
void op_layernorm_grad(const Ctx& c) {
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

void op_causal_softmax(const Ctx& c) {
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
      double mx = -INFINITY;
      for (int64_t j = 0; j <= i; ++j) mx = std::max(mx, scale * xr[j]);
      double sum = 0.0;
      for (int64_t j = 0; j <= i; ++j) {
        e[static_cast<size_t>(j)] = std::exp(scale * xr[j] - mx);
        sum += e[static_cast<size_t>(j)];
      }
      for (int64_t j = 0; j <= i; ++j) yr[j] = static_cast<float>(e[static_cast<size_t>(j)] / sum);
    }
}

// dx = scale * y * (dy - sum_j dy*y), rows over the last dim.
void op_softmax_grad(const Ctx& c) {
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

// log(sum_j exp(row[j])), computed stably.
double log_sum_exp(const float* row, int64_t V) {
  double mx = -INFINITY;
  for (int64_t j = 0; j < V; ++j) mx = std::max(mx, static_cast<double>(row[j]));
  double s = 0.0;
  for (int64_t j = 0; j < V; ++j) s += std::exp(row[j] - mx);
  return mx + std::log(s);
}

void op_cross_entropy(const Ctx& c) {
  const auto& logits = c.f(0);
  const auto& targets = c.ids(1);
  int64_t N = c.shape_in(0)[0], V = c.shape_in(0)[1];
  double total = 0.0;
  for (int64_t n = 0; n < N; ++n) {
    int32_t t = targets[static_cast<size_t>(n)];
    check_id(c, t, V, static_cast<size_t>(n));
    const float* row = logits.data() + n * V;
    total += log_sum_exp(row, V) - row[t];
  }
  c.out(0).f32[0] = static_cast<float>(total / static_cast<double>(N));
}

// dlogits = dloss / N * (softmax(logits) - onehot(target)).
void op_cross_entropy_grad(const Ctx& c) {
  const auto& logits = c.f(0);
  const auto& targets = c.ids(1);
  double dloss = c.f(2).at(0);
  int64_t N = c.shape_in(0)[0], V = c.shape_in(0)[1];
  HostTensor& d = c.out(0);
  double k = dloss / static_cast<double>(N);
  for (int64_t n = 0; n < N; ++n) {
    int32_t t = targets[static_cast<size_t>(n)];
    check_id(c, t, V, static_cast<size_t>(n));
    const float* row = logits.data() + n * V;
    double lse = log_sum_exp(row, V);
    for (int64_t j = 0; j < V; ++j) {
      double p = std::exp(row[j] - lse) - (j == t ? 1.0 : 0.0);
      d.f32[static_cast<size_t>(n * V + j)] = static_cast<float>(k * p);
    }
  }
}

// Tensor parallelism. The reference is a group of one rank: the sum or
// max of x over {this rank} is x itself. Multi-rank groups are the host's
// business (it runs the collective over MPI between compiled pieces).
void op_all_reduce(const Ctx& c) {
  if (c.ia(0) != 0 && c.ia(0) != 1) c.fail("reduction must be 0 (sum) or 1 (max)");
  c.out(0).f32 = c.f(0);
}

// y[r] = max over the last dim of row r; a NaN anywhere in the row makes
// it NaN (as a max would that any NaN poisons, like a sum).
void op_row_max(const Ctx& c) {
  const auto& x = c.f(0);
  const int64_t V = c.shape_in(0).back();
  HostTensor& y = c.out(0);
  for (size_t r = 0; r < y.f32.size(); ++r) {
    const float* row = x.data() + static_cast<int64_t>(r) * V;
    float m = row[0];
    // !(a <= m): a is larger or NaN; once m is NaN it stays NaN.
    for (int64_t j = 1; j < V && !std::isnan(m); ++j)
      if (!(row[j] <= m)) m = row[j];
    y.f32[r] = m;
  }
}

// A target this vocab shard holds, or -1 for one that lives in another shard.
int64_t local_target(int32_t t, int64_t V) { return t >= 0 && t < V ? t : -1; }

// sums[i] = {sum_j exp(logits[i][j] - rowmax[i]), logits[i][t] - rowmax[i]}.
void op_cross_entropy_shard(const Ctx& c) {
  const auto& logits = c.f(0);
  const auto& targets = c.ids(1);
  const auto& rowmax = c.f(2);
  int64_t N = c.shape_in(0)[0], V = c.shape_in(0)[1];
  HostTensor& sums = c.out(0);
  for (int64_t n = 0; n < N; ++n) {
    const float* row = logits.data() + n * V;
    const double m = rowmax[static_cast<size_t>(n)];
    double s = 0.0;
    for (int64_t j = 0; j < V; ++j) s += std::exp(row[j] - m);
    const int64_t t = local_target(targets[static_cast<size_t>(n)], V);
    sums.f32[static_cast<size_t>(2 * n)] = static_cast<float>(s);
    sums.f32[static_cast<size_t>(2 * n + 1)] = t < 0 ? 0.0f : static_cast<float>(row[t] - m);
  }
}

// dlogits[i][j] = dsums[i][0] exp(logits[i][j] - rowmax[i]) + (j == t ? dsums[i][1] : 0).
void op_cross_entropy_shard_grad(const Ctx& c) {
  const auto& logits = c.f(0);
  const auto& targets = c.ids(1);
  const auto& rowmax = c.f(2);
  const auto& dsums = c.f(3);
  int64_t N = c.shape_in(0)[0], V = c.shape_in(0)[1];
  HostTensor& d = c.out(0);
  for (int64_t n = 0; n < N; ++n) {
    const float* row = logits.data() + n * V;
    const double m = rowmax[static_cast<size_t>(n)];
    const double d0 = dsums[static_cast<size_t>(2 * n)], d1 = dsums[static_cast<size_t>(2 * n + 1)];
    const int64_t t = local_target(targets[static_cast<size_t>(n)], V);
    for (int64_t j = 0; j < V; ++j)
      d.f32[static_cast<size_t>(n * V + j)] = static_cast<float>(d0 * std::exp(row[j] - m) + (j == t ? d1 : 0.0));
  }
}

// loss = mean over N of log(sums[i][0]) - sums[i][1].
void op_cross_entropy_from_sums(const Ctx& c) {
  const auto& sums = c.f(0);
  int64_t N = c.shape_in(0)[0];
  double total = 0.0;
  for (size_t n = 0; n < static_cast<size_t>(N); ++n)
    total += std::log(static_cast<double>(sums[2 * n])) - static_cast<double>(sums[2 * n + 1]);
  c.out(0).f32[0] = static_cast<float>(total / static_cast<double>(N));
}

// dsums[i] = {dloss / (N sums[i][0]), -dloss / N}.
void op_cross_entropy_from_sums_grad(const Ctx& c) {
  const auto& sums = c.f(0);
  double k = c.f(1).at(0) / static_cast<double>(c.shape_in(0)[0]);
  HostTensor& d = c.out(0);
  for (size_t n = 0; n < d.f32.size() / 2; ++n) {
    d.f32[2 * n] = static_cast<float>(k / static_cast<double>(sums[2 * n]));
    d.f32[2 * n + 1] = static_cast<float>(-k);
  }
}

void op_sum_to(const Ctx& c) {
  const auto& x = c.f(0);
  HostTensor& y = c.out(0);
  size_t S = y.f32.size();
  std::vector<double> acc(S, 0.0);
  for (size_t k = 0; k < x.size(); ++k) acc[k % S] += x[k];
  for (size_t k = 0; k < S; ++k) y.f32[k] = static_cast<float>(acc[k]);
}

void op_reshape(const Ctx& c) {
  const HostTensor& x = c.in(0);
  HostTensor& y = c.out(0);
  if (x.dtype != y.dtype) c.fail("dtype changes");
  y.f32 = x.f32;
  y.i32 = x.i32;
}

// Copies element-by-element from x into y with y.dims[i] = x.dims[perm[i]].
template <typename T>
void permute_into(const std::vector<T>& x, const Shape& xs, const std::vector<int64_t>& perm, std::vector<T>& y) {
  const size_t r = xs.size();
  std::vector<int64_t> xstride(r);  // row-major strides of x
  int64_t stride = 1;
  for (size_t i = r; i > 0; --i) {
    xstride[i - 1] = stride;
    stride *= xs[i - 1];
  }
  // For each element of y, peel its coordinates off the flat index (last
  // dim first); coordinate i of y is coordinate perm[i] of x.
  for (size_t k = 0; k < y.size(); ++k) {
    int64_t rest = static_cast<int64_t>(k), off = 0;
    for (size_t i = r; i > 0; --i) {
      size_t axis = static_cast<size_t>(perm[i - 1]);
      int64_t dim = xs[axis];  // = y.dims[i - 1]
      off += (rest % dim) * xstride[axis];
      rest /= dim;
    }
    y[k] = x[static_cast<size_t>(off)];
  }
}

void op_permute(const Ctx& c) {
  const HostTensor& x = c.in(0);
  HostTensor& y = c.out(0);
  if (x.dtype == KILN_F32)
    permute_into(x.f32, x.shape, c.node.iattrs, y.f32);
  else
    permute_into(x.i32, x.shape, c.node.iattrs, y.i32);
}

// A tensor seen as [outer, dim(axis), inner].
struct AxisView {
  int64_t outer, dim, inner;
};
AxisView axis_view(const Shape& s, int64_t axis) {
  size_t a = static_cast<size_t>(axis);
  return {prod(s, 0, a), s[a], prod(s, a + 1, s.size())};
}

template <typename T>
void split_into(const Ctx& c, const std::vector<T>& x, std::vector<T> HostTensor::*field) {
  AxisView v = axis_view(c.shape_in(0), c.ia(0));
  int64_t parts = c.ia(1);
  int64_t d = v.dim / parts;
  for (int64_t p = 0; p < parts; ++p) {
    std::vector<T>& y = c.out(static_cast<size_t>(p)).*field;
    for (int64_t o = 0; o < v.outer; ++o)
      std::copy_n(x.begin() + (o * v.dim + p * d) * v.inner, d * v.inner, y.begin() + o * d * v.inner);
  }
}

void op_split(const Ctx& c) {
  const HostTensor& x = c.in(0);
  if (x.dtype == KILN_F32)
    split_into(c, x.f32, &HostTensor::f32);
  else
    split_into(c, x.i32, &HostTensor::i32);
}

template <typename T>
void concat_into(const Ctx& c, std::vector<T> HostTensor::*field) {
  int64_t axis = c.ia(0);
  HostTensor& y = c.out(0);
  AxisView yv = axis_view(y.shape, axis);
  int64_t at = 0;  // running offset along the axis
  for (size_t i = 0; i < c.node.inputs.size(); ++i) {
    const HostTensor& x = c.in(i);
    if (x.dtype != y.dtype) c.fail("input " + std::to_string(i) + " has a different dtype");
    AxisView xv = axis_view(x.shape, axis);
    for (int64_t o = 0; o < xv.outer; ++o)
      std::copy_n((x.*field).begin() + o * xv.dim * xv.inner, xv.dim * xv.inner,
                  (y.*field).begin() + (o * yv.dim + at) * yv.inner);
    at += xv.dim;
  }
}

void op_concat(const Ctx& c) {
  if (c.g.value(c.node.outputs.at(0)).dtype == KILN_F32)
    concat_into(c, &HostTensor::f32);
  else
    concat_into(c, &HostTensor::i32);
}

void op_sum_squares(const Ctx& c) {
  const auto& x = c.f(0);
  double s = 0.0;
  for (float v : x) s += static_cast<double>(v) * v;
  c.out(0).f32[0] = static_cast<float>(s);
}

void op_adamw(const Ctx& c) {
  const auto& p = c.f(0);
  const auto& grad = c.f(1);
  const auto& m = c.f(2);
  const auto& v = c.f(3);
  const auto& hp = c.f(4);
  double lr = hp.at(0), wd = hp.at(1), c1 = hp.at(2), c2 = hp.at(3), gscale = hp.at(4);
  double beta1 = c.fa(0), beta2 = c.fa(1), eps = c.fa(2);
  bool apply_wd = c.ia(0) != 0;
  HostTensor& p2 = c.out(0);
  HostTensor& m2 = c.out(1);
  HostTensor& v2 = c.out(2);
  for (size_t k = 0; k < p.size(); ++k) {
    double g = static_cast<double>(grad[k]) * gscale;
    double mk = beta1 * m[k] + (1.0 - beta1) * g;
    double vk = beta2 * v[k] + (1.0 - beta2) * g * g;
    double update = mk * c1 / (std::sqrt(vk * c2) + eps);
    if (apply_wd) update += wd * p[k];
    p2.f32[k] = static_cast<float>(p[k] - lr * update);
    m2.f32[k] = static_cast<float>(mk);
    v2.f32[k] = static_cast<float>(vk);
  }
}

void eval_node(const Ctx& c) {
  switch (c.node.op) {
    case KILN_OP_FILL: return op_fill(c);
    case KILN_OP_ADD: return op_binary(c, true);
    case KILN_OP_MUL: return op_binary(c, false);
    case KILN_OP_SCALE: return op_scale(c);
    case KILN_OP_GELU: return op_gelu(c);
    case KILN_OP_GELU_GRAD: return op_gelu_grad(c);
    case KILN_OP_MATMUL: return op_matmul(c);
    case KILN_OP_EMBEDDING: return op_embedding(c);
    case KILN_OP_EMBEDDING_GRAD: return op_embedding_grad(c);
    case KILN_OP_LAYERNORM: return op_layernorm(c);
    case KILN_OP_LAYERNORM_GRAD: return op_layernorm_grad(c);
    case KILN_OP_CAUSAL_SOFTMAX: return op_causal_softmax(c);
    case KILN_OP_SOFTMAX_GRAD: return op_softmax_grad(c);
    case KILN_OP_CROSS_ENTROPY: return op_cross_entropy(c);
    case KILN_OP_CROSS_ENTROPY_GRAD: return op_cross_entropy_grad(c);
    case KILN_OP_SUM_TO: return op_sum_to(c);
    case KILN_OP_RESHAPE: return op_reshape(c);
    case KILN_OP_PERMUTE: return op_permute(c);
    case KILN_OP_SPLIT: return op_split(c);
    case KILN_OP_CONCAT: return op_concat(c);
    case KILN_OP_SUM_SQUARES: return op_sum_squares(c);
    case KILN_OP_ADAMW: return op_adamw(c);
    case KILN_OP_ALL_REDUCE: return op_all_reduce(c);
    case KILN_OP_ROW_MAX: return op_row_max(c);
    case KILN_OP_CROSS_ENTROPY_SHARD: return op_cross_entropy_shard(c);
    case KILN_OP_CROSS_ENTROPY_SHARD_GRAD: return op_cross_entropy_shard_grad(c);
    case KILN_OP_CROSS_ENTROPY_FROM_SUMS: return op_cross_entropy_from_sums(c);
    case KILN_OP_CROSS_ENTROPY_FROM_SUMS_GRAD: return op_cross_entropy_from_sums_grad(c);
    case KILN_OP_COUNT_: break;
  }
  c.fail("unknown op " + std::to_string(static_cast<int>(c.node.op)));
}

// Binds every input port, checking presence, dtype, shape and data size.
void bind_inputs(const Graph& g, const TensorMap& inputs, std::vector<HostTensor>& vals) {
  for (const Port& port : g.inputs()) {
    const Value& want = g.value(port.value);
    auto it = inputs.find(port.name);
    if (it == inputs.end())
      throw Error("reference: missing input '" + port.name + "' (expected " + describe(want.dtype, want.shape) + ")");
    const HostTensor& t = it->second;
    if (t.dtype != want.dtype || t.shape != want.shape)
      throw Error("reference: input '" + port.name + "' is " + describe(t.dtype, t.shape) + ", expected " +
                  describe(want.dtype, want.shape));
    if (holds(t) != static_cast<size_t>(t.numel()))
      throw Error("reference: input '" + port.name + "' holds " + std::to_string(holds(t)) + " " + dtype_name(t.dtype) +
                  " elements, its shape " + to_string(t.shape) + " needs " + std::to_string(t.numel()));
    vals[static_cast<size_t>(port.value)] = t;
  }
}

// Evaluates every node in order; `ready[v]` says whether value v was set.
std::vector<HostTensor> evaluate(const Graph& g, const TensorMap& inputs, std::vector<bool>& ready) {
  std::vector<HostTensor> vals(g.values().size());
  ready.assign(g.values().size(), false);
  bind_inputs(g, inputs, vals);
  for (const Port& p : g.inputs()) ready[static_cast<size_t>(p.value)] = true;
  const auto& nodes = g.nodes();
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& node = nodes[n];
    for (ValueId v : node.inputs)
      if (v < 0 || static_cast<size_t>(v) >= vals.size() || !ready[static_cast<size_t>(v)])
        throw Error(std::string("reference: node ") + std::to_string(n) + " (" + op_name(node.op) + ") reads value " +
                    std::to_string(v) + " that is neither a graph input nor computed by an earlier node");
    eval_node(Ctx{g, node, vals});
    for (ValueId v : node.outputs) ready[static_cast<size_t>(v)] = true;
  }
  return vals;
}

}  // namespace

std::vector<HostTensor> evaluate_all(const Graph& g, const TensorMap& inputs) {
  std::vector<bool> ready;
  return evaluate(g, inputs, ready);
}

TensorMap run_reference(const Graph& g, const TensorMap& inputs) {
  std::vector<bool> ready;
  std::vector<HostTensor> vals = evaluate(g, inputs, ready);
  TensorMap out;
  for (const Port& p : g.outputs()) {
    if (!ready[static_cast<size_t>(p.value)])
      throw Error("reference: output '" + p.name + "' (value " + std::to_string(p.value) +
                  ") is neither a graph input nor computed by any node");
    out[p.name] = vals[static_cast<size_t>(p.value)];  // copy: ports may share a value
  }
  return out;
}

}  // namespace kiln::graph
