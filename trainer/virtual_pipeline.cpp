// Megatron's interleaved pipeline layout (--num-layers-per-virtual-pipeline-stage
// or --num-virtual-stages-per-pipeline-rank): each of the P ranks holds vp
// model chunks, chunk c of rank p being virtual stage c x P + p, so a
// micro-batch visits every rank vp times and the pipeline's bubble shrinks
// by vp (docs/DISTRIBUTED.md "Interleaved schedule").
#include <string>

#include "core/error.h"
#include "trainer/train_config.h"

namespace kiln::trainer {

int64_t TrainConfig::virtual_chunks() const {
  const int64_t P = pipeline_model_parallel_size;
  if (num_virtual_stages_per_pipeline_rank > 0) return num_virtual_stages_per_pipeline_rank;
  if (num_layers_per_virtual_pipeline_stage > 0 && P > 0)
    return model.num_layers / P / num_layers_per_virtual_pipeline_stage;
  return 1;
}

void TrainConfig::check_virtual_pipeline() const {
  const int64_t V = num_layers_per_virtual_pipeline_stage, vp = num_virtual_stages_per_pipeline_rank;
  const int64_t P = pipeline_model_parallel_size, L = model.num_layers;
  if (V == 0 && vp == 0) return;
  if (V < 0) throw Error("--num-layers-per-virtual-pipeline-stage must be positive, got " + std::to_string(V));
  if (vp < 0) throw Error("--num-virtual-stages-per-pipeline-rank must be positive, got " + std::to_string(vp));
  if (V > 0 && vp > 0)
    throw Error(
        "--num-layers-per-virtual-pipeline-stage and --num-virtual-stages-per-pipeline-rank cannot be set at the same "
        "time; give one");
  // Megatron's words (parallel_state.py); kiln's point-to-point messages are
  // tagged per chunk, so P = 2 works here where Megatron needs P > 2
  // without --overlap-p2p-communication.
  if (P <= 1)
    throw Error(
        "pipeline-model-parallel size should be greater than 1 with interleaved schedule "
        "(--pipeline-model-parallel-size 2 or more, or drop the virtual pipeline flag)");
  if (decoder_first_pipeline_num_layers > 0 || decoder_last_pipeline_num_layers > 0)
    throw Error(
        "the interleaved schedule splits the layers evenly; drop --decoder-first-pipeline-num-layers / "
        "--decoder-last-pipeline-num-layers or the virtual pipeline flag");
  const std::string layers = "--num-layers " + std::to_string(L);
  if (V > 0) {
    if (L % P != 0 || (L / P) % V != 0)
      throw Error(
          "number of layers per pipeline stage must be divisible number of layers per virtual pipeline stage (" +
          layers + " over --pipeline-model-parallel-size " + std::to_string(P) + " is not a multiple of " +
          "--num-layers-per-virtual-pipeline-stage " + std::to_string(V) + ")");
  } else if (L % (P * vp) != 0) {
    throw Error(layers + " is not divisible by --pipeline-model-parallel-size " + std::to_string(P) +
                " x --num-virtual-stages-per-pipeline-rank " + std::to_string(vp) +
                "; every virtual stage holds the same number of layers");
  }
  // Megatron's schedule (schedules.py) needs whole rounds of P micro-batches
  // (one chunk per rank is the plain 1F1B schedule, which does not).
  const int64_t M = num_micro_batches();
  if (virtual_chunks() > 1 && M % P != 0)
    throw Error("number of microbatches (" + std::to_string(M) +
                ") is not divisible by pipeline-model-parallel-size (" + std::to_string(P) +
                ") when using interleaved schedule; make --global-batch-size / (--micro-batch-size x data-parallel "
                "size) a multiple of " +
                std::to_string(P));
  // Every step of a ramp takes whole rounds too: its start and increment do.
  const int64_t micro_times_dp = micro_batch_size * data_parallel_size;
  if (virtual_chunks() > 1 && rampup.active())
    for (const int64_t batch : {rampup.start(), rampup.increment()})
      if ((batch / micro_times_dp) % P != 0)
        throw Error("--rampup-batch-size: a step of " + std::to_string(batch / micro_times_dp) +
                    " microbatches is not divisible by pipeline-model-parallel-size (" + std::to_string(P) +
                    ") when using interleaved schedule; make the start batch size and the increment multiples of " +
                    std::to_string(P * micro_times_dp));
  if (virtual_chunks() > 1)
    for (const auto& entry : step_schedule.entries())
      if ((entry.second / micro_times_dp) % P != 0)
        throw Error("--step-batch-size-schedule: a step of " + std::to_string(entry.second / micro_times_dp) +
                    " microbatches is not divisible by pipeline-model-parallel-size (" + std::to_string(P) +
                    ") when using interleaved schedule; make every batch size a multiple of " +
                    std::to_string(P * micro_times_dp));
}

GptConfig TrainConfig::chunk_model(int64_t stage, int64_t chunk) const {
  const int64_t P = pipeline_model_parallel_size, vp = virtual_chunks();
  const int64_t per_chunk = model.num_layers / (P * vp);
  const int64_t virtual_stage = chunk * P + stage;
  GptConfig m = model;
  m.first_layer = virtual_stage * per_chunk;
  m.end_layer = m.first_layer + per_chunk;
  m.pre_process = virtual_stage == 0;
  m.post_process = virtual_stage == P * vp - 1;
  return m;
}

std::vector<GptConfig> TrainConfig::stage_chunks(int64_t stage) const {
  if (virtual_chunks() == 1) return {stage_model(stage)};
  std::vector<GptConfig> chunks;
  for (int64_t c = 0; c < virtual_chunks(); ++c) chunks.push_back(chunk_model(stage, c));
  return chunks;
}

}  // namespace kiln::trainer
