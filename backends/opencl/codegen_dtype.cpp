// How generated kernels read and write bf16 and f16 values: 16-bit storage,
// f32 arithmetic, one rounding to nearest even at each store (the
// reference's definition, kiln/half.h). No device extension is needed: a
// bf16 is a ushort holding the high half of an f32, and an f16 goes through
// OpenCL 1.2's core vload_half / vstore_half_rte, which take a half pointer
// without cl_khr_fp16. No f16 arithmetic is used anywhere.
#include "emit.h"

namespace kiln::ocl {

bool is_16bit(kiln_dtype dt) { return dt == KILN_BF16 || dt == KILN_F16; }

std::string float_pointer_type(kiln_dtype dt, bool writable) {
  const std::string base = dt == KILN_BF16 ? "ushort" : dt == KILN_F16 ? "half" : "float";
  return writable ? base : "const " + base;
}

std::string load_float(kiln_dtype dt, const std::string& ptr, const std::string& index) {
  if (dt == KILN_BF16) return "kiln_bf16_f32(" + ptr + "[" + index + "])";
  if (dt == KILN_F16) return "vload_half(" + index + ", " + ptr + ")";
  return ptr + "[" + index + "]";
}

std::string store_float(kiln_dtype dt, const std::string& ptr, const std::string& index, const std::string& value) {
  if (dt == KILN_BF16) return ptr + "[" + index + "] = kiln_f32_bf16(" + value + ");";
  if (dt == KILN_F16) return "vstore_half_rte(" + value + ", " + index + ", " + ptr + ");";
  return ptr + "[" + index + "] = " + value + ";";
}

std::string round_float(kiln_dtype dt, const std::string& value) {
  if (dt == KILN_BF16) return "kiln_round_bf16(" + value + ")";
  if (dt == KILN_F16) return "kiln_round_f16(" + value + ")";
  return value;
}

// Emitted only into programs that hold a 16-bit value, so f32 programs keep
// their source (and their compile-cache entries) byte for byte.
const char* const kLowPrecisionPrelude =
    "// bf16: the high 16 bits of an f32. Rounding adds 0x7FFF plus the kept\n"
    "// lowest bit (to nearest, ties to even); a NaN keeps its sign and top\n"
    "// payload and is made quiet, as kiln/half.h does.\n"
    "inline float kiln_bf16_f32(ushort h) { return as_float((uint)h << 16); }\n"
    "inline ushort kiln_f32_bf16(float f) {\n"
    "  const uint u = as_uint(f);\n"
    "  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (ushort)((u >> 16) | 0x40u);\n"
    "  return (ushort)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);\n"
    "}\n"
    "inline float kiln_round_bf16(float f) { return kiln_bf16_f32(kiln_f32_bf16(f)); }\n"
    "// f16 rounded in a register: through a private 16-bit word, with the\n"
    "// same round-to-nearest-even store the kernels use for memory.\n"
    "inline float kiln_round_f16(float f) {\n"
    "  ushort h;\n"
    "  vstore_half_rte(f, 0, (__private half*)&h);\n"
    "  return vload_half(0, (const __private half*)&h);\n"
    "}\n\n";

}  // namespace kiln::ocl
