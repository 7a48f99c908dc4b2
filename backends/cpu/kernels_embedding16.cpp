// EMBEDDING and EMBEDDING_GRAD on bf16/f16 storage. The table is the
// largest tensor after the logits ([V, C]), so neither gets an f32 copy:
// the gather moves 16-bit rows as they are (exact), and the scatter-add
// sums each table row's gradient rows in f32, in row order as the f32
// kernel does, and rounds the sum once into the 16-bit table.
#include <algorithm>
#include <cstring>

#include "convert16.h"
#include "kernels.h"

namespace kiln::cpu::KILN_CPU_ISA {

void embedding_16bit(const Ctx& ctx, const uint16_t* table, const int32_t* ids, uint16_t* y, int64_t rows,
                     int64_t cols) {
  for_chunks(ctx, rows, grain_for(cols), [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      std::memcpy(y + r * cols, table + static_cast<int64_t>(ids[r]) * cols,
                  static_cast<size_t>(cols) * sizeof(uint16_t));
  });
}

// Scratch: the rows' indices sorted by (id, row), then each worker's f32
// sum and widened row. Each worker owns a range of the vocabulary and the
// runs of sorted indices whose id falls in it.
void embedding_grad_16bit(const Ctx& ctx, kiln_dtype dtype, const uint16_t* dy, const int32_t* ids, uint16_t* dtable,
                          int64_t rows, int64_t cols, int64_t vocab) {
  auto* order = static_cast<int32_t*>(ctx.scratch);
  auto* buffers = reinterpret_cast<float*>(static_cast<uint8_t*>(ctx.scratch) + embedding16_order_bytes(rows));
  for (int64_t r = 0; r < rows; ++r) order[r] = static_cast<int32_t>(r);
  std::sort(order, order + rows, [&](int32_t a, int32_t b) { return ids[a] != ids[b] ? ids[a] < ids[b] : a < b; });
  for_chunks(ctx, vocab, grain_for(cols), [&](int64_t chunk, int64_t v0, int64_t v1) {
    // Zeros are 0x0000 in both 16-bit formats; untouched rows stay zero.
    std::memset(dtable + v0 * cols, 0, static_cast<size_t>((v1 - v0) * cols) * sizeof(uint16_t));
    float* sum = buffers + chunk * 2 * cols;
    float* row = sum + cols;
    const int32_t* it = std::lower_bound(order, order + rows, v0, [&](int32_t r, int64_t v) { return ids[r] < v; });
    const int32_t* end = order + rows;
    while (it != end && ids[*it] < v1) {
      const int32_t id = ids[*it];
      std::fill(sum, sum + cols, 0.0f);
      for (; it != end && ids[*it] == id; ++it) {
        widen_row(dtype, dy + static_cast<int64_t>(*it) * cols, row, cols);
        for (int64_t c = 0; c < cols; ++c) sum[c] += row[c];
      }
      narrow_row(dtype, sum, dtable + static_cast<int64_t>(id) * cols, cols);
    }
  });
}

}  // namespace kiln::cpu::KILN_CPU_ISA
