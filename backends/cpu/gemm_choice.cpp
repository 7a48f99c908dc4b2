#include "gemm_choice.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "convert16.h"
#include "gemm.h"

namespace kiln::cpu {

namespace {

// A shape is measured on at most this many multiply-adds: both kernels'
// speed per multiply-add is set by the block shapes, and compiling a
// 50K-vocabulary head must not spend seconds (or gigabytes) timing it. K is
// cut first, then M, then N, none below kKeepEdge (deep sums keep their
// character, and the library's blocks, and so its threads, stay several):
// at most kKeepEdge^3 multiply-adds and 3 * kKeepEdge^2 elements per operand
// set, whatever the graph declares.
constexpr double kMeasureFma = 1u << 30;
constexpr int64_t kKeepEdge = 2048;
constexpr int kRounds = 3;               // best of, after one warm-up each
constexpr double kRoundSeconds = 0.004;  // each round repeats the call at least this long

using Clock = std::chrono::steady_clock;

ThreadPool& measuring_pool() {
  // As many threads as a device opened with the default count gets.
  static ThreadPool pool(0);
  return pool;
}

GemmShape measured_shape(GemmShape s) {
  auto cut = [&s](int64_t& dim, double other_two) {
    if (static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) <= kMeasureFma) return;
    if (dim > kKeepEdge) dim = std::max<int64_t>(kKeepEdge, static_cast<int64_t>(kMeasureFma / other_two) / 256 * 256);
  };
  cut(s.k, static_cast<double>(s.m) * static_cast<double>(s.n));
  cut(s.m, static_cast<double>(s.n) * static_cast<double>(s.k));
  cut(s.n, static_cast<double>(s.m) * static_cast<double>(s.k));
  return s;
}

// Operands of small, exactly representable values (no denormals, no
// overflow), so both kernels take their ordinary path.
struct Operands {
  std::vector<float> a32, b32, c32;
  std::vector<uint16_t> a16, b16, c16;
  std::vector<float> tile;

  explicit Operands(const GemmShape& s) {
    const auto na = static_cast<size_t>(s.m * s.k), nb = static_cast<size_t>(s.k * s.n),
               nc = static_cast<size_t>(s.m * s.n);
    a32.resize(na);
    b32.resize(nb);
    for (size_t i = 0; i < na; ++i) a32[i] = static_cast<float>(static_cast<int>(i % 17) - 8) * 0.125f;
    for (size_t i = 0; i < nb; ++i) b32[i] = static_cast<float>(static_cast<int>(i % 13) - 6) * 0.0625f;
    if (s.dtype == KILN_F32) {
      c32.resize(nc);
      return;
    }
    a16.resize(na);
    b16.resize(nb);
    c16.resize(nc);
    narrow_row(s.dtype, a32.data(), a16.data(), static_cast<int64_t>(na));
    narrow_row(s.dtype, b32.data(), b16.data(), static_cast<int64_t>(nb));
    tile.resize(static_cast<size_t>(gemm_16bit_tile_floats(s.m, s.n)));
  }
};

void run_kiln(const GemmShape& s, Operands& o, ThreadPool& pool) {
  const int64_t lda = s.trans_a ? s.m : s.k, ldb = s.trans_b ? s.k : s.n;
  if (s.dtype == KILN_F32)
    sgemm(s.trans_a, s.trans_b, s.m, s.n, s.k, 1.0f, o.a32.data(), lda, o.b32.data(), ldb, 0.0f, o.c32.data(), s.n,
          pool);
  else
    gemm_16bit(s.dtype, s.trans_a, s.trans_b, s.m, s.n, s.k, o.a16.data(), lda, o.b16.data(), ldb, o.c16.data(), s.n,
               o.tile.data(), pool);
}

void run_library(const GemmShape& s, const LibraryGemm& lib, Operands& o, ThreadPool& pool) {
  if (s.dtype == KILN_F32)
    lib.run(o.a32.data(), o.b32.data(), o.c32.data(), pool);
  else
    lib.run(o.a16.data(), o.b16.data(), o.c16.data(), pool);
}

// Seconds per call, over a round of at least kRoundSeconds (a burst of
// load or a pool's threads still spinning down distort one short call).
template <class F>
double seconds_of(F&& f) {
  const auto t0 = Clock::now();
  int calls = 0;
  double elapsed = 0;
  do {
    f();
    ++calls;
    elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  } while (elapsed < kRoundSeconds);
  return elapsed / calls;
}

GemmDecision measure(const GemmShape& shape, CpuIsa isa, GemmPolicy policy) {
  GemmDecision d;
  const GemmShape s = measured_shape(shape);
  std::shared_ptr<const LibraryGemm> lib = LibraryGemm::create(s, isa, &d.why);
  if (!lib) return d;
  if (policy == GemmPolicy::kLibrary) {
    d.kernel = GemmKernel::kLibrary;
    return d;
  }
  ThreadPool& pool = measuring_pool();
  Operands o(s);
  run_kiln(s, o, pool);  // warm-up: first touch of the buffers, packing space
  run_library(s, *lib, o, pool);
  d.kiln_seconds = d.library_seconds = 1e30;
  for (int r = 0; r < kRounds; ++r) {  // interleaved, so a burst of load hits both
    d.kiln_seconds = std::min(d.kiln_seconds, seconds_of([&] { run_kiln(s, o, pool); }));
    d.library_seconds = std::min(d.library_seconds, seconds_of([&] { run_library(s, *lib, o, pool); }));
  }
  if (d.library_seconds * kLibraryMargin <= d.kiln_seconds) d.kernel = GemmKernel::kLibrary;
  return d;
}

}  // namespace

const char* gemm_policy_name(GemmPolicy p) {
  switch (p) {
    case GemmPolicy::kMeasure: return "measure";
    case GemmPolicy::kKiln: return "kiln";
    case GemmPolicy::kLibrary: return "library";
  }
  return "?";
}

GemmPolicyChoice gemm_policy() {
  GemmPolicyChoice c;
  const char* v = std::getenv("KILN_CPU_GEMM");
  if (v == nullptr || *v == '\0') return c;
  for (GemmPolicy p : {GemmPolicy::kMeasure, GemmPolicy::kKiln, GemmPolicy::kLibrary})
    if (std::strcmp(v, gemm_policy_name(p)) == 0) {
      c.policy = p;
      return c;
    }
  c.error = std::string("KILN_CPU_GEMM=") + v + " is not a GEMM policy; use measure, kiln or library";
  return c;
}

GemmDecision choose_gemm(const GemmShape& shape, int64_t batch, CpuIsa isa, GemmPolicy policy) {
  GemmDecision d;
  if (policy == GemmPolicy::kKiln) return d;
  if (batch != 1) {
    d.why = "batched products run on kiln's kernel";
    return d;
  }
  // One measurement per shape, path and policy in a process: a step's
  // graphs repeat the same few shapes in every layer and unit.
  using Key = std::tuple<int, bool, bool, int64_t, int64_t, int64_t, int, int>;
  static std::mutex mutex;
  static std::map<Key, GemmDecision> seen;
  const Key key{shape.dtype, shape.trans_a, shape.trans_b,         shape.m,
                shape.n,     shape.k,       static_cast<int>(isa), static_cast<int>(policy)};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = seen.find(key);
  if (it == seen.end()) it = seen.emplace(key, measure(shape, isa, policy)).first;
  return it->second;
}

}  // namespace kiln::cpu
