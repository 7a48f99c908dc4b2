#include "trainer/checkpoint/dtype_convert.h"

#include <cstdint>
#include <vector>

#include "core/error.h"
#include "kiln/half.h"

namespace kiln::trainer {

// The conversions are kiln/half.h's, shared with the IR's bf16/f16 dtypes.
namespace {

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
  for (size_t i = 0; i < v.size(); ++i) out[i] = dtype == "BF16" ? kiln_f32_to_bf16(v[i]) : kiln_f32_to_f16(v[i]);
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
    v[i] = t.dtype == "BF16" ? kiln_bf16_to_f32(h) : kiln_f16_to_f32(h);
  }
  return SafeTensor::from_f32(t.shape, v);
}

}  // namespace kiln::trainer
