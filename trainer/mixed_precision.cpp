#include "trainer/mixed_precision.h"

#include <cmath>

#include "core/backend.h"
#include "core/error.h"
#include "graph/memory_plan.h"
#include "graph/serialize.h"
#include "trainer/fp8_scaling.h"

namespace kiln::trainer {

void MixedPrecision::register_flags(Flags& f) {
  f.add("--bf16", &bf16,
        "compute in bf16: bf16 weights and activations, fp32 main parameters, gradients and AdamW moments");
  f.add("--fp16", &fp16, "compute in fp16 (as --bf16) with loss scaling (--loss-scale or the dynamic scaler)");
  f.add("--loss-scale", &loss_scale, "fp16: a static loss scale (a power of 2 is best); default: dynamic scaling",
        Bounds::above(0));
  f.add("--initial-loss-scale", &initial_loss_scale, "fp16 dynamic loss scaling: the initial scale (2^32)",
        Bounds::above(0));
  f.add("--min-loss-scale", &min_loss_scale, "fp16 dynamic loss scaling: the smallest scale", Bounds::above(0));
  f.add("--loss-scale-window", &loss_scale_window,
        "fp16 dynamic loss scaling: clean iterations before the scale doubles");
  f.add("--hysteresis", &hysteresis, "fp16 dynamic loss scaling: overflows in a row before the scale halves");
  f.add("--attention-softmax-in-fp32", &attention_softmax_in_fp32,
        "accepted for Megatron's scripts: kiln's softmax always computes in fp32");
  f.add("--accumulate-allreduce-grads-in-fp32", &accumulate_allreduce_grads_in_fp32,
        "accepted for Megatron's scripts: kiln accumulates and all-reduces gradients in fp32 unless "
        "--main-grads-dtype bf16");
  f.add("--use-precision-aware-optimizer", &use_precision_aware_optimizer,
        "Megatron's precision-aware optimizer (TE FusedAdam): lets --main-grads-dtype choose bf16; the AdamW "
        "arithmetic is f32 either way");
  f.add("--main-grads-dtype", &main_grads_dtype,
        "fp32 or bf16 (with --bf16 --use-precision-aware-optimizer): the dtype gradients accumulate over "
        "micro-batches and are reduced over data-parallel ranks in");
  f.add("--grad-reduce-in-bf16", &grad_reduce_in_bf16,
        "with --bf16: accumulate gradients over micro-batches and reduce them over data-parallel ranks in bf16; "
        "the optimizer widens them to f32 before clipping (with --use-precision-aware-optimizer it clips them in "
        "bf16, as --main-grads-dtype bf16)");
  f.add("--apply-query-key-layer-scaling", &apply_query_key_layer_scaling,
        "with --fp16/--bf16: divide layer l's attention scores by l before they are stored, and multiply back "
        "inside the fp32 softmax (keeps fp16 scores from overflowing)");
  f.add("--fp8-format", &fp8_format,
        "e4m3 or hybrid: cast the inputs, weights and output gradients of each layer's linear layers to FP8 "
        "(hybrid: E4M3 forward, E5M2 gradients), in a wider type where the device has no FP8 units");
  f.add("--fp8-recipe", &fp8_recipe,
        "FP8 scaling: delayed (each tensor's scale from its amax history) or tensorwise (from its own amax)");
  f.add("--fp8-amax-history-len", &fp8_amax_history_len, "delayed FP8 scaling: iterations of amax history",
        Bounds::at_least(1));
  f.add("--fp8-amax-compute-algo", &fp8_amax_compute_algo,
        "delayed FP8 scaling: the scale's amax is the history's max or its most_recent");
  f.add("--fp8-margin", &fp8_margin, "delayed FP8 scaling: the scale is fp8_max / amax / 2^margin",
        Bounds::at_least(0));
  f.add("--fp8-interval", &fp8_interval,
        "accepted for Megatron's scripts (deprecated in Transformer Engine): kiln updates FP8 scales every iteration",
        Bounds::at_least(1));
  f.add("--fp8-param-gather", &fp8_param_gather,
        "accepted with --fp8-format: kiln gathers parameters in their own dtype and casts each weight to FP8 "
        "before its GEMM, which gives the same values");
}

Fp8Recipe MixedPrecision::fp8() const {
  Fp8Recipe r;
  r.enabled = !fp8_format.empty();
  r.backward = fp8_format == "hybrid" ? KILN_FP8_E5M2 : KILN_FP8_E4M3;
  r.current = fp8_recipe == "tensorwise";
  return r;
}

void MixedPrecision::finalize() const {
  if (bf16 && fp16) throw Error("--bf16 and --fp16 choose different compute dtypes; give one of them");
  const bool scaling_flag = loss_scale > 0 || initial_loss_scale != 4294967296.0 || min_loss_scale != 1.0 ||
                            loss_scale_window != 1000 || hysteresis != 2;
  if (scaling_flag && !fp16)
    throw Error(
        "--loss-scale, --initial-loss-scale, --min-loss-scale, --loss-scale-window and --hysteresis apply to --fp16 "
        "only (bf16 and fp32 need no loss scaling)");
  if (loss_scale_window <= 0)
    throw Error("--loss-scale-window must be positive, got " + std::to_string(loss_scale_window));
  if (hysteresis <= 0) throw Error("--hysteresis must be positive, got " + std::to_string(hysteresis));
  if (main_grads_dtype != "fp32" && main_grads_dtype != "bf16")
    throw Error("--main-grads-dtype " + main_grads_dtype + ": give fp32 or bf16");
  if (main_grads_dtype == "bf16") {
    // Megatron's checks (arguments.py, optimizer_config.py): bf16 main
    // gradients exist only for bf16 parameters, in the precision-aware optimizer.
    if (!bf16) throw Error("--main-grads-dtype bf16 needs --bf16 (bf16 gradients are for bf16 parameters)");
    if (!use_precision_aware_optimizer)
      throw Error("--main-grads-dtype bf16 needs --use-precision-aware-optimizer, as in Megatron");
    if (accumulate_allreduce_grads_in_fp32)
      throw Error(
          "--main-grads-dtype bf16 and --accumulate-allreduce-grads-in-fp32 ask for different gradient dtypes; "
          "give one of them");
  }
  if (grad_reduce_in_bf16) {
    // Megatron ignores it without --bf16 (its fp16 and fp32 gradients keep
    // their own dtype); kiln says so rather than do nothing.
    if (!bf16) throw Error("--grad-reduce-in-bf16 needs --bf16 (bf16 gradients are for bf16 parameters)");
    if (accumulate_allreduce_grads_in_fp32)
      throw Error(
          "--grad-reduce-in-bf16 and --accumulate-allreduce-grads-in-fp32 ask for different gradient dtypes; give "
          "one of them");
  }
  finalize_fp8();
  if (min_loss_scale > initial_loss_scale)
    throw Error("--min-loss-scale is above --initial-loss-scale; the scale starts at or above its floor");
}

void MixedPrecision::finalize_fp8() const {
  if (fp8_format.empty()) {
    const bool recipe_flag = fp8_recipe != "delayed" || fp8_amax_history_len != 1 ||
                             fp8_amax_compute_algo != "most_recent" || fp8_margin != 0 || fp8_interval != 1 ||
                             fp8_param_gather;
    if (recipe_flag)
      throw Error(
          "--fp8-recipe, --fp8-amax-history-len, --fp8-amax-compute-algo, --fp8-margin, --fp8-interval and "
          "--fp8-param-gather apply with --fp8-format e4m3|hybrid only");
    return;
  }
  if (fp8_format != "e4m3" && fp8_format != "hybrid")
    throw Error("--fp8-format " + fp8_format + ": give e4m3 or hybrid");
  if (fp8_recipe == "mxfp8" || fp8_recipe == "blockwise")
    throw Error("--fp8-recipe " + fp8_recipe + ": kiln implements per-tensor scaling only (delayed or tensorwise); " +
                fp8_recipe + " scales blocks of elements");
  if (fp8_recipe != "delayed" && fp8_recipe != "tensorwise")
    throw Error("--fp8-recipe " + fp8_recipe + ": give delayed or tensorwise");
  parse_fp8_amax_algo(fp8_amax_compute_algo);  // names the flag in its error
}

void check_device_stores(Device& device, const MixedPrecision& precision) {
  const kiln_dtype dtype = precision.compute_dtype();
  if (dtype == KILN_F32) return;
  // The smallest graph that stores the dtype: x f32 -> dtype -> f32. A plugin
  // that cannot store 16-bit values refuses it at compile, in milliseconds.
  graph::Graph g;
  g.output("y", g.cast(g.cast(g.input("x", KILN_F32, {1}), dtype), KILN_F32));
  try {
    device.plugin().compile(graph::serialize(g, graph::plan_memory(g)), device.index());
  } catch (const PluginError& e) {
    std::string why = precision.flag();
    why += ": the ";
    why += device.backend();
    why += " backend cannot store ";
    why += kiln_dtype_name(dtype);
    why += " values (";
    why += e.what();
    why += "); train with --backend cpu or without ";
    why += precision.flag();
    throw Error(why);
  }
}

}  // namespace kiln::trainer
