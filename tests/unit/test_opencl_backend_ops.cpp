// The OpenCL plugin against the reference interpreter, op by op (forward and
// backward), on the first OpenCL device (PoCL in CI). Skipped, saying why,
// when the plugin was not built or the machine has no OpenCL device.
//
// Shapes hit every tail: sizes that are no multiple of any work-group or
// tile size (1, 3, 17, 33, 65, 127, ...). PoCL needs about half a second to
// build a program, so each test puts all its cases into ONE graph (ports
// named c<i>.<name>): one compile per test, not per case.
//
// Each graph runs twice (results must be bitwise equal: kernels are
// deterministic), with outputs pre-filled with NaN (an element a kernel
// forgets to write fails) and guard bytes after every output (a write past
// the end fails).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/backend.h"
#include "core/error.h"
#include "core/registry.h"
#include "graph/autodiff.h"
#include "graph/executor.h"
#include "graph/graph.h"
#include "graph/memory_plan.h"
#include "graph/passes.h"
#include "graph/reference/reference.h"
#include "graph/serialize.h"
#include "trainer/gpt.h"
#include "trainer/step_graphs.h"

namespace kiln::graph {
namespace {

// Conformance thresholds (DESIGN.md): NMSE = sum((a-b)^2) / sum(a^2).
constexpr double kTolElementwise = 1e-7;  // elementwise, norm, loss, optimizer
constexpr double kTolSoftmax = 1e-6;      // softmax, GEMM, attention-like

constexpr uint64_t kGuardBytes = 256;
constexpr uint8_t kGuardByte = 0xA7;

// The device, or nullptr with the reason in `why`.
Device* device(std::string* why = nullptr) {
  static Registry& registry = Registry::instance();
  static std::unique_ptr<Device> dev;
  static std::string reason;
  static bool tried = false;
  if (!tried) {
    tried = true;
    try {
      dev = registry.open("opencl", 0);
    } catch (const Error& e) {
      reason = e.what();
    }
  }
  if (why) *why = reason;
  return dev.get();
}

#define REQUIRE_OPENCL()                                                        \
  do {                                                                          \
    std::string why_;                                                           \
    if (device(&why_) == nullptr) GTEST_SKIP() << "no OpenCL device: " << why_; \
  } while (0)

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
             ", opencl " + std::to_string(got[i]);
      return INFINITY;
    }
    if (!rf) continue;
    const double d = static_cast<double>(ref[i]) - got[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return den > 0.0 ? num / den : (num == 0.0 ? 0.0 : INFINITY);
}

std::string first_difference(const std::vector<float>& ref, const std::vector<float>& got) {
  size_t worst = 0;
  double diff = -1.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double d = std::abs(static_cast<double>(ref[i]) - got[i]);
    if (d > diff) diff = d, worst = i;
  }
  return "largest difference at element " + std::to_string(worst) + ": reference " + std::to_string(ref[worst]) +
         ", opencl " + std::to_string(got[worst]);
}

std::string str(const Shape& s) { return to_string(s); }

// Port name of case `c`: "c<c>.<name>".
std::string P(size_t c, const std::string& name) { return "c" + std::to_string(c) + "." + name; }

class OpenclOps : public ::testing::Test {
 protected:
  void SetUp() override { REQUIRE_OPENCL(); }
  Device& dev() { return *device(); }

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

  // Runs g on the reference and twice on the plugin; every output must match
  // within `tol`, both plugin runs bit for bit, with nothing left unwritten
  // or written out of bounds. `labels` describe the cases by port prefix.
  void check(const Graph& g, const TensorMap& inputs, double tol, const std::map<size_t, std::string>& labels = {}) {
    TensorMap ref = run_reference(g, inputs);
    FallbackDevice fallback;  // the tensor-parallel ops run on cpu
    Executable exe(dev(), g, &fallback);
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
      std::string label;
      if (p.name[0] == 'c') {
        const size_t c = std::strtoul(p.name.c_str() + 1, nullptr, 10);
        if (labels.count(c)) label = labels.at(c);
      }
      SCOPED_TRACE("output " + p.name + " " + label);
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
      if (std::getenv("KILN_TEST_PRINT_NMSE"))
        std::printf("  nmse %-40s %-40s %.3g\n", p.name.c_str(), label.c_str(), e);
      EXPECT_LE(e, tol) << why << (why.empty() ? first_difference(want.f32, got.f32) : "");
    }
  }

  Rng rng_{1234};
};

// ---------------------------------------------------------------- elementwise

TEST_F(OpenclOps, Fill) {
  Graph g;
  std::map<size_t, std::string> labels;
  size_t c = 0;
  for (const Shape& s : {Shape{1}, Shape{17}, Shape{3, 65}, Shape{127, 33}, Shape{70001}}) {
    g.output(P(c, "y"), g.fill(s, -2.5f));
    labels[c++] = str(s);
  }
  check(g, {}, kTolElementwise, labels);
}

TEST_F(OpenclOps, AddMulBroadcast) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{1}, {1}},         {{17}, {17}},          {{3, 17}, {17}},    {{4, 3}, {3}},        {{257}, {}},
      {{65, 127}, {127}}, {{2, 3, 33}, {3, 33}}, {{1000, 64}, {64}}, {{300001}, {300001}}, {{129, 1024}, {1024}}};
  Graph g;
  TensorMap in;
  std::map<size_t, std::string> labels;
  size_t c = 0;
  for (const auto& [sa, sb] : cases)
    for (bool is_add : {true, false}) {
      ValueId a = g.input(P(c, "a"), KILN_F32, sa), b = g.input(P(c, "b"), KILN_F32, sb);
      g.output(P(c, "y"), is_add ? g.add(a, b) : g.mul(a, b));
      in[P(c, "a")] = rnd(sa);
      in[P(c, "b")] = rnd(sb);
      labels[c++] = std::string(is_add ? "add " : "mul ") + str(sa) + " " + str(sb);
    }
  check(g, in, kTolElementwise, labels);
}

TEST_F(OpenclOps, ScaleGeluGeluGrad) {
  Graph g;
  TensorMap in;
  std::map<size_t, std::string> labels;
  size_t c = 0;
  for (const Shape& s : {Shape{1}, Shape{3}, Shape{17}, Shape{33, 65}, Shape{127, 129}, Shape{70001}}) {
    ValueId x = g.input(P(c, "x"), KILN_F32, s), dy = g.input(P(c, "dy"), KILN_F32, s);
    g.output(P(c, "scaled"), g.scale(x, -0.37f));
    g.output(P(c, "gelu"), g.gelu(x));
    g.output(P(c, "dgelu"), g.gelu_grad(x, dy));
    in[P(c, "x")] = rnd(s, -8.0f, 8.0f);
    in[P(c, "dy")] = rnd(s);
    labels[c++] = str(s);
  }
  check(g, in, kTolElementwise, labels);
}

// A fused chain whose output is the input's memory.
TEST_F(OpenclOps, ElementwiseInPlace) {
  Shape s{33, 65};
  Graph g;
  ValueId x = g.input("x", KILN_F32, s), b = g.input("b", KILN_F32, {65});
  g.output("y", g.gelu(g.add(g.scale(x, 3.0f), b)), "x");
  check(g, {{"x", rnd(s)}, {"b", rnd({65})}}, kTolElementwise);
}

// The transformer's epilogues: bias + GELU, bias + residual, and a chain
// whose intermediate also leaves the kernel.
TEST_F(OpenclOps, FusedChains) {
  Graph g;
  ValueId h = g.input("h", KILN_F32, {37, 96}), bias = g.input("bias", KILN_F32, {96});
  ValueId res = g.input("res", KILN_F32, {37, 96});
  ValueId pre = g.add(h, bias);
  g.output("act", g.gelu(pre));
  g.output("pre", pre);
  g.output("resid", g.add(g.add(h, bias), res));
  g.output("grad", g.gelu_grad(pre, g.mul(res, g.scale(h, 0.5f))));
  check(g, {{"h", rnd({37, 96}, -3.0f, 3.0f)}, {"bias", rnd({96})}, {"res", rnd({37, 96})}}, kTolElementwise);
}

// ---------------------------------------------------------------- matmul

TEST_F(OpenclOps, Matmul) {
  struct Mnk {
    int64_t m, n, k;
  };
  Graph g;
  TensorMap in;
  std::map<size_t, std::string> labels;
  size_t c = 0;
  for (Mnk d : {Mnk{1, 1, 1}, Mnk{3, 5, 7}, Mnk{17, 33, 65}, Mnk{65, 17, 127}, Mnk{128, 96, 200}})
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb) {
        Shape sa = ta ? Shape{d.k, d.m} : Shape{d.m, d.k};
        Shape sb = tb ? Shape{d.n, d.k} : Shape{d.k, d.n};
        ValueId a = g.input(P(c, "a"), KILN_F32, sa), b = g.input(P(c, "b"), KILN_F32, sb);
        g.output(P(c, "y"), g.matmul(a, b, ta, tb));
        in[P(c, "a")] = rnd(sa);
        in[P(c, "b")] = rnd(sb);
        labels[c++] = "m,n,k=" + std::to_string(d.m) + "," + std::to_string(d.n) + "," + std::to_string(d.k) +
                      " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb);
      }
  check(g, in, kTolSoftmax, labels);
}

TEST_F(OpenclOps, MatmulBatched) {
  struct B {
    Shape batch;
    int64_t m, n, k;
  };
  Graph g;
  TensorMap in;
  std::map<size_t, std::string> labels;
  size_t c = 0;
  for (const B& d :
       {B{{2, 3}, 17, 5, 33}, B{{12}, 64, 64, 64}, B{{3}, 130, 130, 130}, B{{1}, 65, 3, 17}, B{{5}, 1, 7, 3}})
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb) {
        Shape sa = d.batch, sb = d.batch;
        sa.push_back(ta ? d.k : d.m);
        sa.push_back(ta ? d.m : d.k);
        sb.push_back(tb ? d.n : d.k);
        sb.push_back(tb ? d.k : d.n);
        ValueId a = g.input(P(c, "a"), KILN_F32, sa), b = g.input(P(c, "b"), KILN_F32, sb);
        g.output(P(c, "y"), g.matmul(a, b, ta, tb));
        in[P(c, "a")] = rnd(sa);
        in[P(c, "b")] = rnd(sb);
        labels[c++] = str(sa) + (ta ? "^T" : "") + " @ " + str(sb) + (tb ? "^T" : "");
      }
  // Operands inside the arena (at offsets), as in attention. The first case
  // is tile-aligned and big enough for CLBlast's indirect kernel, whose
  // strided-batched form (1.5.3) ignores B's offset unless it pads B.
  for (const B& d : {B{{3}, 256, 128, 128}, B{{3}, 300, 130, 64}, B{{4}, 64, 64, 32}})
    for (int tb = 0; tb < 2; ++tb) {
      Shape sa = d.batch, sb = d.batch;
      sa.push_back(d.m);
      sa.push_back(d.k);
      sb.push_back(tb ? d.n : d.k);
      sb.push_back(tb ? d.k : d.n);
      ValueId a = g.input(P(c, "a"), KILN_F32, sa), b = g.input(P(c, "b"), KILN_F32, sb);
      ValueId pad = g.scale(g.input(P(c, "pad"), KILN_F32, {37}), 2.0f);
      g.output(P(c, "pad_out"), pad);
      g.output(P(c, "y"), g.scale(g.matmul(g.scale(a, 0.5f), g.scale(b, 2.0f), false, tb), 1.0f));
      in[P(c, "a")] = rnd(sa);
      in[P(c, "b")] = rnd(sb);
      in[P(c, "pad")] = rnd({37});
      labels[c++] = "in the arena: " + str(sa) + " @ " + str(sb) + (tb ? "^T" : "");
    }
  check(g, in, kTolSoftmax, labels);
}

// ---------------------------------------------------------------- embedding

TEST_F(OpenclOps, EmbeddingAndGrad) {
  struct E {
    int64_t vocab, c;
    Shape ids;
  };
  Graph g;
  TensorMap in;
  std::map<size_t, std::string> labels;
  size_t c = 0;
  for (const E& e : {E{1, 1, {1}}, E{17, 3, {5}}, E{50, 65, {3, 17}}, E{1000, 128, {4, 64}}}) {
    ValueId table = g.input(P(c, "table"), KILN_F32, {e.vocab, e.c});
    ValueId id = g.input(P(c, "ids"), KILN_I32, e.ids);
    g.output(P(c, "y"), g.embedding(table, id));
    in[P(c, "table")] = rnd({e.vocab, e.c});
    in[P(c, "ids")] = ids(e.ids, e.vocab);
    labels[c++] = "embedding V=" + std::to_string(e.vocab) + " C=" + std::to_string(e.c) + " ids " + str(e.ids);
  }
  // Small vocabularies force many repeated ids (long buckets).
  for (const E& e : {E{1, 1, {1}}, E{5, 17, {33}}, E{7, 3, {10000}}, E{50, 65, {3, 17}}, E{300, 128, {8, 64}},
                     E{1000, 33, {2, 65}}}) {
    Shape dys = e.ids;
    dys.push_back(e.c);
    ValueId dy = g.input(P(c, "dy"), KILN_F32, dys);
    ValueId id = g.input(P(c, "ids"), KILN_I32, e.ids);
    g.output(P(c, "dtable"), g.embedding_grad(dy, id, e.vocab));
    in[P(c, "dy")] = rnd(dys);
    in[P(c, "ids")] = ids(e.ids, e.vocab);
    labels[c++] = "embedding_grad V=" + std::to_string(e.vocab) + " dy " + str(dys);
  }
  check(g, in, kTolElementwise, labels);
}

// ---------------------------------------------------------------- layernorm

TEST_F(OpenclOps, LayerNormAndGrad) {
  Graph g;
  TensorMap in;
  std::map<size_t, std::string> labels;
  size_t c = 0;
  for (Shape s :
       {Shape{1, 1}, Shape{3, 17}, Shape{33, 65}, Shape{2, 5, 768}, Shape{1000, 33}, Shape{127}, Shape{300, 7}}) {
    const int64_t ch = s.back();
    ValueId x = g.input(P(c, "x"), KILN_F32, s), gamma = g.input(P(c, "gamma"), KILN_F32, {ch});
    ValueId beta = g.input(P(c, "beta"), KILN_F32, {ch}), dy = g.input(P(c, "dy"), KILN_F32, s);
    g.output(P(c, "y"), g.layernorm(x, gamma, beta, 1e-5f));
    auto grads = g.layernorm_grad(x, gamma, dy, 1e-5f);
    g.output(P(c, "dx"), grads[0]);
    g.output(P(c, "dgamma"), grads[1]);
    g.output(P(c, "dbeta"), grads[2]);
    // An offset mean tests the two-pass variance.
    in[P(c, "x")] = rnd(s, 2.0f, 4.0f);
    in[P(c, "gamma")] = rnd({ch}, 0.5f, 1.5f);
    in[P(c, "beta")] = rnd({ch});
    in[P(c, "dy")] = rnd(s);
    labels[c++] = str(s);
  }
  check(g, in, kTolElementwise, labels);
}

// ---------------------------------------------------------------- attention

TEST_F(OpenclOps, CausalSoftmaxAndGrad) {
  Graph g;
  TensorMap in;
  std::map<size_t, std::string> labels;
  size_t c = 0;
  for (const Shape& s :
       {Shape{1, 1}, Shape{3, 3}, Shape{17, 17}, Shape{65, 65}, Shape{2, 3, 33, 33}, Shape{4, 12, 64, 64}})
    for (float scale : {0.125f, -0.5f}) {
      ValueId x = g.input(P(c, "x"), KILN_F32, s);
      g.output(P(c, "y"), g.causal_softmax(x, scale));
      in[P(c, "x")] = rnd(s, -4.0f, 4.0f);
      labels[c++] = "causal_softmax " + str(s) + " scale " + std::to_string(scale);
    }
  for (const Shape& s : {Shape{1, 1}, Shape{17, 17}, Shape{5, 127}, Shape{2, 3, 33, 33}, Shape{4, 12, 64, 64}}) {
    ValueId y = g.input(P(c, "y"), KILN_F32, s), dy = g.input(P(c, "dy"), KILN_F32, s);
    g.output(P(c, "dx"), g.softmax_grad(y, dy, 0.125f));
    in[P(c, "y")] = rnd(s, 0.0f, 1.0f);
    in[P(c, "dy")] = rnd(s);
    labels[c++] = "softmax_grad " + str(s);
  }
  {
    // Forward and backward chained as the model uses them.
    Shape s{2, 4, 33, 33};
    ValueId x = g.input(P(c, "x"), KILN_F32, s), dy = g.input(P(c, "dy"), KILN_F32, s);
    ValueId y = g.causal_softmax(x, 0.25f);
    g.output(P(c, "y"), y);
    g.output(P(c, "dx"), g.softmax_grad(y, dy, 0.25f));
    in[P(c, "x")] = rnd(s, -3.0f, 3.0f);
    in[P(c, "dy")] = rnd(s);
    labels[c++] = "chained " + str(s);
  }
  check(g, in, kTolSoftmax, labels);
}

// ---------------------------------------------------------------- loss

TEST_F(OpenclOps, CrossEntropyAndGrad) {
  struct C {
    int64_t n, v;
  };
  Graph g;
  TensorMap in;
  std::map<size_t, std::string> labels;
  size_t c = 0;
  for (C cs : {C{1, 1}, C{3, 17}, C{33, 65}, C{64, 1000}, C{5, 50257}, C{2048, 256}}) {
    ValueId logits = g.input(P(c, "logits"), KILN_F32, {cs.n, cs.v});
    ValueId targets = g.input(P(c, "targets"), KILN_I32, {cs.n});
    ValueId dloss = g.input(P(c, "dloss"), KILN_F32, {1});
    g.output(P(c, "loss"), g.cross_entropy(logits, targets));
    g.output(P(c, "dlogits"), g.cross_entropy_grad(logits, targets, dloss));
    in[P(c, "logits")] = rnd({cs.n, cs.v}, -6.0f, 6.0f);
    in[P(c, "targets")] = ids({cs.n}, cs.v);
    in[P(c, "dloss")] = scalar(0.75f);
    labels[c++] = "N=" + std::to_string(cs.n) + " V=" + std::to_string(cs.v);
  }
  check(g, in, kTolElementwise, labels);
}

// The tensor-parallel ops have no OpenCL kernels: op_supported says so, a
// compile that gets one anyway refuses it as unsupported, and a graph
// holding the vocab-parallel pieces runs them on the cpu fallback.
TEST_F(OpenclOps, TensorParallelOpsFallBackToCpu) {
  const kiln_plugin_api* api = dev().plugin().raw_table();
  for (kiln_op op : {KILN_OP_ALL_REDUCE, KILN_OP_ROW_MAX, KILN_OP_CROSS_ENTROPY_SHARD, KILN_OP_CROSS_ENTROPY_SHARD_GRAD,
                     KILN_OP_CROSS_ENTROPY_FROM_SUMS, KILN_OP_CROSS_ENTROPY_FROM_SUMS_GRAD}) {
    kiln_op_supported_args a{};
    a.struct_size = sizeof(a);
    a.op = op;
    ASSERT_EQ(api->op_supported(&a), nullptr);
    EXPECT_EQ(a.supported, 0) << op_name(op);
  }
  {
    Graph g;
    g.output("y", g.row_max(g.input("x", KILN_F32, {3, 5})));
    MemoryPlan plan = plan_memory(g);
    std::vector<uint8_t> ir = serialize(g, plan);
    kiln_compile_args c{};
    c.struct_size = sizeof(c);
    c.ir = ir.data();
    c.ir_size = ir.size();
    kiln_error* err = api->compile(&c);
    ASSERT_NE(err, nullptr);
    EXPECT_EQ(api->error_code(err), KILN_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(api->error_message(err)).find("op row_max is not supported by the opencl backend"),
              std::string::npos)
        << api->error_message(err);
    api->error_destroy(err);
  }
  // Logits from a matmul here, the loss and its gradient there and back.
  Graph g;
  ValueId x = g.input("x", KILN_F32, {17, 33}), w = g.input("w", KILN_F32, {33, 65});
  ValueId t = g.input("targets", KILN_I32, {17});
  ValueId logits = g.matmul(x, w, false, false);
  ValueId mx = g.row_max(logits);
  ValueId loss = g.cross_entropy_from_sums(g.cross_entropy_shard(logits, t, mx));
  g.output("loss", loss);
  g.output("dw", backward(g, loss, {w})[0]);
  HostTensor targets = ids({17}, 3 * 65);
  for (int32_t& id : targets.i32) id -= 65;  // a third in this shard
  check(g, {{"x", rnd({17, 33})}, {"w", rnd({33, 65})}, {"targets", targets}}, kTolSoftmax);
  FallbackDevice fallback;
  EXPECT_EQ(Executable(dev(), g, &fallback).split().fallback, "cpu");
}

TEST_F(OpenclOps, OutOfRangeIdsAreErrors) {
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
    ValueId dy = g.input("dy", KILN_F32, {2, 3});
    g.output("y", g.embedding(table, id));
    g.output("dtable", g.embedding_grad(dy, id, 4));
    Executable exe(dev(), g);
    HostTensor t = rnd({4, 3});
    exe.buffer("table")->write(t.data(), t.bytes());
    HostTensor d = rnd({2, 3});
    exe.buffer("dy")->write(d.data(), d.bytes());
    HostTensor i = ids({2}, 4);
    i.i32[0] = -1;
    exe.buffer("ids")->write(i.data(), i.bytes());
    EXPECT_THROW(exe.run(), Error);
    // A good run afterwards: the error flag is reset per execute.
    i.i32[0] = 3;
    exe.buffer("ids")->write(i.data(), i.bytes());
    EXPECT_NO_THROW(exe.run());
  }
}

// ---------------------------------------------------------------- reductions

TEST_F(OpenclOps, SumToAndSumSquares) {
  const std::vector<std::pair<Shape, Shape>> cases = {{{17}, {17}},      {{3, 17}, {17}},       {{2, 3, 33}, {3, 33}},
                                                      {{5000, 3}, {3}},  {{100, 1000}, {1000}}, {{4, 5}, {4, 5}},
                                                      {{20000, 1}, {1}}, {{127, 65}, {65}},     {{3000, 24}, {24}},
                                                      {{64, 7}, {7}},    {{65, 7}, {7}}};
  Graph g;
  TensorMap in;
  std::map<size_t, std::string> labels;
  size_t c = 0;
  for (const auto& [sx, sy] : cases) {
    ValueId x = g.input(P(c, "x"), KILN_F32, sx);
    g.output(P(c, "y"), g.sum_to(x, sy));
    in[P(c, "x")] = rnd(sx);
    labels[c++] = "sum_to " + str(sx) + " -> " + str(sy);
  }
  for (const Shape& s : {Shape{1}, Shape{17}, Shape{33, 65}, Shape{2048}, Shape{2049}, Shape{300001}}) {
    ValueId x = g.input(P(c, "x"), KILN_F32, s);
    g.output(P(c, "y"), g.sum_squares(x));
    in[P(c, "x")] = rnd(s);
    labels[c++] = "sum_squares " + str(s);
  }
  check(g, in, kTolElementwise, labels);
}

// ---------------------------------------------------------------- layout

TEST_F(OpenclOps, ReshapePermute) {
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {{{2, 3, 4, 5}, {0, 2, 1, 3}},
                                                                     {{2, 3, 4, 5}, {0, 1, 3, 2}},
                                                                     {{2, 3, 4, 5}, {3, 2, 1, 0}},
                                                                     {{2, 3, 4, 5}, {2, 0, 3, 1}},
                                                                     {{17, 33}, {1, 0}},
                                                                     {{65, 127}, {1, 0}},
                                                                     {{2, 65, 3, 17}, {0, 2, 1, 3}},
                                                                     {{1, 5, 1, 7}, {3, 2, 1, 0}},
                                                                     {{1, 1}, {1, 0}},
                                                                     {{2, 3, 1, 2, 3, 2}, {5, 1, 3, 0, 4, 2}},
                                                                     {{4, 64, 12, 64}, {0, 2, 1, 3}},
                                                                     {{4, 12, 64, 64}, {0, 1, 3, 2}},
                                                                     {{3, 4}, {0, 1}}};
  Graph g;
  TensorMap in;
  std::map<size_t, std::string> labels;
  size_t c = 0;
  for (const auto& [s, perm] : cases)
    for (kiln_dtype dt : {KILN_F32, KILN_I32}) {
      ValueId x = g.input(P(c, "x"), dt, s);
      g.output(P(c, "y"), g.permute(x, perm));
      std::string p;
      for (int64_t v : perm) p += std::to_string(v) + " ";
      in[P(c, "x")] = dt == KILN_F32 ? rnd(s) : ids(s, 1 << 30);
      labels[c++] = str(s) + " perm " + p + (dt == KILN_F32 ? "f32" : "i32");
    }
  for (kiln_dtype dt : {KILN_F32, KILN_I32}) {
    ValueId x = g.input(P(c, "x"), dt, {3, 17});
    g.output(P(c, "y"), g.reshape(x, {51}));
    // A reshape inside the arena (aliased) feeding another op.
    if (dt == KILN_F32) g.output(P(c, "z"), g.scale(g.reshape(g.scale(x, 2.0f), {17, 3}), 0.5f));
    in[P(c, "x")] = dt == KILN_F32 ? rnd({3, 17}) : ids({3, 17}, 1000);
    labels[c++] = "reshape";
  }
  check(g, in, 0.0, labels);
}

TEST_F(OpenclOps, SplitConcat) {
  struct S {
    Shape shape;
    int64_t axis, parts;
  };
  Graph g;
  TensorMap in;
  std::map<size_t, std::string> labels;
  size_t c = 0;
  for (const S& s : {S{{6, 4}, 0, 3}, S{{3, 12}, 1, 4}, S{{2, 3, 99}, 2, 3}, S{{5}, 0, 5}, S{{64, 2304}, 1, 3}})
    for (kiln_dtype dt : {KILN_F32, KILN_I32}) {
      ValueId x = g.input(P(c, "x"), dt, s.shape);
      auto parts = g.split(x, s.axis, s.parts);
      for (size_t i = 0; i < parts.size(); ++i) g.output(P(c, "part" + std::to_string(i)), parts[i]);
      std::vector<ValueId> rev(parts.rbegin(), parts.rend());
      g.output(P(c, "y"), g.concat(rev, s.axis));
      in[P(c, "x")] = dt == KILN_F32 ? rnd(s.shape) : ids(s.shape, 1000);
      labels[c++] = str(s.shape) + " axis " + std::to_string(s.axis);
    }
  ValueId a = g.input(P(c, "a"), KILN_F32, {3, 4}), b = g.input(P(c, "b"), KILN_F32, {1, 4});
  ValueId cc = g.input(P(c, "c"), KILN_F32, {2, 4}), d = g.input(P(c, "d"), KILN_F32, {6, 5});
  ValueId e = g.input(P(c, "e"), KILN_F32, {6, 1});
  ValueId rows = g.concat({a, b, cc}, 0);
  g.output(P(c, "rows"), rows);
  g.output(P(c, "cols"), g.concat({rows, d, e}, 1));
  in[P(c, "a")] = rnd({3, 4});
  in[P(c, "b")] = rnd({1, 4});
  in[P(c, "c")] = rnd({2, 4});
  in[P(c, "d")] = rnd({6, 5});
  in[P(c, "e")] = rnd({6, 1});
  labels[c++] = "unequal concat";
  check(g, in, 0.0, labels);
}

// ---------------------------------------------------------------- optimizer

TEST_F(OpenclOps, AdamW) {
  Graph g;
  TensorMap in;
  std::map<size_t, std::string> labels;
  size_t c = 0;
  HostTensor hparams = HostTensor::zeros(KILN_F32, {5});
  hparams.f32 = {1e-3f, 0.1f, 1.0f / (1.0f - 0.729f), 1.0f / (1.0f - 0.997003f), 0.5f};
  for (const Shape& s : {Shape{1}, Shape{5}, Shape{17}, Shape{33, 65}, Shape{70001}})
    for (bool wd : {true, false})
      for (bool in_place : {true, false}) {
        ValueId p = g.input(P(c, "p"), KILN_F32, s), gr = g.input(P(c, "g"), KILN_F32, s);
        ValueId m = g.input(P(c, "m"), KILN_F32, s), v = g.input(P(c, "v"), KILN_F32, s);
        ValueId hp = g.input(P(c, "hparams"), KILN_F32, {5});
        auto out = g.adamw(p, gr, m, v, hp, 0.9f, 0.999f, 1e-8f, wd);
        g.output(P(c, "p_out"), out[0], in_place ? P(c, "p") : "");
        g.output(P(c, "m_out"), out[1], in_place ? P(c, "m") : "");
        g.output(P(c, "v_out"), out[2], in_place ? P(c, "v") : "");
        // As the optimizer step does: clear the gradient after AdamW read it.
        if (in_place) g.output(P(c, "g_out"), g.fill(s, 0.0f), P(c, "g"));
        in[P(c, "p")] = rnd(s);
        in[P(c, "g")] = rnd(s);
        in[P(c, "m")] = rnd(s, -0.1f, 0.1f);
        in[P(c, "v")] = rnd(s, 0.0f, 0.01f);
        in[P(c, "hparams")] = hparams;
        labels[c++] = str(s) + (wd ? " wd" : " no-wd") + (in_place ? " in place" : " out of place");
      }
  check(g, in, kTolElementwise, labels);
}

// ---------------------------------------------------------------- special values

TEST_F(OpenclOps, SpecialValues) {
  const float nan = std::nanf(""), inf = INFINITY;
  Graph g;
  TensorMap in;
  {
    Shape s{3, 33};
    HostTensor x = rnd(s, -3.0f, 3.0f), b = rnd({33});
    x.f32[5] = nan;
    x.f32[40] = inf;
    x.f32[41] = -inf;
    b.f32[7] = nan;
    ValueId xv = g.input("x", KILN_F32, s), bv = g.input("b", KILN_F32, {33});
    g.output("gelu", g.gelu(xv));
    g.output("add", g.add(xv, bv));
    g.output("ln", g.layernorm(xv, bv, bv, 1e-5f));  // rows 0 and 1 become NaN
    g.output("sum", g.sum_to(xv, {33}));
    in["x"] = x;
    in["b"] = b;
  }
  {
    HostTensor logits = rnd({4, 37}, -5.0f, 5.0f);
    HostTensor targets = ids({4}, 37);
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t j = 0; j < 37; j += 3)
        if (j != targets.i32[static_cast<size_t>(r)]) logits.f32[static_cast<size_t>(r * 37 + j)] = -inf;
    ValueId l = g.input("logits", KILN_F32, {4, 37}), t = g.input("targets", KILN_I32, {4});
    ValueId dl = g.input("dloss", KILN_F32, {1});
    g.output("loss", g.cross_entropy(l, t));
    g.output("dlogits", g.cross_entropy_grad(l, t, dl));
    in["logits"] = logits;
    in["targets"] = targets;
    in["dloss"] = scalar(1.0f);
  }
  {
    Shape s{2, 17, 17};
    HostTensor x = rnd(s, -2.0f, 2.0f);
    for (size_t i = 0; i < x.f32.size(); i += 5)
      if (i % 17 != 0) x.f32[i] = -inf;  // column 0 stays finite
    ValueId xv = g.input("scores", KILN_F32, s);
    g.output("softmax", g.causal_softmax(xv, 0.5f));
    in["scores"] = x;
  }
  check(g, in, kTolElementwise);
}

// The code a GPU gets (a work group per row, tree reductions in local
// memory), generated for this device on request so a CPU-only machine
// checks it too.
TEST_F(OpenclOps, GpuCodegenVariants) {
  setenv("KILN_OPENCL_GPU_CODEGEN", "1", 1);
  Graph g;
  TensorMap in;
  std::map<size_t, std::string> labels;
  size_t c = 0;
  for (const Shape& s : {Shape{1, 1}, Shape{33, 65}, Shape{2, 5, 768}, Shape{3, 17}}) {
    const int64_t ch = s.back();
    ValueId x = g.input(P(c, "x"), KILN_F32, s), gamma = g.input(P(c, "gamma"), KILN_F32, {ch});
    ValueId beta = g.input(P(c, "beta"), KILN_F32, {ch}), dy = g.input(P(c, "dy"), KILN_F32, s);
    g.output(P(c, "y"), g.layernorm(x, gamma, beta, 1e-5f));
    auto grads = g.layernorm_grad(x, gamma, dy, 1e-5f);
    g.output(P(c, "dx"), grads[0]);
    g.output(P(c, "dgamma"), grads[1]);
    g.output(P(c, "dbeta"), grads[2]);
    g.output(P(c, "gelu"), g.gelu(g.add(x, beta)));
    in[P(c, "x")] = rnd(s, 2.0f, 4.0f);
    in[P(c, "gamma")] = rnd({ch}, 0.5f, 1.5f);
    in[P(c, "beta")] = rnd({ch});
    in[P(c, "dy")] = rnd(s);
    labels[c++] = "layernorm " + str(s);
  }
  for (const Shape& s : {Shape{1, 1}, Shape{2, 3, 33, 33}, Shape{2, 4, 64, 64}, Shape{300, 300}}) {
    ValueId x = g.input(P(c, "x"), KILN_F32, s), dy = g.input(P(c, "dy"), KILN_F32, s);
    ValueId y = g.causal_softmax(x, 0.3f);
    g.output(P(c, "y"), y);
    g.output(P(c, "dx"), g.softmax_grad(y, dy, 0.3f));
    in[P(c, "x")] = rnd(s, -3.0f, 3.0f);
    in[P(c, "dy")] = rnd(s);
    labels[c++] = "softmax " + str(s);
  }
  for (auto [n, v] : {std::pair<int64_t, int64_t>{1, 1}, {33, 65}, {5, 50257}, {64, 1000}}) {
    ValueId logits = g.input(P(c, "logits"), KILN_F32, {n, v});
    ValueId targets = g.input(P(c, "targets"), KILN_I32, {n});
    ValueId dloss = g.input(P(c, "dloss"), KILN_F32, {1});
    g.output(P(c, "loss"), g.cross_entropy(logits, targets));
    g.output(P(c, "dlogits"), g.cross_entropy_grad(logits, targets, dloss));
    in[P(c, "logits")] = rnd({n, v}, -6.0f, 6.0f);
    in[P(c, "targets")] = ids({n}, v);
    in[P(c, "dloss")] = scalar(0.75f);
    labels[c++] = "cross entropy N=" + std::to_string(n) + " V=" + std::to_string(v);
  }
  try {
    check(g, in, kTolSoftmax, labels);
  } catch (...) {
    unsetenv("KILN_OPENCL_GPU_CODEGEN");
    throw;
  }
  unsetenv("KILN_OPENCL_GPU_CODEGEN");
}

// ---------------------------------------------------------------- a whole model

// One training step of a small GPT (forward, backward, gradient
// accumulation): the loss and every gradient against the reference.
TEST_F(OpenclOps, GptTrainStep) {
  trainer::GptConfig cfg;
  cfg.num_layers = 2;
  cfg.hidden_size = 32;
  cfg.num_attention_heads = 2;
  cfg.vocab_size = 61;
  cfg.seq_length = 9;
  const int64_t B = 3;
  Graph g = trainer::build_train_step(cfg, B);
  TensorMap in;
  std::mt19937 gen(11);
  std::normal_distribution<float> normal(0.0f, 0.2f);
  for (const Port& p : g.inputs()) {
    const Value& v = g.value(p.value);
    HostTensor t = HostTensor::zeros(v.dtype, v.shape);
    if (v.dtype == KILN_I32)
      for (auto& x : t.i32) x = static_cast<int32_t>(gen() % static_cast<uint32_t>(cfg.vocab_size));
    else
      for (auto& x : t.f32) x = normal(gen) + (p.name.find("layernorm.weight") != std::string::npos ? 1.0f : 0.0f);
    in[p.name] = t;
  }
  check(g, in, kTolSoftmax);
}

// ---------------------------------------------------------------- executables

// The generated source of a compiled graph, from its executable bytes (see
// backends/opencl/executable.h for the layout).
struct ExeLayout {
  size_t version_at = 0, version_len = 0;
  size_t source_at = 0, source_len = 0;
  size_t binary_at = 0, binary_len = 0;
};

ExeLayout parse_executable(const std::vector<uint8_t>& e) {
  ExeLayout l;
  size_t at = 12;
  auto u64 = [&](size_t p) {
    uint64_t v;
    std::memcpy(&v, e.data() + p, 8);
    return static_cast<size_t>(v);
  };
  l.version_len = u64(at);
  l.version_at = at + 8;
  at = l.version_at + l.version_len;
  for (int s = 0; s < 2; ++s) at += 8 + u64(at);  // fingerprint, device name
  uint32_t sections;
  std::memcpy(&sections, e.data() + at, 4);
  at += 4;
  for (uint32_t s = 0; s < sections; ++s) {
    uint32_t tag;
    std::memcpy(&tag, e.data() + at, 4);
    const size_t len = u64(at + 4);
    if (tag == 1) l.source_at = at + 12, l.source_len = len;
    if (tag == 2) l.binary_at = at + 12, l.binary_len = len;
    at += 12 + len;
  }
  return l;
}

std::vector<uint8_t> compile_bytes(const Graph& graph) {
  Graph g = eliminate_dead_code(graph);
  MemoryPlan plan = plan_memory(g);
  std::vector<uint8_t> ir = serialize(g, plan);
  const kiln_plugin_api* api = device()->plugin().raw_table();
  kiln_compile_args c{};
  c.struct_size = sizeof(c);
  c.ir = ir.data();
  c.ir_size = ir.size();
  kiln::check(device()->plugin(), api->compile(&c), "compile");
  std::vector<uint8_t> out(c.executable, c.executable + c.executable_size);
  api->executable_bytes_free(c.executable);
  return out;
}

int32_t load_code(std::vector<uint8_t>& exe, kiln_loaded_executable** loaded) {
  const kiln_plugin_api* api = device()->plugin().raw_table();
  kiln_load_args l{};
  l.struct_size = sizeof(l);
  l.device = device()->handle();
  l.executable = exe.data();
  l.executable_size = exe.size();
  kiln_error* err = api->load(&l);
  int32_t code = err ? api->error_code(err) : KILN_OK;
  if (err) api->error_destroy(err);
  *loaded = l.loaded;
  return code;
}

Graph bias_gelu_residual() {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {5, 40}), b = g.input("b", KILN_F32, {40});
  ValueId r = g.input("r", KILN_F32, {5, 40});
  g.output("y", g.add(g.gelu(g.add(x, b)), r));
  return g;
}

TEST_F(OpenclOps, ElementwiseChainIsOneKernel) {
  std::vector<uint8_t> exe = compile_bytes(bias_gelu_residual());
  ExeLayout l = parse_executable(exe);
  const std::string source(reinterpret_cast<const char*>(exe.data() + l.source_at), l.source_len);
  size_t kernels = 0;
  for (size_t at = source.find("__kernel"); at != std::string::npos; at = source.find("__kernel", at + 1)) ++kernels;
  EXPECT_EQ(kernels, 1u) << source;
  EXPECT_GT(l.binary_len, 0u);
}

// A binary the driver rejects (corrupt, or from another driver) must not
// fail the load: the plugin rebuilds from the source it kept.
TEST_F(OpenclOps, ForeignBinaryFallsBackToSource) {
  Graph g = bias_gelu_residual();
  std::vector<uint8_t> exe = compile_bytes(g);
  ExeLayout l = parse_executable(exe);
  ASSERT_GT(l.binary_len, 64u);
  for (size_t i = 0; i < l.binary_len; ++i) exe[l.binary_at + i] = static_cast<uint8_t>(i * 131u + 7u);
  kiln_loaded_executable* loaded = nullptr;
  ASSERT_EQ(load_code(exe, &loaded), KILN_OK);
  ASSERT_NE(loaded, nullptr);
  // And it computes the right thing.
  TensorMap in = {{"x", rnd({5, 40})}, {"b", rnd({40})}, {"r", rnd({5, 40})}};
  TensorMap ref = run_reference(g, in);
  Graph dg = eliminate_dead_code(g);
  MemoryPlan plan = plan_memory(dg);
  std::vector<std::unique_ptr<DeviceBuffer>> bufs;
  std::vector<kiln_buffer*> slots;
  for (size_t s = 0; s < plan.slot_ports.size(); ++s) {
    bufs.push_back(std::make_unique<DeviceBuffer>(dev(), std::max<uint64_t>(plan.slot_bytes[s], 64)));
    slots.push_back(bufs.back()->handle());
    if (s > 0 && in.count(plan.slot_ports[s])) {
      const HostTensor& t = in.at(plan.slot_ports[s]);
      bufs.back()->write(t.data(), t.bytes());
    }
  }
  const kiln_plugin_api* api = device()->plugin().raw_table();
  kiln_execute_args e{};
  e.struct_size = sizeof(e);
  e.device = device()->handle();
  e.loaded = loaded;
  e.slots = slots.data();
  e.num_slots = static_cast<int32_t>(slots.size());
  kiln::check(device()->plugin(), api->execute(&e), "execute");
  size_t y_slot = 0;
  for (size_t s = 0; s < plan.slot_ports.size(); ++s)
    if (plan.slot_ports[s] == "y") y_slot = s;
  HostTensor got = HostTensor::zeros(KILN_F32, {5, 40});
  bufs[y_slot]->read(got.data(), got.bytes());
  std::string why;
  EXPECT_LE(nmse(ref.at("y").f32, got.f32, &why), kTolElementwise) << why;
  api->loaded_free(device()->handle(), loaded);

  // An empty binary section likewise.
  std::vector<uint8_t> trimmed(exe.begin(), exe.begin() + static_cast<long>(l.binary_at) - 8);
  const uint64_t zero = 0;
  trimmed.insert(trimmed.end(), reinterpret_cast<const uint8_t*>(&zero), reinterpret_cast<const uint8_t*>(&zero) + 8);
  trimmed.insert(trimmed.end(), exe.begin() + static_cast<long>(l.binary_at + l.binary_len), exe.end());
  ASSERT_EQ(load_code(trimmed, &loaded), KILN_OK);
  api->loaded_free(device()->handle(), loaded);
}

TEST_F(OpenclOps, LoadRefusesOtherCompilerVersionsAndJunk) {
  std::vector<uint8_t> exe = compile_bytes(bias_gelu_residual());
  ExeLayout l = parse_executable(exe);
  const std::string version(reinterpret_cast<const char*>(exe.data() + l.version_at), l.version_len);
  EXPECT_EQ(version, device()->plugin().raw_table()->compiler_version());
  exe[l.version_at + l.version_len - 1] ^= 1;
  kiln_loaded_executable* loaded = nullptr;
  EXPECT_EQ(load_code(exe, &loaded), KILN_ERR_CORRUPT);
  std::vector<uint8_t> junk = {'n', 'o', 't', ' ', 'a', 'n', ' ', 'e', 'x', 'e'};
  EXPECT_EQ(load_code(junk, &loaded), KILN_ERR_CORRUPT);
  std::vector<uint8_t> truncated(exe.begin(), exe.begin() + static_cast<long>(exe.size() / 2));
  truncated[l.version_at + l.version_len - 1] ^= 1;  // restore the version
  EXPECT_EQ(load_code(truncated, &loaded), KILN_ERR_CORRUPT);
}

// compile runs in worker threads ahead of time: concurrent compiles of the
// same graph must all succeed and agree.
TEST_F(OpenclOps, ConcurrentCompilesAgree) {
  Graph g = bias_gelu_residual();
  std::vector<std::vector<uint8_t>> out(3);
  std::vector<std::string> errors(3);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < out.size(); ++t)
    threads.emplace_back([&, t] {
      try {
        out[t] = compile_bytes(g);
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (size_t t = 0; t < out.size(); ++t) {
    EXPECT_EQ(errors[t], "");
    ASSERT_FALSE(out[t].empty());
    const ExeLayout a = parse_executable(out[0]), b = parse_executable(out[t]);
    EXPECT_EQ(std::string(out[0].begin() + static_cast<long>(a.source_at),
                          out[0].begin() + static_cast<long>(a.source_at + a.source_len)),
              std::string(out[t].begin() + static_cast<long>(b.source_at),
                          out[t].begin() + static_cast<long>(b.source_at + b.source_len)));
  }
}

TEST_F(OpenclOps, CompileRefusesBadIr) {
  const kiln_plugin_api* api = device()->plugin().raw_table();
  std::vector<uint8_t> junk = {'n', 'o', 't', ' ', 'I', 'R'};
  kiln_compile_args c{};
  c.struct_size = sizeof(c);
  c.ir = junk.data();
  c.ir_size = junk.size();
  kiln_error* err = api->compile(&c);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(api->error_code(err), KILN_ERR_CORRUPT);
  api->error_destroy(err);
}

TEST_F(OpenclOps, DeviceProperties) {
  const kiln_device_properties& p = dev().properties();
  EXPECT_GT(std::strlen(p.name), 0u);
  EXPECT_GT(p.memory_bytes, 0u);
  EXPECT_GT(p.compute_units, 0);
  EXPECT_EQ(std::strlen(p.fingerprint), 64u);
  EXPECT_EQ(std::string(p.fingerprint).find_first_not_of("0123456789abcdef"), std::string::npos);
}

}  // namespace
}  // namespace kiln::graph
