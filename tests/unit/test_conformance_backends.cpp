// The one op-correctness harness (graph/conformance), instantiated per
// backend as IREE's hal/cts instantiates one suite per driver: the cpu
// plugin with its AVX-512, AVX2+FMA and baseline kernels, OpenCL
// (PoCL in CI) with the code it generates for this device, with the GPU
// variants and with CLBlast's GEMM, and Vulkan (lavapipe in CI). A backend
// or device this machine lacks is skipped, saying why.
//
// Every graph runs twice and must give the same bits. PoCL spends about half
// a second building each program, so the OpenCL instances put all op cases
// into one graph (one compile, not one per case); Vulkan batches 64.
#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/registry.h"
#include "graph/conformance/runner.h"
#include "trainer/model/gpt.h"
#include "trainer/model/step_graphs.h"

namespace kiln::conformance {
namespace {

struct Instance {
  std::string label;    // the test's name
  std::string backend;  // what Registry::open gets
  std::vector<std::string> hints;
  size_t batch = 1;
  std::vector<std::string> filters;  // empty: the whole suite
  int threads = 2;                   // host-CPU backends: 2, so the parallel paths run
};

// For test names and messages: the label, not the struct's bytes.
void PrintTo(const Instance& inst, std::ostream* os) { *os << inst.label; }

// One training step of a small GPT (forward, backward, gradient
// accumulation) as one OpenCL program: what the op cases cannot show, the
// kernels and the fusions of a whole layer working together.
void add_opencl_cases(Suite& suite) {
  trainer::GptConfig cfg;
  cfg.num_layers = 2;
  cfg.hidden_size = 32;
  cfg.num_attention_heads = 2;
  cfg.vocab_size = 61;
  cfg.seq_length = 9;
  graph::Graph g = trainer::build_train_step(cfg, 3);
  graph::TensorMap in;
  std::mt19937 gen(11);
  std::normal_distribution<float> normal(0.0f, 0.2f);
  for (const graph::Port& p : g.inputs()) {
    const graph::Value& v = g.value(p.value);
    graph::HostTensor t = graph::HostTensor::zeros(v.dtype, v.shape);
    if (v.dtype == KILN_I32)
      for (auto& x : t.i32) x = static_cast<int32_t>(gen() % static_cast<uint32_t>(cfg.vocab_size));
    else
      for (auto& x : t.f32) x = normal(gen) + (p.name.find("layernorm.weight") != std::string::npos ? 1.0f : 0.0f);
    in[p.name] = t;
  }
  suite.add_case("gpt_train_step", std::move(g), kTolGemm, std::move(in));
}

class BackendConformance : public ::testing::TestWithParam<Instance> {
 protected:
  static void SetUpTestSuite() {
    static const bool registered = [] {
      register_backend_cases("opencl", add_opencl_cases);
      return true;
    }();
    (void)registered;
  }
};

TEST_P(BackendConformance, PassesEveryCase) {
  const Instance& inst = GetParam();
  // Hints for the device open (cpu: the kernel set) and for compiles
  // (OpenCL: the GPU code), so they hold for the whole run.
  const ScopedHints hints(inst.hints);
  std::unique_ptr<Device> device;
  try {
    device = Registry::instance().open(inst.backend, 0, inst.threads);
  } catch (const Error& e) {
    GTEST_SKIP() << "no " << inst.backend << " device: " << e.what();
  }
  Options options;
  options.out = nullptr;
  options.repeat = true;
  options.batch = inst.batch;
  options.filters = inst.filters;
  const Suite suite = Suite::for_backend(inst.backend);  // outlives the report, which points into it
  const Report report = run(*device, suite, options);
  ASSERT_FALSE(report.cases.empty());
  for (const CaseResult& r : report.cases)
    EXPECT_NE(r.status, Status::Fail) << inst.label << ": " << r.c->name << ": " << r.detail;
  // Ops another backend lacks run on the cpu fallback in real graphs; the
  // cpu backend itself lacks none.
  if (inst.backend == "cpu") {
    EXPECT_EQ(report.unsupported(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Backends, BackendConformance,
    ::testing::Values(
        // Each of the cpu plugin's kernel sets (a path this CPU lacks is skipped).
        Instance{"cpu_avx512", "cpu", {"KILN_CPU_ISA=avx512"}, 1, {}},
        Instance{"cpu_avx2", "cpu", {"KILN_CPU_ISA=avx2"}, 1, {}},
        Instance{"cpu_baseline", "cpu", {"KILN_CPU_ISA=baseline"}, 1, {}},
        // The code generated for this device (on a CPU device, kiln's GEMM kernel).
        Instance{"opencl", "opencl", {}, 0, {}},
        // A work group per row and tree reductions in local memory: the code a
        // GPU gets, generated for this device on request so CPU-only CI checks it.
        Instance{"opencl_gpu_codegen",
                 "opencl",
                 {"KILN_OPENCL_GPU_CODEGEN=1"},
                 0,
                 {"layernorm", "softmax", "cross_entropy", "embedding"}},
        // CLBlast's GEMM, which auto keeps for GPUs; a CPU device runs kiln's own.
        Instance{"opencl_clblast", "opencl", {"KILN_OPENCL_GEMM=clblast"}, 0, {"matmul", "gpt_train_step"}},
        Instance{"vulkan", "vulkan", {}, 64, {}}),
    [](const auto& info) { return info.param.label; });

}  // namespace
}  // namespace kiln::conformance
