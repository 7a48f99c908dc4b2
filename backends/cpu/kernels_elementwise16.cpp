// The elementwise ops (ADD, MUL, SCALE, GELU, GELU_ERF, SILU, CLAMP and
// their gradients) on bf16/f16 storage: each worker widens a block of
// kElementwise16Block elements of every input into its f32 rows of scratch,
// runs the f32 kernel on the block on its own thread, and rounds the block
// into the output. Blocks never cross a repeat of ADD/MUL's broadcast b, so
// b's slice of a block is contiguous too. The output may be at an input's
// address: a block is read whole before any of it is written.
#include <algorithm>

#include "convert16.h"
#include "kernels.h"

namespace kiln::cpu::KILN_CPU_ISA {

namespace {

// The f32 kernel of node `nd` on one block: ins[i] are the block's widened
// inputs (n elements each; b of ADD/MUL already sliced to the block).
void run_block(const NodePlan& nd, const float* const* ins, float* out, int64_t n) {
  const Ctx one;  // one thread: the kernels run inline (for_chunks makes one chunk)
  const float* x = ins[0];
  switch (nd.op) {
    case KILN_OP_ADD: return add(one, x, ins[1], out, n, n);
    case KILN_OP_MUL: return mul(one, x, ins[1], out, n, n);
    case KILN_OP_SCALE: return scale(one, x, out, n, nd.fattrs[0]);
    case KILN_OP_GELU: return gelu(one, x, out, n);
    case KILN_OP_GELU_GRAD: return gelu_grad(one, x, ins[1], out, n);
    case KILN_OP_GELU_ERF: return gelu_erf(one, x, out, n);
    case KILN_OP_GELU_ERF_GRAD: return gelu_erf_grad(one, x, ins[1], out, n);
    case KILN_OP_SILU: return silu(one, x, out, n);
    case KILN_OP_SILU_GRAD: return silu_grad(one, x, ins[1], out, n);
    case KILN_OP_CLAMP: return clamp(one, x, out, n, nd.fattrs[0], nd.fattrs[1]);
    case KILN_OP_CLAMP_GRAD: return clamp_grad(one, x, ins[1], out, n, nd.fattrs[0], nd.fattrs[1]);
    default: return;
  }
}

}  // namespace

void elementwise_16bit(const Ctx& ctx, const NodePlan& nd, void* const* values) {
  const kiln_dtype dtype = nd.x_dtype;
  const size_t inputs = nd.in.size();
  const bool broadcast = nd.op == KILN_OP_ADD || nd.op == KILN_OP_MUL;
  const int64_t n = nd.count, inner = broadcast ? nd.bcast : n;
  auto* rows = static_cast<float*>(ctx.scratch);
  for_chunks(ctx, n, kElementwise16Block, [&](int64_t chunk, int64_t e0, int64_t e1) {
    float* mine = rows + chunk * static_cast<int64_t>(inputs + 1) * kElementwise16Block;
    float* out = mine + static_cast<int64_t>(inputs) * kElementwise16Block;
    const float* ins[2] = {mine, mine + kElementwise16Block};
    for (int64_t e = e0; e < e1;) {
      // The block ends at the chunk's end, after kElementwise16Block, or where b repeats.
      const int64_t len = std::min({e1 - e, kElementwise16Block, inner - e % inner});
      for (size_t i = 0; i < inputs; ++i) {
        const int64_t from = i == 1 && broadcast ? e % inner : e;
        widen_row(dtype, static_cast<const uint16_t*>(values[nd.in[i]]) + from, mine + i * kElementwise16Block, len);
      }
      run_block(nd, ins, out, len);
      narrow_row(dtype, out, static_cast<uint16_t*>(values[nd.out[0]]) + e, len);
      e += len;
    }
  });
}

}  // namespace kiln::cpu::KILN_CPU_ISA
