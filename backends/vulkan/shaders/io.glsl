// Storage-buffer operands that may hold bf16 or f16 values (issue 33): a
// shader declares each operand with KILN_BUFFER(binding, name) and reads and
// writes it through name_ld(i) and name_st(i, v), in f32. Built twice
// (CMakeLists.txt): plain, where the macros are f32 arrays, and with
// KILN_16BIT (the "<shader>16" SPIR-V), where specialization constant 15
// packs each binding's dtype in 2 bits (0 f32, 1 bf16, 2 f16; lowering.cpp's
// Pipeline::dtypes) and a 16-bit binding is a uint16_t array converted in
// registers by half.glsl. So ops compute in f32 and round once at the store,
// as the op table's type rules say, with no staging pass; and the plain
// build declares no 16-bit storage, so it runs on a device without it.
// Indices are in the binding's own elements: execute passes a 16-bit
// window's base offset in 2-byte units.
#ifdef KILN_16BIT
#extension GL_EXT_shader_16bit_storage : require
#include "half.glsl"

layout(constant_id = 15) const uint kDtypes = 0u;

uint kiln_dtype(uint binding) { return (kDtypes >> (2u * binding)) & 3u; }
float kiln_widen(uint dt, uint h) { return uintBitsToFloat(dt == 1u ? bf16_to_f32(h) : f16_to_f32(h)); }
uint kiln_narrow(uint dt, float v) {
  uint u = floatBitsToUint(v);
  return dt == 1u ? f32_to_bf16(u) : f32_to_f16(u);
}

#define KILN_BUFFER(B, NAME)                                                                   \
  layout(std430, set = 0, binding = B) buffer NAME##_f32_ { float NAME##_f32[]; };             \
  layout(std430, set = 0, binding = B) buffer NAME##_u16_ { uint16_t NAME##_u16[]; };          \
  float NAME##_ld(uint i) {                                                                    \
    return kiln_dtype(B) == 0u ? NAME##_f32[i] : kiln_widen(kiln_dtype(B), uint(NAME##_u16[i])); \
  }                                                                                            \
  void NAME##_st(uint i, float v) {                                                            \
    if (kiln_dtype(B) == 0u)                                                                   \
      NAME##_f32[i] = v;                                                                       \
    else                                                                                       \
      NAME##_u16[i] = uint16_t(kiln_narrow(kiln_dtype(B), v));                                 \
  }
#else
#define KILN_BUFFER(B, NAME)                                                       \
  layout(std430, set = 0, binding = B) buffer NAME##_f32_ { float NAME##_f32[]; }; \
  float NAME##_ld(uint i) { return NAME##_f32[i]; }                                \
  void NAME##_st(uint i, float v) { NAME##_f32[i] = v; }
#endif
