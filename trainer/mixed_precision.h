// Megatron-LM's mixed-precision flags (--bf16, --fp16 and fp16's loss
// scaling, the precision-aware optimizer's --main-grads-dtype), and what
// they make of the model: a compute dtype for the forward and backward, and
// the dtype the main gradients accumulate and are reduced in. Main
// parameters and AdamW moments stay f32 (docs/MIXED_PRECISION.md).
#pragma once

#include <cstdint>
#include <string>

#include "core/backend.h"
#include "kiln/ir.h"
#include "trainer/flags.h"
#include "trainer/model/fp8_recipe.h"

namespace kiln::trainer {

struct MixedPrecision {
  bool bf16 = false;
  bool fp16 = false;
  // fp16 loss scaling, Megatron's defaults. loss_scale > 0: a static scale.
  double loss_scale = 0;
  double initial_loss_scale = 4294967296.0;  // 2^32
  double min_loss_scale = 1.0;
  int64_t loss_scale_window = 1000;
  int64_t hysteresis = 2;
  // Accepted for Megatron's scripts: kiln always does what they ask (see
  // register_flags for each one's meaning here).
  bool attention_softmax_in_fp32 = false;
  bool accumulate_allreduce_grads_in_fp32 = false;
  bool apply_query_key_layer_scaling = false;
  // Megatron's precision-aware optimizer: --main-grads-dtype bf16 (with
  // --bf16) keeps the grad.* accumulators, their micro-batch sums and the
  // data-parallel reduction in bf16; the optimizer widens them to f32.
  bool use_precision_aware_optimizer = false;
  std::string main_grads_dtype = "fp32";
  // --grad-reduce-in-bf16 (with --bf16): the same bf16 accumulators and
  // reduction without the precision-aware optimizer, which then reads an f32
  // copy of each gradient and clips that copy in f32 (Megatron's
  // `main_param.grad = main_grad.float()`).
  bool grad_reduce_in_bf16 = false;
  // FP8 training (docs/MIXED_PRECISION.md, "FP8"): Megatron's --fp8-* flags
  // with Transformer Engine's recipes; "" format: none.
  std::string fp8_format;
  std::string fp8_recipe = "delayed";
  int64_t fp8_amax_history_len = 1;
  std::string fp8_amax_compute_algo = "most_recent";
  int64_t fp8_margin = 0;
  int64_t fp8_interval = 1;
  bool fp8_param_gather = false;

  void register_flags(Flags& flags);
  // Throws kiln::Error naming the flag for a bad combination or value.
  void finalize() const;
  void finalize_fp8() const;

  // f32, bf16 or f16.
  kiln_dtype compute_dtype() const { return bf16 ? KILN_BF16 : fp16 ? KILN_F16 : KILN_F32; }
  // The dtype of the main gradients (grad.*, grad_shard.*, the
  // data-parallel buckets): f32, or bf16 with --main-grads-dtype bf16 or
  // --grad-reduce-in-bf16.
  kiln_dtype grad_dtype() const { return main_grads_dtype == "bf16" || grad_reduce_in_bf16 ? KILN_BF16 : KILN_F32; }
  // Whether clipping scales the bf16 gradients as stored, rounding the
  // product to bf16 (the precision-aware optimizer hands TE's FusedAdam the
  // bf16 main grad itself), or an f32 copy of them (Megatron's other
  // optimizers). Only matters for bf16 gradients.
  bool clips_stored_gradients() const { return use_precision_aware_optimizer; }
  // The flag that chose a 16-bit dtype ("--bf16"), or "" for f32.
  const char* flag() const { return bf16 ? "--bf16" : fp16 ? "--fp16" : ""; }
  // fp16 multiplies the loss by a scale before backward (bf16 has fp32's
  // exponent range and needs none, as in Megatron).
  bool scales_loss() const { return fp16; }
  // What --fp8-format and --fp8-recipe make of the model's linear layers.
  Fp8Recipe fp8() const;
  // The delayed recipe keeps an amax history per cast tensor on the host.
  bool fp8_delayed() const { return !fp8_format.empty() && fp8_recipe == "delayed"; }
};

// Refuses a device that cannot store the run's compute dtype, with one line
// naming the backend and the flag: called at setup, before any work, so a
// 16-bit run never reaches a compile error mid-run or a silent cpu fallback.
void check_device_stores(Device& device, const MixedPrecision& precision);

}  // namespace kiln::trainer
