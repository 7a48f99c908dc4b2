// The cpu plugin's own behaviour, on both kernel sets (AVX2+FMA when the CPU
// has it, and the baseline build): its ABI edges (corrupt or foreign
// executables, slot sizes, compiler versions), its device properties, and
// hand-built IR it must refuse. The numerics of every op are checked by the
// conformance suite (test_conformance_backends.cpp), on both kernel sets.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/error.h"
#include "core/registry.h"
#include "cpu_isa_device.h"
#include "graph/conformance/runner.h"
#include "graph/decompose.h"
#include "graph/graph.h"
#include "graph/memory_plan.h"
#include "graph/serialize.h"
#include "isa.h"

namespace kiln::graph {
namespace {

Device* device(const std::string& isa) { return test::cpu_isa_device(isa); }

class CpuOps : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (device(GetParam()) == nullptr) GTEST_SKIP() << "this CPU has no " << GetParam() << " path";
  }
  Device& dev() { return *device(GetParam()); }
};

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
  // The driver field names the compiler, then the ISA path and GEMM policy
  // the device runs ("cpu-4 avx512+bf16 gemm=measure").
  const std::string driver = p.driver_version, version = dev().plugin().raw_table()->compiler_version();
  EXPECT_EQ(driver.rfind(version + " " + (GetParam() == std::string("base") ? "baseline" : ""), 0), 0u) << driver;
  EXPECT_NE(driver.find(" gemm="), std::string::npos) << driver;
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
  const kiln_plugin_api* api = device("baseline")->plugin().raw_table();
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
  const kiln_plugin_api* api = device("baseline")->plugin().raw_table();
  for (int op = KILN_OP_ALL_REDUCE; op < KILN_OP_COUNT_; ++op) {
    kiln_op_supported_args a{};
    a.struct_size = sizeof(a);
    a.op = op;
    ASSERT_EQ(api->op_supported(&a), nullptr);
    // Neither a host collective nor SQUARED_RELU's pair, FP8_GRAD_CAST and
    // the ATTENTION ops (composites with no cpu kernel: the host expands
    // them, graph/decompose.h) is in the cpu's list; every other op is, the
    // composites it has fused kernels for (GELU, SILU, CLAMP, ...) included.
    const bool expanded = op == KILN_OP_SQUARED_RELU || op == KILN_OP_SQUARED_RELU_GRAD ||
                          op == KILN_OP_FP8_GRAD_CAST || op == KILN_OP_ATTENTION || op == KILN_OP_ATTENTION_GRAD ||
                          op == KILN_OP_ATTENTION_DROPOUT || op == KILN_OP_ATTENTION_DROPOUT_GRAD;
    ASSERT_TRUE(!expanded || is_composite(static_cast<kiln_op>(op)));
    const bool listed = !kiln_op_has(static_cast<kiln_op>(op), KILN_OPP_HOST_COLLECTIVE) && !expanded;
    EXPECT_EQ(a.supported, listed ? 1 : 0) << op_name(static_cast<kiln_op>(op));
  }
  IrWriter w;
  uint32_t x = w.value(KILN_F32, {4}, 1, 0), y = w.value(KILN_F32, {4}, 2, 0);
  w.node(KILN_OP_ALL_REDUCE, {x}, {y}, {0, KILN_GROUP_TP});
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
  Device& d = *device("baseline");  // every x86-64 has it
  const std::string version = d.plugin().raw_table()->compiler_version();
  // The version string follows magic (8), format (4) and its u64 length (8):
  // the plugin kit's container (kiln/plugin_kit.hpp).
  ASSERT_EQ(std::string(exe.begin() + 20, exe.begin() + 20 + static_cast<long>(version.size())), version);
  exe[20 + version.size() - 1] ^= 1;
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
  Device& d = *device("baseline");  // every x86-64 has it
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

// An executable whose GEMM was chosen from oneDNN on this CPU's highest path
// needs that path: a device held to AVX2 (KILN_CPU_ISA, as a machine without
// AVX-512 or AMX would be) refuses it at load, in one line, before running
// anything. Through the compile cache the path is in the device fingerprint,
// so the host recompiles instead of ever loading it there.
TEST(CpuPlugin, RefusesAnExecutableThatNeedsAHigherPath) {
  const kiln::cpu::CpuIsa top = kiln::cpu::detected_isa();
  if (static_cast<int>(top) <= static_cast<int>(kiln::cpu::CpuIsa::kAvx2))
    GTEST_SKIP() << "this CPU's highest path is " << kiln::cpu::isa_name(top) << ": nothing above avx2 to refuse";
  Graph g;
  const ValueId a = g.input("a", KILN_BF16, {64, 96}), b = g.input("b", KILN_BF16, {96, 80});
  g.output("y", g.matmul(a, b));
  const std::vector<uint8_t> ir = serialize(g, plan_memory(g));
  Registry& registry = Registry::instance();
  std::unique_ptr<Device> high, low;
  std::vector<uint8_t> exe;
  {
    const conformance::ScopedHints env(
        {std::string("KILN_CPU_ISA=") + kiln::cpu::isa_name(top), "KILN_CPU_GEMM=library"});
    high = registry.open("cpu", 0, 2);
    const kiln_plugin_api* api = high->plugin().raw_table();
    kiln_compile_args c{};
    c.struct_size = sizeof(c);
    c.ir = ir.data();
    c.ir_size = ir.size();
    check(high->plugin(), api->compile(&c), "compile");
    exe.assign(c.executable, c.executable + c.executable_size);
    api->executable_bytes_free(c.executable);
  }
  {
    const conformance::ScopedHints env({"KILN_CPU_ISA=avx2"});
    low = registry.open("cpu", 0, 2);
  }
  const kiln_plugin_api* api = low->plugin().raw_table();
  kiln_load_args l{};
  l.struct_size = sizeof(l);
  l.device = low->handle();
  l.executable = exe.data();
  l.executable_size = exe.size();
  kiln_error* err = api->load(&l);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(api->error_code(err), KILN_ERR_UNSUPPORTED);
  const std::string message = api->error_message(err);
  api->error_destroy(err);
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_NE(message.find(std::string("needs the ") + kiln::cpu::isa_name(top) + " path and this device runs avx2"),
            std::string::npos)
      << message;
  EXPECT_NE(high->properties().fingerprint, std::string(low->properties().fingerprint));
  // The device it was compiled for loads it.
  l.device = high->handle();
  check(high->plugin(), api->load(&l), "load");
  api->loaded_free(high->handle(), l.loaded);
}

// Each of kiln's kernel sets: amx runs the avx512 set.
INSTANTIATE_TEST_SUITE_P(Isa, CpuOps, ::testing::Values("avx512", "avx2", "baseline"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace kiln::graph
