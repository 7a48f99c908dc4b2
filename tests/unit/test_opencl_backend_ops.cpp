// The OpenCL plugin's own behaviour on the first OpenCL device (PoCL in
// CI): what it sends to the cpu fallback, its id checks, fusion into one
// kernel, program binaries and their fallback to source, compiler versions,
// concurrent compiles, device properties. Skipped, saying why, when the
// plugin was not built or the machine has no OpenCL device. The numerics of
// every op are checked by the conformance suite
// (test_conformance_backends.cpp), with this backend's code and its GPU
// variants.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/backend.h"
#include "core/error.h"
#include "core/registry.h"
#include "graph/autodiff.h"
#include "graph/conformance/op_cases.h"
#include "graph/conformance/runner.h"
#include "graph/executor.h"
#include "graph/graph.h"
#include "graph/memory_plan.h"
#include "graph/passes.h"
#include "graph/reference/reference.h"
#include "graph/serialize.h"
#include "shared_device.h"

namespace kiln::graph {
namespace {

using conformance::kTolGemm;
constexpr double kTolSoftmax = kTolGemm;

// The device, or nullptr with the reason in `why`.
Device* device(std::string* why = nullptr) { return test::shared_device("opencl", why); }

#define REQUIRE_OPENCL()                                                        \
  do {                                                                          \
    std::string why_;                                                           \
    if (device(&why_) == nullptr) GTEST_SKIP() << "no OpenCL device: " << why_; \
  } while (0)

class OpenclOps : public ::testing::Test {
 protected:
  void SetUp() override { REQUIRE_OPENCL(); }
  Device& dev() { return *device(); }

  HostTensor rnd(Shape s, float lo = -1.0f, float hi = 1.0f) { return rng_.uniform(std::move(s), lo, hi); }
  HostTensor ids(Shape s, int64_t below) { return rng_.ids(std::move(s), below); }

  // Runs g through the conformance runner, twice on the plugin (bitwise
  // equal), against the reference within `tol`.
  void check(const Graph& g, const TensorMap& inputs, double tol) {
    conformance::Case c;
    c.group = c.name = "graph";
    c.graph = g;
    c.inputs = inputs;
    c.threshold = tol;
    c.fallback = true;
    conformance::Options options;
    options.repeat = true;
    options.fallback = &fallback_;
    const conformance::CaseResult r = conformance::run_case(dev(), c, options);
    EXPECT_EQ(r.status, conformance::Status::Pass) << r.detail;
  }

  conformance::CaseRng rng_{1234};
  FallbackDevice fallback_;  // the tensor-parallel ops run on cpu
};

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
  EXPECT_EQ(Executable(dev(), g, &fallback_).split().fallback, "cpu");
}

// An id out of range fails that execute only (the conformance suite checks
// that it fails): the device's error flag is reset for the next one.
TEST_F(OpenclOps, IdErrorDoesNotOutliveItsExecute) {
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
  i.i32[0] = 3;
  exe.buffer("ids")->write(i.data(), i.bytes());
  EXPECT_NO_THROW(exe.run());
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
  const conformance::Comparison cmp = conformance::compare(ref.at("y"), got);
  EXPECT_LE(cmp.nmse, conformance::kTolElementwise) << cmp.where;
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

// ATTENTION_DROPOUT and its gradient run ATTENTION's kernels, so they share
// its per-node plan check (attention_plan.h): a head size of 1031 (prime,
// a row split of 1031 work items) is refused per node and the graph runs
// the op's decomposition, the chain with its DROPOUT_KEYED mask, on the
// cpu fallback; a head size that fits is claimed.
TEST_F(OpenclOps, AttentionDropoutNoPlanFitsRunsAsTheChain) {
  auto desc = [](int64_t d) { return TensorDesc{KILN_F32, {2, 5, d}}; };
  const TensorDesc key{KILN_I32, {5}};
  const Plugin& plugin = dev().plugin();
  for (int64_t d : {64, 1031}) {
    SCOPED_TRACE("head size " + std::to_string(d));
    const bool fits = d == 64;
    EXPECT_EQ(plugin.supports_node(KILN_OP_ATTENTION_DROPOUT, {desc(d), desc(d), desc(d), key}, {desc(d)}), fits);
    EXPECT_EQ(plugin.supports_node(KILN_OP_ATTENTION_DROPOUT_GRAD, {desc(d), desc(d), desc(d), desc(d), key},
                                   {desc(d), desc(d), desc(d)}),
              fits);
  }
  Graph g;
  const Shape s{2, 5, 1031};
  const ValueId q = g.input("q", KILN_F32, s), k = g.input("k", KILN_F32, s), v = g.input("v", KILN_F32, s);
  const ValueId kv = g.input("key", KILN_I32, {5});
  const int64_t period = 2 * 5 * 5;
  g.output("y", g.attention_dropout(q, k, v, kv, 0.03f, 0.5f, period, period));
  TensorMap in{{"q", rnd(s)}, {"k", rnd(s)}, {"v", rnd(s)}, {"key", HostTensor::zeros(KILN_I32, {5})}};
  in.at("key").i32 = {7, 3, 0, 0, 11};
  Executable exe(dev(), g);
  for (const char* name : {"q", "k", "v", "key"}) exe.buffer(name)->write(in.at(name).data(), in.at(name).bytes());
  exe.run();
  HostTensor got = HostTensor::zeros(KILN_F32, s);
  exe.buffer("y")->read(got.data(), got.bytes());
  const HostTensor want = run_reference(g, in).at("y");
  int zeros = 0;
  for (size_t i = 0; i < got.f32.size(); ++i) {
    ASSERT_NEAR(got.f32[i], want.f32[i], 1e-5f) << "element " << i;
    zeros += want.f32[i] == 0.0f ? 1 : 0;
  }
  // A query row's first probability is 1: where the key drops it, row 0 is
  // all zeros, so the comparison sees the mask (the chain without it would
  // differ there).
  EXPECT_GT(zeros, 0) << "this key drops no row-0 probability; the test would not see the mask";
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
