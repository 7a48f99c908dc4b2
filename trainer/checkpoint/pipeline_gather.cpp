#include "trainer/checkpoint/pipeline_gather.h"

#include <set>
#include <utility>
#include <vector>

namespace kiln::trainer {

namespace {
constexpr int kCheckpointTag = 3;  // apart from the schedule's activation and gradient tags
}

void gather_pipeline_stages(const TrainConfig& cfg, dist::Comm& stages, std::map<std::string, SafeTensor>& model,
                            std::map<std::string, SafeTensor>& optimizer) {
  const int stage = stages.rank();
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
        const std::string what = "pipeline gather of " + name + " for a checkpoint";
        if (stage == owner) {
          const std::vector<float> values = tensors.at(name).to_f32();
          stages.start_send(values, 0, kCheckpointTag);
          stages.wait(what);
        } else if (stage == 0) {
          std::vector<float> values(static_cast<size_t>(graph::numel(s.full_shape)));
          stages.start_recv(values, owner, kCheckpointTag);
          stages.wait(what);
          tensors[name] = SafeTensor::from_f32(s.full_shape, values);
        }
      }
    }
  }
}

}  // namespace kiln::trainer
