// The Vulkan plugin's executable bytes on the first Vulkan device (lavapipe
// in CI): the VkPipelineCache data they carry is checked before it reaches
// the driver. A blob from another device or driver, or a damaged one, is
// dropped with a warning and the pipelines are rebuilt; the graph still
// computes the right thing. Executables from another compiler version or
// junk are refused. Skipped, saying why, without a Vulkan device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/error.h"
#include "core/registry.h"
#include "graph/executor.h"
#include "graph/graph.h"
#include "graph/memory_plan.h"
#include "graph/passes.h"
#include "graph/reference/reference.h"
#include "graph/serialize.h"
#include "shared_device.h"

namespace kiln::graph {
namespace {

Device* device(std::string* why = nullptr) { return test::shared_device("vulkan", why); }

// Where the parts of an executable are (backends/vulkan/executable.h).
struct ExeLayout {
  size_t version_at = 0, version_len = 0;
  size_t cache_at = 0, cache_len = 0;  // the VkPipelineCache data, after its checksum
};

ExeLayout parse_executable(const std::vector<uint8_t>& e) {
  ExeLayout l;
  auto u64 = [&](size_t p) {
    uint64_t v;
    std::memcpy(&v, e.data() + p, 8);
    return static_cast<size_t>(v);
  };
  size_t at = 12;  // magic, format
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
    if (tag == 3) l.cache_at = at + 12 + 8, l.cache_len = len - 8;
    at += 12 + len;
  }
  return l;
}

Graph bias_gelu_matmul() {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {5, 40}), b = g.input("b", KILN_F32, {40});
  ValueId w = g.input("w", KILN_F32, {40, 7});
  g.output("y", g.matmul(g.gelu(g.add(x, b)), w, false, false));
  return g;
}

class VulkanExecutable : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (device(&why) == nullptr) GTEST_SKIP() << "no Vulkan device: " << why;
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

  // Loads `exe`; returns the error code and what the plugin printed.
  int32_t load(const std::vector<uint8_t>& exe, kiln_loaded_executable** loaded, std::string* stderr_text) {
    const kiln_plugin_api* api = device()->plugin().raw_table();
    kiln_load_args l{};
    l.struct_size = sizeof(l);
    l.device = device()->handle();
    l.executable = exe.data();
    l.executable_size = exe.size();
    testing::internal::CaptureStderr();
    kiln_error* err = api->load(&l);
    *stderr_text = testing::internal::GetCapturedStderr();
    int32_t code = err ? api->error_code(err) : KILN_OK;
    if (err) api->error_destroy(err);
    *loaded = l.loaded;
    return code;
  }

  // Runs the loaded graph against the reference interpreter.
  void expect_correct(const Graph& graph, kiln_loaded_executable* loaded) {
    std::mt19937 gen(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    TensorMap in;
    for (auto [name, shape] : std::vector<std::pair<std::string, Shape>>{{"x", {5, 40}}, {"b", {40}}, {"w", {40, 7}}}) {
      HostTensor t = HostTensor::zeros(KILN_F32, shape);
      for (float& v : t.f32) v = u(gen);
      in[name] = t;
    }
    TensorMap ref = run_reference(graph, in);
    Graph g = eliminate_dead_code(graph);
    MemoryPlan plan = plan_memory(g);
    std::vector<std::unique_ptr<DeviceBuffer>> bufs;
    std::vector<kiln_buffer*> slots;
    for (size_t s = 0; s < plan.slot_ports.size(); ++s) {
      bufs.push_back(std::make_unique<DeviceBuffer>(*device(), std::max<uint64_t>(plan.slot_bytes[s], 64)));
      slots.push_back(bufs.back()->handle());
      if (s > 0 && in.count(plan.slot_ports[s]))
        bufs.back()->write(in.at(plan.slot_ports[s]).data(), in.at(plan.slot_ports[s]).bytes());
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
    HostTensor got = HostTensor::zeros(KILN_F32, {5, 7});
    bufs[y_slot]->read(got.data(), got.bytes());
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < got.f32.size(); ++i) {
      const double d = static_cast<double>(ref.at("y").f32[i]) - got.f32[i];
      num += d * d;
      den += static_cast<double>(ref.at("y").f32[i]) * ref.at("y").f32[i];
    }
    EXPECT_LE(num / den, 1e-6);
  }
};

TEST_F(VulkanExecutable, IntactPipelineCacheIsUsedSilently) {
  Graph g = bias_gelu_matmul();
  std::vector<uint8_t> exe = compile_bytes(g);
  ExeLayout l = parse_executable(exe);
  ASSERT_GE(l.cache_len, 32u) << "the executable carries no pipeline cache header";
  kiln_loaded_executable* loaded = nullptr;
  std::string err;
  ASSERT_EQ(load(exe, &loaded, &err), KILN_OK);
  EXPECT_EQ(err.find("pipeline cache"), std::string::npos) << err;
  expect_correct(g, loaded);
  device()->plugin().raw_table()->loaded_free(device()->handle(), loaded);
}

// Each damage is caught by the plugin's own checks, so the blob never
// reaches vkCreatePipelineCache: another vendor id, another
// pipelineCacheUUID, a bad header size, and a flipped byte in the data.
TEST_F(VulkanExecutable, ForeignOrCorruptPipelineCacheIsDroppedAndRebuilt) {
  Graph g = bias_gelu_matmul();
  const std::vector<uint8_t> good = compile_bytes(g);
  const ExeLayout l = parse_executable(good);
  ASSERT_GE(l.cache_len, 32u);
  struct Damage {
    const char* what;
    long at;  // byte offset inside the cache data (negative: the checksum before it)
    const char* expect;
  };
  std::vector<Damage> damages = {{"vendor id", 8, "another vendor or device"},
                                 {"pipelineCacheUUID", 20, "pipelineCacheUUID"},
                                 {"header size", 1, "header size"},
                                 {"stored checksum", -3, "checksum"}};
  // lavapipe's cache may be the bare 32-byte header; where it holds data,
  // damage that too.
  if (l.cache_len > 32) damages.push_back({"data", static_cast<long>(l.cache_len) - 1, "checksum"});
  for (const Damage& d : damages) {
    std::vector<uint8_t> exe = good;
    exe[static_cast<size_t>(static_cast<long>(l.cache_at) + d.at)] ^= 0x5A;
    kiln_loaded_executable* loaded = nullptr;
    std::string err;
    ASSERT_EQ(load(exe, &loaded, &err), KILN_OK) << d.what;
    EXPECT_NE(err.find("dropping the executable's pipeline cache"), std::string::npos) << d.what << ": " << err;
    EXPECT_NE(err.find(d.expect), std::string::npos) << d.what << ": " << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << "one line: " << err;
    expect_correct(g, loaded);
    device()->plugin().raw_table()->loaded_free(device()->handle(), loaded);
  }
  // A cache section cut to nothing: dropped too.
  std::vector<uint8_t> exe(good.begin(), good.begin() + static_cast<long>(l.cache_at - 8 - 12));
  const uint32_t tag = 3;
  const uint64_t len = 8, checksum = 0;
  exe.insert(exe.end(), reinterpret_cast<const uint8_t*>(&tag), reinterpret_cast<const uint8_t*>(&tag) + 4);
  exe.insert(exe.end(), reinterpret_cast<const uint8_t*>(&len), reinterpret_cast<const uint8_t*>(&len) + 8);
  exe.insert(exe.end(), reinterpret_cast<const uint8_t*>(&checksum), reinterpret_cast<const uint8_t*>(&checksum) + 8);
  exe.insert(exe.end(), good.begin() + static_cast<long>(l.cache_at + l.cache_len), good.end());
  kiln_loaded_executable* loaded = nullptr;
  std::string err;
  ASSERT_EQ(load(exe, &loaded, &err), KILN_OK);
  EXPECT_NE(err.find("shorter than its header"), std::string::npos) << err;
  expect_correct(g, loaded);
  device()->plugin().raw_table()->loaded_free(device()->handle(), loaded);
}

TEST_F(VulkanExecutable, LoadRefusesOtherCompilerVersionsAndJunk) {
  std::vector<uint8_t> exe = compile_bytes(bias_gelu_matmul());
  ExeLayout l = parse_executable(exe);
  const std::string version(reinterpret_cast<const char*>(exe.data() + l.version_at), l.version_len);
  EXPECT_EQ(version, device()->plugin().raw_table()->compiler_version());
  std::string err;
  kiln_loaded_executable* loaded = nullptr;
  std::vector<uint8_t> truncated(exe.begin(), exe.begin() + static_cast<long>(exe.size() / 2));
  EXPECT_EQ(load(truncated, &loaded, &err), KILN_ERR_CORRUPT);
  exe[l.version_at + l.version_len - 1] ^= 1;
  EXPECT_EQ(load(exe, &loaded, &err), KILN_ERR_CORRUPT);
  std::vector<uint8_t> junk = {'n', 'o', 't', ' ', 'a', 'n', ' ', 'e', 'x', 'e'};
  EXPECT_EQ(load(junk, &loaded, &err), KILN_ERR_CORRUPT);
}

// The tensor-parallel ops have no Vulkan lowering: op_supported says so (the
// host then runs them on the cpu fallback), and a compile that gets one
// anyway refuses it as unsupported rather than as a malformed graph.
TEST_F(VulkanExecutable, TensorParallelOpsAreUnsupported) {
  const kiln_plugin_api* api = device()->plugin().raw_table();
  for (kiln_op op : {KILN_OP_ALL_REDUCE, KILN_OP_ROW_MAX, KILN_OP_CROSS_ENTROPY_SHARD, KILN_OP_CROSS_ENTROPY_SHARD_GRAD,
                     KILN_OP_CROSS_ENTROPY_FROM_SUMS, KILN_OP_CROSS_ENTROPY_FROM_SUMS_GRAD}) {
    kiln_op_supported_args a{};
    a.struct_size = sizeof(a);
    a.op = op;
    ASSERT_EQ(api->op_supported(&a), nullptr);
    EXPECT_EQ(a.supported, 0) << op_name(op);
  }
  Graph g;
  ValueId l = g.input("l", KILN_F32, {3, 5}), t = g.input("t", KILN_I32, {3});
  g.output("sums", g.cross_entropy_shard(l, t, g.row_max(l)));
  MemoryPlan plan = plan_memory(g);
  std::vector<uint8_t> ir = serialize(g, plan);
  kiln_compile_args c{};
  c.struct_size = sizeof(c);
  c.ir = ir.data();
  c.ir_size = ir.size();
  kiln_error* err = api->compile(&c);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(api->error_code(err), KILN_ERR_UNSUPPORTED) << api->error_message(err);
  api->error_destroy(err);
}

// A 168 MB table, above lavapipe's 128 MiB maxStorageBufferRange (GPT-2's
// token embedding is 154 MB): the gather, its scatter-add gradient and a
// GEMM against the transposed table (the LM head) bind it in windows.
// Expected values are computed here, in double, from the table's pattern.
TEST_F(VulkanExecutable, TensorsAboveTheStorageBufferRange) {
  if (device()->properties().memory_bytes < (1ull << 30)) GTEST_SKIP() << "device has under 1 GiB";
  const int64_t V = 41000, C = 1024, N = 4;
  auto value = [&](int64_t v, int64_t c) { return static_cast<float>((v * 7 + c * 3) % 101) / 101.0f - 0.5f; };
  Graph g;
  ValueId table = g.input("table", KILN_F32, {V, C});
  ValueId ids = g.input("ids", KILN_I32, {N});
  ValueId dy = g.input("dy", KILN_F32, {N, C});
  ValueId y = g.embedding(table, ids);
  g.output("y", y);
  g.output("logits", g.matmul(y, table, false, true));
  g.output("dtable", g.embedding_grad(dy, ids, V));
  Executable exe(*device(), g);
  std::vector<float> host(static_cast<size_t>(V * C));
  for (int64_t v = 0; v < V; ++v)
    for (int64_t c = 0; c < C; ++c) host[static_cast<size_t>(v * C + c)] = value(v, c);
  exe.buffer("table")->write(host.data(), host.size() * 4);
  const std::vector<int32_t> id = {40999, 0, 20000, 40999};
  exe.buffer("ids")->write(id.data(), id.size() * 4);
  std::vector<float> d(static_cast<size_t>(N * C));
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<float>(i % 13) - 6.0f;
  exe.buffer("dy")->write(d.data(), d.size() * 4);
  exe.run();

  std::vector<float> got_y(static_cast<size_t>(N * C));
  exe.buffer("y")->read(got_y.data(), got_y.size() * 4);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t c = 0; c < C; ++c)
      ASSERT_EQ(got_y[static_cast<size_t>(i * C + c)], value(id[static_cast<size_t>(i)], c)) << i << "," << c;

  std::vector<float> logits(static_cast<size_t>(N * V));
  exe.buffer("logits")->read(logits.data(), logits.size() * 4);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{20000}, int64_t{33333}, V - 1}) {
      double want = 0.0;
      for (int64_t c = 0; c < C; ++c) want += static_cast<double>(value(id[static_cast<size_t>(i)], c)) * value(v, c);
      EXPECT_NEAR(logits[static_cast<size_t>(i * V + v)], want, 1e-3 * (1.0 + std::abs(want))) << i << "," << v;
    }

  exe.buffer("dtable")->read(host.data(), host.size() * 4);
  for (int64_t v = 0; v < V; ++v)
    for (int64_t c = 0; c < C; ++c) {
      double want = 0.0;
      for (int64_t i = 0; i < N; ++i)
        if (id[static_cast<size_t>(i)] == v) want += d[static_cast<size_t>(i * C + c)];
      ASSERT_EQ(host[static_cast<size_t>(v * C + c)], static_cast<float>(want)) << v << "," << c;
    }
}

}  // namespace
}  // namespace kiln::graph
