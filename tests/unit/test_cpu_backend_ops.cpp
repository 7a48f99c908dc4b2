// The CPU plugin against the reference interpreter, op by op (forward and
// backward), at shapes that hit every tail and threading path: sizes that are
// no multiple of any vector width or tile (1, 3, 17, 33, 65, 127, ...), and
// sizes big enough to split across the 2 threads the device is opened with.
//
// Each case runs twice on the plugin (the results must be bitwise equal:
// kernels are deterministic for a fixed thread count), with output buffers
// pre-filled with NaN (an element a kernel forgets to write fails) and guard
// bytes after every output (a write past the end fails). Every test runs on
// both kernel sets: AVX2+FMA (when the CPU has it) and the baseline build.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/error.h"
#include "core/registry.h"
#include "graph/executor.h"
#include "graph/graph.h"
#include "graph/reference/reference.h"

namespace kiln::graph {
namespace {

// Conformance thresholds (DESIGN.md): NMSE = sum((a-b)^2) / sum(a^2).
constexpr double kTolElementwise = 1e-7;  // elementwise, norm, loss, optimizer
constexpr double kTolSoftmax = 1e-6;      // softmax, GEMM, attention-like

constexpr uint64_t kGuardBytes = 256;
constexpr uint8_t kGuardByte = 0xA7;

// One device per kernel set, opened with 2 threads so the parallel paths run.
Device& device(const std::string& isa) {
  // The registry first, so it outlives the devices at exit.
  static Registry& registry = Registry::instance();
  static std::map<std::string, std::unique_ptr<Device>> devices;
  auto& d = devices[isa];
  if (!d) {
    // The plugin reads this at device open.
    if (isa == "base")
      setenv("KILN_CPU_DISABLE_AVX2", "1", 1);
    else
      unsetenv("KILN_CPU_DISABLE_AVX2");
    d = registry.open("cpu", 0, 2);
    unsetenv("KILN_CPU_DISABLE_AVX2");
  }
  return *d;
}

// Deterministic inputs from a fixed seed; the float conversion is our own so
// the data do not depend on the standard library's distributions.
class Rng {
 public:
  explicit Rng(uint32_t seed) : gen_(seed) {}
  float uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(gen_() >> 8) * (1.0f / 16777216.0f); }
  int32_t below(int64_t n) { return static_cast<int32_t>(gen_() % static_cast<uint64_t>(n)); }

 private:
  std::mt19937 gen_;
};

double nmse(const std::vector<float>& ref, const std::vector<float>& got, std::string* why) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const bool rf = std::isfinite(ref[i]), gf = std::isfinite(got[i]);
    if (rf != gf || (!rf && !(std::isnan(ref[i]) && std::isnan(got[i])) && ref[i] != got[i])) {
      *why = "non-finite mismatch at element " + std::to_string(i) + ": reference " + std::to_string(ref[i]) +
             ", cpu " + std::to_string(got[i]);
      return INFINITY;
    }
    if (!rf) continue;
    const double d = static_cast<double>(ref[i]) - got[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return den > 0.0 ? num / den : (num == 0.0 ? 0.0 : INFINITY);
}

// For failure messages: where the largest difference is.
std::string first_difference(const std::vector<float>& ref, const std::vector<float>& got) {
  size_t worst = 0;
  double diff = -1.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double d = std::abs(static_cast<double>(ref[i]) - got[i]);
    if (d > diff) diff = d, worst = i;
  }
  return "largest difference at element " + std::to_string(worst) + ": reference " + std::to_string(ref[worst]) +
         ", cpu " + std::to_string(got[worst]);
}

class CpuOps : public ::testing::TestWithParam<std::string> {
 protected:
  Device& dev() { return device(GetParam()); }

  HostTensor rnd(Shape s, float lo = -1.0f, float hi = 1.0f) {
    HostTensor t = HostTensor::zeros(KILN_F32, std::move(s));
    for (float& v : t.f32) v = rng_.uniform(lo, hi);
    return t;
  }
  HostTensor ids(Shape s, int64_t below) {
    HostTensor t = HostTensor::zeros(KILN_I32, std::move(s));
    for (int32_t& v : t.i32) v = rng_.below(below);
    return t;
  }
  HostTensor scalar(float v) {
    HostTensor t = HostTensor::zeros(KILN_F32, {1});
    t.f32[0] = v;
    return t;
  }

  // Runs g on the reference and (twice) on the plugin; every output must
  // match within `tol`, both plugin runs must agree bit for bit, and no
  // output may be left unwritten or written out of bounds.
  void check(const Graph& g, const TensorMap& inputs, double tol, const std::string& label) {
    SCOPED_TRACE(label);
    TensorMap ref = run_reference(g, inputs);
    Executable exe(dev(), g);
    std::map<std::string, uint64_t> out_bytes;
    for (const Port& p : g.outputs()) {
      if (!p.updates.empty()) continue;  // lives in the input's buffer
      uint64_t bytes = static_cast<uint64_t>(numel(g.shape(p.value))) * 4;
      auto buf = std::make_shared<DeviceBuffer>(dev(), bytes + kGuardBytes);
      std::vector<uint8_t> fill(bytes + kGuardBytes, 0xFF);  // NaN floats
      std::memset(fill.data() + bytes, kGuardByte, kGuardBytes);
      buf->write(fill.data(), fill.size());
      exe.bind(p.name, buf);
      out_bytes[p.name] = bytes;
    }
    std::vector<TensorMap> runs;
    for (int run = 0; run < 2; ++run) {
      for (const Port& p : g.inputs()) {
        const HostTensor& t = inputs.at(p.name);
        exe.buffer(p.name)->write(t.data(), t.bytes());
      }
      exe.run();
      TensorMap got;
      for (const Port& p : g.outputs()) {
        HostTensor t = HostTensor::zeros(g.value(p.value).dtype, g.shape(p.value));
        exe.buffer(p.name)->read(t.data(), t.bytes());
        got[p.name] = std::move(t);
      }
      runs.push_back(std::move(got));
    }
    for (const auto& [name, bytes] : out_bytes) {
      std::vector<uint8_t> guard(kGuardBytes);
      exe.buffer(name)->read(guard.data(), kGuardBytes, bytes);
      for (uint8_t b : guard) ASSERT_EQ(b, kGuardByte) << "write past the end of output " << name;
    }
    for (const Port& p : g.outputs()) {
      SCOPED_TRACE("output " + p.name);
      const HostTensor& want = ref.at(p.name);
      const HostTensor& got = runs[0].at(p.name);
      const HostTensor& again = runs[1].at(p.name);
      ASSERT_EQ(std::memcmp(got.data(), again.data(), got.bytes()), 0) << "two runs on the same inputs differ";
      if (want.dtype == KILN_I32) {
        EXPECT_EQ(want.i32, got.i32);
        continue;
      }
      std::string why;
      double e = nmse(want.f32, got.f32, &why);
      // The margins, for tuning kernels: KILN_TEST_PRINT_NMSE=1.
      if (std::getenv("KILN_TEST_PRINT_NMSE"))
        std::printf("  nmse %-60s %-8s %.3g\n", label.c_str(), p.name.c_str(), e);
      EXPECT_LE(e, tol) << why << (why.empty() ? first_difference(want.f32, got.f32) : "");
    }
  }

  Rng rng_{1234};
};

std::string str(const Shape& s) { return to_string(s); }

// ---------------------------------------------------------------- elementwise

TEST_P(CpuOps, Fill) {
  for (const Shape& s : {Shape{1}, Shape{17}, Shape{3, 65}, Shape{127, 33}, Shape{70001}}) {
    Graph g;
    g.output("y", g.fill(s, -2.5f));
    check(g, {}, kTolElementwise, str(s));
  }
}

TEST_P(CpuOps, AddMulBroadcast) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{1}, {1}},         {{17}, {17}},          {{3, 17}, {17}},    {{4, 3}, {3}},        {{257}, {}},
      {{65, 127}, {127}}, {{2, 3, 33}, {3, 33}}, {{1000, 64}, {64}}, {{300001}, {300001}}, {{129, 1024}, {1024}}};
  for (const auto& [sa, sb] : cases)
    for (bool is_add : {true, false}) {
      Graph g;
      ValueId a = g.input("a", KILN_F32, sa), b = g.input("b", KILN_F32, sb);
      g.output("y", is_add ? g.add(a, b) : g.mul(a, b));
      check(g, {{"a", rnd(sa)}, {"b", rnd(sb)}}, kTolElementwise,
            std::string(is_add ? "add " : "mul ") + str(sa) + " " + str(sb));
    }
}

TEST_P(CpuOps, ScaleGeluGeluGrad) {
  for (const Shape& s : {Shape{1}, Shape{3}, Shape{17}, Shape{33, 65}, Shape{127, 129}, Shape{70001}}) {
    Graph g;
    ValueId x = g.input("x", KILN_F32, s), dy = g.input("dy", KILN_F32, s);
    g.output("scaled", g.scale(x, -0.37f));
    g.output("gelu", g.gelu(x));
    g.output("dgelu", g.gelu_grad(x, dy));
    check(g, {{"x", rnd(s, -8.0f, 8.0f)}, {"dy", rnd(s)}}, kTolElementwise, str(s));
  }
}

// Elementwise ops must be right when the output is the input's memory.
TEST_P(CpuOps, ElementwiseInPlace) {
  Shape s{33, 65};
  Graph g;
  ValueId x = g.input("x", KILN_F32, s), b = g.input("b", KILN_F32, {65});
  g.output("y", g.gelu(g.add(g.scale(x, 3.0f), b)), "x");
  check(g, {{"x", rnd(s)}, {"b", rnd({65})}}, kTolElementwise, "scale -> add -> gelu in place");
}

// ---------------------------------------------------------------- matmul

TEST_P(CpuOps, Matmul) {
  struct Mnk {
    int64_t m, n, k;
  };
  for (Mnk d : {Mnk{1, 1, 1}, Mnk{3, 5, 7}, Mnk{17, 33, 65}, Mnk{65, 17, 127}, Mnk{128, 96, 200}})
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb) {
        Shape sa = ta ? Shape{d.k, d.m} : Shape{d.m, d.k};
        Shape sb = tb ? Shape{d.n, d.k} : Shape{d.k, d.n};
        Graph g;
        ValueId a = g.input("a", KILN_F32, sa), b = g.input("b", KILN_F32, sb);
        g.output("y", g.matmul(a, b, ta, tb));
        check(g, {{"a", rnd(sa)}, {"b", rnd(sb)}}, kTolSoftmax,
              "m,n,k=" + std::to_string(d.m) + "," + std::to_string(d.n) + "," + std::to_string(d.k) +
                  " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb));
      }
}

TEST_P(CpuOps, MatmulBatched) {
  struct B {
    Shape batch;
    int64_t m, n, k;
  };
  // [12] x 64^3: attention-like, spread over threads; [3] x 130^3: big items
  // that do not divide across 2 threads, run one by one on the full pool;
  // [2,3] odd sizes.
  for (const B& d :
       {B{{2, 3}, 17, 5, 33}, B{{12}, 64, 64, 64}, B{{3}, 130, 130, 130}, B{{1}, 65, 3, 17}, B{{5}, 1, 7, 3}})
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb) {
        Shape sa = d.batch, sb = d.batch;
        sa.push_back(ta ? d.k : d.m);
        sa.push_back(ta ? d.m : d.k);
        sb.push_back(tb ? d.n : d.k);
        sb.push_back(tb ? d.k : d.n);
        Graph g;
        ValueId a = g.input("a", KILN_F32, sa), b = g.input("b", KILN_F32, sb);
        g.output("y", g.matmul(a, b, ta, tb));
        check(g, {{"a", rnd(sa)}, {"b", rnd(sb)}}, kTolSoftmax,
              str(sa) + (ta ? "^T" : "") + " @ " + str(sb) + (tb ? "^T" : ""));
      }
}

// ---------------------------------------------------------------- embedding

TEST_P(CpuOps, Embedding) {
  struct E {
    int64_t vocab, c;
    Shape ids;
  };
  for (const E& e : {E{1, 1, {1}}, E{17, 3, {5}}, E{50, 65, {3, 17}}, E{1000, 128, {4, 64}}}) {
    Graph g;
    ValueId table = g.input("table", KILN_F32, {e.vocab, e.c});
    ValueId id = g.input("ids", KILN_I32, e.ids);
    g.output("y", g.embedding(table, id));
    check(g, {{"table", rnd({e.vocab, e.c})}, {"ids", ids(e.ids, e.vocab)}}, kTolElementwise,
          "V=" + std::to_string(e.vocab) + " C=" + std::to_string(e.c) + " ids " + str(e.ids));
  }
}

TEST_P(CpuOps, EmbeddingGrad) {
  struct E {
    int64_t vocab, c;
    Shape ids;
  };
  // Small vocabularies force repeated ids (scatter-add collisions); C = 3
  // with many rows takes the split-by-vocabulary path, wide C the
  // split-by-columns path.
  for (const E& e : {E{1, 1, {1}}, E{5, 17, {33}}, E{7, 3, {10000}}, E{50, 65, {3, 17}}, E{300, 128, {8, 64}},
                     E{1000, 33, {2, 65}}}) {
    Graph g;
    Shape dys = e.ids;
    dys.push_back(e.c);
    ValueId dy = g.input("dy", KILN_F32, dys);
    ValueId id = g.input("ids", KILN_I32, e.ids);
    g.output("dtable", g.embedding_grad(dy, id, e.vocab));
    check(g, {{"dy", rnd(dys)}, {"ids", ids(e.ids, e.vocab)}}, kTolElementwise,
          "V=" + std::to_string(e.vocab) + " dy " + str(dys));
  }
}

// ---------------------------------------------------------------- layernorm

TEST_P(CpuOps, LayerNormAndGrad) {
  for (const Shape& s : {Shape{1, 1}, Shape{3, 17}, Shape{33, 65}, Shape{2, 5, 768}, Shape{1000, 33}, Shape{127}}) {
    const int64_t c = s.back();
    Graph g;
    ValueId x = g.input("x", KILN_F32, s), gamma = g.input("gamma", KILN_F32, {c});
    ValueId beta = g.input("beta", KILN_F32, {c}), dy = g.input("dy", KILN_F32, s);
    g.output("y", g.layernorm(x, gamma, beta, 1e-5f));
    auto grads = g.layernorm_grad(x, gamma, dy, 1e-5f);
    g.output("dx", grads[0]);
    g.output("dgamma", grads[1]);
    g.output("dbeta", grads[2]);
    // An offset mean tests the two-pass variance.
    check(g, {{"x", rnd(s, 2.0f, 4.0f)}, {"gamma", rnd({c}, 0.5f, 1.5f)}, {"beta", rnd({c})}, {"dy", rnd(s)}},
          kTolElementwise, str(s));
  }
}

// ---------------------------------------------------------------- attention

TEST_P(CpuOps, CausalSoftmax) {
  for (const Shape& s :
       {Shape{1, 1}, Shape{3, 3}, Shape{17, 17}, Shape{65, 65}, Shape{2, 3, 33, 33}, Shape{4, 12, 64, 64}})
    for (float scale : {0.125f, -0.5f}) {
      Graph g;
      ValueId x = g.input("x", KILN_F32, s);
      g.output("y", g.causal_softmax(x, scale));
      check(g, {{"x", rnd(s, -4.0f, 4.0f)}}, kTolSoftmax, str(s) + " scale " + std::to_string(scale));
    }
}

TEST_P(CpuOps, SoftmaxGrad) {
  for (const Shape& s : {Shape{1, 1}, Shape{17, 17}, Shape{5, 127}, Shape{2, 3, 33, 33}, Shape{4, 12, 64, 64}}) {
    Graph g;
    ValueId y = g.input("y", KILN_F32, s), dy = g.input("dy", KILN_F32, s);
    g.output("dx", g.softmax_grad(y, dy, 0.125f));
    check(g, {{"y", rnd(s, 0.0f, 1.0f)}, {"dy", rnd(s)}}, kTolSoftmax, str(s));
  }
}

// Forward and backward chained as the model uses them.
TEST_P(CpuOps, CausalSoftmaxThenGrad) {
  Shape s{2, 4, 33, 33};
  Graph g;
  ValueId x = g.input("x", KILN_F32, s), dy = g.input("dy", KILN_F32, s);
  ValueId y = g.causal_softmax(x, 0.25f);
  g.output("y", y);
  g.output("dx", g.softmax_grad(y, dy, 0.25f));
  check(g, {{"x", rnd(s, -3.0f, 3.0f)}, {"dy", rnd(s)}}, kTolSoftmax, str(s));
}

// ---------------------------------------------------------------- loss

TEST_P(CpuOps, CrossEntropyAndGrad) {
  struct C {
    int64_t n, v;
  };
  for (C c : {C{1, 1}, C{3, 17}, C{33, 65}, C{64, 1000}, C{5, 50257}}) {
    Graph g;
    ValueId logits = g.input("logits", KILN_F32, {c.n, c.v});
    ValueId targets = g.input("targets", KILN_I32, {c.n});
    ValueId dloss = g.input("dloss", KILN_F32, {1});
    g.output("loss", g.cross_entropy(logits, targets));
    g.output("dlogits", g.cross_entropy_grad(logits, targets, dloss));
    check(g, {{"logits", rnd({c.n, c.v}, -6.0f, 6.0f)}, {"targets", ids({c.n}, c.v)}, {"dloss", scalar(0.75f)}},
          kTolElementwise, "N=" + std::to_string(c.n) + " V=" + std::to_string(c.v));
  }
}

// The vocab-parallel pieces. Unlike CROSS_ENTROPY's, their targets may lie
// outside [0, V) (another shard's tokens): no error, no target term.
TEST_P(CpuOps, VocabParallelCrossEntropy) {
  struct C {
    int64_t n, v;
    float lo, hi;
  };
  for (C c : {C{1, 1, -6, 6}, C{5, 37, -6, 6}, C{33, 65, -6, 6}, C{64, 1000, -6, 6}, C{5, 50257, -6, 6},
              C{7, 129, 4980, 5020}, C{9, 300, -1000, 1000}}) {
    HostTensor logits = rnd({c.n, c.v}, c.lo, c.hi);
    HostTensor targets = ids({c.n}, 3 * c.v);
    for (int32_t& t : targets.i32) t -= static_cast<int32_t>(c.v);  // [-V, 2V): a third in range
    HostTensor rowmax = HostTensor::zeros(KILN_F32, {c.n});
    for (int64_t r = 0; r < c.n; ++r) {  // at least the row's max, as for a shard
      const float* row = logits.f32.data() + r * c.v;
      rowmax.f32[static_cast<size_t>(r)] = *std::max_element(row, row + c.v) + (r % 2 ? 1.5f : 0.0f);
    }
    HostTensor sums = rnd({c.n, 2});
    for (int64_t r = 0; r < c.n; ++r) sums.f32[static_cast<size_t>(2 * r)] = rng_.uniform(1.0f, 1000.0f);
    Graph g;
    ValueId l = g.input("logits", KILN_F32, {c.n, c.v}), t = g.input("targets", KILN_I32, {c.n});
    ValueId mx = g.input("rowmax", KILN_F32, {c.n}), ds = g.input("shard_dsums", KILN_F32, {c.n, 2});
    ValueId s = g.input("group_sums", KILN_F32, {c.n, 2});
    g.output("row_max", g.row_max(l));
    g.output("sums", g.cross_entropy_shard(l, t, mx));
    g.output("dlogits", g.cross_entropy_shard_grad(l, t, mx, ds));
    g.output("loss", g.cross_entropy_from_sums(s));
    g.output("dsums", g.cross_entropy_from_sums_grad(s, g.input("dloss", KILN_F32, {1})));
    check(g,
          {{"logits", logits},
           {"targets", targets},
           {"rowmax", rowmax},
           {"shard_dsums", rnd({c.n, 2})},
           {"group_sums", sums},
           {"dloss", scalar(0.75f)}},
          kTolElementwise,
          "N=" + std::to_string(c.n) + " V=" + std::to_string(c.v) + " logits in [" + std::to_string(c.lo) + ", " +
              std::to_string(c.hi) + ")");
  }
  {
    // NaN poisons a row's max; infinities are ordinary extremes.
    HostTensor x = rnd({4, 37}, -5.0f, 5.0f);
    x.f32[30] = std::nanf("");
    x.f32[37 + 3] = INFINITY;
    for (int64_t j = 0; j < 37; ++j) x.f32[static_cast<size_t>(2 * 37 + j)] = -INFINITY;
    Graph g;
    g.output("y", g.row_max(g.input("x", KILN_F32, {4, 37})));
    check(g, {{"x", x}}, 0.0, "row_max with NaN and infinities");
  }
}

TEST_P(CpuOps, OutOfRangeIdsAreErrors) {
  {
    Graph g;
    ValueId logits = g.input("logits", KILN_F32, {3, 5});
    ValueId targets = g.input("targets", KILN_I32, {3});
    g.output("loss", g.cross_entropy(logits, targets));
    Executable exe(dev(), g);
    HostTensor t = ids({3}, 5);
    t.i32[2] = 5;
    exe.buffer("targets")->write(t.data(), t.bytes());
    HostTensor l = rnd({3, 5});
    exe.buffer("logits")->write(l.data(), l.bytes());
    try {
      exe.run();
      FAIL() << "expected an error for target 5 with V = 5";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
    }
  }
  {
    Graph g;
    ValueId table = g.input("table", KILN_F32, {4, 3});
    ValueId id = g.input("ids", KILN_I32, {2});
    g.output("y", g.embedding(table, id));
    Executable exe(dev(), g);
    HostTensor t = rnd({4, 3});
    exe.buffer("table")->write(t.data(), t.bytes());
    HostTensor i = ids({2}, 4);
    i.i32[0] = -1;
    exe.buffer("ids")->write(i.data(), i.bytes());
    EXPECT_THROW(exe.run(), Error);
  }
}

// ---------------------------------------------------------------- reductions

TEST_P(CpuOps, SumTo) {
  const std::vector<std::pair<Shape, Shape>> cases = {{{17}, {17}},      {{3, 17}, {17}},       {{2, 3, 33}, {3, 33}},
                                                      {{5000, 3}, {3}},  {{100, 1000}, {1000}}, {{4, 5}, {4, 5}},
                                                      {{20000, 1}, {1}}, {{127, 65}, {65}},     {{3000, 24}, {24}}};
  for (const auto& [sx, sy] : cases) {
    Graph g;
    ValueId x = g.input("x", KILN_F32, sx);
    g.output("y", g.sum_to(x, sy));
    check(g, {{"x", rnd(sx)}}, kTolElementwise, str(sx) + " -> " + str(sy));
  }
}

TEST_P(CpuOps, SumSquares) {
  for (const Shape& s : {Shape{1}, Shape{17}, Shape{33, 65}, Shape{300001}}) {
    Graph g;
    ValueId x = g.input("x", KILN_F32, s);
    g.output("y", g.sum_squares(x));
    check(g, {{"x", rnd(s)}}, kTolElementwise, str(s));
  }
}

// ---------------------------------------------------------------- layout

TEST_P(CpuOps, Reshape) {
  for (kiln_dtype dt : {KILN_F32, KILN_I32}) {
    Graph g;
    ValueId x = g.input("x", dt, {3, 17});
    g.output("y", g.reshape(x, {51}));
    check(g, {{"x", dt == KILN_F32 ? rnd({3, 17}) : ids({3, 17}, 1000)}}, 0.0, "reshape");
  }
}

TEST_P(CpuOps, Permute) {
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{2, 3, 4, 5}, {0, 2, 1, 3}},  // [B,T,H,D] -> [B,H,T,D]: contiguous runs
      {{2, 3, 4, 5}, {0, 1, 3, 2}},  // transpose of the last two dims
      {{2, 3, 4, 5}, {3, 2, 1, 0}},
      {{2, 3, 4, 5}, {2, 0, 3, 1}},
      {{17, 33}, {1, 0}},
      {{65, 127}, {1, 0}},
      {{2, 65, 3, 17}, {0, 2, 1, 3}},
      {{1, 5, 1, 7}, {3, 2, 1, 0}},  // size-1 dims
      {{1, 1}, {1, 0}},
      {{2, 3, 1, 2, 3, 2}, {5, 1, 3, 0, 4, 2}},  // rank 6
      {{4, 64, 12, 64}, {0, 2, 1, 3}},
      {{4, 12, 64, 64}, {0, 1, 3, 2}}};
  for (const auto& [s, perm] : cases)
    for (kiln_dtype dt : {KILN_F32, KILN_I32}) {
      Graph g;
      ValueId x = g.input("x", dt, s);
      g.output("y", g.permute(x, perm));
      std::string p;
      for (int64_t v : perm) p += std::to_string(v) + " ";
      check(g, {{"x", dt == KILN_F32 ? rnd(s) : ids(s, 1 << 30)}}, 0.0,
            str(s) + " perm " + p + (dt == KILN_F32 ? "f32" : "i32"));
    }
}

TEST_P(CpuOps, SplitConcat) {
  struct S {
    Shape shape;
    int64_t axis, parts;
  };
  for (const S& c : {S{{6, 4}, 0, 3}, S{{3, 12}, 1, 4}, S{{2, 3, 99}, 2, 3}, S{{5}, 0, 5}, S{{64, 2304}, 1, 3}})
    for (kiln_dtype dt : {KILN_F32, KILN_I32}) {
      Graph g;
      ValueId x = g.input("x", dt, c.shape);
      auto parts = g.split(x, c.axis, c.parts);
      for (size_t i = 0; i < parts.size(); ++i) g.output("part" + std::to_string(i), parts[i]);
      // Concatenate in reverse, so concat is checked on its own too.
      std::vector<ValueId> rev(parts.rbegin(), parts.rend());
      g.output("y", g.concat(rev, c.axis));
      check(g, {{"x", dt == KILN_F32 ? rnd(c.shape) : ids(c.shape, 1000)}}, 0.0,
            str(c.shape) + " axis " + std::to_string(c.axis));
    }
  // Unequal parts.
  Graph g;
  ValueId a = g.input("a", KILN_F32, {3, 4}), b = g.input("b", KILN_F32, {1, 4});
  ValueId c = g.input("c", KILN_F32, {2, 4}), d = g.input("d", KILN_F32, {6, 5});
  ValueId e = g.input("e", KILN_F32, {6, 1});
  ValueId rows = g.concat({a, b, c}, 0);
  g.output("rows", rows);
  g.output("cols", g.concat({rows, d, e}, 1));
  check(g, {{"a", rnd({3, 4})}, {"b", rnd({1, 4})}, {"c", rnd({2, 4})}, {"d", rnd({6, 5})}, {"e", rnd({6, 1})}}, 0.0,
        "unequal concat");
}

// ---------------------------------------------------------------- optimizer

TEST_P(CpuOps, AdamW) {
  for (const Shape& s : {Shape{1}, Shape{17}, Shape{33, 65}, Shape{70001}})
    for (bool wd : {true, false})
      for (bool in_place : {true, false}) {
        Graph g;
        ValueId p = g.input("p", KILN_F32, s), gr = g.input("g", KILN_F32, s);
        ValueId m = g.input("m", KILN_F32, s), v = g.input("v", KILN_F32, s);
        ValueId hp = g.input("hparams", KILN_F32, {5});
        auto out = g.adamw(p, gr, m, v, hp, 0.9f, 0.999f, 1e-8f, wd);
        g.output("p_out", out[0], in_place ? "p" : "");
        g.output("m_out", out[1], in_place ? "m" : "");
        g.output("v_out", out[2], in_place ? "v" : "");
        HostTensor hparams = HostTensor::zeros(KILN_F32, {5});
        hparams.f32 = {1e-3f, 0.1f, 1.0f / (1.0f - 0.729f), 1.0f / (1.0f - 0.997003f), 0.5f};
        check(g,
              {{"p", rnd(s)},
               {"g", rnd(s)},
               {"m", rnd(s, -0.1f, 0.1f)},
               {"v", rnd(s, 0.0f, 0.01f)},
               {"hparams", hparams}},
              kTolElementwise, str(s) + (wd ? " wd" : " no-wd") + (in_place ? " in place" : " out of place"));
      }
}

// ---------------------------------------------------------------- special values

// NaN must propagate like the reference; -inf logits/scores (masking) must
// contribute exactly 0.
TEST_P(CpuOps, SpecialValues) {
  const float nan = std::nanf(""), inf = INFINITY;
  {
    Shape s{3, 33};
    HostTensor x = rnd(s, -3.0f, 3.0f), b = rnd({33});
    x.f32[5] = nan;
    x.f32[40] = inf;
    b.f32[7] = nan;
    Graph g;
    ValueId xv = g.input("x", KILN_F32, s), bv = g.input("b", KILN_F32, {33});
    g.output("gelu", g.gelu(xv));
    g.output("add", g.add(xv, bv));
    g.output("ln", g.layernorm(xv, bv, bv, 1e-5f));  // rows 0 and 1 become NaN
    check(g, {{"x", x}, {"b", b}}, kTolElementwise, "nan/inf elementwise");
  }
  {
    HostTensor logits = rnd({4, 37}, -5.0f, 5.0f);
    HostTensor targets = ids({4}, 37);
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t j = 0; j < 37; j += 3)
        if (j != targets.i32[static_cast<size_t>(r)]) logits.f32[static_cast<size_t>(r * 37 + j)] = -inf;
    Graph g;
    ValueId l = g.input("logits", KILN_F32, {4, 37}), t = g.input("targets", KILN_I32, {4});
    ValueId dl = g.input("dloss", KILN_F32, {1});
    g.output("loss", g.cross_entropy(l, t));
    g.output("dlogits", g.cross_entropy_grad(l, t, dl));
    check(g, {{"logits", logits}, {"targets", targets}, {"dloss", scalar(1.0f)}}, kTolElementwise,
          "cross entropy with -inf logits");
  }
  {
    Shape s{2, 17, 17};
    HostTensor x = rnd(s, -2.0f, 2.0f);
    for (size_t i = 0; i < x.f32.size(); i += 5)
      if (i % 17 != 0) x.f32[i] = -inf;  // column 0 stays finite
    Graph g;
    ValueId xv = g.input("x", KILN_F32, s);
    g.output("y", g.causal_softmax(xv, 0.5f));
    check(g, {{"x", x}}, kTolSoftmax, "causal softmax with -inf scores");
  }
}

// ---------------------------------------------------------------- ABI edges

TEST_P(CpuOps, RejectsCorruptAndForeignExecutables) {
  const kiln_plugin_api* api = dev().plugin().raw_table();
  std::vector<uint8_t> junk = {'n', 'o', 't', ' ', 'I', 'R'};
  kiln_compile_args c{};
  c.struct_size = sizeof(c);
  c.ir = junk.data();
  c.ir_size = junk.size();
  kiln_error* err = api->compile(&c);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(api->error_code(err), KILN_ERR_CORRUPT);
  api->error_destroy(err);

  kiln_load_args l{};
  l.struct_size = sizeof(l);
  l.device = dev().handle();
  l.executable = junk.data();
  l.executable_size = junk.size();
  err = api->load(&l);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(api->error_code(err), KILN_ERR_CORRUPT);
  api->error_destroy(err);
}

TEST_P(CpuOps, DeviceProperties) {
  const kiln_device_properties& p = dev().properties();
  EXPECT_EQ(p.kind, KILN_DEVICE_CPU);
  EXPECT_GT(p.memory_bytes, 0u);
  EXPECT_GT(p.compute_units, 0);
  EXPECT_EQ(std::strlen(p.fingerprint), 64u);
  EXPECT_STREQ(p.driver_version, dev().plugin().raw_table()->compiler_version());
}

// ---------------------------------------------------------------- hand-built IR
//
// Graphs the builder would refuse, written byte by byte (kiln/ir.h), to see
// the plugin refuse them too, with the right error code.
class IrWriter {
 public:
  // One value per call, in slot `slot` at `offset`; returns its id.
  uint32_t value(kiln_dtype dt, const Shape& dims, uint32_t slot, uint64_t offset) {
    put<uint8_t>(values_, static_cast<uint8_t>(dt));
    put<uint8_t>(values_, static_cast<uint8_t>(dims.size()));
    put<uint16_t>(values_, 0);
    put<uint32_t>(values_, slot);
    put<uint64_t>(values_, offset);
    for (int64_t d : dims) put<int64_t>(values_, d);
    return num_values_++;
  }
  void node(uint16_t op, const std::vector<uint32_t>& in, const std::vector<uint32_t>& out,
            const std::vector<int64_t>& ia = {}, const std::vector<float>& fa = {}) {
    put<uint16_t>(nodes_, op);
    put<uint8_t>(nodes_, static_cast<uint8_t>(in.size()));
    put<uint8_t>(nodes_, static_cast<uint8_t>(out.size()));
    put<uint8_t>(nodes_, static_cast<uint8_t>(ia.size()));
    put<uint8_t>(nodes_, static_cast<uint8_t>(fa.size()));
    put<uint16_t>(nodes_, 0);
    for (uint32_t v : in) put<uint32_t>(nodes_, v);
    for (uint32_t v : out) put<uint32_t>(nodes_, v);
    for (int64_t v : ia) put<int64_t>(nodes_, v);
    for (float v : fa) put<float>(nodes_, v);
    ++num_nodes_;
  }
  std::vector<uint8_t> bytes(uint32_t num_slots, uint64_t arena_bytes) const {
    std::vector<uint8_t> b = {'K', 'I', 'L', 'N', 'I', 'R', 0, 0};
    put<uint32_t>(b, KILN_IR_VERSION);
    put<uint32_t>(b, num_slots);
    put<uint64_t>(b, arena_bytes);
    put<uint32_t>(b, num_values_);
    put<uint32_t>(b, num_nodes_);
    b.insert(b.end(), values_.begin(), values_.end());
    b.insert(b.end(), nodes_.begin(), nodes_.end());
    return b;
  }

 private:
  template <class T>
  static void put(std::vector<uint8_t>& b, T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof(T));
  }
  std::vector<uint8_t> values_, nodes_;
  uint32_t num_values_ = 0, num_nodes_ = 0;
};

// Compiles `ir`; returns the error code (KILN_OK on success) and message.
int32_t compile_code(const std::vector<uint8_t>& ir, std::string* message = nullptr,
                     std::vector<uint8_t>* exe = nullptr) {
  const kiln_plugin_api* api = device("avx2").plugin().raw_table();
  kiln_compile_args c{};
  c.struct_size = sizeof(c);
  c.ir = ir.data();
  c.ir_size = ir.size();
  kiln_error* err = api->compile(&c);
  if (err == nullptr) {
    if (exe) exe->assign(c.executable, c.executable + c.executable_size);
    api->executable_bytes_free(c.executable);
    return KILN_OK;
  }
  int32_t code = api->error_code(err);
  if (message) *message = api->error_message(err);
  api->error_destroy(err);
  return code;
}

TEST(CpuPlugin, RefusesUnknownOpsAsUnsupported) {
  IrWriter w;
  uint32_t x = w.value(KILN_F32, {4}, 1, 0), y = w.value(KILN_F32, {4}, 2, 0);
  w.node(200, {x}, {y});
  EXPECT_EQ(compile_code(w.bytes(3, 0)), KILN_ERR_UNSUPPORTED);
}

TEST(CpuPlugin, AllReduceIsAHostCollective) {
  const kiln_plugin_api* api = device("avx2").plugin().raw_table();
  for (int op = KILN_OP_ALL_REDUCE; op < KILN_OP_COUNT_; ++op) {
    kiln_op_supported_args a{};
    a.struct_size = sizeof(a);
    a.op = op;
    ASSERT_EQ(api->op_supported(&a), nullptr);
    EXPECT_EQ(a.supported, op == KILN_OP_ALL_REDUCE ? 0 : 1) << op_name(static_cast<kiln_op>(op));
  }
  IrWriter w;
  uint32_t x = w.value(KILN_F32, {4}, 1, 0), y = w.value(KILN_F32, {4}, 2, 0);
  w.node(KILN_OP_ALL_REDUCE, {x}, {y}, {0});
  std::string msg;
  EXPECT_EQ(compile_code(w.bytes(3, 0), &msg), KILN_ERR_UNSUPPORTED);
  EXPECT_NE(msg.find("op all_reduce is not supported by the cpu backend"), std::string::npos) << msg;
}

TEST(CpuPlugin, RefusesMalformedVocabParallelNodes) {
  std::string msg;
  IrWriter w;  // targets f32
  uint32_t l = w.value(KILN_F32, {3, 5}, 1, 0), t = w.value(KILN_F32, {3}, 2, 0), m = w.value(KILN_F32, {3}, 3, 0);
  uint32_t s = w.value(KILN_F32, {3, 2}, 4, 0);
  w.node(KILN_OP_CROSS_ENTROPY_SHARD, {l, t, m}, {s});
  EXPECT_EQ(compile_code(w.bytes(5, 0), &msg), KILN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg.find("targets must be i32"), std::string::npos) << msg;

  IrWriter w2;  // rowmax of the wrong length
  l = w2.value(KILN_F32, {3, 5}, 1, 0), t = w2.value(KILN_I32, {3}, 2, 0), m = w2.value(KILN_F32, {5}, 3, 0);
  s = w2.value(KILN_F32, {3, 2}, 4, 0);
  w2.node(KILN_OP_CROSS_ENTROPY_SHARD, {l, t, m}, {s});
  EXPECT_EQ(compile_code(w2.bytes(5, 0), &msg), KILN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg.find("rowmax"), std::string::npos) << msg;

  IrWriter w3;  // sums not [N, 2]
  uint32_t sums = w3.value(KILN_F32, {4, 3}, 1, 0), loss = w3.value(KILN_F32, {1}, 2, 0);
  w3.node(KILN_OP_CROSS_ENTROPY_FROM_SUMS, {sums}, {loss});
  EXPECT_EQ(compile_code(w3.bytes(3, 0), &msg), KILN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg.find("sums must be [N, 2]"), std::string::npos) << msg;

  IrWriter w4;  // row_max of a vector
  uint32_t v = w4.value(KILN_F32, {7}, 1, 0), y = w4.value(KILN_F32, {1}, 2, 0);
  w4.node(KILN_OP_ROW_MAX, {v}, {y});
  EXPECT_EQ(compile_code(w4.bytes(3, 0), &msg), KILN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg.find("rank >= 2"), std::string::npos) << msg;
}

TEST(CpuPlugin, RefusesInconsistentShapes) {
  IrWriter w;
  uint32_t a = w.value(KILN_F32, {3, 4}, 1, 0), b = w.value(KILN_F32, {5, 6}, 2, 0);
  uint32_t y = w.value(KILN_F32, {3, 6}, 3, 0);
  w.node(KILN_OP_MATMUL, {a, b}, {y}, {0, 0});
  std::string msg;
  EXPECT_EQ(compile_code(w.bytes(4, 0), &msg), KILN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(msg.find("matmul"), std::string::npos) << msg;

  IrWriter w2;  // wrong arity
  uint32_t x = w2.value(KILN_F32, {4}, 1, 0), z = w2.value(KILN_F32, {4}, 2, 0);
  w2.node(KILN_OP_GELU, {x, x}, {z});
  EXPECT_EQ(compile_code(w2.bytes(3, 0), &msg), KILN_ERR_INVALID_ARGUMENT);

  IrWriter w3;  // wrong output shape
  uint32_t p = w3.value(KILN_F32, {4}, 1, 0), q = w3.value(KILN_F32, {5}, 2, 0);
  w3.node(KILN_OP_SCALE, {p}, {q}, {}, {2.0f});
  EXPECT_EQ(compile_code(w3.bytes(3, 0), &msg), KILN_ERR_INVALID_ARGUMENT);

  IrWriter w4;  // ids that are not i32
  uint32_t t = w4.value(KILN_F32, {10, 4}, 1, 0), i = w4.value(KILN_F32, {3}, 2, 0);
  uint32_t e = w4.value(KILN_F32, {3, 4}, 3, 0);
  w4.node(KILN_OP_EMBEDDING, {t, i}, {e});
  EXPECT_EQ(compile_code(w4.bytes(4, 0), &msg), KILN_ERR_INVALID_ARGUMENT);
}

TEST(CpuPlugin, LoadRefusesOtherCompilerVersions) {
  IrWriter w;
  uint32_t x = w.value(KILN_F32, {4}, 1, 0), y = w.value(KILN_F32, {4}, 2, 0);
  w.node(KILN_OP_GELU, {x}, {y});
  std::vector<uint8_t> exe;
  ASSERT_EQ(compile_code(w.bytes(3, 0), nullptr, &exe), KILN_OK);
  Device& d = device("avx2");
  const std::string version = d.plugin().raw_table()->compiler_version();
  // The version string follows magic (8), format (4) and its length (4).
  ASSERT_EQ(std::string(exe.begin() + 16, exe.begin() + 16 + static_cast<long>(version.size())), version);
  exe[16 + version.size() - 1] ^= 1;
  kiln_load_args l{};
  l.struct_size = sizeof(l);
  l.device = d.handle();
  l.executable = exe.data();
  l.executable_size = exe.size();
  kiln_error* err = d.plugin().raw_table()->load(&l);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(d.plugin().raw_table()->error_code(err), KILN_ERR_CORRUPT);
  d.plugin().raw_table()->error_destroy(err);
}

TEST(CpuPlugin, ExecuteChecksSlotSizes) {
  IrWriter w;
  uint32_t x = w.value(KILN_F32, {64}, 1, 0), y = w.value(KILN_F32, {64}, 2, 0);
  w.node(KILN_OP_GELU, {x}, {y});
  std::vector<uint8_t> bytes;
  ASSERT_EQ(compile_code(w.bytes(3, 0), nullptr, &bytes), KILN_OK);
  Device& d = device("avx2");
  const kiln_plugin_api* api = d.plugin().raw_table();
  kiln_load_args l{};
  l.struct_size = sizeof(l);
  l.device = d.handle();
  l.executable = bytes.data();
  l.executable_size = bytes.size();
  check(d.plugin(), api->load(&l), "load");
  DeviceBuffer arena(d, 64), in(d, 256), small(d, 255);
  kiln_buffer* slots[3] = {arena.handle(), in.handle(), small.handle()};
  kiln_execute_args e{};
  e.struct_size = sizeof(e);
  e.device = d.handle();
  e.loaded = l.loaded;
  e.slots = slots;
  e.num_slots = 3;
  kiln_error* err = api->execute(&e);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(api->error_code(err), KILN_ERR_INVALID_ARGUMENT);
  api->error_destroy(err);
  DeviceBuffer out(d, 256);
  slots[2] = out.handle();
  EXPECT_EQ(api->execute(&e), nullptr);
  api->loaded_free(d.handle(), l.loaded);
}

INSTANTIATE_TEST_SUITE_P(Isa, CpuOps, ::testing::Values("avx2", "base"), [](const auto& info) { return info.param; });

}  // namespace
}  // namespace kiln::graph
