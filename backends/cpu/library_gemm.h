// GEMM through oneDNN's matmul primitive (Debian's libdnnl, the library under
// PyTorch's CPU path): f32 operands, or bf16/f16 operands with f32
// accumulation and C rounded once to the operands' type, as the op table's
// MATMUL rule says. The cpu backend uses it per shape where a measurement
// found it faster than its own kernel (gemm_choice.h).
//
// Threads: oneDNN's own OpenMP team would spin beside kiln's pool on the
// same cores. Instead C is cut into a fixed grid of blocks that depends only
// on the shape, and kiln's pool runs the blocks, each as one single-threaded
// oneDNN call. Every element's K sum is thus done by the same call whatever
// the thread count, so results are bitwise the same with 1 or N threads (the
// data-parallel equality needs that).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "isa.h"
#include "kiln/ir.h"
#include "thread_pool.h"

#pragma GCC visibility push(hidden)

namespace kiln::cpu {

// One MATMUL item: C[m,n] = op(A) @ op(B), row-major, all of `dtype`.
struct GemmShape {
  kiln_dtype dtype = KILN_F32;
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
};

class LibraryGemm {
 public:
  // Prepares the primitives for every block of `shape`, limited to `isa`'s
  // instructions. nullptr when oneDNN has no implementation for it (f16 on a
  // CPU without AVX512-FP16, for example) or `isa` is the baseline path;
  // `why` then says so.
  static std::shared_ptr<const LibraryGemm> create(const GemmShape& shape, CpuIsa isa, std::string* why);
  virtual ~LibraryGemm() = default;
  // C = op(A) @ op(B) for one item, across `pool`. Throws kiln::cpu::LibraryGemmError.
  virtual void run(const void* a, const void* b, void* c, ThreadPool& pool) const = 0;
  // oneDNN's implementation name for the largest block ("brg:avx512_core_bf16", ...).
  virtual std::string implementation() const = 0;
};

// A oneDNN failure while running (the plugin kit reports it naming the call).
class LibraryGemmError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace kiln::cpu

#pragma GCC visibility pop
