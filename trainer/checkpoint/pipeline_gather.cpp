#include "trainer/checkpoint/pipeline_gather.h"

#include <set>
#include <utility>
#include <vector>

#include "trainer/fp8_state.h"

namespace kiln::trainer {

namespace {
constexpr int kCheckpointTag = 3;  // apart from the schedule's activation and gradient tags

// Tensor `name` of `tensors` from stage `owner` to stage 0, which stores it.
void send_to_first(dist::Comm& stages, int owner, const std::string& name, const graph::Shape& shape,
                   std::map<std::string, SafeTensor>& tensors) {
  const std::string what = "pipeline gather of " + name + " for a checkpoint";
  if (stages.rank() == owner) {
    const std::vector<float> values = tensors.at(name).to_f32();
    stages.start_send(values, 0, kCheckpointTag);
    stages.wait(what);
  } else if (stages.rank() == 0) {
    std::vector<float> values(static_cast<size_t>(graph::numel(shape)));
    stages.start_recv(values, owner, kCheckpointTag);
    stages.wait(what);
    tensors[name] = SafeTensor::from_f32(shape, values);
  }
}
}  // namespace

void gather_pipeline_stages(const TrainConfig& cfg, dist::Comm& stages, std::map<std::string, SafeTensor>& model,
                            std::map<std::string, SafeTensor>& optimizer) {
  // Who sends each parameter: the first stage holding it.
  std::set<std::string> earlier;
  for (int owner = 0; owner < stages.size(); ++owner) {
    std::vector<ParamSpec> owned;  // every model chunk's (one without the interleaved schedule)
    for (const GptConfig& chunk : cfg.stage_chunks(owner))
      for (ParamSpec& s : gpt_parameters(chunk)) owned.push_back(std::move(s));
    for (const ParamSpec& s : owned) {
      if (!earlier.insert(s.name).second || owner == 0) continue;
      std::vector<std::string> names = {s.name};
      if (!cfg.no_save_optim) {
        names.push_back(s.name + ".exp_avg");
        names.push_back(s.name + ".exp_avg_sq");
      }
      for (const std::string& name : names) {
        std::map<std::string, SafeTensor>& tensors = name == s.name ? model : optimizer;
        send_to_first(stages, owner, name, s.full_shape, tensors);
      }
    }
    // The FP8 scaling state of the owner's layers (each stage's own).
    if (owner == 0 || cfg.no_save_optim || !cfg.precision.fp8_delayed()) continue;
    for (const GptConfig& chunk : cfg.stage_chunks(owner))
      for (const auto& [name, shape] : Fp8State::checkpoint_tensors(cfg.precision.fp8_amax_history_len, chunk))
        send_to_first(stages, owner, name, shape, optimizer);
  }
}

}  // namespace kiln::trainer
