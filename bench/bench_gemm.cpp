// GEMM throughput at the shapes GPT training calls: kiln's own kernel
// (kiln::cpu::sgemm, or gemm_16bit for bf16) against oneDNN's matmul as the
// cpu backend runs it (library_gemm.h, on this CPU's highest ISA path) and
// OpenBLAS's cblas_sgemm (f32 only), all on the same threads.
//
//   bench_gemm                      Google Benchmark run (GFLOPS counter)
//   bench_gemm --table [--rounds=N] [--filter=TEXT] [--dtype=bf16]
//       Interleaved rounds per shape (default 5), each started once the CPUs
//       are idle; prints each kernel's best-round GFLOP/s as a Markdown table
//       (what docs/PERFORMANCE.md quotes): kiln, oneDNN, OpenBLAS, the
//       kernel the backend chooses for the shape (gemm_choice.h, measured in
//       this process), and the chosen one against the best library.
//       --filter keeps rows whose "shape layout" label contains TEXT.
//   --threads=N                     threads for every library (default 2)
//
// A transformer linear layer with T tokens, input width K and output width N
// (x [T,K], W [N,K], y = x W^T) makes three GEMMs per step:
//   fwd   y  = x W^T    m=T n=N k=K  (trans_b)
//   dgrad dx = dy W     m=T n=K k=N  (no transpose)
//   wgrad dW = dy^T x   m=N n=K k=T  (trans_a)
// Attention cases are plain M x N x K in the same three layouts.
//
// At startup kiln is checked against a naive double-precision GEMM on odd
// shapes; a wrong result aborts before anything is timed.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gemm.h"
#include "gemm_choice.h"
#include "isa.h"
#include "kiln/half.h"
#include "library_gemm.h"
#include "thread_pool.h"

#ifdef KILN_HAVE_OPENBLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int);
#endif

namespace {

int g_threads = 2;              // --threads=N
kiln_dtype g_dtype = KILN_F32;  // --dtype=bf16

kiln::cpu::ThreadPool& pool() {
  static kiln::cpu::ThreadPool p(g_threads);
  return p;
}

enum class Layout { kFwd, kDgrad, kWgrad };

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::kFwd: return "fwd";
    case Layout::kDgrad: return "dgrad";
    case Layout::kWgrad: return "wgrad";
  }
  return "?";
}

struct Case {
  std::string group;  // e.g. "T256 K768 N3072"
  Layout layout;
  bool trans_a, trans_b;
  int64_t m, n, k;
  int64_t lda, ldb, ldc;
};

// GEMM a linear layer x[T,K] -> y[T,N] runs in `layout`.
Case linear_case(int64_t t, int64_t kdim, int64_t n, Layout l) {
  char g[64];
  std::snprintf(g, sizeof g, "T%lld K%lld N%lld", static_cast<long long>(t), static_cast<long long>(kdim),
                static_cast<long long>(n));
  switch (l) {
    case Layout::kFwd: return {g, l, false, true, t, n, kdim, kdim, kdim, n};
    case Layout::kDgrad: return {g, l, false, false, t, kdim, n, n, kdim, kdim};
    case Layout::kWgrad: return {g, l, true, false, n, kdim, t, n, kdim, kdim};
  }
  return {};
}

// Plain M x N x K in a layout (attention: scores, P@V, dV/dK style).
Case square_case(int64_t m, int64_t n, int64_t k, Layout l) {
  char g[64];
  std::snprintf(g, sizeof g, "attn M%lld N%lld K%lld", static_cast<long long>(m), static_cast<long long>(n),
                static_cast<long long>(k));
  switch (l) {
    case Layout::kFwd: return {g, l, false, true, m, n, k, k, k, n};
    case Layout::kDgrad: return {g, l, false, false, m, n, k, k, n, n};
    case Layout::kWgrad: return {g, l, true, false, m, n, k, m, n, n};
  }
  return {};
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  const Layout layouts[] = {Layout::kFwd, Layout::kDgrad, Layout::kWgrad};
  // GPT-2 small width at 256 tokens per micro-batch.
  for (int64_t n : {768, 2304, 3072, 50304})
    for (Layout l : layouts) cases.push_back(linear_case(256, 768, n, l));
  // The small config: 1024 tokens, width 384.
  for (int64_t n : {384, 1152, 1536, 50304})
    for (Layout l : layouts) cases.push_back(linear_case(1024, 384, n, l));
  // Attention, once per batch x head.
  for (int64_t t : {64, 256})
    for (Layout l : layouts) cases.push_back(square_case(t, t, 64, l));
  return cases;
}

struct Operands {
  std::vector<float> a, b, c;
  std::vector<uint16_t> a16, b16, c16;  // --dtype=bf16
  std::vector<float> tile;              // gemm_16bit's f32 block of C
  std::shared_ptr<const kiln::cpu::LibraryGemm> library;
  explicit Operands(const Case& cs) {
    const int64_t arows = cs.trans_a ? cs.k : cs.m;
    const int64_t brows = cs.trans_b ? cs.n : cs.k;
    a.resize(static_cast<size_t>(arows * cs.lda));
    b.resize(static_cast<size_t>(brows * cs.ldb));
    c.assign(static_cast<size_t>(cs.m * cs.ldc), 0.0f);
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (float& x : a) x = u(rng);
    for (float& x : b) x = u(rng);
    if (g_dtype == KILN_BF16) {
      for (float x : a) a16.push_back(kiln_f32_to_bf16(x));
      for (float x : b) b16.push_back(kiln_f32_to_bf16(x));
      c16.assign(c.size(), 0);
      tile.resize(static_cast<size_t>(kiln::cpu::gemm_16bit_tile_floats(cs.m, cs.n)));
    }
    std::string why;
    library = kiln::cpu::LibraryGemm::create({g_dtype, cs.trans_a, cs.trans_b, cs.m, cs.n, cs.k},
                                             kiln::cpu::detected_isa(), &why);
  }
};

void run_kiln(const Case& cs, Operands& o) {
  if (g_dtype == KILN_BF16) {
    kiln::cpu::gemm_16bit(KILN_BF16, cs.trans_a, cs.trans_b, cs.m, cs.n, cs.k, o.a16.data(), cs.lda, o.b16.data(),
                          cs.ldb, o.c16.data(), cs.ldc, o.tile.data(), pool());
    return;
  }
  kiln::cpu::sgemm(cs.trans_a, cs.trans_b, cs.m, cs.n, cs.k, 1.0f, o.a.data(), cs.lda, o.b.data(), cs.ldb, 0.0f,
                   o.c.data(), cs.ldc, pool());
}

void run_onednn(const Case&, Operands& o) {
  if (g_dtype == KILN_BF16)
    o.library->run(o.a16.data(), o.b16.data(), o.c16.data(), pool());
  else
    o.library->run(o.a.data(), o.b.data(), o.c.data(), pool());
}

#ifdef KILN_HAVE_OPENBLAS
void run_openblas(const Case& cs, Operands& o) {
  cblas_sgemm(CblasRowMajor, cs.trans_a ? CblasTrans : CblasNoTrans, cs.trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(cs.m), static_cast<int>(cs.n), static_cast<int>(cs.k), 1.0f, o.a.data(),
              static_cast<int>(cs.lda), o.b.data(), static_cast<int>(cs.ldb), 0.0f, o.c.data(),
              static_cast<int>(cs.ldc));
}
#endif

double flops(const Case& cs) { return 2.0 * cs.m * cs.n * cs.k; }

// Busy and total jiffies over all CPUs, from /proc/stat (Linux); false where
// it cannot be read.
bool cpu_jiffies(uint64_t& busy, uint64_t& total) {
  FILE* f = std::fopen("/proc/stat", "r");
  if (f == nullptr) return false;
  unsigned long long v[8] = {};
  const int got = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
                              &v[5], &v[6], &v[7]);
  std::fclose(f);
  if (got < 5) return false;
  total = 0;
  for (unsigned long long x : v) total += x;
  busy = total - v[3] - v[4];  // minus idle and iowait
  return true;
}

int g_noisy_rounds = 0;  // rounds started while other processes were busy

// Each library's idle threads spin for a while after a call (OpenBLAS for up
// to ~0.1 s): sleep so they go idle before the other library is timed. On a
// shared machine, also wait (up to 20 s) until the other processes leave
// the cores at least 90% idle over a 150 ms window, so rounds run on
// otherwise quiet cores.
void settle() {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (;;) {
    uint64_t b0 = 0, t0 = 0, b1 = 0, t1 = 0;
    const bool ok0 = cpu_jiffies(b0, t0);
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    if (!ok0 || !cpu_jiffies(b1, t1) || t1 <= t0) return;
    if (static_cast<double>(b1 - b0) <= 0.1 * static_cast<double>(t1 - t0)) return;
    if (std::chrono::steady_clock::now() > give_up) {
      ++g_noisy_rounds;
      return;
    }
  }
}

// ------------------------------------------------------------ self-check

void naive(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
           int64_t ldb, float beta, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += static_cast<double>(ta ? a[p * lda + i] : a[i * lda + p]) *
             static_cast<double>(tb ? b[j * ldb + p] : b[p * ldb + j]);
      const double prev = beta == 0.0f ? 0.0 : static_cast<double>(beta) * c[i * ldc + j];
      c[i * ldc + j] = static_cast<float>(alpha * s + prev);
    }
}

void self_check() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int64_t shapes[][3] = {{1, 1, 1}, {7, 33, 17}, {65, 17, 129}, {130, 97, 300}, {256, 64, 64}};
  for (const auto& s : shapes)
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      const int64_t m = s[0], n = s[1], k = s[2];
      const int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 5, ldc = n + 2;
      std::vector<float> a((ta ? k : m) * lda), b((tb ? n : k) * ldb), c(m * ldc), r;
      for (float& x : a) x = u(rng);
      for (float& x : b) x = u(rng);
      for (float& x : c) x = u(rng);
      r = c;
      kiln::cpu::sgemm(ta, tb, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 2.0f, c.data(), ldc, pool());
      naive(ta, tb, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 2.0f, r.data(), ldc);
      double err = 0, ref = 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          const double d = c[i * ldc + j] - r[i * ldc + j];
          err += d * d;
          ref += static_cast<double>(r[i * ldc + j]) * r[i * ldc + j];
        }
      if (!(err <= 1e-10 * static_cast<double>(k) * ref)) {
        std::fprintf(stderr, "bench_gemm self-check FAILED: trans_a=%d trans_b=%d m=%lld n=%lld k=%lld nmse=%g\n", ta,
                     tb, static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), err / ref);
        std::abort();
      }
    }
}

// ------------------------------------------------------- Google Benchmark

template <void (*Fn)(const Case&, Operands&)>
void bm(benchmark::State& state, const Case& cs) {
  Operands o(cs);
  if (Fn == &run_onednn && !o.library) {
    state.SkipWithError("oneDNN has no matmul for this shape on this CPU");
    return;
  }
  settle();
  Fn(cs, o);  // warm up: page in operands, grow packing buffers
  for (auto _ : state) {
    Fn(cs, o);
    benchmark::DoNotOptimize(o.c.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPS"] =
      benchmark::Counter(flops(cs) * 1e-9 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void register_all() {
  for (const Case& cs : all_cases()) {
    char dims[96];
    std::snprintf(dims, sizeof dims, " %s m%lld n%lld k%lld", layout_name(cs.layout), static_cast<long long>(cs.m),
                  static_cast<long long>(cs.n), static_cast<long long>(cs.k));
    const std::string suffix = cs.group + dims;
    benchmark::RegisterBenchmark((std::string("kiln/") + suffix).c_str(), bm<run_kiln>, cs)->UseRealTime();
    benchmark::RegisterBenchmark((std::string("onednn/") + suffix).c_str(), bm<run_onednn>, cs)->UseRealTime();
#ifdef KILN_HAVE_OPENBLAS
    benchmark::RegisterBenchmark((std::string("openblas/") + suffix).c_str(), bm<run_openblas>, cs)->UseRealTime();
#endif
  }
}

// ---------------------------------------------------------- --table mode

// GFLOP/s of one timed round: repeat the call for ~0.1 s.
double round_rate(void (*fn)(const Case&, Operands&), const Case& cs, Operands& o) {
  using clock = std::chrono::steady_clock;
  fn(cs, o);
  int64_t reps = 0;
  const auto t0 = clock::now();
  auto t1 = t0;
  do {
    fn(cs, o);
    ++reps;
    t1 = clock::now();
  } while (t1 - t0 < std::chrono::milliseconds(100));
  return flops(cs) * static_cast<double>(reps) / std::chrono::duration<double>(t1 - t0).count() * 1e-9;
}

double best(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

// Interleaves the kernels' rounds per case. Other processes only ever slow
// a round down, so each kernel's best round is its figure on a quiet
// machine. "backend" is the kernel gemm_choice.h picks for the shape (its
// own measurement, in this process), at the rate this table measured for it.
int table(int rounds, const std::string& filter) {
  const kiln::cpu::CpuIsa isa = kiln::cpu::detected_isa();
  std::printf("%s GEMM, %d threads, %s path; oneDNN best-block implementation per row\n\n", kiln_dtype_name(g_dtype),
              g_threads, kiln::cpu::isa_name(isa));
  std::printf(
      "| shape | layout | m x n x k | kiln | oneDNN | OpenBLAS | backend (choice) | backend / best library |\n");
  std::printf("|---|---|---|---:|---:|---:|---:|---:|\n");
  std::vector<double> ratios;
  for (const Case& cs : all_cases()) {
    const std::string label = cs.group + " " + layout_name(cs.layout);
    if (!filter.empty() && label.find(filter) == std::string::npos) continue;
    Operands o(cs);
    std::vector<double> kr, dr, br;
    for (int r = 0; r < rounds; ++r) {
      settle();
      kr.push_back(round_rate(run_kiln, cs, o));
      if (o.library) {
        settle();
        dr.push_back(round_rate(run_onednn, cs, o));
      }
#ifdef KILN_HAVE_OPENBLAS
      if (g_dtype == KILN_F32) {
        settle();
        br.push_back(round_rate(run_openblas, cs, o));
      }
#endif
    }
    const double k = best(kr), d = dr.empty() ? 0.0 : best(dr), b = br.empty() ? 0.0 : best(br);
    const kiln::cpu::GemmDecision choice = kiln::cpu::choose_gemm({g_dtype, cs.trans_a, cs.trans_b, cs.m, cs.n, cs.k},
                                                                  1, isa, kiln::cpu::GemmPolicy::kMeasure);
    const bool lib = choice.kernel == kiln::cpu::GemmKernel::kLibrary;
    const double chosen = lib ? d : k, best_library = std::max(d, b);
    if (best_library > 0) ratios.push_back(chosen / best_library);
    std::printf("| %s | %s | %lld x %lld x %lld | %.1f | %.1f | %.1f | %.1f (%s) | %.2f |\n", cs.group.c_str(),
                layout_name(cs.layout), static_cast<long long>(cs.m), static_cast<long long>(cs.n),
                static_cast<long long>(cs.k), k, d, b, chosen, lib ? "oneDNN" : "kiln",
                best_library > 0 ? chosen / best_library : 0.0);
    std::fflush(stdout);
  }
  if (!ratios.empty()) {
    double lg = 0;
    for (double r : ratios) lg += std::log(r);
    std::printf("\ngeometric mean backend / best library (best rounds): %.3f, min %.3f\n",
                std::exp(lg / static_cast<double>(ratios.size())), *std::min_element(ratios.begin(), ratios.end()));
  }
  if (g_noisy_rounds > 0)
    std::printf("warning: %d rounds started while other processes kept the CPUs busy\n", g_noisy_rounds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool table_mode = false;
  int rounds = 5;
  std::string filter;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--table") == 0) {
      table_mode = true;
    } else if (std::strncmp(argv[i], "--rounds=", 9) == 0) {
      rounds = std::max(1, std::atoi(argv[i] + 9));
    } else if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      g_threads = std::max(1, std::atoi(argv[i] + 10));
    } else if (std::strcmp(argv[i], "--dtype=bf16") == 0) {
      g_dtype = KILN_BF16;
    } else if (std::strncmp(argv[i], "--filter=", 9) == 0) {
      filter = argv[i] + 9;
    } else {
      rest.push_back(argv[i]);
    }
  }
#ifdef KILN_HAVE_OPENBLAS
  openblas_set_num_threads(g_threads);
#endif
  self_check();
  if (table_mode) return table(rounds, filter);

  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  if (benchmark::ReportUnrecognizedArguments(n, rest.data())) return 1;
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
