// The elementwise ops (staging.h's converts_elementwise) on bf16/f16
// storage: each worker widens a block of kElementwise16Block elements of
// every input into its f32 rows of scratch, runs the op's f32 kernel
// (run_elementwise, the same call an f32 node makes) on the block on its own
// thread, and rounds the block into the output. Blocks never cross a repeat
// of a broadcasting op's b, so b's slice of a block is contiguous too. The
// output may be at an input's address: a block is read whole before any of
// it is written.
#include <algorithm>

#include "convert16.h"
#include "kernels.h"

namespace kiln::cpu::KILN_CPU_ISA {

void elementwise_16bit(const Ctx& ctx, const NodePlan& nd, void* const* values) {
  const kiln_dtype dtype = nd.y_dtype;  // every input's too (FILL has none)
  const size_t inputs = nd.in.size();
  const bool broadcast = kiln_op_table[nd.op].rule == KILN_RULE_BROADCAST;
  const int64_t n = nd.count, inner = broadcast ? nd.bcast : n;
  auto* rows = static_cast<float*>(ctx.scratch);
  for_chunks(ctx, n, kElementwise16Block, [&](int64_t chunk, int64_t e0, int64_t e1) {
    float* mine = rows + chunk * static_cast<int64_t>(inputs + 1) * kElementwise16Block;
    float* out = mine + static_cast<int64_t>(inputs) * kElementwise16Block;
    const float* ins[kMaxElementwiseInputs] = {};
    for (size_t i = 0; i < inputs; ++i) ins[i] = mine + static_cast<int64_t>(i) * kElementwise16Block;
    const Ctx one;  // one thread: the kernel runs inline (for_chunks makes one chunk)
    for (int64_t e = e0; e < e1;) {
      // The block ends at the chunk's end, after kElementwise16Block, or where b repeats.
      const int64_t len = std::min({e1 - e, kElementwise16Block, inner - e % inner});
      for (size_t i = 0; i < inputs; ++i) {
        const int64_t from = i == 1 && broadcast ? e % inner : e;
        widen_row(dtype, static_cast<const uint16_t*>(values[nd.in[i]]) + from, mine + i * kElementwise16Block, len);
      }
      run_elementwise(one, nd, ins, out, len, len);
      narrow_row(dtype, out, static_cast<uint16_t*>(values[nd.out[0]]) + e, len);
      e += len;
    }
  });
}

}  // namespace kiln::cpu::KILN_CPU_ISA
