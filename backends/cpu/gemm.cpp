// Blocked, multithreaded SGEMM for the CPU backend (GotoBLAS/BLIS scheme).
//
// Loop nest run by each thread over its own block of C:
//   for jc in N by NC:            pack op(B)[pc.., jc..] (kc x nc)
//     for pc in K by KC:
//       for ic in M by MC:        pack op(A)[ic.., pc..] (mc x kc)
//         macro-kernel:           for each 16-column micro-panel of B
//                                   for each 6-row micro-panel of A
//                                     6x16 micro-kernel over kc
// The ISA-specific parts (packing, micro-kernel) come from a KernelSet: the
// AVX2/FMA one (gemm_avx2.cpp) when the CPU has both, else the portable one
// below. The choice is made on first use, never at load time, so the plugin
// loads on any x86-64.
//
// Threads: C is cut into a tm x tn grid of blocks (tm * tn = threads), on
// micro-tile boundaries, one block per thread, chosen by a small cost model
// (largest per-thread block plus the packing each thread does). Threads of
// a grid row (same rows, different columns) pack A together into a shared
// panel, one spin barrier per K block; each packs its own B. All packing
// buffers come from one workspace the calling thread allocates, so nothing
// can throw inside the pool. Small products run on the calling thread.
//
// Measurements behind the constants: docs/PERFORMANCE.md, "CPU GEMM".
#include "gemm.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <thread>
#include <vector>

#include "convert16.h"
#include "gemm_kernels.h"
#include "gemm_pack16.h"

namespace kiln::cpu {
namespace gemm_detail {
namespace {

// Cache blocking, upper bounds (blocks are evened out below them). An MC x
// KC block of A (432 KiB) sits in L2; a KC x 16 micro-panel of B (48 KiB)
// streams from L2 with its successor prefetched. A deep KC was measured
// faster on Zen 3 than an L1-sized one (KC=256): L2 feeds the kernel fast
// enough, and each extra K block costs a pass over C and more per-tile
// overhead. NC bounds the packed B panel (3 MiB).
constexpr int64_t kKC = 768;
constexpr int64_t kMC = 144;   // multiple of kMR
constexpr int64_t kNC = 1024;  // multiple of kNR

// Below this many multiply-adds (about 54^3) one thread beats two: the
// fork/join and the extra packing cost more than the split saves.
constexpr double kMinParallelFma = 160000.0;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// ----------------------------------------------------------- portable kernels

void pack_a_scalar(bool trans, const float* a, int64_t lda, int64_t mc, int64_t kc, float* dst) {
  for (int64_t i = 0; i < mc; i += kMR, dst += kMR * kc) {
    const int64_t mr = std::min<int64_t>(kMR, mc - i);
    for (int64_t p = 0; p < kc; ++p) {
      for (int64_t q = 0; q < mr; ++q) dst[p * kMR + q] = trans ? a[p * lda + i + q] : a[(i + q) * lda + p];
      for (int64_t q = mr; q < kMR; ++q) dst[p * kMR + q] = 0.0f;
    }
  }
}

void pack_b_scalar(bool trans, const float* b, int64_t ldb, int64_t kc, int64_t nc, float* dst) {
  for (int64_t j = 0; j < nc; j += kNR, dst += kNR * kc) {
    const int64_t nr = std::min<int64_t>(kNR, nc - j);
    for (int64_t p = 0; p < kc; ++p) {
      for (int64_t q = 0; q < nr; ++q) dst[p * kNR + q] = trans ? b[(j + q) * ldb + p] : b[p * ldb + j + q];
      for (int64_t q = nr; q < kNR; ++q) dst[p * kNR + q] = 0.0f;
    }
  }
}

// Portable C++ with GCC/Clang vector types (4 floats: SSE2 on any x86-64,
// plain scalar code elsewhere). Each 6x16 tile is done as two 6x8 halves so
// the 12 accumulators fit in 16 SSE registers.
typedef float V4 __attribute__((vector_size(16)));

inline V4 load4(const float* p) {
  V4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void macro_kernel_scalar(int64_t mc, int64_t nc, int64_t kc, const float* pa, const float* pb, float* c, int64_t ldc,
                         float alpha, float beta) {
  constexpr int kHalf = kNR / 2;
  for (int64_t j = 0; j < nc; j += kNR) {
    const int64_t nr = std::min<int64_t>(kNR, nc - j);
    for (int64_t i = 0; i < mc; i += kMR) {
      const int64_t mr = std::min<int64_t>(kMR, mc - i);
      for (int h = 0; h * kHalf < nr; ++h) {
        const float* ap = pa + i * kc;
        const float* bp = pb + j * kc + h * kHalf;
        V4 acc[kMR][2] = {};
        for (int64_t p = 0; p < kc; ++p, ap += kMR, bp += kNR) {
          const V4 b0 = load4(bp), b1 = load4(bp + 4);
          for (int r = 0; r < kMR; ++r) {
            acc[r][0] += ap[r] * b0;
            acc[r][1] += ap[r] * b1;
          }
        }
        float t[kMR][kHalf];
        std::memcpy(t, acc, sizeof t);
        const int64_t cols = std::min<int64_t>(kHalf, nr - h * kHalf);
        for (int64_t r = 0; r < mr; ++r) {
          float* cr = c + (i + r) * ldc + j + h * kHalf;
          for (int64_t q = 0; q < cols; ++q) cr[q] = beta == 0.0f ? alpha * t[r][q] : alpha * t[r][q] + beta * cr[q];
        }
      }
    }
  }
}

constexpr KernelSet kScalarSet{pack_a_scalar, pack_b_scalar, macro_kernel_scalar, "scalar"};

// ------------------------------------------------------------------ buffers

// Packing buffer, grown on demand and kept for the owning thread's life
// (kernels call GEMM back to back; reallocating would page-fault each time).
class PackBuffer {
 public:
  PackBuffer() = default;
  PackBuffer(const PackBuffer&) = delete;
  PackBuffer& operator=(const PackBuffer&) = delete;
  ~PackBuffer() { std::free(ptr_); }

  float* get(int64_t floats) {
    const auto want = static_cast<size_t>(floats);
    if (want > capacity_) {
      std::free(ptr_);
      ptr_ = nullptr;
      capacity_ = 0;
      const size_t bytes = (want * sizeof(float) + 4095) / 4096 * 4096;
      ptr_ = static_cast<float*>(std::aligned_alloc(4096, bytes));
      if (ptr_ == nullptr) throw std::bad_alloc();
      capacity_ = bytes / sizeof(float);
    }
    return ptr_;
  }

 private:
  float* ptr_ = nullptr;
  size_t capacity_ = 0;
};

// The calling thread's packing workspace: its own buffers on the
// single-threaded path, every thread's buffers (and shared A panels) when it
// fans out to the pool.
PackBuffer& workspace() {
  thread_local PackBuffer buf;
  return buf;
}

// Spin barrier for the threads of one sgemm call (they are all running, so
// spinning beats sleeping; yield in case the machine is oversubscribed).
class SpinBarrier {
 public:
  void init(int parties) { parties_ = parties; }
  void wait() {
    const uint32_t gen = generation_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == parties_) {
      arrived_.store(0, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
      return;
    }
    while (generation_.load(std::memory_order_acquire) == gen) std::this_thread::yield();
  }

 private:
  int parties_ = 1;
  std::atomic<int> arrived_{0};
  std::atomic<uint32_t> generation_{0};
};

// ------------------------------------------------------------------- driver

struct Gemm {
  bool trans_a, trans_b;
  int64_t m, n, k;
  float alpha;
  const void* a;  // elements of `operands` (f32, bf16 or f16)
  int64_t lda;
  const void* b;
  int64_t ldb;
  float beta;
  float* c;
  int64_t ldc;
  kiln_dtype operands = KILN_F32;
};

// Element `index` of an operand stored as `dtype`.
const void* element_at(const void* p, int64_t index, kiln_dtype dtype) {
  return static_cast<const uint8_t*>(p) + index * static_cast<int64_t>(kiln_dtype_size(dtype));
}

// Packing through the kernel set for f32 operands; 16-bit ones are widened
// while they are packed (gemm_pack16.h), so no f32 copy of them exists.
void pack_a_any(const KernelSet& ks, const Gemm& g, const void* a, int64_t mc, int64_t kc, float* dst) {
  if (g.operands == KILN_F32)
    ks.pack_a(g.trans_a, static_cast<const float*>(a), g.lda, mc, kc, dst);
  else
    pack_a_16bit(g.operands, g.trans_a, static_cast<const uint16_t*>(a), g.lda, mc, kc, dst);
}

void pack_b_any(const KernelSet& ks, const Gemm& g, const void* b, int64_t kc, int64_t nc, float* dst) {
  if (g.operands == KILN_F32)
    ks.pack_b(g.trans_b, static_cast<const float*>(b), g.ldb, kc, nc, dst);
  else
    pack_b_16bit(g.operands, g.trans_b, static_cast<const uint16_t*>(b), g.ldb, kc, nc, dst);
}

// Block sizes for one thread's [m0, m1) x [n0, n1) block: as large as the
// cache budget allows, then evened out so no block is a thin remainder.
struct Blocking {
  int64_t mc, nc, kc;
};

Blocking choose_blocking(int64_t mt, int64_t nt, int64_t k) {
  Blocking bl;
  bl.kc = ceil_div(k, ceil_div(k, kKC));
  bl.mc = round_up(ceil_div(mt, ceil_div(mt, kMC)), kMR);
  bl.nc = round_up(ceil_div(nt, ceil_div(nt, kNC)), kNR);
  return bl;
}

// One thread's block of C, rows [m0, m1) x columns [n0, n1), packing both
// operands itself into pa (>= mc x kc floats) and pb (>= kc x nc floats).
void gemm_block(const KernelSet& ks, const Gemm& g, int64_t m0, int64_t m1, int64_t n0, int64_t n1, float* pa,
                float* pb) {
  const Blocking bl = choose_blocking(m1 - m0, n1 - n0, g.k);
  for (int64_t jc = n0; jc < n1; jc += bl.nc) {
    const int64_t nc = std::min(bl.nc, n1 - jc);
    for (int64_t pc = 0; pc < g.k; pc += bl.kc) {
      const int64_t kc = std::min(bl.kc, g.k - pc);
      const void* bsrc = element_at(g.b, g.trans_b ? jc * g.ldb + pc : pc * g.ldb + jc, g.operands);
      pack_b_any(ks, g, bsrc, kc, nc, pb);
      const float beta = pc == 0 ? g.beta : 1.0f;
      for (int64_t ic = m0; ic < m1; ic += bl.mc) {
        const int64_t mc = std::min(bl.mc, m1 - ic);
        const void* asrc = element_at(g.a, g.trans_a ? pc * g.lda + ic : ic * g.lda + pc, g.operands);
        pack_a_any(ks, g, asrc, mc, kc, pa);
        ks.macro(mc, nc, kc, pa, pb, g.c + ic * g.ldc + jc, g.ldc, g.alpha, beta);
      }
    }
  }
}

// One thread's part when the threads of a grid row (same rows of C,
// different columns) share the packing of A: for each K block the row's
// threads each pack a slice of the A panel (all the row's rows) into a
// shared, double-buffered panel, meet at a barrier, then run their own
// columns against the whole panel. Passing the barrier of block p+1 means
// every thread has finished computing with block p-1, whose buffer block p+2
// reuses, so one barrier per K block is enough.
struct SharedA {
  float* panel[2];  // each >= round_up(m1 - m0, kMR) x kc floats
  SpinBarrier* barrier;
  int rank, parties;
};

void gemm_block_shared_a(const KernelSet& ks, const Gemm& g, int64_t m0, int64_t m1, int64_t n0, int64_t n1, float* pb,
                         const SharedA& sh) {
  const Blocking bl = choose_blocking(m1 - m0, n1 - n0, g.k);
  const int64_t rows = m1 - m0, tiles = ceil_div(rows, kMR);
  const int64_t i0 = std::min(rows, tiles * sh.rank / sh.parties * kMR);
  const int64_t i1 = std::min(rows, tiles * (sh.rank + 1) / sh.parties * kMR);
  int round = 0;
  for (int64_t pc = 0; pc < g.k; pc += bl.kc, ++round) {
    const int64_t kc = std::min(bl.kc, g.k - pc);
    float* pa = sh.panel[round & 1];
    if (i0 < i1) {
      const int64_t r = m0 + i0;
      const void* asrc = element_at(g.a, g.trans_a ? pc * g.lda + r : r * g.lda + pc, g.operands);
      pack_a_any(ks, g, asrc, i1 - i0, kc, pa + i0 * kc);
    }
    sh.barrier->wait();
    const float beta = pc == 0 ? g.beta : 1.0f;
    for (int64_t jc = n0; jc < n1; jc += bl.nc) {
      const int64_t nc = std::min(bl.nc, n1 - jc);
      const void* bsrc = element_at(g.b, g.trans_b ? jc * g.ldb + pc : pc * g.ldb + jc, g.operands);
      pack_b_any(ks, g, bsrc, kc, nc, pb);
      for (int64_t ic = 0; ic < rows; ic += bl.mc) {
        const int64_t mc = std::min(bl.mc, rows - ic);
        ks.macro(mc, nc, kc, pa + ic * kc, pb, g.c + (m0 + ic) * g.ldc + jc, g.ldc, g.alpha, beta);
      }
    }
  }
}

// Estimated time (in cycles of one core) of the slowest thread when C is cut
// into tm x tn blocks.
double grid_cost(int64_t m, int64_t n, int64_t k, int tm, int tn) {
  const int64_t mtiles = ceil_div(m, kMR), ntiles = ceil_div(n, kNR);
  if (tm > mtiles || tn > ntiles) return std::numeric_limits<double>::infinity();
  const double mt = static_cast<double>(ceil_div(mtiles, tm) * kMR);
  const double nt = static_cast<double>(ceil_div(ntiles, tn) * kNR);
  const double kd = static_cast<double>(k);
  const double compute = mt * nt * kd / 16.0;  // 2 FMA pipes x 8 lanes
  // Threads of a grid row share the packing of A (once per K block).
  const double packed = mt * kd / tn + nt * kd;
  return compute + 0.5 * packed;
}

void scale_c(int64_t m, int64_t n, float beta, float* c, int64_t ldc) {
  if (beta == 1.0f) return;
  for (int64_t i = 0; i < m; ++i) {
    float* row = c + i * ldc;
    if (beta == 0.0f) {
      std::memset(row, 0, static_cast<size_t>(n) * sizeof(float));
    } else {
      for (int64_t j = 0; j < n; ++j) row[j] *= beta;
    }
  }
}

}  // namespace

const KernelSet& scalar_kernel_set() { return kScalarSet; }

const KernelSet& active_kernel_set() {
  static const KernelSet* const chosen = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &avx2_kernel_set();
    return &kScalarSet;
  }();
  return *chosen;
}

namespace {

void run_gemm(const KernelSet& ks, const Gemm& g, ThreadPool& pool) {
  const int64_t m = g.m, n = g.n, k = g.k;

  // Pick the grid of per-thread blocks; small problems stay on the caller.
  const int threads = pool.size();
  const double fma = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  int tm = 1, tn = 1;
  if (threads > 1 && fma >= kMinParallelFma) {
    double best = std::numeric_limits<double>::infinity();
    for (int rows = 1; rows <= threads; ++rows) {
      if (threads % rows != 0) continue;
      const double cost = grid_cost(m, n, k, rows, threads / rows);
      if (cost < best) best = cost, tm = rows, tn = threads / rows;
    }
  }

  if (tm * tn == 1) {
    const Blocking bl = choose_blocking(m, n, k);
    const int64_t a_floats = round_up(bl.mc * bl.kc, 16);  // keeps B 64-byte aligned
    float* pa = workspace().get(a_floats + bl.nc * bl.kc);
    gemm_block(ks, g, 0, m, 0, n, pa, pa + a_floats);
    return;
  }

  // Every buffer the threads need comes from one workspace owned by the
  // calling thread, allocated here, so nothing can fail inside the pool.
  // Per-thread block sizes never exceed those bounds (choose_blocking).
  const int used = tm * tn;
  const int64_t mtiles = ceil_div(m, kMR), ntiles = ceil_div(n, kNR);
  const int64_t kc = ceil_div(k, ceil_div(k, kKC));
  const int64_t row_extent = ceil_div(mtiles, tm) * kMR;  // largest per-thread M
  const int64_t col_extent = ceil_div(ntiles, tn) * kNR;  // largest per-thread N
  const int64_t a_floats = round_up(std::min(row_extent, kMC) * kc, 16);
  const int64_t b_floats = round_up(std::min(col_extent, kNC) * kc, 16);
  // Threads of a grid row share A's packing unless the shared panels would
  // be large (then each packs its own blocks).
  const int64_t panel_floats = round_up(row_extent * kc, 16);
  const bool share_a = tn > 1 && panel_floats <= (int64_t{1} << 21);
  const int64_t per_thread = share_a ? b_floats : a_floats + b_floats;
  float* ws = workspace().get(used * per_thread + (share_a ? 2 * tm * panel_floats : 0));
  float* panels = ws + used * per_thread;
  std::vector<SpinBarrier> barriers(static_cast<size_t>(tm));
  for (SpinBarrier& bar : barriers) bar.init(tn);

  pool.run([&](int t) {
    if (t >= used) return;
    const int ti = t / tn, tj = t % tn;
    const int64_t m0 = std::min(m, mtiles * ti / tm * kMR);
    const int64_t m1 = std::min(m, mtiles * (ti + 1) / tm * kMR);
    const int64_t n0 = std::min(n, ntiles * tj / tn * kNR);
    const int64_t n1 = std::min(n, ntiles * (tj + 1) / tn * kNR);
    float* mine = ws + t * per_thread;
    if (share_a) {
      // Every thread of the row takes part in its barriers.
      const SharedA sh{{panels + 2 * ti * panel_floats, panels + (2 * ti + 1) * panel_floats},
                       &barriers[static_cast<size_t>(ti)],
                       tj,
                       tn};
      gemm_block_shared_a(ks, g, m0, m1, n0, n1, mine, sh);
    } else if (m0 < m1 && n0 < n1) {
      gemm_block(ks, g, m0, m1, n0, n1, mine, mine + a_floats);
    }
  });
}

}  // namespace

void sgemm_with(const KernelSet& ks, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                ThreadPool& pool) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0 || alpha == 0.0f) {
    scale_c(m, n, beta, c, ldc);
    return;
  }
  run_gemm(ks, Gemm{trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, KILN_F32}, pool);
}

void gemm_16bit_with(const KernelSet& ks, kiln_dtype dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                     const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, uint16_t* c, int64_t ldc,
                     float* tile, int64_t tile_floats, ThreadPool& pool) {
  if (m <= 0 || n <= 0) return;
  // C is computed in f32 one block at a time into `tile`, then rounded once
  // into C: wide blocks (A is re-packed per block, 16/width of the work at
  // 256 columns or more) so the f32 copy of C is never whole.
  const int64_t width = std::min({n, tile_floats, std::max<int64_t>(256, tile_floats / m / kNR * kNR)});
  const int64_t height = std::min(m, std::max<int64_t>(1, tile_floats / width));
  for (int64_t i0 = 0; i0 < m; i0 += height) {
    const int64_t rows = std::min(height, m - i0);
    for (int64_t j0 = 0; j0 < n; j0 += width) {
      const int64_t cols = std::min(width, n - j0);
      if (k <= 0) {
        std::fill(tile, tile + rows * cols, 0.0f);
      } else {
        const Gemm g{trans_a,
                     trans_b,
                     rows,
                     cols,
                     k,
                     1.0f,
                     element_at(a, trans_a ? i0 : i0 * lda, dtype),
                     lda,
                     element_at(b, trans_b ? j0 * ldb : j0, dtype),
                     ldb,
                     0.0f,
                     tile,
                     cols,
                     dtype};
        run_gemm(ks, g, pool);
      }
      for (int64_t r = 0; r < rows; ++r) narrow_row(dtype, tile + r * cols, c + (i0 + r) * ldc + j0, cols);
    }
  }
}

}  // namespace gemm_detail

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc, ThreadPool& pool) {
  gemm_detail::sgemm_with(gemm_detail::active_kernel_set(), trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
                          ldc, pool);
}

int64_t gemm_16bit_tile_floats(int64_t m, int64_t n) {
  constexpr int64_t kTileFloats = int64_t{1} << 20;  // 4 MiB of f32 per thread
  return std::min(m * n, kTileFloats);
}

void gemm_16bit(kiln_dtype dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const uint16_t* a,
                int64_t lda, const uint16_t* b, int64_t ldb, uint16_t* c, int64_t ldc, float* tile, ThreadPool& pool) {
  gemm_detail::gemm_16bit_with(gemm_detail::active_kernel_set(), dtype, trans_a, trans_b, m, n, k, a, lda, b, ldb, c,
                               ldc, tile, gemm_16bit_tile_floats(m, n), pool);
}

}  // namespace kiln::cpu
