// Widening CASTs folded into the GEMM that reads them. Under --fp16 the
// weight gradients are computed in f32 (graph/widen_gradients.h): each one
// is a MATMUL of two f16 activations CAST to f32. gemm.comp's 16-bit build
// loads each binding in its own dtype and sums in f32, so reading the f16
// values themselves gives the same products with no converting copies and
// half the bytes read (the widening is exact). Where it is safe, the CAST
// is not lowered and its readers bind its source instead.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/ir_decode.hpp"

#pragma GCC visibility push(hidden)

namespace kiln::vk {

struct CastFolds {
  std::vector<int64_t> source_of;  // per value: the 16-bit value its readers load instead, or -1
  std::vector<bool> folded;        // per node: a CAST that is not lowered
};

// The CASTs of `g` from bf16/f16 to an f32 value in the arena (not a port)
// that only MATMULs read, whose source no node writes over from the CAST to
// its last reader included (the memory plan may reuse the source's bytes
// once the CAST has read them), and that are no stage of a fused chain
// (`in_chain`, per node).
CastFolds fold_widening_casts(const ir::DecodedGraph& g, const std::vector<bool>& in_chain);

}  // namespace kiln::vk

#pragma GCC visibility pop
