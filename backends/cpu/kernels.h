// The CPU backend's kernels, one per op (forward and backward), fp32.
//
// Each kernels_*.cpp is compiled three times: on its own for baseline x86-64
// (SSE2), through kernels_avx2.cpp with AVX2+FMA, and through
// kernels_avx512.cpp with AVX-512. simd.h picks the namespace
// (kiln::cpu::base, avx2 or avx512) from the compiler flags, so the
// declarations below name whichever ISA the including file is built for.
// The plugin picks one run_node per device with a runtime CPU check.
//
// Conventions: pointers may alias exactly where kiln/ir.h allows it
// (elementwise ops); work is split into a fixed number of contiguous chunks
// that depends only on the sizes and the thread count, and partial results
// are combined in chunk order, so a run is bitwise reproducible.
#pragma once

#include <cstdint>
#include <span>

#include "plan.h"
#include "simd.h"
#include "thread_pool.h"

// Internal to the plugin: keep these out of its dynamic symbol table.
#pragma GCC visibility push(hidden)

namespace kiln::cpu {

// What kernels get from the device.
struct Ctx {
  ThreadPool* pool = nullptr;         // the device's pool, shared with sgemm
  ThreadPool* const* solo = nullptr;  // solo[t]: a 1-thread pool for worker t
  int threads = 1;
  void* scratch = nullptr;  // >= the node's NodePlan::scratch_bytes
};

// Runs one planned node; values[id] is the address of value id.
using RunNodeFn = void (*)(const Ctx&, const NodePlan&, void* const* values);

namespace base {
void run_node(const Ctx& ctx, const NodePlan& node, void* const* values);
}
namespace avx2 {
void run_node(const Ctx& ctx, const NodePlan& node, void* const* values);
}
namespace avx512 {
void run_node(const Ctx& ctx, const NodePlan& node, void* const* values);
}

namespace KILN_CPU_ISA {

// Splits [0, n) into at most ctx.threads contiguous chunks of >= grain items
// and calls fn(chunk, begin, end) for each across the pool; small work runs
// inline as one chunk. Returns the number of chunks.
template <class F>
int64_t for_chunks(const Ctx& ctx, int64_t n, int64_t grain, F&& fn) {
  if (n <= 0) return 0;
  if (grain < 1) grain = 1;
  int64_t chunks = (n + grain - 1) / grain;
  if (chunks > ctx.threads) chunks = ctx.threads;
  if (chunks <= 1) {
    fn(int64_t{0}, int64_t{0}, n);
    return 1;
  }
  ctx.pool->run([&](int t) {
    if (t >= chunks) return;
    int64_t begin = n * t / chunks, end = n * (t + 1) / chunks;
    if (begin < end) fn(static_cast<int64_t>(t), begin, end);
  });
  return chunks;
}

// Items per chunk so that one chunk is worth a fork/join (~a few us).
inline int64_t grain_for(int64_t cost_per_item) {
  constexpr int64_t kMinWork = 16384;
  return cost_per_item >= kMinWork ? 1 : kMinWork / (cost_per_item < 1 ? 1 : cost_per_item);
}

// ---- kernels_elementwise.cpp
void fill(const Ctx&, float* y, int64_t n, float value);
void add(const Ctx&, const float* a, const float* b, float* y, int64_t n, int64_t inner);
void mul(const Ctx&, const float* a, const float* b, float* y, int64_t n, int64_t inner);
void scale(const Ctx&, const float* x, float* y, int64_t n, float s);
void gelu(const Ctx&, const float* x, float* y, int64_t n);
void gelu_grad(const Ctx&, const float* x, const float* dy, float* dx, int64_t n);
void gelu_erf(const Ctx&, const float* x, float* y, int64_t n);
void gelu_erf_grad(const Ctx&, const float* x, const float* dy, float* dx, int64_t n);
void silu(const Ctx&, const float* x, float* y, int64_t n);
void silu_grad(const Ctx&, const float* x, const float* dy, float* dx, int64_t n);
void clamp(const Ctx&, const float* x, float* y, int64_t n, float lo, float hi);
void clamp_grad(const Ctx&, const float* x, const float* dy, float* dx, int64_t n, float lo, float hi);

// ---- kernels_math.cpp (MAXIMUM: b repeats every `inner` elements)
void exp_kernel(const Ctx&, const float* x, float* y, int64_t n);
void log_kernel(const Ctx&, const float* x, float* y, int64_t n);
void tanh_kernel(const Ctx&, const float* x, float* y, int64_t n);
void erf_kernel(const Ctx&, const float* x, float* y, int64_t n);
void maximum_kernel(const Ctx&, const float* a, const float* b, float* y, int64_t n, int64_t inner);
void select_kernel(const Ctx&, const float* a, const float* b, const float* x, const float* y, float* z, int64_t n);

// ---- kernels_elementwise16.cpp: any elementwise op of staging.h's
// converts_elementwise() on bf16/f16 storage, through its f32 kernel. scratch: threads * (inputs + 1)
// * kElementwise16Block floats.
void elementwise_16bit(const Ctx&, const NodePlan& node, void* const* values);

// ---- kernels_fp8.cpp: CAST_FP8, x and y in `dtype` (f32, bf16 or f16);
// scratch: threads floats.
void cast_fp8(const Ctx&, const void* x, kiln_dtype dtype, const float* scale, void* y, float* amax, int64_t n,
              int64_t format, bool current);

// ---- kernels_matmul.cpp
void matmul(const Ctx&, const float* a, const float* b, float* y, int64_t batch, int64_t m, int64_t n, int64_t k,
            bool trans_a, bool trans_b);
// a, b, y all bf16 or f16 (`dtype`), f32 accumulation; scratch: threads *
// gemm_16bit_tile_floats(m, n) floats.
void matmul_16bit(const Ctx&, kiln_dtype dtype, const uint16_t* a, const uint16_t* b, uint16_t* y, int64_t batch,
                  int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b);

// ---- kernels_norm.cpp
void layernorm(const Ctx&, const float* x, const float* gamma, const float* beta, float* y, int64_t rows, int64_t cols,
               float eps);
// scratch: threads * 2 * cols floats
void layernorm_grad(const Ctx&, const float* x, const float* gamma, const float* dy, float* dx, float* dgamma,
                    float* dbeta, int64_t rows, int64_t cols, float eps);

// ---- kernels_rmsnorm.cpp
void rmsnorm(const Ctx&, const float* x, const float* gamma, float* y, int64_t rows, int64_t cols, float eps);
// scratch: threads * cols floats
void rmsnorm_grad(const Ctx&, const float* x, const float* gamma, const float* dy, float* dx, float* dgamma,
                  int64_t rows, int64_t cols, float eps);

// ---- kernels_rope.cpp (x [rows, cols], row r at position r % positions;
// cos, sin [positions, pairs])
void rope(const Ctx&, const float* x, const float* cos, const float* sin, float* y, int64_t rows, int64_t cols,
          int64_t positions, int64_t pairs, bool interleaved);
void rope_grad(const Ctx&, const float* dy, const float* cos, const float* sin, float* dx, int64_t rows, int64_t cols,
               int64_t positions, int64_t pairs, bool interleaved);

// ---- kernels_attention.cpp
// Which keys a query row of [..., t, t] sees: j <= i (CAUSAL_SOFTMAX), from
// the row's document start on too when `starts` ([samples, t] i32,
// DOCUMENT_SOFTMAX) is set, rows_per_sample rows to a sample.
struct VisibleKeys {
  const int32_t* starts = nullptr;
  int64_t rows_per_sample = 1;
  // The first visible key of row r; the last is r % t.
  int64_t first(int64_t r, int64_t t) const {
    if (starts == nullptr) return 0;
    const int64_t i = r % t, s = starts[r / rows_per_sample * t + i];
    return s < 0 ? 0 : (s > i ? i : s);
  }
};
void causal_softmax(const Ctx&, const float* x, float* y, int64_t batch, int64_t t, float scale, VisibleKeys keys = {});
void softmax_grad(const Ctx&, const float* y, const float* dy, float* dx, int64_t rows, int64_t cols, float scale);

// ---- kernels_attention16.cpp: the same on bf16/f16 (`dtype`) storage.
// scratch: threads * 2 * t floats (causal_softmax_16bit), threads * 3 * cols
// floats (softmax_grad_16bit), none (dropout_16bit)
void causal_softmax_16bit(const Ctx&, kiln_dtype dtype, const uint16_t* x, uint16_t* y, int64_t batch, int64_t t,
                          float scale, VisibleKeys keys = {});
void softmax_grad_16bit(const Ctx&, kiln_dtype dtype, const uint16_t* y, const uint16_t* dy, uint16_t* dx, int64_t rows,
                        int64_t cols, float scale);
void dropout_16bit(const Ctx&, kiln_dtype dtype, const uint16_t* x, const int32_t* key_words, uint16_t* y, int64_t n,
                   int64_t site, int64_t period, int64_t stride, float p);

// ---- kernels_alibi.cpp: rows = batch * H * T query rows of t keys, heads = H
void alibi(const Ctx&, const float* x, const float* slopes, float* y, int64_t rows, int64_t t, int64_t heads);

// ---- kernels_loss.cpp (targets already checked to lie in [0, cols))
// scratch: rows doubles
void cross_entropy(const Ctx&, const float* logits, const int32_t* targets, float* loss, int64_t rows, int64_t cols);
void cross_entropy_grad(const Ctx&, const float* logits, const int32_t* targets, const float* dloss, float* dlogits,
                        int64_t rows, int64_t cols);
// bf16/f16 logits and dlogits, f32 arithmetic. scratch: rows doubles, then
// threads rows of f32 (cross_entropy); threads * 2 rows of f32 (the gradient).
void cross_entropy_16bit(const Ctx&, kiln_dtype dtype, const uint16_t* logits, const int32_t* targets, float* loss,
                         int64_t rows, int64_t cols);
void cross_entropy_grad_16bit(const Ctx&, kiln_dtype dtype, const uint16_t* logits, const int32_t* targets,
                              const float* dloss, uint16_t* dlogits, int64_t rows, int64_t cols);

// ---- kernels_vocab_parallel.cpp (targets outside [0, cols) belong to another
// vocab shard: they add nothing to the target term)
void row_max(const Ctx&, const float* x, float* y, int64_t rows, int64_t cols);
void cross_entropy_shard(const Ctx&, const float* logits, const int32_t* targets, const float* rowmax, float* sums,
                         int64_t rows, int64_t cols);
void cross_entropy_shard_grad(const Ctx&, const float* logits, const int32_t* targets, const float* rowmax,
                              const float* dsums, float* dlogits, int64_t rows, int64_t cols);
// scratch: rows doubles
void cross_entropy_from_sums(const Ctx&, const float* sums, float* loss, int64_t rows);
void cross_entropy_from_sums_grad(const Ctx&, const float* sums, const float* dloss, float* dsums, int64_t rows);

// ---- kernels_embedding.cpp (ids already checked to lie in [0, vocab))
void embedding(const Ctx&, const float* table, const int32_t* ids, float* y, int64_t rows, int64_t cols);
void embedding_grad(const Ctx&, const float* dy, const int32_t* ids, float* dtable, int64_t rows, int64_t cols,
                    int64_t vocab);

// ---- kernels_embedding16.cpp: the same on bf16/f16 storage. scratch
// (the gradient): embedding16_order_bytes(rows), then threads * 2 * cols floats.
void embedding_16bit(const Ctx&, const uint16_t* table, const int32_t* ids, uint16_t* y, int64_t rows, int64_t cols);
void embedding_grad_16bit(const Ctx&, kiln_dtype dtype, const uint16_t* dy, const int32_t* ids, uint16_t* dtable,
                          int64_t rows, int64_t cols, int64_t vocab);

// ---- kernels_reduce.cpp
// scratch: threads * cols floats
void sum_to(const Ctx&, const float* x, float* y, int64_t rows, int64_t cols);
// scratch: threads doubles
void sum_squares(const Ctx&, const float* x, float* y, int64_t n);
void sum_squares_16bit(const Ctx&, kiln_dtype dtype, const uint16_t* x, float* y, int64_t n);

// ---- kernels_layout.cpp (elements of any dtype: elem_bytes 4 or 2, sizes in elements)
void copy(const Ctx&, const void* x, void* y, int64_t n, int64_t elem_bytes);
void permute(const Ctx&, const void* x, void* y, const PermutePlan& p, int64_t elem_bytes);
void split(const Ctx&, const void* x, void* const* ys, int64_t rows, int64_t parts, int64_t inner, int64_t elem_bytes);
void concat(const Ctx&, const void* const* xs, const int64_t* inners, int64_t count, void* y, int64_t rows,
            int64_t inner, int64_t elem_bytes);

// ---- kernels_optimizer.cpp
// hparams = {lr, weight_decay, 1/(1-beta1^t), 1/(1-beta2^t), grad_scale}
void adamw(const Ctx&, const float* p, const float* g, const float* m, const float* v, const float* hparams,
           float* p_out, float* m_out, float* v_out, int64_t n, float beta1, float beta2, float eps,
           bool apply_weight_decay);
// ADAMW_CLIP: the gradient (of g_dtype) times clip[0], rounded to g_dtype, then adamw's update.
void adamw_clip(const Ctx&, const float* p, const void* g, kiln_dtype g_dtype, const float* m, const float* v,
                const float* hparams, const float* clip, float* p_out, float* m_out, float* v_out, int64_t n,
                float beta1, float beta2, float eps, bool apply_weight_decay);

// ---- kernels_dropout.cpp
// key_words: DROPOUT's key input {seed, step, offset_lo, offset_hi}.
void dropout(const Ctx&, const float* x, const int32_t* key_words, float* y, int64_t n, int64_t site, int64_t period,
             int64_t stride, float p);

// ---- kernels_cast.cpp (f32, bf16, f16 each way)
void cast(const Ctx&, const void* x, kiln_dtype x_dtype, void* y, kiln_dtype y_dtype, int64_t n);

// ---- kernels_dispatch.cpp
void run_node(const Ctx& ctx, const NodePlan& node, void* const* values);
// Inputs of the widest elementwise op (SELECT).
inline constexpr size_t kMaxElementwiseInputs = 4;
// An elementwise node's f32 kernel on `n` elements of `ins` (b of a
// broadcasting op repeating every `inner`), into `y`.
void run_elementwise(const Ctx& ctx, const NodePlan& node, const float* const* ins, float* y, int64_t n, int64_t inner);
// The ops run_node runs: the plugin's support list.
extern const std::span<const kiln_op> kSupportedOps;

}  // namespace KILN_CPU_ISA
}  // namespace kiln::cpu

#pragma GCC visibility pop
