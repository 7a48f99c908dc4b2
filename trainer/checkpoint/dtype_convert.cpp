#include "trainer/checkpoint/dtype_convert.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/error.h"

namespace kiln::trainer {

namespace {

uint32_t bits_of(float f) {
  uint32_t u = 0;
  std::memcpy(&u, &f, 4);
  return u;
}

float float_of(uint32_t u) {
  float f = 0;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t f32_to_bf16(float f) {
  uint32_t u = bits_of(f);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40);  // stays a (quiet) NaN
  u += 0x7FFF + ((u >> 16) & 1);                                      // round to nearest even
  return static_cast<uint16_t>(u >> 16);
}

// IEEE binary16, round to nearest even, overflow to infinity, subnormals kept.
uint16_t f32_to_f16(float f) {
  const uint32_t u = bits_of(f);
  const auto sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const uint32_t abs = u & 0x7FFFFFFF;
  if (abs > 0x7F800000) return static_cast<uint16_t>(sign | 0x7E00);   // NaN
  if (abs >= 0x477FF000) return static_cast<uint16_t>(sign | 0x7C00);  // rounds to >= 65536: inf
  if (abs < 0x38800000) {  // below f16's smallest normal: a subnormal (or zero)
    // Scale so the f16 subnormal unit (2^-24) becomes 1, then round in float
    // arithmetic, which rounds to nearest even exactly.
    const float scaled = float_of(abs) * 16777216.0f;
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(scaled)));
  }
  uint32_t h = abs - 0x38000000;  // rebias the exponent from 127 to 15
  h += 0x0FFF + ((h >> 13) & 1);  // round the 13 dropped mantissa bits to nearest even
  return static_cast<uint16_t>(sign | (h >> 13));
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  if (exp == 0) {
    const float v = static_cast<float>(mant) / 16777216.0f;  // mant * 2^-24
    return float_of(bits_of(v) | sign);
  }
  if (exp == 31) return float_of(sign | 0x7F800000 | (mant << 13));
  return float_of(sign | ((exp + 112) << 23) | (mant << 13));
}

SafeTensor from_u16(const std::vector<int64_t>& shape, const std::string& dtype, const std::vector<uint16_t>& v) {
  SafeTensor t;
  t.dtype = dtype;
  t.shape = shape;
  t.data.resize(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {  // little-endian, whatever the host
    t.data[2 * i] = static_cast<uint8_t>(v[i] & 0xFF);
    t.data[2 * i + 1] = static_cast<uint8_t>(v[i] >> 8);
  }
  return t;
}

}  // namespace

SafeTensor convert_f32_tensor(const SafeTensor& f32, const std::string& dtype) {
  if (dtype == "F32") return f32;
  if (dtype != "BF16" && dtype != "F16") throw Error("cannot write tensors as " + dtype + "; use f32, f16 or bf16");
  const std::vector<float> v = f32.to_f32();
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = dtype == "BF16" ? f32_to_bf16(v[i]) : f32_to_f16(v[i]);
  return from_u16(f32.shape, dtype, out);
}

SafeTensor widen_to_f32(const SafeTensor& t, const std::string& what) {
  if (t.dtype == "F32") return t;
  if (t.dtype != "BF16" && t.dtype != "F16")
    throw Error(what + " is " + t.dtype + "; kiln reads F32, F16 or BF16 tensors");
  const size_t n = t.data.size() / 2;
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    const auto h = static_cast<uint16_t>(t.data[2 * i] | (t.data[2 * i + 1] << 8));
    v[i] = t.dtype == "BF16" ? float_of(static_cast<uint32_t>(h) << 16) : f16_to_f32(h);
  }
  return SafeTensor::from_f32(t.shape, v);
}

}  // namespace kiln::trainer
