// RESHAPE (copy), PERMUTE, SPLIT, CONCAT: data movement of 4-byte (f32,
// i32) or 2-byte (bf16, f16) elements, done as bit copies, so even a NaN's
// payload arrives unchanged. One template per op, instantiated for both
// element sizes.
#include <cstring>

#include "kernels.h"

namespace kiln::cpu::KILN_CPU_ISA {

namespace {
constexpr int64_t kCopyBytesGrain = 131072;  // bytes per chunk
// memmove, not memcpy: the decoder refuses a partial overlap of output and
// input (ir.h), but a copy should stay defined even if that ever slipped.
template <class T>
inline void copy_elems(T* dst, const T* src, int64_t n) {
  std::memmove(dst, src, static_cast<size_t>(n) * sizeof(T));
}
}  // namespace

void copy(const Ctx& ctx, const void* x, void* y, int64_t n, int64_t elem_bytes) {
  if (x == y) return;
  auto* src = static_cast<const unsigned char*>(x);
  auto* dst = static_cast<unsigned char*>(y);
  for_chunks(ctx, n * elem_bytes, kCopyBytesGrain,
             [&](int64_t, int64_t b, int64_t e) { copy_elems(dst + b, src + b, e - b); });
}

namespace {

// The plan has already merged dims that move together, so the common GPT
// cases ([B,T,H,D] <-> [B,H,T,D]) reduce to copying contiguous runs of D;
// real transposes (the input's fastest dim is not the output's) go through
// square tiles so both sides stay in L1.
template <class T>
void permute_elems(const Ctx& ctx, const T* x, T* y, const PermutePlan& p) {
  const int r = p.rank;
  int64_t total = 1;
  for (int i = 0; i < r; ++i) total *= p.out_dims[i];
  if (r <= 1) {
    copy(ctx, x, y, total, sizeof(T));
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
          const T* in = x + src + b * sc_in;
          T* out = y + dst + b;
          for (int64_t a = a0; a < a1; ++a) out[a * sq_out] = in[a];
        }
      }
    }
  });
}

// x [rows, parts * inner] -> ys[k] [rows, inner]
template <class T>
void split_elems(const Ctx& ctx, const T* x, void* const* ys, int64_t rows, int64_t parts, int64_t inner) {
  for_chunks(ctx, rows * parts, grain_for(inner), [&](int64_t, int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      int64_t row = i / parts, part = i % parts;
      copy_elems(static_cast<T*>(ys[part]) + row * inner, x + i * inner, inner);
    }
  });
}

// xs[k] [rows, inners[k]] -> y [rows, inner]
template <class T>
void concat_elems(const Ctx& ctx, const void* const* xs, const int64_t* inners, int64_t count, T* y, int64_t rows,
                  int64_t inner) {
  for_chunks(ctx, rows, grain_for(inner), [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      T* dst = y + r * inner;
      for (int64_t k = 0; k < count; ++k) {
        copy_elems(dst, static_cast<const T*>(xs[k]) + r * inners[k], inners[k]);
        dst += inners[k];
      }
    }
  });
}

}  // namespace

// Element sizes: 4 (f32, i32) or 2 (bf16, f16); the pointers are the
// values' addresses.
void permute(const Ctx& ctx, const void* x, void* y, const PermutePlan& p, int64_t elem_bytes) {
  if (elem_bytes == 2)
    permute_elems(ctx, static_cast<const uint16_t*>(x), static_cast<uint16_t*>(y), p);
  else
    permute_elems(ctx, static_cast<const uint32_t*>(x), static_cast<uint32_t*>(y), p);
}

void split(const Ctx& ctx, const void* x, void* const* ys, int64_t rows, int64_t parts, int64_t inner,
           int64_t elem_bytes) {
  if (elem_bytes == 2)
    split_elems(ctx, static_cast<const uint16_t*>(x), ys, rows, parts, inner);
  else
    split_elems(ctx, static_cast<const uint32_t*>(x), ys, rows, parts, inner);
}

void concat(const Ctx& ctx, const void* const* xs, const int64_t* inners, int64_t count, void* y, int64_t rows,
            int64_t inner, int64_t elem_bytes) {
  if (elem_bytes == 2)
    concat_elems(ctx, xs, inners, count, static_cast<uint16_t*>(y), rows, inner);
  else
    concat_elems(ctx, xs, inners, count, static_cast<uint32_t*>(y), rows, inner);
}

}  // namespace kiln::cpu::KILN_CPU_ISA
