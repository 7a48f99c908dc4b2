// The floating-point operations of one training iteration as Megatron-LM
// counts them for --log-throughput's "throughput per GPU (TFLOP/s/GPU)":
// num_floating_point_operations() of megatron/training/training.py (Megatron-LM
// main, 2026), its dense-transformer branch, which is every model kiln builds
// (no MoE, MLA, MTP or linear attention). A model-FLOPs count: what the GEMMs
// and the causal attention of forward, wgrad and dgrad need, whether or not
// the run recomputes anything.
#pragma once

#include <cstdint>

#include "trainer/model/gpt.h"

namespace kiln::trainer {

// FLOPs of one iteration of `batch_size` sequences of the model `m` (its
// vocab_size is Megatron's padded vocab).
double megatron_iteration_flops(const GptConfig& m, int64_t batch_size);

// Megatron's TFLOP/s per GPU: the iteration's FLOPs over its time, summed
// over every rank of the job (world_size = data x tensor x pipeline).
double megatron_tflops_per_gpu(double iteration_flops, double seconds_per_iteration, int64_t world_size);

}  // namespace kiln::trainer
