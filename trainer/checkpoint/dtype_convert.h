// f32 <-> bf16 / f16 conversion for exported tensors. Narrowing rounds to
// nearest, ties to even (what PyTorch's .to(torch.bfloat16/float16) does), so
// an export matches a conversion done in Python; widening is exact.
#pragma once

#include <string>

#include "trainer/checkpoint/safetensors.h"

namespace kiln::trainer {

// `dtype` is a safetensors name: "F32", "BF16" or "F16". Throws kiln::Error
// for any other dtype.
SafeTensor convert_f32_tensor(const SafeTensor& f32, const std::string& dtype);

// Any of F32, BF16, F16 to F32 (exact). Throws kiln::Error naming `what`
// for another dtype.
SafeTensor widen_to_f32(const SafeTensor& t, const std::string& what);

}  // namespace kiln::trainer
