// The dispatch list an executable carries: what runs, in order, on one
// in-order queue, and where every operand lives. Produced by code generation
// at compile, serialized into the executable bytes, replayed by execute.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common.h"
#include "kiln/plugin_kit.hpp"

#pragma GCC visibility push(hidden)

namespace kiln::ocl {

using plugin_kit::Reader;
using plugin_kit::Writer;

// Where an operand's memory is at execute time.
enum class Mem : uint8_t {
  Slot = 0,   // the buffer the host binds to `slot`
  Arena = 1,  // the plugin's own arena plan (inside slot 0 when it fits)
  Flag = 2,   // the executable's error flag (one int)
};

// Offsets are in elements: kernels take (buffer, element offset) pairs
// instead of sub-buffers, which have device-specific alignment rules. An
// element is 4 bytes except for a bf16/f16 value passed to a kernel (2
// bytes); GEMM and Copy steps only ever get 4-byte elements.
struct Ref {
  Mem mem = Mem::Slot;
  uint32_t slot = 0;
  uint64_t offset = 0;
};

enum class StepKind : uint8_t {
  Kernel = 0,  // args: one Ref per (pointer, offset) parameter pair
  Gemm = 1,    // args: a, b, c (row-major CLBlast call, strided batch)
  Copy = 2,    // args: src, dst; contiguous `bytes`
};

struct Step {
  StepKind kind = StepKind::Kernel;
  int32_t node = -1;  // first IR node the step implements, for messages
  std::string label;  // what it computes, for KILN_OPENCL_PROFILE
  std::vector<Ref> args;
  // Kernel
  uint32_t kernel = 0;
  uint32_t dims = 1;
  uint64_t global[3] = {1, 1, 1};
  uint64_t local[3] = {0, 0, 0};  // 0: let the runtime choose
  // Gemm
  bool trans_a = false, trans_b = false;
  uint64_t batch = 1, m = 0, n = 0, k = 0;
  float beta = 0.0f;
  // Copy
  uint64_t bytes = 0;
};

struct Schedule {
  uint32_t num_slots = 0;
  std::vector<uint64_t> slot_bytes;  // bytes each bound slot must hold
  uint64_t arena_bytes = 0;          // the plugin's arena plan
  bool arena_in_slot0 = false;       // the plan fits the host's slot 0
  std::vector<std::string> kernel_names;
  std::vector<Step> steps;
  // A kernel that finds a bad index stores the lowest index into this list
  // it failed (atomic_min) in the flag; execute reports that message.
  std::vector<std::string> checks;

  void write(Writer& w) const;
  static Schedule read(Reader& r);  // throws KILN_ERR_CORRUPT on bad bytes
};

}  // namespace kiln::ocl

#pragma GCC visibility pop
