// GEMM throughput of a backend plugin through the kiln ABI, at the shapes
// GPT training calls: each case is a one-node graph compiled and loaded by
// the plugin, so the figure includes whatever the plugin does around the
// GEMM itself (for OpenCL: argument setup, CLBlast's padding/transposes; for
// Vulkan: descriptor updates, command-buffer submission).
//
//   bench_backend_gemm [--backend=opencl] [--device=0] [--rounds=N] [--filter=TEXT] [--set=gpu|test]
//                      [--dtype=f32|bf16|f16] [--variants=NAME=V1,V2,...]
//
// e.g. --backend=vulkan --filter=default --rounds=2 on lavapipe (slow: CI
// figures are for the record only). --set=gpu swaps in the shapes of GPT-2
// 124M at seq 1024 x micro-batch 8 (8192 tokens per GEMM), the shapes a
// GPU is measured at (bench/gpu/run.sh; bench/gpu/torch_gemm.py times
// cuBLAS at the same ones). --set=test: every GEMM of the hidden-64 test
// model (bench/first_iteration.sh), then a ladder of cubes in each layout.
// --variants compiles each shape once per value of the environment
// variable NAME (a plugin's compile-time choice, e.g.
// KILN_OPENCL_GEMM=clblast,kiln) and times them round-robin, a column each,
// so that load on a shared machine favours none of them.
//
// --dtype: the operands' and the result's dtype (a 16-bit MATMUL sums in
// f32 and rounds once, as the op table's type rules say), the GEMMs of a
// --bf16 or --fp16 step.
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

namespace {

using kiln::graph::Graph;
using kiln::graph::HostTensor;
using kiln::graph::ValueId;

struct Case {
  std::string what;
  int64_t m, n, k;
  bool ta, tb;
  int64_t batch = 1;
};

enum class Set { kDefault, kGpu, kTest };

// The hidden-64 test model (2 layers, 4 heads, seq 32, micro-batch 2, vocab
// 512): 64 tokens, the attention products of 8 (sample, head) pairs.
void test_model(std::vector<Case>& out) {
  auto linear = [&](const std::string& name, int64_t t, int64_t k, int64_t n) {
    out.push_back({name + " fwd", t, n, k, false, true});
    out.push_back({name + " dgrad", t, k, n, false, false});
    out.push_back({name + " wgrad", n, k, t, true, false});
  };
  out.push_back({"test attention q.k^T nt", 32, 32, 16, false, true, 8});
  out.push_back({"test attention p.v nn", 32, 16, 32, false, false, 8});
  out.push_back({"test attention p^T.dy tn", 32, 16, 32, true, false, 8});
  linear("test qkv T=64 K=64 N=192", 64, 64, 192);
  linear("test attn-proj T=64 K=64 N=64", 64, 64, 64);
  linear("test mlp-up T=64 K=64 N=256", 64, 64, 256);
  linear("test mlp-down T=64 K=256 N=64", 64, 256, 64);
  linear("test lm-head T=64 K=64 N=512", 64, 64, 512);
  for (int64_t s : {96, 128, 160, 192, 256, 320, 384, 512}) {
    const std::string n = "cube " + std::to_string(s);
    out.push_back({n + " nn", s, s, s, false, false});
    out.push_back({n + " nt", s, s, s, false, true});
    out.push_back({n + " tn", s, s, s, true, false});
  }
}

std::vector<Case> cases(Set set) {
  std::vector<Case> out;
  auto linear = [&](const std::string& name, int64_t t, int64_t k, int64_t n) {
    out.push_back({name + " fwd", t, n, k, false, true});
    out.push_back({name + " dgrad", t, k, n, false, false});
    out.push_back({name + " wgrad", n, k, t, true, false});
  };
  if (set == Set::kTest) {
    test_model(out);
    return out;
  }
  if (set == Set::kGpu) {  // GPT-2 124M, seq 1024 x micro-batch 8: every linear layer.
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

// op(X) is rows x cols; X as stored, with `batch` leading when above 1.
kiln::graph::Shape shape_of(int64_t batch, bool trans, int64_t rows, int64_t cols) {
  kiln::graph::Shape s = trans ? kiln::graph::Shape{cols, rows} : kiln::graph::Shape{rows, cols};
  if (batch > 1) s.insert(s.begin(), batch);
  return s;
}

// Runs `c` once on the device and once on the reference; NMSE of the result.
double verify(kiln::Device& dev, const Case& c, kiln_dtype dtype) {
  // A smaller stand-in with the same layout (the reference is slow), still
  // several of the largest tiles wide with ragged edges in every dimension,
  // and deep enough that a weight gradient takes a GPU plugin's split-K path.
  const int64_t m = std::min<int64_t>(c.m, 267), n = std::min<int64_t>(c.n, 301), k = std::min<int64_t>(c.k, 1100);
  const int64_t batch = std::min<int64_t>(c.batch, 3);
  Graph g;
  ValueId a = g.input("a", dtype, shape_of(batch, c.ta, m, k));
  ValueId b = g.input("b", dtype, shape_of(batch, c.tb, k, n));
  const ValueId y = g.matmul(a, b, c.ta, c.tb);
  g.output("y", y);
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  kiln::graph::TensorMap in;
  for (const char* name : {"a", "b"}) {
    HostTensor t = HostTensor::zeros(dtype, g.shape(name[0] == 'a' ? a : b));
    for (float& x : t.f32) x = u(gen);
    t.round_from_f32();
    in[name] = t;
  }
  kiln::graph::Executable exe(dev, g);
  for (const char* name : {"a", "b"}) exe.buffer(name)->write(in[name].data(), in[name].bytes());
  // Poison the output: an element the kernel never writes stays NaN and
  // fails the check.
  HostTensor got = HostTensor::zeros(dtype, g.shape(y));
  for (float& x : got.f32) x = std::nanf("");
  got.round_from_f32();
  exe.buffer("y")->write(got.data(), got.bytes());
  exe.run();
  exe.buffer("y")->read(got.data(), got.bytes());
  got.widen_bits();
  const HostTensor want = kiln::graph::run_reference(g, in).at("y");
  double num = 0, den = 0;
  for (size_t i = 0; i < got.f32.size(); ++i) {
    const double d = static_cast<double>(want.f32[i]) - got.f32[i];
    num += d * d;
    den += static_cast<double>(want.f32[i]) * want.f32[i];
  }
  return den > 0 ? num / den : num;
}

// One compiled case, with its operands written and its first call made.
struct Timed {
  std::unique_ptr<kiln::graph::Executable> exe;
  double best = 1e30;  // seconds
};

Timed prepare(kiln::Device& dev, const Case& c, kiln_dtype dtype) {
  Graph g;
  ValueId a = g.input("a", dtype, shape_of(c.batch, c.ta, c.m, c.k));
  ValueId b = g.input("b", dtype, shape_of(c.batch, c.tb, c.k, c.n));
  g.output("y", g.matmul(a, b, c.ta, c.tb));
  Timed t;
  t.exe = std::make_unique<kiln::graph::Executable>(dev, g);
  // Random operands: constant or zero data can run faster than real data.
  const int64_t elems_a = c.batch * c.m * c.k, elems_b = c.batch * c.k * c.n;
  HostTensor data = HostTensor::zeros(dtype, {std::max(elems_a, elems_b)});
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& x : data.f32) x = u(gen);
  data.round_from_f32();
  const uint64_t size = kiln_dtype_size(dtype);
  t.exe->buffer("a")->write(data.data(), static_cast<uint64_t>(elems_a) * size);
  t.exe->buffer("b")->write(data.data(), static_cast<uint64_t>(elems_b) * size);
  t.exe->run();  // compiles the library's kernels, untimed
  dev.synchronize();
  return t;
}

void time_once(kiln::Device& dev, Timed& t) {
  const auto t0 = std::chrono::steady_clock::now();
  t.exe->run();
  dev.synchronize();
  t.best = std::min(t.best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

double gflops(const Case& c, double seconds) {
  return 2.0 * static_cast<double>(c.batch) * static_cast<double>(c.m) * static_cast<double>(c.n) *
         static_cast<double>(c.k) / seconds / 1e9;
}

// --variants=NAME=V1,V2: the variable and its values ({"", {""}}: none).
struct Variants {
  std::string name;
  std::vector<std::string> values{""};
};

Variants parse_variants(const std::string& spec) {
  Variants v;
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) return v;
  v.name = spec.substr(0, eq);
  v.values.clear();
  for (size_t at = eq + 1;;) {
    const size_t comma = spec.find(',', at);
    v.values.push_back(spec.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return v;
}

void set_variant(const Variants& v, size_t i) {
  if (!v.name.empty()) setenv(v.name.c_str(), v.values[i].c_str(), 1);
}

// Verifies and times `c` under every variant; false (after a message) when
// a result is wrong.
bool bench_case(kiln::Device& dev, const Case& c, kiln_dtype dtype, const Variants& v, int rounds) {
  std::vector<Timed> timed;
  for (size_t i = 0; i < v.values.size(); ++i) {
    set_variant(v, i);
    // 16-bit: the reference sums in double and rounds once, the device in
    // f32 in another order; one rounding of a 16-bit result is an NMSE of
    // up to about 2^-2p (p: its mantissa bits).
    const double e = verify(dev, c, dtype), tolerance = dtype == KILN_F32 ? 1e-6 : dtype == KILN_F16 ? 1e-6 : 2e-5;
    if (!(e <= tolerance)) {
      std::fprintf(stderr, "%s%s: wrong result (NMSE %.3g); not timing\n", c.what.c_str(),
                   v.name.empty() ? "" : (" (" + v.name + "=" + v.values[i] + ")").c_str(), e);
      return false;
    }
    timed.push_back(prepare(dev, c, dtype));
  }
  for (int r = 0; r < rounds; ++r)
    for (Timed& t : timed) time_once(dev, t);
  const size_t sp = c.what.rfind(' ');
  std::printf("| %s | %s | %s%lld x %lld x %lld |", c.what.substr(0, sp).c_str(), c.what.substr(sp + 1).c_str(),
              c.batch > 1 ? (std::to_string(c.batch) + " x ").c_str() : "", static_cast<long long>(c.m),
              static_cast<long long>(c.n), static_cast<long long>(c.k));
  for (const Timed& t : timed) std::printf(" %.1f |", gflops(c, t.best));
  std::printf("\n");
  std::fflush(stdout);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = "opencl", filter;
  Set set = Set::kDefault;
  Variants variants;
  int device = 0, rounds = 5;
  kiln_dtype dtype = KILN_F32;
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
      set = Set::kGpu;
    else if (a == "--set=test")
      set = Set::kTest;
    else if (a == "--dtype=f32" || a == "--dtype=bf16" || a == "--dtype=f16")
      dtype = a == "--dtype=f32" ? KILN_F32 : a == "--dtype=bf16" ? KILN_BF16 : KILN_F16;
    else if (a.rfind("--variants=", 0) == 0 && !parse_variants(a.substr(11)).name.empty())
      variants = parse_variants(a.substr(11));
    else {
      std::fprintf(stderr,
                   "usage: bench_backend_gemm [--backend=opencl] [--device=0] [--rounds=N] [--filter=TEXT] "
                   "[--set=gpu|test] [--dtype=f32|bf16|f16] [--variants=NAME=V1,V2,...]\n");
      return 2;
    }
  }
  try {
    auto dev = kiln::Registry::instance().open(backend, device);
    std::printf("backend %s, device %d: %s, %s\n\n", backend.c_str(), device, dev->properties().name,
                kiln_dtype_name(dtype));
    std::string head = "| shape | layout | m x n x k |", rule = "|---|---|---|";
    for (const std::string& value : variants.values) {
      head += variants.name.empty() ? " GFLOP/s |" : " " + variants.name + "=" + value + " |";
      rule += "---|";
    }
    std::printf("%s\n%s\n", head.c_str(), rule.c_str());
    std::fflush(stdout);  // a run stopped by a timeout keeps its table so far
    for (const Case& c : cases(set)) {
      if (!filter.empty() && c.what.find(filter) == std::string::npos) continue;
      if (!bench_case(*dev, c, dtype, variants, rounds)) return 1;
    }
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "bench_backend_gemm: %s\n", e.what());
    return 1;
  }
  return 0;
}
