// The dispatch list an executable carries: the pipelines (shader +
// specialization constants) it needs and, in order, every dispatch with its
// buffer windows, push constants and workgroup counts. Produced by
// lowering.cpp at compile, serialized into the executable bytes, recorded
// into one command buffer by execute.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common.h"

#pragma GCC visibility push(hidden)

namespace kiln::vk {

// Where an operand's memory is at execute time.
enum class Mem : uint8_t {
  Slot = 0,     // the buffer the host binds to `slot`
  Scratch = 1,  // the executable's own scratch buffer (row statistics, partial sums)
  Flag = 2,     // the executable's error flag (one int, reset to INT32_MAX)
};

struct Ref {
  Mem mem = Mem::Slot;
  uint32_t slot = 0;
  uint64_t offset = 0;  // bytes, a multiple of the element size (4, or 2 for bf16/f16)
};

// One storage-buffer binding: a window [offset, offset + bytes) that never
// exceeds the device's maxStorageBufferRange.
struct Binding {
  Ref ref;
  uint64_t bytes = 0;
  bool writes = false;
};

inline constexpr size_t kMaxBindings = 8;
inline constexpr size_t kMaxPushWords = 32;  // 128 bytes: the guaranteed minimum

// Each binding's dtype code in shaders/io.glsl: 0 f32 (or any 32-bit
// element), 1 bf16, 2 f16.
inline constexpr uint32_t kDtypeF32 = 0, kDtypeBF16 = 1, kDtypeF16 = 2;

struct Pipeline {
  uint32_t shader = 0;         // index into Schedule::shaders
  std::vector<uint32_t> spec;  // specialization constants 0..n-1
  // 2 bits per binding (binding k at bits 2k), the dtype codes above; not
  // 0 only for a "<shader>16" build, which reads it as constant 15. A
  // 16-bit binding's element offset (Dispatch::push) is in 2-byte units.
  uint32_t dtypes = 0;
  uint32_t dtype(size_t binding) const { return (dtypes >> (2 * binding)) & 3u; }
};
inline constexpr uint32_t kDtypesConstant = 15;

struct Dispatch {
  uint32_t pipeline = 0;
  int32_t node = -1;     // IR node it implements, for messages
  bool barrier = false;  // a pipeline barrier before it (it depends on earlier work)
  uint32_t groups[3] = {1, 1, 1};
  std::vector<Binding> bindings;
  // Push constants; the first bindings.size() words are the element offsets
  // of each window inside its aligned binding, filled in at execute.
  std::vector<uint32_t> push;
};

struct Schedule {
  uint32_t num_slots = 0;
  std::vector<uint64_t> slot_bytes;  // bytes each bound slot must hold
  uint64_t scratch_bytes = 0;
  std::vector<std::string> shaders;  // shader names, see shaders.h
  std::vector<Pipeline> pipelines;
  std::vector<Dispatch> dispatches;
  // A shader that finds a bad index stores the lowest index into this list
  // it failed (atomicMin) in the flag; execute reports that message.
  std::vector<std::string> checks;

  void write(Writer& w) const;
  static Schedule read(Reader& r);  // throws KILN_ERR_CORRUPT on bad bytes
};

}  // namespace kiln::vk

#pragma GCC visibility pop
