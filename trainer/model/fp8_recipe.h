// FP8 training in the model graph (Megatron's --fp8-format with Transformer
// Engine's linear layers): each of a transformer layer's four linear layers
// (linear_qkv, linear_proj, linear_fc1, linear_fc2) casts its input and its
// weight with CAST_FP8 before the GEMM, and its output's gradient with
// FP8_GRAD_CAST's VJP before the GEMM's backward: TE's fprop, dgrad and
// wgrad on FP8 operands (kiln/ops.h). The embedding, the LM head and the
// attention core stay in the compute dtype, as under TE.
//
// Each cast tensor has a scale, a runtime input of the step graphs, so
// every layer's graph is the same (compile units stay shared), and with the
// delayed recipe an amax output the host keeps a history of
// (trainer/fp8_state.h). Both are named after the tensor:
//   fp8_scale.<linear>.<role>   input  [1] f32
//   fp8_amax.<linear>.<role>    output [1] f32
// <linear> a parameter prefix ("decoder.layers.3.mlp.linear_fc1"), <role>
// input, weight or grad_output.
#pragma once

#include <string>
#include <vector>

#include "kiln/fp8.h"

namespace kiln::trainer {

struct Fp8Recipe {
  bool enabled = false;
  kiln_fp8_format forward = KILN_FP8_E4M3;   // inputs and weights
  kiln_fp8_format backward = KILN_FP8_E4M3;  // output gradients: E5M2 under --fp8-format hybrid
  // --fp8-recipe tensorwise: each cast's scale from its own tensor's amax;
  // otherwise (delayed) the scale input, from the amax history.
  bool current = false;
};

inline constexpr const char* kFp8ScalePrefix = "fp8_scale.";
inline constexpr const char* kFp8AmaxPrefix = "fp8_amax.";
inline constexpr const char* kFp8Roles[] = {"input", "weight", "grad_output"};

// "<linear>.<role>": the name a cast tensor's scale, amax and checkpoint
// state go by.
inline std::string fp8_tensor_name(const std::string& linear, const char* role) { return linear + "." + role; }
inline std::string fp8_scale_port(const std::string& tensor) { return kFp8ScalePrefix + tensor; }
inline std::string fp8_amax_port(const std::string& tensor) { return kFp8AmaxPrefix + tensor; }
// The tensor a port is for, or "" if the port is not an FP8 one of that kind.
std::string fp8_tensor_of_scale_port(const std::string& port);
std::string fp8_tensor_of_amax_port(const std::string& port);

// The four linear layers of layer l, by parameter prefix.
std::vector<std::string> fp8_linears(int64_t layer);

}  // namespace kiln::trainer
