// The template backends' kernels and op list, shared by both shapes of
// plugin in this directory: template.cpp (a device with memory and
// executables of its own) and interpreter.cpp (the kit's interpreter base).
// Keep one when you copy the directory; the kernels are plain loops.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/ir.h"
#include "kiln/plugin_kit.hpp"

namespace template_kernels {

// The ops run_node implements: the one list op_supported and compile read.
// Add an op here when the kernels below gain its loop.
const kiln_op kSupportedOps[] = {KILN_OP_FILL, KILN_OP_ADD,       KILN_OP_MUL,   KILN_OP_SCALE,
                                 KILN_OP_GELU, KILN_OP_GELU_GRAD, KILN_OP_MATMUL};

inline bool supported(int32_t op) {
  for (kiln_op s : kSupportedOps)
    if (s == op) return true;
  return false;
}

// The plain-loop MATMUL runs at well under a GFLOP/s: a GEMM of more
// multiply-adds than this is faster on kiln's cpu backend, copies included.
// (A GPU plugin draws the line the other way: GEMMs too small to pay for a
// launch stay on the host.)
constexpr int64_t kMaxMatmulMacs = int64_t{1} << 22;

// Why a node of a supported op does not run here, by its tensors' dtypes and
// shapes; empty when it does. The one answer op_supported_node gives the
// host and compile enforces (a host before ABI 1.2, or a plugin built on an
// older header, never asks per node).
inline std::string refusal(int32_t op, const std::vector<kiln::plugin_kit::NodeTensor>& inputs,
                           const std::vector<kiln::plugin_kit::NodeTensor>& outputs) {
  for (const std::vector<kiln::plugin_kit::NodeTensor>* side : {&inputs, &outputs})
    for (const kiln::plugin_kit::NodeTensor& t : *side)
      if (t.dtype != KILN_F32 && t.dtype != KILN_I32)
        return std::string("a ") + kiln_dtype_name(static_cast<kiln_dtype>(t.dtype)) +
               " tensor: the template backends store only f32 and i32";
  if (op == KILN_OP_MATMUL && !inputs.empty() && !outputs.empty() && !outputs[0].dims.empty()) {
    // y [.., M, N] = a [.., M, K] @ b: a's elements times N.
    const int64_t macs = inputs[0].numel() * outputs[0].dims.back();
    if (macs > kMaxMatmulMacs)
      return "a matmul of " + std::to_string(macs) + " multiply-adds, above the template's " +
             std::to_string(kMaxMatmulMacs);
  }
  return {};
}

// GELU with the tanh approximation, as kiln/ir.h defines it.
inline double gelu(double x) {
  const double k = 0.7978845608028654;  // sqrt(2 / pi)
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

inline double gelu_derivative(double x) {
  const double k = 0.7978845608028654;
  const double t = std::tanh(k * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x);
}

// y [.., M, N] = op(a) @ op(b) over the leading (batch) dims, summed in
// double: y's and a's dims as the IR gives them. kiln's op rules have
// matched the shapes, and y shares no memory with a or b.
inline void matmul(const std::vector<int64_t>& yd, const std::vector<int64_t>& ad, bool ta, bool tb, const float* a,
                   const float* b, float* y) {
  const int64_t rows = yd[yd.size() - 2], cols = yd.back(), inner = ta ? ad[ad.size() - 2] : ad.back();
  if (rows * cols == 0) return;
  int64_t numel = 1;
  for (int64_t d : yd) numel *= d;
  const int64_t batches = numel / (rows * cols);
  for (int64_t t = 0; t < batches; ++t, a += rows * inner, b += inner * cols, y += rows * cols)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        double sum = 0.0;
        for (int64_t k = 0; k < inner; ++k)
          sum +=
              static_cast<double>(ta ? a[k * rows + i] : a[i * inner + k]) * (tb ? b[j * inner + k] : b[k * cols + j]);
        y[i * cols + j] = static_cast<float>(sum);
      }
}

// An elementwise op over `count` elements of y; b (b_count elements)
// broadcasts over a's leading dims, as in kiln/ir.h. Every kernel reads
// element k of its inputs before writing element k of its output, so an
// output may share memory with an input (in-place updates; kiln updates in
// place only through elementwise ops).
inline void elementwise(kiln_op op, const std::vector<float>& fattrs, const float* a, const float* b, int64_t b_count,
                        float* y, int64_t count) {
  switch (op) {
    case KILN_OP_FILL:
      for (int64_t k = 0; k < count; ++k) y[k] = fattrs[0];
      break;
    case KILN_OP_ADD:
      for (int64_t k = 0; k < count; ++k) y[k] = a[k] + b[k % b_count];
      break;
    case KILN_OP_MUL:
      for (int64_t k = 0; k < count; ++k) y[k] = a[k] * b[k % b_count];
      break;
    case KILN_OP_SCALE:
      for (int64_t k = 0; k < count; ++k) y[k] = a[k] * fattrs[0];
      break;
    case KILN_OP_GELU:
      for (int64_t k = 0; k < count; ++k) y[k] = static_cast<float>(gelu(a[k]));
      break;
    case KILN_OP_GELU_GRAD:  // inputs (x, dy)
      for (int64_t k = 0; k < count; ++k) y[k] = static_cast<float>(b[k] * gelu_derivative(a[k]));
      break;
    default:  // compile's checks keep every other op away
      kiln::plugin_kit::fail(KILN_ERR_UNSUPPORTED, "unsupported op reached execute");
  }
}

}  // namespace template_kernels
