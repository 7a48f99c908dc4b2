// RESHAPE (copy), PERMUTE, SPLIT, CONCAT: data movement of 4-byte elements
// of any dtype, done as bit copies.
#include <cstring>

#include "kernels.h"

namespace kiln::cpu::KILN_CPU_ISA {

namespace {
constexpr int64_t kCopyGrain = 32768;  // elements (128 KiB) per chunk
// memmove, not memcpy: IR the host did not plan may overlap an output with
// its input; the result is then unspecified, but never undefined behaviour.
inline void copy_elems(uint32_t* dst, const uint32_t* src, int64_t n) {
  std::memmove(dst, src, static_cast<size_t>(n) * sizeof(uint32_t));
}
}  // namespace

void copy(const Ctx& ctx, const void* x, void* y, int64_t n) {
  if (x == y) return;
  auto* src = static_cast<const uint32_t*>(x);
  auto* dst = static_cast<uint32_t*>(y);
  for_chunks(ctx, n, kCopyGrain, [&](int64_t, int64_t b, int64_t e) { copy_elems(dst + b, src + b, e - b); });
}

// The plan has already merged dims that move together, so the common GPT
// cases ([B,T,H,D] <-> [B,H,T,D]) reduce to copying contiguous runs of D;
// real transposes (the input's fastest dim is not the output's) go through
// square tiles so both sides stay in L1.
void permute(const Ctx& ctx, const uint32_t* x, uint32_t* y, const PermutePlan& p) {
  const int r = p.rank;
  int64_t total = 1;
  for (int i = 0; i < r; ++i) total *= p.out_dims[i];
  if (r <= 1) {
    copy(ctx, x, y, total);
    return;
  }
  int64_t out_strides[KILN_IR_MAX_RANK];
  out_strides[r - 1] = 1;
  for (int i = r - 1; i > 0; --i) out_strides[i - 1] = out_strides[i] * p.out_dims[i];

  if (p.in_strides[r - 1] == 1) {
    const int64_t len = p.out_dims[r - 1];
    const int64_t outer = total / len;
    for_chunks(ctx, outer, grain_for(len), [&](int64_t, int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        int64_t rem = o, src = 0;
        for (int i = r - 2; i >= 0; --i) {
          src += (rem % p.out_dims[i]) * p.in_strides[i];
          rem /= p.out_dims[i];
        }
        copy_elems(y + o * len, x + src, len);
      }
    });
    return;
  }

  // q: the output dim that is contiguous in the input.
  int q = 0;
  for (int i = 0; i < r; ++i)
    if (p.in_strides[i] == 1) q = i;
  const int c = r - 1;
  int others[KILN_IR_MAX_RANK];
  int num_others = 0;
  int64_t outer = 1;
  for (int i = 0; i < r; ++i)
    if (i != q && i != c) {
      others[num_others++] = i;
      outer *= p.out_dims[i];
    }
  constexpr int64_t kTile = 32;
  const int64_t nq = p.out_dims[q], nc = p.out_dims[c];
  const int64_t q_tiles = (nq + kTile - 1) / kTile;
  const int64_t sq_out = out_strides[q], sc_in = p.in_strides[c];
  for_chunks(ctx, outer * q_tiles, grain_for(kTile * nc), [&](int64_t, int64_t w0, int64_t w1) {
    for (int64_t w = w0; w < w1; ++w) {
      int64_t o = w / q_tiles, a0 = (w % q_tiles) * kTile;
      int64_t a1 = a0 + kTile < nq ? a0 + kTile : nq;
      int64_t rem = o, src = 0, dst = 0;
      for (int j = num_others - 1; j >= 0; --j) {
        int d = others[j];
        int64_t idx = rem % p.out_dims[d];
        rem /= p.out_dims[d];
        src += idx * p.in_strides[d];
        dst += idx * out_strides[d];
      }
      for (int64_t b0 = 0; b0 < nc; b0 += kTile) {
        int64_t b1 = b0 + kTile < nc ? b0 + kTile : nc;
        for (int64_t b = b0; b < b1; ++b) {
          const uint32_t* in = x + src + b * sc_in;
          uint32_t* out = y + dst + b;
          for (int64_t a = a0; a < a1; ++a) out[a * sq_out] = in[a];
        }
      }
    }
  });
}

// x [rows, parts * inner] -> ys[k] [rows, inner]
void split(const Ctx& ctx, const uint32_t* x, uint32_t* const* ys, int64_t rows, int64_t parts, int64_t inner) {
  for_chunks(ctx, rows * parts, grain_for(inner), [&](int64_t, int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      int64_t row = i / parts, part = i % parts;
      copy_elems(ys[part] + row * inner, x + i * inner, inner);
    }
  });
}

// xs[k] [rows, inners[k]] -> y [rows, inner]
void concat(const Ctx& ctx, const uint32_t* const* xs, const int64_t* inners, int64_t count, uint32_t* y, int64_t rows,
            int64_t inner) {
  for_chunks(ctx, rows, grain_for(inner), [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      uint32_t* dst = y + r * inner;
      for (int64_t k = 0; k < count; ++k) {
        copy_elems(dst, xs[k] + r * inners[k], inners[k]);
        dst += inners[k];
      }
    }
  });
}

}  // namespace kiln::cpu::KILN_CPU_ISA
