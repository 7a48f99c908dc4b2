// GEMM throughput of a backend plugin through the kiln ABI, at the shapes
// GPT training calls: each case is a one-node graph compiled and loaded by
// the plugin, so the figure includes whatever the plugin does around the
// GEMM itself (for OpenCL: argument setup, CLBlast's padding/transposes; for
// Vulkan: descriptor updates, command-buffer submission).
//
//   bench_backend_gemm [--backend=opencl] [--device=0] [--rounds=N] [--filter=TEXT] [--set=gpu]
//
// e.g. --backend=vulkan --filter=default --rounds=2 on lavapipe (slow: CI
// figures are for the record only). --set=gpu swaps in the shapes of GPT-2
// 124M at seq 1024 x micro-batch 8 (8192 tokens per GEMM), the shapes a
// GPU is measured at (bench/gpu/run.sh; bench/gpu/torch_gemm.py times
// cuBLAS at the same ones).
//
// Prints a Markdown table (what docs/OPENCL.md and docs/VULKAN.md quote): best-of-N GFLOP/s
// per shape. A first call per shape runs untimed (it compiles kernels: on
// PoCL, CLBlast's first GEMM of a kind takes seconds). Every result is
// checked against the reference interpreter before anything is timed.
//
// A linear layer with T tokens, input width K and output width N makes
// three GEMMs per step: fwd y = x W^T (m=T n=N k=K, trans_b), dgrad
// dx = dy W (m=T n=K k=N), wgrad dW = dy^T x (m=N n=K k=T, trans_a).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/error.h"
#include "core/registry.h"
#include "graph/executor.h"
#include "graph/graph.h"
#include "graph/reference/reference.h"

namespace {

using kiln::graph::Graph;
using kiln::graph::HostTensor;
using kiln::graph::ValueId;

struct Case {
  std::string what;
  int64_t m, n, k;
  bool ta, tb;
};

std::vector<Case> cases(bool gpu) {
  std::vector<Case> out;
  auto linear = [&](const std::string& name, int64_t t, int64_t k, int64_t n) {
    out.push_back({name + " fwd", t, n, k, false, true});
    out.push_back({name + " dgrad", t, k, n, false, false});
    out.push_back({name + " wgrad", n, k, t, true, false});
  };
  if (gpu) {  // GPT-2 124M, seq 1024 x micro-batch 8: every linear layer.
    linear("124M qkv T=8192 K=768 N=2304", 8192, 768, 2304);
    linear("124M attn-proj T=8192 K=768 N=768", 8192, 768, 768);
    linear("124M mlp-up T=8192 K=768 N=3072", 8192, 768, 3072);
    linear("124M mlp-down T=8192 K=3072 N=768", 8192, 3072, 768);
    linear("124M lm-head T=8192 K=768 N=50304", 8192, 768, 50304);
    return out;
  }
  // GPT-2 124M, 256 tokens per micro-batch (4 x 64): MLP up and LM head.
  linear("124M mlp-up T=256 K=768 N=3072", 256, 768, 3072);
  linear("124M lm-head T=256 K=768 N=50304", 256, 768, 50304);
  // The small config (6 x 384, seq 256, micro-batch 4): T = 1024.
  linear("small qkv T=1024 K=384 N=1152", 1024, 384, 1152);
  linear("small mlp-up T=1024 K=384 N=1536", 1024, 384, 1536);
  linear("small lm-head T=1024 K=384 N=50304", 1024, 384, 50304);
  // The default job (4 x 128, seq 64, micro-batch 32): T = 2048.
  linear("default qkv T=2048 K=128 N=384", 2048, 128, 384);
  linear("default mlp-up T=2048 K=128 N=512", 2048, 128, 512);
  return out;
}

// Runs `c` once on the device and once on the reference; NMSE of the result.
double verify(kiln::Device& dev, const Case& c) {
  // A smaller stand-in with the same layout (the reference is slow), still
  // several of the largest tiles wide with ragged edges in every dimension,
  // and deep enough that a weight gradient takes a GPU plugin's split-K path.
  const int64_t m = std::min<int64_t>(c.m, 267), n = std::min<int64_t>(c.n, 301), k = std::min<int64_t>(c.k, 1100);
  Graph g;
  ValueId a = g.input("a", KILN_F32, c.ta ? kiln::graph::Shape{k, m} : kiln::graph::Shape{m, k});
  ValueId b = g.input("b", KILN_F32, c.tb ? kiln::graph::Shape{n, k} : kiln::graph::Shape{k, n});
  g.output("y", g.matmul(a, b, c.ta, c.tb));
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  kiln::graph::TensorMap in;
  for (const char* name : {"a", "b"}) {
    HostTensor t = HostTensor::zeros(KILN_F32, g.shape(name[0] == 'a' ? a : b));
    for (float& x : t.f32) x = u(gen);
    in[name] = t;
  }
  kiln::graph::Executable exe(dev, g);
  for (const char* name : {"a", "b"}) exe.buffer(name)->write(in[name].data(), in[name].bytes());
  // Poison the output: an element the kernel never writes stays NaN and
  // fails the check.
  const std::vector<float> poison(static_cast<size_t>(m * n), std::nanf(""));
  exe.buffer("y")->write(poison.data(), poison.size() * 4);
  exe.run();
  HostTensor got = HostTensor::zeros(KILN_F32, {m, n});
  exe.buffer("y")->read(got.data(), got.bytes());
  const HostTensor want = kiln::graph::run_reference(g, in).at("y");
  double num = 0, den = 0;
  for (size_t i = 0; i < got.f32.size(); ++i) {
    const double d = static_cast<double>(want.f32[i]) - got.f32[i];
    num += d * d;
    den += static_cast<double>(want.f32[i]) * want.f32[i];
  }
  return den > 0 ? num / den : num;
}

double gflops(kiln::Device& dev, const Case& c, int rounds) {
  Graph g;
  ValueId a = g.input("a", KILN_F32, c.ta ? kiln::graph::Shape{c.k, c.m} : kiln::graph::Shape{c.m, c.k});
  ValueId b = g.input("b", KILN_F32, c.tb ? kiln::graph::Shape{c.n, c.k} : kiln::graph::Shape{c.k, c.n});
  g.output("y", g.matmul(a, b, c.ta, c.tb));
  kiln::graph::Executable exe(dev, g);
  // Random operands: constant or zero data can run faster than real data.
  std::vector<float> data(static_cast<size_t>(std::max(c.m * c.k, c.k * c.n)));
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& x : data) x = u(gen);
  exe.buffer("a")->write(data.data(), static_cast<uint64_t>(c.m * c.k) * 4);
  exe.buffer("b")->write(data.data(), static_cast<uint64_t>(c.k * c.n) * 4);
  exe.run();  // compiles the library's kernels, untimed
  dev.synchronize();
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    exe.run();
    dev.synchronize();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * static_cast<double>(c.m) * static_cast<double>(c.n) * static_cast<double>(c.k) / best / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = "opencl", filter;
  bool gpu_set = false;
  int device = 0, rounds = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--backend=", 0) == 0)
      backend = a.substr(10);
    else if (a.rfind("--device=", 0) == 0)
      device = std::atoi(a.c_str() + 9);
    else if (a.rfind("--rounds=", 0) == 0)
      rounds = std::max(1, std::atoi(a.c_str() + 9));
    else if (a.rfind("--filter=", 0) == 0)
      filter = a.substr(9);
    else if (a == "--set=gpu")
      gpu_set = true;
    else {
      std::fprintf(stderr,
                   "usage: bench_backend_gemm [--backend=opencl] [--device=0] [--rounds=N] [--filter=TEXT] "
                   "[--set=gpu]\n");
      return 2;
    }
  }
  try {
    auto dev = kiln::Registry::instance().open(backend, device);
    std::printf("backend %s, device %d: %s\n\n", backend.c_str(), device, dev->properties().name);
    std::printf("| shape | layout | m x n x k | GFLOP/s |\n|---|---|---|---|\n");
    for (const Case& c : cases(gpu_set)) {
      if (!filter.empty() && c.what.find(filter) == std::string::npos) continue;
      const double e = verify(*dev, c);
      if (!(e <= 1e-6)) {
        std::fprintf(stderr, "%s: wrong result (NMSE %.3g); not timing\n", c.what.c_str(), e);
        return 1;
      }
      const double g = gflops(*dev, c, rounds);
      const size_t sp = c.what.rfind(' ');
      std::printf("| %s | %s | %lld x %lld x %lld | %.1f |\n", c.what.substr(0, sp).c_str(),
                  c.what.substr(sp + 1).c_str(), static_cast<long long>(c.m), static_cast<long long>(c.n),
                  static_cast<long long>(c.k), g);
      std::fflush(stdout);
    }
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "bench_backend_gemm: %s\n", e.what());
    return 1;
  }
  return 0;
}
