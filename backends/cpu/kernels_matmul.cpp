// MATMUL: one sgemm per batch item.
//
// Attention's matmuls are many tiny GEMMs (B*H items of T x T x D): splitting
// each across threads costs more in fork/join and packing than it gains, so
// batches are spread over the threads instead, each thread running whole
// items single-threaded (solo pools). Large items that do not divide evenly
// across the threads go one at a time through the full pool.
#include <atomic>
#include <exception>

#include "gemm.h"
#include "kernels.h"

namespace kiln::cpu::KILN_CPU_ISA {

namespace {
// Below this many multiply-adds per item, parallelism across items wins
// regardless of balance (sgemm itself runs these single-threaded).
constexpr double kBigItemFma = 128.0 * 128.0 * 128.0;

// Runs item(i, pool) for every batch item, spread as the header says.
template <class Item>
void for_items(const Ctx& ctx, int64_t batch, int64_t m, int64_t n, int64_t k, Item&& item) {
  const double item_fma = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const int threads = ctx.threads;
  if (batch == 1 || threads == 1 || (batch < threads) || (item_fma >= kBigItemFma && batch % threads != 0)) {
    for (int64_t i = 0; i < batch; ++i) item(i, *ctx.pool, 0);
    return;
  }
  // sgemm may throw (packing buffers); an exception must not escape a pool
  // worker, so the first one is carried back and rethrown here.
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  ctx.pool->run([&](int t) {
    const int64_t begin = batch * t / threads, end = batch * (t + 1) / threads;
    try {
      for (int64_t i = begin; i < end; ++i) item(i, *ctx.solo[t], t);
    } catch (...) {
      if (!failed.exchange(true)) error = std::current_exception();
    }
  });
  if (error) std::rethrow_exception(error);
}

}  // namespace

void matmul(const Ctx& ctx, const float* a, const float* b, float* y, int64_t batch, int64_t m, int64_t n, int64_t k,
            bool trans_a, bool trans_b) {
  // Row strides as stored: a is [M, K] or [K, M], b is [K, N] or [N, K].
  const int64_t lda = trans_a ? m : k, ldb = trans_b ? k : n;
  const int64_t sa = m * k, sb = k * n, sy = m * n;
  for_items(ctx, batch, m, n, k, [&](int64_t i, ThreadPool& pool, int) {
    sgemm(trans_a, trans_b, m, n, k, 1.0f, a + i * sa, lda, b + i * sb, ldb, 0.0f, y + i * sy, n, pool);
  });
}

// Each worker's f32 tile of C is its slice of the scratch (matmul_16bit_scratch_bytes).
void matmul_16bit(const Ctx& ctx, kiln_dtype dtype, const uint16_t* a, const uint16_t* b, uint16_t* y, int64_t batch,
                  int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b) {
  const int64_t lda = trans_a ? m : k, ldb = trans_b ? k : n;
  const int64_t sa = m * k, sb = k * n, sy = m * n;
  const int64_t tile = gemm_16bit_tile_floats(m, n);
  float* tiles = static_cast<float*>(ctx.scratch);
  for_items(ctx, batch, m, n, k, [&](int64_t i, ThreadPool& pool, int worker) {
    gemm_16bit(dtype, trans_a, trans_b, m, n, k, a + i * sa, lda, b + i * sb, ldb, y + i * sy, n, tiles + worker * tile,
               pool);
  });
}

}  // namespace kiln::cpu::KILN_CPU_ISA
