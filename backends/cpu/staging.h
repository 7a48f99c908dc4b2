// bf16/f16 storage for kernels that compute in f32: before such a node runs,
// its 16-bit inputs are widened into f32 copies in the node's scratch and
// its 16-bit outputs get f32 scratch to be written to; after it, those are
// rounded to nearest even into the real outputs (kiln/half.h). So every op
// runs on low-precision values with fp32 arithmetic and one rounding at the
// store, exactly the reference interpreter's definition, at the price of a
// pass over the data each way (fusing the conversions into the kernels is
// the faster path to come). CAST and the layout ops handle 16-bit elements
// themselves and are never staged.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/ir.h"
#include "kiln/ir_decode.hpp"

#pragma GCC visibility push(hidden)

namespace kiln::cpu {

struct StagedValue {
  uint32_t id = 0;  // the value id
  kiln_dtype dtype = KILN_BF16;
  int64_t numel = 0;
  uint64_t offset = 0;  // of its f32 copy in the staging area
  bool output = false;
};

struct Staging {
  std::vector<StagedValue> values;
  uint64_t bytes = 0;  // the staging area, 64-byte aligned pieces
  bool empty() const { return values.empty(); }
};

// Elementwise ops whose bf16/f16 values the kernels convert a block at a
// time (kernels_elementwise16.cpp), so they are never staged; the block, in
// elements.
bool converts_elementwise(kiln_op op);
inline constexpr int64_t kElementwise16Block = 2048;

// EMBEDDING_GRAD on 16-bit values: the bytes of its sorted row indices, at
// the start of its scratch (kept 64-byte aligned for the f32 rows after).
inline uint64_t embedding16_order_bytes(int64_t rows) { return (static_cast<uint64_t>(rows) * 4 + 63) / 64 * 64; }

// The staging of node `n` (empty when it touches no 16-bit value, or is an op
// that moves 16-bit elements itself).
Staging plan_staging(const ir::DecodedGraph& g, const ir::DecodedNode& n);

// Widens the staged inputs into `area` and points every staged id's address
// at its f32 copy, keeping the real addresses in `saved` (one per staged value).
void stage_in(const Staging& s, uint8_t* area, void** addresses, std::vector<void*>* saved);

// Rounds the staged outputs into their real addresses and restores them.
void stage_out(const Staging& s, void** addresses, const std::vector<void*>& saved);

}  // namespace kiln::cpu

#pragma GCC visibility pop
