// run_node: from a planned node and bound value addresses to the kernel call.
// Compiled once per ISA like the kernels, so the plugin chooses between two
// entry points rather than testing the CPU on every call.
#include "kernels.h"
#include "library_gemm.h"

namespace kiln::cpu::KILN_CPU_ISA {

// The ops this plugin runs (op_supported and compile read this list, so it
// stays beside the switch that calls their kernels): every op of the table
// but the host collective, which the host runs between compiled pieces of a
// graph. The cpu plugin is the fallback for every other backend.
constexpr kiln_op kSupportedOpList[] = {
    KILN_OP_FILL,
    KILN_OP_ADD,
    KILN_OP_MUL,
    KILN_OP_SCALE,
    KILN_OP_GELU,
    KILN_OP_GELU_GRAD,
    KILN_OP_MATMUL,
    KILN_OP_EMBEDDING,
    KILN_OP_EMBEDDING_GRAD,
    KILN_OP_LAYERNORM,
    KILN_OP_LAYERNORM_GRAD,
    KILN_OP_RMSNORM,
    KILN_OP_RMSNORM_GRAD,
    KILN_OP_CAUSAL_SOFTMAX,
    KILN_OP_SOFTMAX_GRAD,
    KILN_OP_CROSS_ENTROPY,
    KILN_OP_CROSS_ENTROPY_GRAD,
    KILN_OP_SUM_TO,
    KILN_OP_RESHAPE,
    KILN_OP_PERMUTE,
    KILN_OP_SPLIT,
    KILN_OP_CONCAT,
    KILN_OP_SUM_SQUARES,
    KILN_OP_ADAMW,
    KILN_OP_ADAMW_CLIP,
    KILN_OP_ROW_MAX,
    KILN_OP_CROSS_ENTROPY_SHARD,
    KILN_OP_CROSS_ENTROPY_SHARD_GRAD,
    KILN_OP_CROSS_ENTROPY_FROM_SUMS,
    KILN_OP_CROSS_ENTROPY_FROM_SUMS_GRAD,
    KILN_OP_SILU,
    KILN_OP_SILU_GRAD,
    KILN_OP_CLAMP,
    KILN_OP_CLAMP_GRAD,
    KILN_OP_ROPE,
    KILN_OP_ROPE_GRAD,
    KILN_OP_DROPOUT,
    KILN_OP_ALIBI,
    KILN_OP_GELU_ERF,
    KILN_OP_GELU_ERF_GRAD,
    KILN_OP_CAST,
    KILN_OP_EXP,
    KILN_OP_LOG,
    KILN_OP_TANH,
    KILN_OP_ERF,
    KILN_OP_MAXIMUM,
    KILN_OP_SELECT,
    KILN_OP_DROPOUT_KEYED,
    KILN_OP_DOCUMENT_SOFTMAX,
    KILN_OP_CAST_FP8,
};
const std::span<const kiln_op> kSupportedOps{kSupportedOpList};

// The elementwise ops (staging.h's converts_elementwise, read from the
// table), on f32 values: called by run_node for f32 nodes and by
// elementwise_16bit a block at a time for bf16/f16 ones, so each op's
// kernel call is written once for both.
void run_elementwise(const Ctx& ctx, const NodePlan& nd, const float* const* ins, float* y, int64_t n, int64_t inner) {
  const float* x = ins[0];
  auto fa = [&](size_t i) { return nd.fattrs[i]; };
  switch (nd.op) {
    case KILN_OP_FILL: return fill(ctx, y, n, fa(0));
    case KILN_OP_ADD: return add(ctx, x, ins[1], y, n, inner);
    case KILN_OP_MUL: return mul(ctx, x, ins[1], y, n, inner);
    case KILN_OP_SCALE: return scale(ctx, x, y, n, fa(0));
    case KILN_OP_GELU: return gelu(ctx, x, y, n);
    case KILN_OP_GELU_GRAD: return gelu_grad(ctx, x, ins[1], y, n);
    case KILN_OP_GELU_ERF: return gelu_erf(ctx, x, y, n);
    case KILN_OP_GELU_ERF_GRAD: return gelu_erf_grad(ctx, x, ins[1], y, n);
    case KILN_OP_SILU: return silu(ctx, x, y, n);
    case KILN_OP_SILU_GRAD: return silu_grad(ctx, x, ins[1], y, n);
    case KILN_OP_CLAMP: return clamp(ctx, x, y, n, fa(0), fa(1));
    case KILN_OP_CLAMP_GRAD: return clamp_grad(ctx, x, ins[1], y, n, fa(0), fa(1));
    case KILN_OP_EXP: return exp_kernel(ctx, x, y, n);
    case KILN_OP_LOG: return log_kernel(ctx, x, y, n);
    case KILN_OP_TANH: return tanh_kernel(ctx, x, y, n);
    case KILN_OP_ERF: return erf_kernel(ctx, x, y, n);
    case KILN_OP_MAXIMUM: return maximum_kernel(ctx, x, ins[1], y, n, inner);
    case KILN_OP_SELECT: return select_kernel(ctx, x, ins[1], ins[2], ins[3], y, n);
    default: return;  // not in the support list: compile refused the node
  }
}

void run_node(const Ctx& ctx, const NodePlan& nd, void* const* values) {
  auto fin = [&](size_t i) { return static_cast<const float*>(values[nd.in[i]]); };
  auto iin = [&](size_t i) { return static_cast<const int32_t*>(values[nd.in[i]]); };
  auto fout = [&](size_t i) { return static_cast<float*>(values[nd.out[i]]); };
  auto fa = [&](size_t i) { return nd.fattrs[i]; };
  const int64_t elem_bytes = kiln_dtype_size(nd.y_dtype);  // layout ops: their (one) dtype's
  // bf16/f16 values of the ops that convert them themselves (staging.h).
  auto hin = [&](size_t i) { return static_cast<const uint16_t*>(values[nd.in[i]]); };
  auto hout = [&](size_t i) { return static_cast<uint16_t*>(values[nd.out[i]]); };
  const bool low = nd.x_dtype != KILN_F32;
  if (converts_elementwise(nd.op)) {  // its output's dtype is every input's (FILL has none)
    if (nd.y_dtype != KILN_F32) return elementwise_16bit(ctx, nd, values);
    const float* ins[kMaxElementwiseInputs] = {};
    for (size_t i = 0; i < nd.in.size(); ++i) ins[i] = fin(i);
    return run_elementwise(ctx, nd, ins, fout(0), nd.count, nd.bcast);
  }
  switch (nd.op) {
    case KILN_OP_MATMUL:
      if (nd.library != nullptr)
        return nd.library->run(values[nd.in[0]], values[nd.in[1]], values[nd.out[0]], *ctx.pool);
      if (low)
        return matmul_16bit(ctx, nd.x_dtype, hin(0), hin(1), hout(0), nd.batch, nd.m, nd.n, nd.k, nd.trans_a,
                            nd.trans_b);
      return matmul(ctx, fin(0), fin(1), fout(0), nd.batch, nd.m, nd.n, nd.k, nd.trans_a, nd.trans_b);
    case KILN_OP_EMBEDDING:
      if (low) return embedding_16bit(ctx, hin(0), iin(1), hout(0), nd.rows, nd.cols);
      return embedding(ctx, fin(0), iin(1), fout(0), nd.rows, nd.cols);
    case KILN_OP_EMBEDDING_GRAD:
      if (low) return embedding_grad_16bit(ctx, nd.x_dtype, hin(0), iin(1), hout(0), nd.rows, nd.cols, nd.vocab);
      return embedding_grad(ctx, fin(0), iin(1), fout(0), nd.rows, nd.cols, nd.vocab);
    case KILN_OP_LAYERNORM: return layernorm(ctx, fin(0), fin(1), fin(2), fout(0), nd.rows, nd.cols, fa(0));
    case KILN_OP_LAYERNORM_GRAD:
      return layernorm_grad(ctx, fin(0), fin(1), fin(2), fout(0), fout(1), fout(2), nd.rows, nd.cols, fa(0));
    case KILN_OP_RMSNORM: return rmsnorm(ctx, fin(0), fin(1), fout(0), nd.rows, nd.cols, fa(0));
    case KILN_OP_RMSNORM_GRAD:
      return rmsnorm_grad(ctx, fin(0), fin(1), fin(2), fout(0), fout(1), nd.rows, nd.cols, fa(0));
    case KILN_OP_CAUSAL_SOFTMAX:
      if (low) return causal_softmax_16bit(ctx, nd.x_dtype, hin(0), hout(0), nd.rows / nd.cols, nd.cols, fa(0));
      return causal_softmax(ctx, fin(0), fout(0), nd.rows / nd.cols, nd.cols, fa(0));
    case KILN_OP_DOCUMENT_SOFTMAX: {
      const VisibleKeys keys{iin(1), nd.rows / nd.batch};
      if (low) return causal_softmax_16bit(ctx, nd.x_dtype, hin(0), hout(0), nd.rows / nd.cols, nd.cols, fa(0), keys);
      return causal_softmax(ctx, fin(0), fout(0), nd.rows / nd.cols, nd.cols, fa(0), keys);
    }
    case KILN_OP_SOFTMAX_GRAD:
      if (low) return softmax_grad_16bit(ctx, nd.x_dtype, hin(0), hin(1), hout(0), nd.rows, nd.cols, fa(0));
      return softmax_grad(ctx, fin(0), fin(1), fout(0), nd.rows, nd.cols, fa(0));
    case KILN_OP_CROSS_ENTROPY:
      if (low) return cross_entropy_16bit(ctx, nd.x_dtype, hin(0), iin(1), fout(0), nd.rows, nd.cols);
      return cross_entropy(ctx, fin(0), iin(1), fout(0), nd.rows, nd.cols);
    case KILN_OP_CROSS_ENTROPY_GRAD:
      if (low) return cross_entropy_grad_16bit(ctx, nd.x_dtype, hin(0), iin(1), fin(2), hout(0), nd.rows, nd.cols);
      return cross_entropy_grad(ctx, fin(0), iin(1), fin(2), fout(0), nd.rows, nd.cols);
    case KILN_OP_SUM_TO: return sum_to(ctx, fin(0), fout(0), nd.rows, nd.cols);
    case KILN_OP_RESHAPE: return copy(ctx, values[nd.in[0]], values[nd.out[0]], nd.count, elem_bytes);
    case KILN_OP_PERMUTE: return permute(ctx, values[nd.in[0]], values[nd.out[0]], nd.permute, elem_bytes);
    case KILN_OP_SPLIT: {
      void* ys[256];  // at most 255 outputs fit the IR's u8 count
      for (size_t i = 0; i < nd.out.size(); ++i) ys[i] = values[nd.out[i]];
      return split(ctx, values[nd.in[0]], ys, nd.rows, nd.parts, nd.inner, elem_bytes);
    }
    case KILN_OP_CONCAT: {
      const void* xs[256];
      for (size_t i = 0; i < nd.in.size(); ++i) xs[i] = values[nd.in[i]];
      return concat(ctx, xs, nd.inners.data(), static_cast<int64_t>(nd.in.size()), values[nd.out[0]], nd.rows, nd.inner,
                    elem_bytes);
    }
    case KILN_OP_SUM_SQUARES:
      if (low) return sum_squares_16bit(ctx, nd.x_dtype, hin(0), fout(0), nd.count);
      return sum_squares(ctx, fin(0), fout(0), nd.count);
    case KILN_OP_ADAMW:
      return adamw(ctx, fin(0), fin(1), fin(2), fin(3), fin(4), fout(0), fout(1), fout(2), nd.count, fa(0), fa(1),
                   fa(2), nd.weight_decay);
    case KILN_OP_ADAMW_CLIP:
      return adamw_clip(ctx, fin(0), values[nd.in[1]], nd.grad_dtype, fin(2), fin(3), fin(4), fin(5), fout(0), fout(1),
                        fout(2), nd.count, fa(0), fa(1), fa(2), nd.weight_decay);
    case KILN_OP_ROW_MAX: return row_max(ctx, fin(0), fout(0), nd.rows, nd.cols);
    case KILN_OP_CROSS_ENTROPY_SHARD:
      return cross_entropy_shard(ctx, fin(0), iin(1), fin(2), fout(0), nd.rows, nd.cols);
    case KILN_OP_CROSS_ENTROPY_SHARD_GRAD:
      return cross_entropy_shard_grad(ctx, fin(0), iin(1), fin(2), fin(3), fout(0), nd.rows, nd.cols);
    case KILN_OP_CROSS_ENTROPY_FROM_SUMS: return cross_entropy_from_sums(ctx, fin(0), fout(0), nd.rows);
    case KILN_OP_CROSS_ENTROPY_FROM_SUMS_GRAD:
      return cross_entropy_from_sums_grad(ctx, fin(0), fin(1), fout(0), nd.rows);
    case KILN_OP_ROPE:
      return rope(ctx, fin(0), fin(1), fin(2), fout(0), nd.rows, nd.cols, nd.positions, nd.pairs, nd.interleaved);
    case KILN_OP_ROPE_GRAD:
      return rope_grad(ctx, fin(0), fin(1), fin(2), fout(0), nd.rows, nd.cols, nd.positions, nd.pairs, nd.interleaved);
    case KILN_OP_DROPOUT:
    case KILN_OP_DROPOUT_KEYED: {
      // DROPOUT_KEYED's site is its key's word 4, a uint32 bit pattern.
      const int64_t site = nd.op == KILN_OP_DROPOUT ? nd.site : static_cast<uint32_t>(iin(1)[4]);
      if (low)
        return dropout_16bit(ctx, nd.x_dtype, hin(0), iin(1), hout(0), nd.count, site, nd.period, nd.stride, fa(0));
      return dropout(ctx, fin(0), iin(1), fout(0), nd.count, site, nd.period, nd.stride, fa(0));
    }
    case KILN_OP_ALIBI: return alibi(ctx, fin(0), fin(1), fout(0), nd.rows, nd.cols, nd.heads);
    case KILN_OP_CAST: return cast(ctx, values[nd.in[0]], nd.x_dtype, values[nd.out[0]], nd.y_dtype, nd.count);
    case KILN_OP_CAST_FP8:
      return cast_fp8(ctx, values[nd.in[0]], nd.x_dtype, fin(1), values[nd.out[0]], fout(1), nd.count, nd.fp8_format,
                      nd.fp8_current);
    case KILN_OP_ALL_REDUCE:  // host collectives: not in the support list, compile refuses them
    case KILN_OP_ALL_GATHER:
    case KILN_OP_REDUCE_SCATTER:
    case KILN_OP_SCATTER:
    case KILN_OP_COPY_TO_TP_REGION:
    // Composites (graph/decompose.h): no kernel here, not in the support
    // list; the host expands them into the ops above.
    case KILN_OP_SQUARED_RELU:
    case KILN_OP_SQUARED_RELU_GRAD:
    case KILN_OP_FP8_GRAD_CAST:
    case KILN_OP_COUNT_:
    default: break;  // and the elementwise ops, run above
  }
}

}  // namespace kiln::cpu::KILN_CPU_ISA
