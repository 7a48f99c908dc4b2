#include "library_gemm.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <utility>
#include <vector>

namespace kiln::cpu {

namespace {

// Blocks of C at most this many rows and columns: large enough that each
// call's packing of its A and B slices is a few percent of its arithmetic,
// small enough that a step's GEMMs give every thread several blocks.
constexpr int64_t kBlockEdge = 512;
constexpr int64_t kMinBlockEdge = 64;
// A grid of fewer blocks is split finer (down to kMinBlockEdge), so a small
// product still spreads over a few threads. Shape-only, like the rest of the
// grid: the bits must not depend on the thread count.
constexpr int64_t kMinBlocks = 4;
constexpr int64_t kBlockAlign = 16;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Even split of `extent` into blocks of at most `edge` (rounded to
// kBlockAlign): the block size, of which the last block may be a remainder.
int64_t block_size(int64_t extent, int64_t edge) {
  const int64_t count = ceil_div(extent, edge);
  return std::min(extent, ceil_div(ceil_div(extent, count), kBlockAlign) * kBlockAlign);
}

// The block edges for an m x n C: kBlockEdge, halved along the longer
// blocks while the grid has fewer than kMinBlocks.
std::pair<int64_t, int64_t> block_edges(int64_t m, int64_t n) {
  int64_t em = kBlockEdge, en = kBlockEdge;
  auto blocks = [&] { return ceil_div(m, block_size(m, em)) * ceil_div(n, block_size(n, en)); };
  while (blocks() < kMinBlocks) {
    const bool split_rows = block_size(m, em) >= block_size(n, en);
    int64_t& e = split_rows ? em : en;
    const int64_t extent = split_rows ? m : n;
    if (e / 2 < kMinBlockEdge || block_size(extent, e) <= kMinBlockEdge) {
      int64_t& other = split_rows ? en : em;
      const int64_t other_extent = split_rows ? n : m;
      if (other / 2 < kMinBlockEdge || block_size(other_extent, other) <= kMinBlockEdge) break;
      other /= 2;
    } else {
      e /= 2;
    }
  }
  return {em, en};
}

dnnl::memory::data_type data_type(kiln_dtype dtype) {
  switch (dtype) {
    case KILN_BF16: return dnnl::memory::data_type::bf16;
    case KILN_F16: return dnnl::memory::data_type::f16;
    default: return dnnl::memory::data_type::f32;
  }
}

dnnl::cpu_isa library_isa(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAmx: return dnnl::cpu_isa::avx512_core_amx;
    case CpuIsa::kAvx512: return dnnl::cpu_isa::avx512_core_bf16;
    default: return dnnl::cpu_isa::avx2;
  }
}

// oneDNN's instruction limit is process-wide and fixed by its first use; the
// first device to ask sets it to its path. A device on a path the limit is
// above (a lower KILN_CPU_ISA later in the same process) gets no library
// GEMM, so never instructions above its path. The limit is read back from
// oneDNN rather than remembered: the plugin and a test binary may each hold
// a copy of this file over one libdnnl.
bool limit_library_isa(CpuIsa isa, std::string* why) {
  static std::once_flag once;
  std::call_once(once, [isa] { dnnl::set_max_cpu_isa(library_isa(isa)); });
  const auto effective = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto allowed = static_cast<unsigned>(library_isa(isa));
  if ((effective & ~allowed) != 0) {
    *why = "oneDNN in this process already runs above the " + std::string(isa_name(isa)) + " path";
    return false;
  }
  return true;
}

const dnnl::engine& engine() {
  static const dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// oneDNN sizes its parallel regions from the calling thread's OpenMP limit,
// read when a primitive is created and when it runs: 1 keeps each call on
// the thread that makes it. The runtime is libgomp, loaded with oneDNN
// (CMake checks Debian's oneDNN is built on OpenMP); found by name so kiln
// needs no OpenMP link flags of its own, which clang and gcc spell apart.
void single_threaded_library() {
  using SetThreads = void (*)(int);
  static const SetThreads set_threads = [] {
    void* gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
    return gomp == nullptr ? nullptr : reinterpret_cast<SetThreads>(dlsym(gomp, "omp_set_num_threads"));
  }();
  thread_local bool done = false;
  if (done || set_threads == nullptr) return;
  set_threads(1);
  done = true;
}

// This thread's scratchpad for oneDNN calls, grown on demand and kept for
// the thread's life (a step calls GEMMs back to back).
void* scratchpad(size_t bytes) {
  thread_local std::vector<uint8_t> space;
  if (space.size() < bytes) space.resize(bytes);
  return space.empty() ? nullptr : space.data();
}

class OnednnGemm final : public LibraryGemm {
 public:
  explicit OnednnGemm(const GemmShape& s) : s_(s) {
    const auto [em, en] = block_edges(s.m, s.n);
    mb_ = block_size(s.m, em);
    nb_ = block_size(s.n, en);
    rows_ = ceil_div(s.m, mb_);
    cols_ = ceil_div(s.n, nb_);
    const int64_t lda = s.trans_a ? s.m : s.k, ldb = s.trans_b ? s.k : s.n;
    const auto dt = data_type(s.dtype);
    // Up to four block shapes: full or last row block x full or last column block.
    for (size_t r = 0; r < 2; ++r)
      for (size_t c = 0; c < 2; ++c) {
        const int64_t m = r == 0 ? mb_ : s.m - (rows_ - 1) * mb_;
        const int64_t n = c == 0 ? nb_ : s.n - (cols_ - 1) * nb_;
        Block& b = blocks_[r * 2 + c];
        b.a = dnnl::memory::desc({m, s.k}, dt, s.trans_a ? dnnl::memory::dims{1, lda} : dnnl::memory::dims{lda, 1});
        b.b = dnnl::memory::desc({s.k, n}, dt, s.trans_b ? dnnl::memory::dims{1, ldb} : dnnl::memory::dims{ldb, 1});
        b.c = dnnl::memory::desc({m, n}, dt, dnnl::memory::dims{s.n, 1});
        if (r == 1 && m == mb_) {
          b = blocks_[c];
          continue;
        }
        if (c == 1 && n == nb_) {
          b = blocks_[r * 2];
          continue;
        }
        // A scratchpad of our own per thread: oneDNN's shared one is not
        // safe for primitives running at once on several threads.
        dnnl::primitive_attr attr;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(b.a, b.b, b.c), attr, engine());
        b.primitive = dnnl::matmul(pd);
        b.scratch = pd.scratchpad_desc();
        if (r == 0 && c == 0) implementation_ = pd.impl_info_str();
      }
    warm_up(blocks_[0],
            implementation_ + (s.trans_a ? " ta" : "") + (s.trans_b ? " tb" : "") + " " + kiln_dtype_name(s.dtype));
  }

  void run(const void* a, const void* b, void* c, ThreadPool& pool) const override {
    const int64_t count = rows_ * cols_;
    const int threads = std::min<int64_t>(pool.size(), count);
    if (threads <= 1) {
      try {
        run_blocks(0, count, a, b, c);
      } catch (const dnnl::error& e) {
        throw LibraryGemmError(std::string("oneDNN matmul failed: ") + e.what());
      }
      return;
    }
    // A oneDNN error must not escape a pool worker: the first is carried back.
    std::atomic<bool> failed{false};
    std::string message;
    pool.run([&](int t) {
      if (t >= threads) return;
      try {
        run_blocks(count * t / threads, count * (t + 1) / threads, a, b, c);
      } catch (const dnnl::error& e) {
        if (!failed.exchange(true)) message = e.what();
      }
    });
    if (failed) throw LibraryGemmError("oneDNN matmul failed: " + message);
  }

  std::string implementation() const override { return implementation_; }

 private:
  struct Block {
    dnnl::memory::desc a, b, c, scratch;
    dnnl::matmul primitive;
  };

  // Some oneDNN implementations generate their machine code at their first
  // execution in the process, not at the primitive's creation: the f32
  // "gemm:jit" path builds its sgemm kernels then (30-45 ms on a Zen 4,
  // per layout of A and B, while every thread that calls it waits). That
  // would be compiling in the first training step after a precompile (issue
  // 32), so the first primitive of each kind (implementation, layouts,
  // dtype) runs once here, at compile or load, on zeroed memory of its
  // block's span. (A compact copy of the block would not do: oneDNN picks
  // another implementation for dense operands.)
  static void warm_up(const Block& blk, const std::string& kind) {
    static std::mutex mutex;
    static std::vector<std::string> warmed;
    const std::lock_guard<std::mutex> lock(mutex);
    if (std::find(warmed.begin(), warmed.end(), kind) != warmed.end()) return;
    std::vector<uint8_t> a(blk.a.get_size()), b(blk.b.get_size()), c(blk.c.get_size()), scratch(blk.scratch.get_size());
    dnnl::stream stream(engine());
    blk.primitive.execute(stream, {{DNNL_ARG_SRC, dnnl::memory(blk.a, engine(), a.data())},
                                   {DNNL_ARG_WEIGHTS, dnnl::memory(blk.b, engine(), b.data())},
                                   {DNNL_ARG_DST, dnnl::memory(blk.c, engine(), c.data())},
                                   {DNNL_ARG_SCRATCHPAD, dnnl::memory(blk.scratch, engine(), scratch.data())}});
    stream.wait();
    warmed.push_back(kind);
  }

  void run_blocks(int64_t begin, int64_t end, const void* a, const void* b, void* c) const {
    single_threaded_library();
    thread_local dnnl::stream stream(engine());
    const int64_t lda = s_.trans_a ? s_.m : s_.k, ldb = s_.trans_b ? s_.k : s_.n;
    const auto esize = static_cast<int64_t>(kiln_dtype_size(s_.dtype));
    auto at = [esize](const void* p, int64_t index) {
      return const_cast<uint8_t*>(static_cast<const uint8_t*>(p)) + index * esize;
    };
    for (int64_t i = begin; i < end; ++i) {
      const int64_t r = i / cols_, col = i % cols_;
      const int64_t m0 = r * mb_, n0 = col * nb_;
      const Block& blk = blocks_[(r == rows_ - 1 ? size_t{2} : size_t{0}) + (col == cols_ - 1 ? size_t{1} : size_t{0})];
      dnnl::memory ma(blk.a, engine(), at(a, s_.trans_a ? m0 : m0 * lda));
      dnnl::memory mb(blk.b, engine(), at(b, s_.trans_b ? n0 * ldb : n0));
      dnnl::memory mc(blk.c, engine(), at(c, m0 * s_.n + n0));
      dnnl::memory ms(blk.scratch, engine(), scratchpad(blk.scratch.get_size()));
      blk.primitive.execute(
          stream, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}, {DNNL_ARG_SCRATCHPAD, ms}});
    }
    stream.wait();
  }

  GemmShape s_;
  int64_t mb_ = 0, nb_ = 0, rows_ = 0, cols_ = 0;
  std::array<Block, 4> blocks_;  // [last row block][last column block]
  std::string implementation_;
};

}  // namespace

std::shared_ptr<const LibraryGemm> LibraryGemm::create(const GemmShape& shape, CpuIsa isa, std::string* why) {
  if (isa == CpuIsa::kBaseline) {
    *why = "the baseline path uses no library";
    return nullptr;
  }
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0) {
    *why = "empty product";
    return nullptr;
  }
  if (!limit_library_isa(isa, why)) return nullptr;
  single_threaded_library();
  try {
    return std::make_shared<OnednnGemm>(shape);
  } catch (const dnnl::error& e) {
    *why = std::string("oneDNN has no matmul for it: ") + e.what();
    return nullptr;
  }
}

}  // namespace kiln::cpu
