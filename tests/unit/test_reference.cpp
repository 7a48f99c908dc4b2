// The reference interpreter against hand-computed values, one group of
// tests per op, plus its input checking. Expected values come from hand
// arithmetic or from an independent, deliberately naive formula in the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "core/error.h"
#include "graph/graph.h"
#include "graph/reference/reference.h"

namespace kiln::graph {
namespace {

HostTensor F(Shape s, std::vector<float> v) {
  HostTensor t = HostTensor::zeros(KILN_F32, std::move(s));
  EXPECT_EQ(t.f32.size(), v.size()) << "test tensor literal has the wrong size";
  t.f32 = std::move(v);
  return t;
}

HostTensor I(Shape s, std::vector<int32_t> v) {
  HostTensor t = HostTensor::zeros(KILN_I32, std::move(s));
  EXPECT_EQ(t.i32.size(), v.size()) << "test tensor literal has the wrong size";
  t.i32 = std::move(v);
  return t;
}

// Runs `g` (whose result port is "y") and returns y's f32 data.
std::vector<float> run_y(const Graph& g, const TensorMap& in) {
  TensorMap out = run_reference(g, in);
  return out.at("y").f32;
}

void expect_near(const std::vector<float>& got, const std::vector<double>& want, double tol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << "at element " << i;
}

double gelu_formula(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

// ------------------------------------------------------------ HostTensor

TEST(ReferenceHostTensor, ZerosAndData) {
  HostTensor f = HostTensor::zeros(KILN_F32, {2, 3});
  EXPECT_EQ(f.numel(), 6);
  EXPECT_EQ(f.bytes(), 24u);
  EXPECT_EQ(f.f32, std::vector<float>(6, 0.0f));
  EXPECT_TRUE(f.i32.empty());
  EXPECT_EQ(f.data(), static_cast<void*>(f.f32.data()));
  HostTensor i = HostTensor::zeros(KILN_I32, {4});
  EXPECT_EQ(i.i32, std::vector<int32_t>(4, 0));
  EXPECT_EQ(static_cast<const HostTensor&>(i).data(), static_cast<const void*>(i.i32.data()));
}

// ------------------------------------------------------------ elementwise

TEST(Reference, Fill) {
  Graph g;
  g.output("y", g.fill({2, 2}, 3.5f));
  EXPECT_EQ(run_y(g, {}), std::vector<float>(4, 3.5f));
}

TEST(Reference, AddSameShapeAndSuffixBroadcast) {
  Graph g;
  ValueId a = g.input("a", KILN_F32, {2, 3});
  ValueId b = g.input("b", KILN_F32, {3});
  ValueId c = g.input("c", KILN_F32, {2, 3});
  g.output("y", g.add(a, b));
  g.output("z", g.add(a, c));
  TensorMap out = run_reference(
      g, {{"a", F({2, 3}, {1, 2, 3, 4, 5, 6})}, {"b", F({3}, {10, 20, 30})}, {"c", F({2, 3}, {-1, -1, -1, 1, 1, 1})}});
  EXPECT_EQ(out["y"].f32, (std::vector<float>{11, 22, 33, 14, 25, 36}));
  EXPECT_EQ(out["z"].f32, (std::vector<float>{0, 1, 2, 5, 6, 7}));
  EXPECT_EQ(out["y"].shape, (Shape{2, 3}));
}

TEST(Reference, MulBroadcastsTrailingMatrix) {
  Graph g;
  ValueId a = g.input("a", KILN_F32, {2, 2, 2});
  ValueId b = g.input("b", KILN_F32, {2, 2});
  g.output("y", g.mul(a, b));
  std::vector<float> y = run_y(g, {{"a", F({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}, {"b", F({2, 2}, {1, 0, -1, 2})}});
  EXPECT_EQ(y, (std::vector<float>{1, 0, -3, 8, 5, 0, -7, 16}));
}

TEST(Reference, ScaleAndScalarBroadcast) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {3, 1});
  ValueId s = g.input("s", KILN_F32, {1});
  g.output("y", g.scale(x, -0.5f));
  g.output("z", g.mul(x, s));
  TensorMap out = run_reference(g, {{"x", F({3, 1}, {2, -4, 1})}, {"s", F({1}, {3})}});
  EXPECT_EQ(out["y"].f32, (std::vector<float>{-1, 2, -0.5f}));
  EXPECT_EQ(out["z"].f32, (std::vector<float>{6, -12, 3}));
}

TEST(Reference, GeluTanhApproximation) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {6});
  g.output("y", g.gelu(x));
  std::vector<float> y = run_y(g, {{"x", F({6}, {0, 1, -1, 2, 0.5f, -3})}});
  // Values of 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), computed offline.
  expect_near(y, {0.0, 0.8411919906082768, -0.15880800939172324, 1.954597694087775, 0.34571400982514394,
                  -0.0036373920817729943});
}

TEST(Reference, GeluGradIsDyTimesDerivative) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {5});
  ValueId dy = g.input("dy", KILN_F32, {5});
  g.output("y", g.gelu_grad(x, dy));
  std::vector<float> xs{-2.5f, -0.7f, 0.0f, 0.3f, 1.9f};
  std::vector<float> ds{1.0f, -2.0f, 0.5f, 3.0f, 1.5f};
  std::vector<float> y = run_y(g, {{"x", F({5}, xs)}, {"dy", F({5}, ds)}});
  std::vector<double> want;
  for (size_t i = 0; i < xs.size(); ++i) {
    double h = 1e-5;  // central difference of the formula, in double
    want.push_back(ds[i] * (gelu_formula(xs[i] + h) - gelu_formula(xs[i] - h)) / (2 * h));
  }
  expect_near(y, want, 1e-6);
}

TEST(Reference, GeluErfIsExact) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {6});
  g.output("y", g.gelu_erf(x));
  std::vector<float> y = run_y(g, {{"x", F({6}, {0, 1, -1, 2, 0.5f, -3})}});
  // 0.5 x (1 + erf(x / sqrt 2)) by Python's math.erf, computed offline.
  expect_near(y, {0.0, 0.8413447460685429, -0.15865525393145707, 1.9544997361036416, 0.34573123063700656,
                  -0.00404969409489031});
}

double gelu_erf_formula(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

TEST(Reference, GeluErfGradIsDyTimesDerivative) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {5});
  ValueId dy = g.input("dy", KILN_F32, {5});
  g.output("y", g.gelu_erf_grad(x, dy));
  std::vector<float> xs{-2.5f, -0.7f, 0.0f, 0.3f, 1.9f};
  std::vector<float> ds{1.0f, -2.0f, 0.5f, 3.0f, 1.5f};
  std::vector<float> y = run_y(g, {{"x", F({5}, xs)}, {"dy", F({5}, ds)}});
  std::vector<double> want;
  for (size_t i = 0; i < xs.size(); ++i) {
    double h = 1e-5;  // central difference of the formula, in double
    want.push_back(ds[i] * (gelu_erf_formula(xs[i] + h) - gelu_erf_formula(xs[i] - h)) / (2 * h));
  }
  expect_near(y, want, 1e-6);
}

double silu_formula(double x) { return x / (1.0 + std::exp(-x)); }

TEST(Reference, SiluIsXTimesSigmoid) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {7});
  g.output("y", g.silu(x));
  const float inf = INFINITY;
  std::vector<float> y = run_y(g, {{"x", F({7}, {0, 1, -1, 2.5f, -3, inf, -inf})}});
  // x / (1 + e^-x), computed offline.
  expect_near(std::vector<float>(y.begin(), y.begin() + 5),
              {0.0, 0.7310585786300049, -0.2689414213699951, 2.3103545499468914, -0.14227761953270035});
  EXPECT_EQ(y[5], inf);
  EXPECT_TRUE(std::isnan(y[6])) << "silu(-inf) = -inf / inf, as the formula and PyTorch give";
}

TEST(Reference, SiluGradIsDyTimesDerivative) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {6});
  ValueId dy = g.input("dy", KILN_F32, {6});
  g.output("y", g.silu_grad(x, dy));
  std::vector<float> xs{-6.0f, -1.0f, 0.0f, 0.5f, 2.5f, 9.0f};
  std::vector<float> ds{1.0f, -2.0f, 0.5f, 3.0f, 1.5f, -1.0f};
  std::vector<float> y = run_y(g, {{"x", F({6}, xs)}, {"dy", F({6}, ds)}});
  std::vector<double> want;
  for (size_t i = 0; i < xs.size(); ++i) {
    double h = 1e-5;  // central difference of the formula, in double
    want.push_back(ds[i] * (silu_formula(xs[i] + h) - silu_formula(xs[i] - h)) / (2 * h));
  }
  expect_near(y, want, 1e-6);
  EXPECT_FLOAT_EQ(y[2], 0.25f);  // silu'(0) = 1/2
}

TEST(Reference, SquaredReluSquaresThePositivePartAndKeepsNaN) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {7});
  ValueId dy = g.input("dy", KILN_F32, {7});
  g.output("y", g.squared_relu(x));
  g.output("dx", g.squared_relu_grad(x, dy));
  const float nan = std::nanf(""), inf = INFINITY;
  TensorMap out =
      run_reference(g, {{"x", F({7}, {-2, -0.0f, 0.5f, 3, inf, -inf, nan})}, {"dy", F({7}, {1, 2, 3, -4, 5, 6, 7})}});
  const std::vector<float>& y = out.at("y").f32;
  const std::vector<float>& dx = out.at("dx").f32;
  expect_near(std::vector<float>(y.begin(), y.begin() + 4), {0.0, 0.0, 0.25, 9.0});
  EXPECT_EQ(y[4], inf);
  EXPECT_EQ(y[5], 0.0f);
  EXPECT_TRUE(std::isnan(y[6]));
  // dx = 2 max(x, 0) dy.
  expect_near(std::vector<float>(dx.begin(), dx.begin() + 4), {0.0, 0.0, 3.0, -24.0});
  EXPECT_EQ(dx[4], inf);
  EXPECT_EQ(dx[5], 0.0f);
  EXPECT_TRUE(std::isnan(dx[6]));
}

TEST(Reference, ClampKeepsNaNAndPassesGradientOnTheBounds) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {7});
  ValueId dy = g.input("dy", KILN_F32, {7});
  g.output("y", g.clamp(x, -0.5f, 1.0f));
  g.output("dx", g.clamp_grad(x, dy, -0.5f, 1.0f));
  const float nan = std::nanf("");
  TensorMap out = run_reference(
      g, {{"x", F({7}, {-2, -0.5f, 0.25f, 1, 4, nan, -INFINITY})}, {"dy", F({7}, {1, 2, 3, 4, 5, 6, 7})}});
  const std::vector<float>& y = out.at("y").f32;
  EXPECT_EQ(std::vector<float>(y.begin(), y.begin() + 5), (std::vector<float>{-0.5f, -0.5f, 0.25f, 1, 1}));
  EXPECT_TRUE(std::isnan(y[5]));
  EXPECT_EQ(y[6], -0.5f);
  // PyTorch's backward: inclusive bounds, 0 outside and for NaN.
  EXPECT_EQ(out.at("dx").f32, (std::vector<float>{0, 2, 3, 4, 0, 0, 0}));
}

TEST(Reference, MathPrimitivesByHand) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {4});
  g.output("exp", g.exp(x));
  g.output("log", g.log(x));
  g.output("tanh", g.tanh(x));
  g.output("erf", g.erf(x));
  TensorMap out = run_reference(g, {{"x", F({4}, {-1.0f, 0.0f, 0.5f, 2.0f})}});
  expect_near(out.at("exp").f32, {std::exp(-1.0), 1.0, std::exp(0.5), std::exp(2.0)});
  expect_near(out.at("tanh").f32, {-0.7615941559557649, 0.0, 0.46211715726000974, 0.9640275800758169});
  expect_near(out.at("erf").f32, {-0.8427007929497149, 0.0, 0.5204998778130465, 0.9953222650189527});
  const std::vector<float>& ln = out.at("log").f32;
  EXPECT_TRUE(std::isnan(ln[0]));
  EXPECT_EQ(ln[1], -INFINITY);
  expect_near({ln[2], ln[3]}, {std::log(0.5), std::log(2.0)});
}

TEST(Reference, MaxPropagatesNaNAndKeepsAOnATie) {
  Graph g;
  g.output("y", g.maximum(g.input("a", KILN_F32, {2, 3}), g.input("b", KILN_F32, {3})));
  const float nan = std::nanf("");
  const std::vector<float> y = run_y(g, {{"a", F({2, 3}, {1, -0.0f, nan, 5, 0.0f, -1})}, {"b", F({3}, {2, 0.0f, 0})}});
  EXPECT_EQ(y[0], 2.0f);
  EXPECT_TRUE(std::signbit(y[1])) << "a tie gives a: -0 against +0 stays -0";
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_EQ(y[3], 5.0f);
  EXPECT_FALSE(std::signbit(y[4]));
  EXPECT_EQ(y[5], 0.0f);
  Graph h;
  h.output("y", h.maximum(h.input("a", KILN_F32, {1}), h.input("b", KILN_F32, {1})));
  EXPECT_TRUE(std::isnan(run_y(h, {{"a", F({1}, {1})}, {"b", F({1}, {nan})}})[0]));
}

TEST(Reference, SelectPicksXWhereALessOrEqualB) {
  Graph g;
  g.output("y", g.select(g.input("a", KILN_F32, {4}), g.input("b", KILN_F32, {4}), g.input("x", KILN_F32, {4}),
                         g.input("w", KILN_F32, {4})));
  const float nan = std::nanf("");
  EXPECT_EQ(run_y(g, {{"a", F({4}, {1, 2, 3, nan})},
                      {"b", F({4}, {2, 2, 1, 0})},
                      {"x", F({4}, {10, 20, 30, 40})},
                      {"w", F({4}, {-10, -20, -30, -40})}}),
            (std::vector<float>{10, 20, -30, -40}));
}

TEST(Reference, ClampRefusesBoundsThatAreNoInterval) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {3});
  ValueId dy = g.input("dy", KILN_F32, {3});
  auto error_of = [](auto build) -> std::string {
    try {
      build();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_of([&] { g.clamp(x, 2.0f, 1.0f); }),
            "graph: clamp: bounds [2, 1] are no interval (need lo <= hi, neither NaN)");
  EXPECT_EQ(error_of([&] { g.clamp_grad(x, dy, std::nanf(""), 1.0f); }),
            "graph: clamp_grad: bounds [nan, 1] are no interval (need lo <= hi, neither NaN)");
  EXPECT_EQ(error_of([&] { g.clamp(x, -1.0f, std::nanf("")); }),
            "graph: clamp: bounds [-1, nan] are no interval (need lo <= hi, neither NaN)");
  EXPECT_EQ(g.nodes().size(), 0u);
  EXPECT_NO_THROW(g.clamp(x, 1.0f, 1.0f));
}

// ------------------------------------------------------------ matmul

// Index of element (r, c) of a row-major matrix `width` wide.
size_t at(int r, int c, int width) {
  return static_cast<size_t>(r) * static_cast<size_t>(width) + static_cast<size_t>(c);
}

// Row-major a [M,K] @ b [K,N], the textbook way.
std::vector<double> naive_matmul(const std::vector<float>& a, const std::vector<float>& b, int M, int K, int N) {
  std::vector<double> y(at(M, 0, N), 0.0);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < K; ++k) y[at(i, j, N)] += a[at(i, k, K)] * b[at(k, j, N)];
  return y;
}

std::vector<float> transpose(const std::vector<float>& x, int rows, int cols) {
  std::vector<float> t(x.size());
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) t[at(j, i, rows)] = x[at(i, j, cols)];
  return t;
}

TEST(Reference, MatmulByHand) {
  Graph g;
  ValueId a = g.input("a", KILN_F32, {2, 3});
  ValueId b = g.input("b", KILN_F32, {3, 2});
  g.output("y", g.matmul(a, b));
  std::vector<float> y = run_y(g, {{"a", F({2, 3}, {1, 2, 3, 4, 5, 6})}, {"b", F({3, 2}, {7, 8, 9, 10, 11, 12})}});
  EXPECT_EQ(y, (std::vector<float>{58, 64, 139, 154}));
}

TEST(Reference, MatmulAllTransposeFlags) {
  const int M = 3, K = 4, N = 5;
  std::vector<float> a(M * K), b(K * N);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) - 3.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.5f * static_cast<float>(i % 5) - 1.0f;
  std::vector<double> want = naive_matmul(a, b, M, K, N);
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      Shape as = ta ? Shape{K, M} : Shape{M, K};
      Shape bs = tb ? Shape{N, K} : Shape{K, N};
      Graph g;
      ValueId va = g.input("a", KILN_F32, as);
      ValueId vb = g.input("b", KILN_F32, bs);
      g.output("y", g.matmul(va, vb, ta, tb));
      std::vector<float> y =
          run_y(g, {{"a", F(as, ta ? transpose(a, M, K) : a)}, {"b", F(bs, tb ? transpose(b, K, N) : b)}});
      SCOPED_TRACE("trans_a=" + std::to_string(ta) + " trans_b=" + std::to_string(tb));
      expect_near(y, want, 0);
    }
}

TEST(Reference, MatmulBatched) {
  // Two batches [2, 2, 2] @ [2, 2, 1]; each batch multiplies independently.
  Graph g;
  ValueId a = g.input("a", KILN_F32, {2, 2, 2});
  ValueId b = g.input("b", KILN_F32, {2, 2, 1});
  g.output("y", g.matmul(a, b));
  std::vector<float> y = run_y(g, {{"a", F({2, 2, 2}, {1, 2, 3, 4, 1, 0, 0, 1})}, {"b", F({2, 2, 1}, {1, 1, 5, 6})}});
  EXPECT_EQ(y, (std::vector<float>{3, 7, 5, 6}));
}

// ------------------------------------------------------------ embedding

TEST(Reference, EmbeddingGathersRows) {
  Graph g;
  ValueId t = g.input("t", KILN_F32, {3, 2});
  ValueId ids = g.input("ids", KILN_I32, {2, 2});
  g.output("y", g.embedding(t, ids));
  TensorMap out = run_reference(g, {{"t", F({3, 2}, {0, 1, 10, 11, 20, 21})}, {"ids", I({2, 2}, {2, 0, 2, 1})}});
  EXPECT_EQ(out["y"].shape, (Shape{2, 2, 2}));
  EXPECT_EQ(out["y"].f32, (std::vector<float>{20, 21, 0, 1, 20, 21, 10, 11}));
}

TEST(Reference, EmbeddingRejectsOutOfRangeIds) {
  Graph g;
  ValueId t = g.input("t", KILN_F32, {3, 2});
  ValueId ids = g.input("ids", KILN_I32, {2});
  g.output("y", g.embedding(t, ids));
  HostTensor table = F({3, 2}, {0, 1, 2, 3, 4, 5});
  EXPECT_THROW(run_reference(g, {{"t", table}, {"ids", I({2}, {0, 3})}}), kiln::Error);
  EXPECT_THROW(run_reference(g, {{"t", table}, {"ids", I({2}, {-1, 0})}}), kiln::Error);
  try {
    run_reference(g, {{"t", table}, {"ids", I({2}, {1, 7})}});
    FAIL() << "expected kiln::Error";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find('7'), std::string::npos) << e.what();
  }
}

TEST(Reference, EmbeddingGradScatterAddsRepeatedIds) {
  Graph g;
  ValueId dy = g.input("dy", KILN_F32, {4, 2});
  ValueId ids = g.input("ids", KILN_I32, {4});
  g.output("y", g.embedding_grad(dy, ids, 4));
  TensorMap out = run_reference(g, {{"dy", F({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}, {"ids", I({4}, {1, 3, 1, 1})}});
  EXPECT_EQ(out["y"].shape, (Shape{4, 2}));
  // Row 1 gets rows 0, 2, 3 of dy; row 3 gets row 1; rows 0 and 2 stay 0.
  EXPECT_EQ(out["y"].f32, (std::vector<float>{0, 0, 13, 16, 0, 0, 3, 4}));
  EXPECT_THROW(run_reference(g, {{"dy", F({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}, {"ids", I({4}, {1, 4, 0, 0})}}),
               kiln::Error);
}

// ------------------------------------------------------------ layernorm

TEST(Reference, LayernormBiasedVarianceEpsInsideSqrt) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {2, 4});
  ValueId ga = g.input("g", KILN_F32, {4});
  ValueId be = g.input("b", KILN_F32, {4});
  const float eps = 0.25f;
  g.output("y", g.layernorm(x, ga, be, eps));
  std::vector<float> y =
      run_y(g, {{"x", F({2, 4}, {1, 2, 3, 4, 2, 2, 2, 2})}, {"g", F({4}, {1, 2, 1, 1})}, {"b", F({4}, {0, 0, 0, 1})}});
  // Row 0: mean 2.5, biased var 1.25, 1/sqrt(1.25 + 0.25) = 1/sqrt(1.5).
  double r = 1.0 / std::sqrt(1.5);
  // Row 1: constant row, x - mean = 0, so y = beta.
  expect_near(y, {-1.5 * r, -0.5 * r * 2, 0.5 * r, 1.5 * r + 1, 0, 0, 0, 1});
}

TEST(Reference, RmsnormHasNoMeanAndNoBias) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {2, 4});
  ValueId ga = g.input("g", KILN_F32, {4});
  const float eps = 0.5f;
  g.output("y", g.rmsnorm(x, ga, eps));
  std::vector<float> y = run_y(g, {{"x", F({2, 4}, {1, 2, 3, 4, -2, -2, -2, -2})}, {"g", F({4}, {1, 2, 1, -1})}});
  // Row 0: mean(x^2) = 30/4 = 7.5, 1/sqrt(7.5 + 0.5) = 1/sqrt(8).
  const double r0 = 1.0 / std::sqrt(8.0);
  // Row 1: a constant row keeps its value (unlike layernorm): mean(x^2) = 4, 1/sqrt(4.5).
  const double r1 = 1.0 / std::sqrt(4.5);
  expect_near(y, {1 * r0, 2 * r0 * 2, 3 * r0, -4 * r0, -2 * r1, -2 * r1 * 2, -2 * r1, 2 * r1});
}

// Two positions, D = 5 with R = 2: pairs (0, 2) and (1, 3), or (0, 1) and
// (2, 3) interleaved; feature 4 passes through. Position 0 is a quarter turn
// of pair 0 and a half turn of pair 1; position 1 scales pair 0 by 2 with no
// turn and turns pair 1 by c = 0.6, s = 0.8.
TEST(Reference, RopeRotatesPairsByTheirPositionsAngles) {
  const TensorMap in{{"x", F({2, 5}, {1, 2, 3, 4, 5, -1, 0.5f, 2, -3, 7})},
                     {"cos", F({2, 2}, {0, -1, 2, 0.6f})},
                     {"sin", F({2, 2}, {1, 0, 0, 0.8f})}};
  for (bool interleaved : {false, true}) {
    SCOPED_TRACE(interleaved ? "interleaved" : "rotate_half");
    Graph g;
    ValueId x = g.input("x", KILN_F32, {2, 5});
    ValueId c = g.input("cos", KILN_F32, {2, 2}), s = g.input("sin", KILN_F32, {2, 2});
    g.output("y", g.rope(x, c, s, interleaved));
    g.output("dx", g.rope_grad(x, c, s, interleaved));
    TensorMap out = run_reference(g, in);
    if (!interleaved) {
      // Row 0: pair 0 (1, 3) -> (1*0 - 3*1, 3*0 + 1*1) = (-3, 1); pair 1 (2, 4) -> (-2, -4).
      // Row 1: pair 0 (-1, 2) -> (-2, 4); pair 1 (0.5, -3) -> (0.3 + 2.4, -1.8 + 0.4) = (2.7, -1.4).
      expect_near(out.at("y").f32, {-3, -2, 1, -4, 5, -2, 2.7, 4, -1.4, 7});
      // The inverse: (a c + b s, b c - a s).
      expect_near(out.at("dx").f32, {3, -2, -1, -4, 5, -2, 0.3 - 2.4, 4, -1.8 - 0.4, 7});
    } else {
      // Row 0: pair 0 (1, 2) -> (-2, 1); pair 1 (3, 4) -> (-3, -4).
      // Row 1: pair 0 (-1, 0.5) -> (-2, 1); pair 1 (2, -3) -> (1.2 + 2.4, -1.8 + 1.6) = (3.6, -0.2).
      expect_near(out.at("y").f32, {-2, 1, -3, -4, 5, -2, 1, 3.6, -0.2, 7});
      expect_near(out.at("dx").f32, {2, -1, -3, -4, 5, -2, 1, 1.2 - 2.4, -1.8 - 1.6, 7});
    }
  }
}

// Elements 0..3 with seed, site, step and offset 0 use Philox4x32-10 of
// counter 0 and key 0, whose words Random123's tests/kat_vectors publish:
// 6627e8d5 e169c58d bc57ac4c 9b00dbd8. Their top 24 bits are 6694888,
// 14772677, 12343212 and 10158299; p = 0.625 gives the threshold
// 0.625 * 2^24 = 10485760, so elements 0 and 3 are dropped, and the kept
// ones are scaled by 1 / 0.375.
TEST(Reference, DropoutMaskFromThePublishedPhiloxWords) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {4});
  ValueId key = g.input("key", KILN_I32, {4});
  g.output("y", g.dropout(x, key, 0.625f, 0));
  std::vector<float> y = run_y(g, {{"x", F({4}, {1.5f, -3.0f, 0.75f, 2.0f})}, {"key", I({4}, {0, 0, 0, 0})}});
  const float scale = static_cast<float>(1.0 / 0.375);
  EXPECT_EQ(y, (std::vector<float>{0.0f, -3.0f * scale, 0.75f * scale, 0.0f}));
  // At p = 0.5 (threshold 8388608) only element 0 is dropped.
  Graph h;
  h.output("y", h.dropout(h.input("x", KILN_F32, {4}), h.input("key", KILN_I32, {4}), 0.5f, 0));
  y = run_y(h, {{"x", F({4}, {1.5f, -3.0f, 0.75f, 2.0f})}, {"key", I({4}, {0, 0, 0, 0})}});
  EXPECT_EQ(y, (std::vector<float>{0.0f, -6.0f, 1.5f, 4.0f}));
}

// DROPOUT_KEYED draws DROPOUT's mask with the site its key's word 4 holds:
// the same bits at the same site, other bits at another.
TEST(Reference, KeyedDropoutIsDropoutWithTheSiteFromItsKey) {
  const HostTensor x = F({64}, std::vector<float>(64, 1.0f));
  Graph plain;
  plain.output("y", plain.dropout(plain.input("x", KILN_F32, {64}), plain.input("key", KILN_I32, {4}), 0.5f, 9));
  const std::vector<float> at_nine = run_y(plain, {{"x", x}, {"key", I({4}, {3, 4, 5, 0})}});
  Graph keyed;
  keyed.output("y", keyed.dropout_keyed(keyed.input("x", KILN_F32, {64}), keyed.input("key", KILN_I32, {5}), 0.5f));
  EXPECT_EQ(run_y(keyed, {{"x", x}, {"key", I({5}, {3, 4, 5, 0, 9})}}), at_nine);
  EXPECT_NE(run_y(keyed, {{"x", x}, {"key", I({5}, {3, 4, 5, 0, 10})}}), at_nine);
}

TEST(Reference, LayernormGradMatchesExplicitJacobian) {
  const int C = 4, R = 2;
  const double eps = 1e-5;
  std::vector<float> x{0.3f, -1.2f, 2.0f, 0.7f, 1.0f, 1.5f, -0.5f, 0.0f};
  std::vector<float> gamma{1.5f, -0.5f, 0.8f, 1.1f};
  std::vector<float> dy{0.2f, -0.4f, 1.0f, 0.3f, -1.0f, 0.5f, 0.25f, 2.0f};
  Graph g;
  ValueId vx = g.input("x", KILN_F32, {R, C});
  ValueId vg = g.input("g", KILN_F32, {C});
  ValueId vd = g.input("dy", KILN_F32, {R, C});
  auto outs = g.layernorm_grad(vx, vg, vd, static_cast<float>(eps));
  g.output("dx", outs[0]);
  g.output("dgamma", outs[1]);
  g.output("dbeta", outs[2]);
  TensorMap out = run_reference(g, {{"x", F({R, C}, x)}, {"g", F({C}, gamma)}, {"dy", F({R, C}, dy)}});

  // dx_j = sum_i dy_i gamma_i dxhat_i/dx_j with
  // dxhat_i/dx_j = rstd (delta_ij - 1/C - xhat_i xhat_j / C).
  std::vector<double> dx, dgamma(C, 0.0), dbeta(C, 0.0);
  for (int r = 0; r < R; ++r) {
    double mean = 0, var = 0;
    for (int j = 0; j < C; ++j) mean += x[r * C + j];
    mean /= C;
    for (int j = 0; j < C; ++j) var += (x[r * C + j] - mean) * (x[r * C + j] - mean);
    var /= C;
    double rstd = 1.0 / std::sqrt(var + eps);
    std::vector<double> xhat(C);
    for (int j = 0; j < C; ++j) xhat[j] = (x[r * C + j] - mean) * rstd;
    for (int j = 0; j < C; ++j) {
      double s = 0;
      for (int i = 0; i < C; ++i)
        s += dy[r * C + i] * gamma[i] * rstd * ((i == j ? 1.0 : 0.0) - 1.0 / C - xhat[i] * xhat[j] / C);
      dx.push_back(s);
      dgamma[j] += dy[r * C + j] * xhat[j];
      dbeta[j] += dy[r * C + j];
    }
  }
  expect_near(out["dx"].f32, dx, 1e-5);
  expect_near(out["dgamma"].f32, dgamma, 1e-6);
  expect_near(out["dbeta"].f32, dbeta, 1e-6);
}

// ------------------------------------------------------------ softmax

TEST(Reference, CausalSoftmaxScalesAndMasksToExactZero) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {2, 3, 3});
  g.output("y", g.causal_softmax(x, 0.5f));
  // Masked positions hold huge values: they must not leak into the result.
  std::vector<float> xv{0,  1e30f, -1e30f,  //
                        2,  4,     1e30f,   //
                        0,  2,     4,       //
                        5,  1e30f, 1e30f,   //
                        1,  1,     1e30f,   //
                        -2, 0,     2};
  std::vector<float> y = run_y(g, {{"x", F({2, 3, 3}, xv)}});
  double e1 = std::exp(1.0), e2 = std::exp(2.0);
  // Row 1 of batch 0: softmax(0.5 * [2, 4]) = softmax([1, 2]).
  double s1 = e1 + e2;
  // Row 2 of batch 0: softmax([0, 1, 2]); of batch 1: softmax([-1, 0, 1]).
  double s2 = 1 + e1 + e2;
  std::vector<double> want{1, 0, 0, e1 / s1, e2 / s1, 0, 1 / s2, e1 / s2, e2 / s2,
                           1, 0, 0, 0.5,     0.5,     0, 1 / s2, e1 / s2, e2 / s2};
  expect_near(y, want);
  for (size_t m = 0; m < 2; ++m)
    for (size_t i = 0; i < 3; ++i)
      for (size_t j = i + 1; j < 3; ++j) EXPECT_EQ(y[m * 9 + i * 3 + j], 0.0f) << "masked entry not exactly 0";
}

TEST(Reference, DocumentSoftmaxSeesOnlyItsDocument) {
  // One sample, two heads, T = 4, documents [0, 2) and [2, 4): row 3 sees
  // keys 2 and 3 only; with every start 0 it is CAUSAL_SOFTMAX bit for bit.
  Graph g;
  ValueId x = g.input("x", KILN_F32, {1, 2, 4, 4});
  g.output("y", g.document_softmax(x, g.input("starts", KILN_I32, {1, 4}), 1.0f));
  HostTensor xv = F({1, 2, 4, 4}, {0, 9, 9, 9, 1, 2, 9, 9, 7, 7, 0, 9, 7, 7, 1, 2,  //
                                   3, 9, 9, 9, 0, 0, 9, 9, 5, 5, 2, 9, 5, 5, 0, 0});
  HostTensor starts = HostTensor::zeros(KILN_I32, {1, 4});
  starts.i32 = {0, 0, 2, 2};
  std::vector<float> y = run_y(g, {{"x", xv}, {"starts", starts}});
  const double e = std::exp(1.0);
  std::vector<double> want{1, 0, 0, 0, 1 / (1 + e), e / (1 + e), 0, 0, 0, 0, 1, 0, 0, 0, 1 / (1 + e), e / (1 + e),
                           1, 0, 0, 0, 0.5,         0.5,         0, 0, 0, 0, 1, 0, 0, 0, 0.5,         0.5};
  expect_near(y, want);
  for (size_t k : {2u, 3u, 6u, 7u, 8u, 9u, 11u, 12u, 13u}) EXPECT_EQ(y[k], 0.0f) << "entry " << k << " not exactly 0";
  starts.i32 = {0, 0, 0, 0};
  Graph causal;
  causal.output("y", causal.causal_softmax(causal.input("x", KILN_F32, {1, 2, 4, 4}), 1.0f));
  EXPECT_EQ(run_y(g, {{"x", xv}, {"starts", starts}}), run_y(causal, {{"x", xv}}));
}

TEST(Reference, SoftmaxGradByHand) {
  Graph g;
  ValueId y = g.input("y0", KILN_F32, {2, 2});
  ValueId dy = g.input("dy", KILN_F32, {2, 2});
  g.output("y", g.softmax_grad(y, dy, 2.0f));
  std::vector<float> dx = run_y(g, {{"y0", F({2, 2}, {0.2f, 0.8f, 1.0f, 0.0f})}, {"dy", F({2, 2}, {1, 0, 3, 5})}});
  // Row 0: sum dy*y = 0.2; dx = 2 * [0.2 * 0.8, 0.8 * -0.2].
  // Row 1: sum dy*y = 3; dx = 2 * [1 * 0, 0 * 2] = 0.
  expect_near(dx, {0.32, -0.32, 0, 0});
}

TEST(Reference, AlibiAddsSlopeTimesKeyMinusQueryPerHead) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {2, 2, 3, 3});
  ValueId slopes = g.input("slopes", KILN_F32, {2});
  g.output("y", g.alibi(x, slopes));
  // Batch b holds 10 b everywhere; heads 0 and 1 have slopes 0.5 and -2.
  std::vector<float> xv(36, 0.0f);
  std::fill(xv.begin() + 18, xv.end(), 10.0f);
  std::vector<float> y = run_y(g, {{"x", F({2, 2, 3, 3}, xv)}, {"slopes", F({2}, {0.5f, -2.0f})}});
  // bias[h][i][j] = slopes[h] * (j - i): 0 on the diagonal, the same for
  // every batch; row i of the lower triangle (keys a query sees) is <= 0
  // for a positive slope.
  const std::vector<double> head0{0, 0.5, 1, -0.5, 0, 0.5, -1, -0.5, 0};
  const std::vector<double> head1{0, -2, -4, 2, 0, -2, 4, 2, 0};
  std::vector<double> want;
  for (double base : {0.0, 10.0})
    for (const auto* head : {&head0, &head1})
      for (double b : *head) want.push_back(base + b);
  expect_near(y, want);
}

// ------------------------------------------------------------ cross-entropy

TEST(Reference, CrossEntropyMeanOverRows) {
  Graph g;
  ValueId l = g.input("l", KILN_F32, {2, 2});
  ValueId t = g.input("t", KILN_I32, {2});
  g.output("y", g.cross_entropy(l, t));
  float ln3 = static_cast<float>(std::log(3.0));
  TensorMap out = run_reference(g, {{"l", F({2, 2}, {0, 0, ln3, 0})}, {"t", I({2}, {0, 1})}});
  // Row 0: -log(1/2); row 1: softmax = [3/4, 1/4], -log(1/4). Mean = 1.5 ln 2.
  EXPECT_EQ(out["y"].shape, (Shape{1}));
  expect_near(out["y"].f32, {1.5 * std::log(2.0)});
  EXPECT_THROW(run_reference(g, {{"l", F({2, 2}, {0, 0, 0, 0})}, {"t", I({2}, {0, 2})}}), kiln::Error);
}

TEST(Reference, CrossEntropyIsStableForLargeLogits) {
  Graph g;
  ValueId l = g.input("l", KILN_F32, {1, 3});
  ValueId t = g.input("t", KILN_I32, {1});
  g.output("y", g.cross_entropy(l, t));
  std::vector<float> y = run_y(g, {{"l", F({1, 3}, {1000, 1000, 0})}, {"t", I({1}, {0})}});
  expect_near(y, {std::log(2.0)});
}

TEST(Reference, CrossEntropyGradByHand) {
  Graph g;
  ValueId l = g.input("l", KILN_F32, {2, 2});
  ValueId t = g.input("t", KILN_I32, {2});
  ValueId d = g.input("d", KILN_F32, {1});
  g.output("y", g.cross_entropy_grad(l, t, d));
  float ln3 = static_cast<float>(std::log(3.0));
  std::vector<float> y = run_y(g, {{"l", F({2, 2}, {0, 0, ln3, 0})}, {"t", I({2}, {0, 1})}, {"d", F({1}, {2})}});
  // dloss / N = 1; rows softmax - onehot.
  expect_near(y, {-0.5, 0.5, 0.75, -0.75});
}

// ------------------------------------------------------------ reductions and layout

TEST(Reference, SumToSuffix) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {2, 2, 3});
  g.output("y", g.sum_to(x, {2, 3}));
  g.output("z", g.sum_to(x, {3}));
  g.output("w", g.sum_to(x, {2, 2, 3}));
  std::vector<float> xv{1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60};
  TensorMap out = run_reference(g, {{"x", F({2, 2, 3}, xv)}});
  EXPECT_EQ(out["y"].f32, (std::vector<float>{11, 22, 33, 44, 55, 66}));
  EXPECT_EQ(out["z"].f32, (std::vector<float>{55, 77, 99}));
  EXPECT_EQ(out["w"].f32, xv);
}

TEST(Reference, ReshapeKeepsDataAndDtype) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {2, 3});
  ValueId i = g.input("i", KILN_I32, {4});
  g.output("y", g.reshape(x, {3, 2}));
  g.output("j", g.reshape(i, {2, 2}));
  TensorMap out = run_reference(g, {{"x", F({2, 3}, {1, 2, 3, 4, 5, 6})}, {"i", I({4}, {7, 8, 9, 10})}});
  EXPECT_EQ(out["y"].shape, (Shape{3, 2}));
  EXPECT_EQ(out["y"].f32, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(out["j"].dtype, KILN_I32);
  EXPECT_EQ(out["j"].i32, (std::vector<int32_t>{7, 8, 9, 10}));
}

TEST(Reference, PermuteTransposeAndRank3) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {2, 3});
  g.output("y", g.permute(x, {1, 0}));
  ValueId z = g.input("z", KILN_F32, {2, 3, 4});
  g.output("p", g.permute(z, {2, 0, 1}));
  ValueId i = g.input("i", KILN_I32, {2, 2});
  g.output("q", g.permute(i, {1, 0}));
  std::vector<float> zv(24);
  for (size_t k = 0; k < zv.size(); ++k) zv[k] = static_cast<float>(k);
  TensorMap out =
      run_reference(g, {{"x", F({2, 3}, {1, 2, 3, 4, 5, 6})}, {"z", F({2, 3, 4}, zv)}, {"i", I({2, 2}, {1, 2, 3, 4})}});
  EXPECT_EQ(out["y"].f32, (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(out["q"].i32, (std::vector<int32_t>{1, 3, 2, 4}));
  // p[c][a][b] = z[a][b][c] = 12a + 4b + c.
  ASSERT_EQ(out["p"].shape, (Shape{4, 2, 3}));
  for (int c = 0; c < 4; ++c)
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 3; ++b)
        EXPECT_EQ(out["p"].f32[static_cast<size_t>(c * 6 + a * 3 + b)], static_cast<float>(12 * a + 4 * b + c));
}

TEST(Reference, SplitAlongEachAxis) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {2, 4});
  auto cols = g.split(x, 1, 2);
  auto rows = g.split(x, 0, 2);
  g.output("c0", cols[0]);
  g.output("c1", cols[1]);
  g.output("r0", rows[0]);
  g.output("r1", rows[1]);
  TensorMap out = run_reference(g, {{"x", F({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})}});
  EXPECT_EQ(out["c0"].f32, (std::vector<float>{1, 2, 5, 6}));
  EXPECT_EQ(out["c1"].f32, (std::vector<float>{3, 4, 7, 8}));
  EXPECT_EQ(out["r0"].f32, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(out["r1"].f32, (std::vector<float>{5, 6, 7, 8}));
}

TEST(Reference, ConcatUnequalPartsAlongEachAxis) {
  Graph g;
  ValueId a = g.input("a", KILN_F32, {2, 1});
  ValueId b = g.input("b", KILN_F32, {2, 2});
  ValueId c = g.input("c", KILN_F32, {1, 2});
  g.output("y", g.concat({a, b}, 1));
  g.output("z", g.concat({b, c}, 0));
  TensorMap out =
      run_reference(g, {{"a", F({2, 1}, {1, 2})}, {"b", F({2, 2}, {3, 4, 5, 6})}, {"c", F({1, 2}, {7, 8})}});
  EXPECT_EQ(out["y"].shape, (Shape{2, 3}));
  EXPECT_EQ(out["y"].f32, (std::vector<float>{1, 3, 4, 2, 5, 6}));
  EXPECT_EQ(out["z"].shape, (Shape{3, 2}));
  EXPECT_EQ(out["z"].f32, (std::vector<float>{3, 4, 5, 6, 7, 8}));
}

TEST(Reference, SumSquares) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {2, 2});
  g.output("y", g.sum_squares(x));
  EXPECT_EQ(run_y(g, {{"x", F({2, 2}, {1, -2, 3, 0.5f})}}), (std::vector<float>{14.25f}));
}

// ------------------------------------------------------------ AdamW

struct AdamCase {
  double p, grad, m, v, lr, wd, beta1, beta2, eps, grad_scale;
  int step;
};

// PyTorch's AdamW for one scalar, written the way torch.optim.AdamW does it:
// decay the parameter first, then the Adam step with bias corrections.
void torch_adamw(const AdamCase& c, bool decay, double& p, double& m, double& v) {
  double g = c.grad * c.grad_scale;
  p = c.p;
  if (decay) p *= 1.0 - c.lr * c.wd;
  m = c.beta1 * c.m + (1 - c.beta1) * g;
  v = c.beta2 * c.v + (1 - c.beta2) * g * g;
  double bc1 = 1 - std::pow(c.beta1, c.step), bc2 = 1 - std::pow(c.beta2, c.step);
  p -= c.lr * (m / bc1) / (std::sqrt(v / bc2) + c.eps);
}

void check_adamw(const AdamCase& c, bool decay) {
  Graph g;
  ValueId p = g.input("p", KILN_F32, {1});
  ValueId gr = g.input("g", KILN_F32, {1});
  ValueId m = g.input("m", KILN_F32, {1});
  ValueId v = g.input("v", KILN_F32, {1});
  ValueId hp = g.input("hp", KILN_F32, {5});
  auto outs = g.adamw(p, gr, m, v, hp, static_cast<float>(c.beta1), static_cast<float>(c.beta2),
                      static_cast<float>(c.eps), decay);
  g.output("p2", outs[0]);
  g.output("m2", outs[1]);
  g.output("v2", outs[2]);
  float c1 = static_cast<float>(1 / (1 - std::pow(c.beta1, c.step)));
  float c2 = static_cast<float>(1 / (1 - std::pow(c.beta2, c.step)));
  TensorMap out = run_reference(
      g,
      {{"p", F({1}, {static_cast<float>(c.p)})},
       {"g", F({1}, {static_cast<float>(c.grad)})},
       {"m", F({1}, {static_cast<float>(c.m)})},
       {"v", F({1}, {static_cast<float>(c.v)})},
       {"hp", F({5}, {static_cast<float>(c.lr), static_cast<float>(c.wd), c1, c2, static_cast<float>(c.grad_scale)})}});
  double wp, wm, wv;
  torch_adamw(c, decay, wp, wm, wv);
  EXPECT_NEAR(out["p2"].f32[0], wp, 1e-6 * std::max(1.0, std::abs(wp)));
  EXPECT_NEAR(out["m2"].f32[0], wm, 1e-6 * std::max(1.0, std::abs(wm)));
  EXPECT_NEAR(out["v2"].f32[0], wv, 1e-6 * std::max(1e-3, std::abs(wv)));
}

TEST(Reference, AdamwFirstStepByHand) {
  // Step 1, m = v = 0, g = grad * grad_scale = 1: m' = 0.1, v' = 0.001,
  // m' c1 = 1, v' c2 = 1, so the Adam step is 1 / (1 + 1e-8).
  Graph g;
  ValueId p = g.input("p", KILN_F32, {2});
  ValueId gr = g.input("g", KILN_F32, {2});
  ValueId m = g.input("m", KILN_F32, {2});
  ValueId v = g.input("v", KILN_F32, {2});
  ValueId hp = g.input("hp", KILN_F32, {5});
  auto decayed = g.adamw(p, gr, m, v, hp, 0.9f, 0.999f, 1e-8f, true);
  auto plain = g.adamw(p, gr, m, v, hp, 0.9f, 0.999f, 1e-8f, false);
  g.output("pd", decayed[0]);
  g.output("pp", plain[0]);
  g.output("m2", plain[1]);
  g.output("v2", plain[2]);
  TensorMap out = run_reference(g, {{"p", F({2}, {1, -2})},
                                    {"g", F({2}, {2, -2})},
                                    {"m", F({2}, {0, 0})},
                                    {"v", F({2}, {0, 0})},
                                    {"hp", F({5}, {0.1f, 0.01f, 10.0f, 1000.0f, 0.5f})}});
  // p' = p - lr (step + wd p): 1 - 0.1 (1 + 0.01) = 0.899; -2 - 0.1 (-1 - 0.02) = -1.898.
  expect_near(out["pd"].f32, {0.899, -1.898}, 1e-6);
  expect_near(out["pp"].f32, {0.9, -1.9}, 1e-6);
  expect_near(out["m2"].f32, {0.1, -0.1}, 1e-6);
  expect_near(out["v2"].f32, {0.001, 0.001}, 1e-6);
}

TEST(Reference, AdamwMatchesTorchFormulaWithAndWithoutDecay) {
  AdamCase c{0.75, -0.3, 0.02, 0.004, 3e-3, 0.1, 0.9, 0.95, 1e-8, 0.25, 7};
  check_adamw(c, true);
  check_adamw(c, false);
  AdamCase big{-1.5, 4.0, -0.5, 2.0, 1e-2, 0.5, 0.8, 0.99, 1e-6, 1.0, 1};
  check_adamw(big, true);
  check_adamw(big, false);
}

// ------------------------------------------------------------ input checking

TEST(ReferenceErrors, MissingInputNamesThePort) {
  Graph g;
  ValueId x = g.input("tokens", KILN_F32, {2, 3});
  g.output("y", g.scale(x, 2));
  try {
    run_reference(g, {});
    FAIL() << "expected kiln::Error";
  } catch (const kiln::Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("tokens"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 3]"), std::string::npos) << m;
  }
}

TEST(ReferenceErrors, WrongShapeDtypeOrSizeNamesPortAndShapes) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {2, 3});
  g.output("y", g.scale(x, 2));
  try {
    run_reference(g, {{"x", HostTensor::zeros(KILN_F32, {3, 2})}});
    FAIL() << "expected kiln::Error";
  } catch (const kiln::Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("'x'"), std::string::npos) << m;
    EXPECT_NE(m.find("[3, 2]"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 3]"), std::string::npos) << m;
  }
  try {
    run_reference(g, {{"x", HostTensor::zeros(KILN_I32, {2, 3})}});
    FAIL() << "expected kiln::Error";
  } catch (const kiln::Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("i32"), std::string::npos) << m;
    EXPECT_NE(m.find("f32"), std::string::npos) << m;
  }
  HostTensor short_data = HostTensor::zeros(KILN_F32, {2, 3});
  short_data.f32.resize(5);
  EXPECT_THROW(run_reference(g, {{"x", short_data}}), kiln::Error);
}

TEST(ReferenceErrors, ExtraInputsAreIgnored) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {1});
  g.output("y", g.scale(x, 2));
  EXPECT_EQ(run_y(g, {{"x", F({1}, {3})}, {"unused", F({1}, {0})}}), (std::vector<float>{6}));
}

// ------------------------------------------------------------ run_reference / evaluate_all

TEST(Reference, EvaluateAllReturnsEveryValue) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {2});
  ValueId y = g.scale(x, 3);
  ValueId z = g.add(y, x);
  g.output("z", z);
  g.output("x_again", x);
  std::vector<HostTensor> all = evaluate_all(g, {{"x", F({2}, {1, 2})}});
  ASSERT_EQ(all.size(), g.values().size());
  EXPECT_EQ(all[static_cast<size_t>(y)].f32, (std::vector<float>{3, 6}));
  EXPECT_EQ(all[static_cast<size_t>(z)].f32, (std::vector<float>{4, 8}));
  TensorMap out = run_reference(g, {{"x", F({2}, {1, 2})}});
  EXPECT_EQ(out.size(), 2u);
  EXPECT_EQ(out["x_again"].f32, (std::vector<float>{1, 2}));
}

}  // namespace
}  // namespace kiln::graph
