// The persistent tensors of a run, resident in device buffers for its whole
// life: parameters, gradient accumulators and AdamW moments. Step graphs
// bind to them by port name, so nothing is copied between steps; the host
// touches them only to initialise, checkpoint and restore.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "graph/executor.h"
#include "trainer/checkpoint/safetensors.h"
#include "trainer/dist/comm.h"
#include "trainer/model/gpt.h"

namespace kiln::trainer {

// With tensor parallelism (cfg.tensor_parallel > 1) each rank holds its
// shards (ParamSpec::shape); initialisation and checkpoints still deal in
// full tensors: initialize() draws the full tensor and keeps the rank's
// part, save_*() assembles full tensors over the tensor-parallel group
// (every rank of the group must call them together), load_*() takes the
// rank's part of full ones. So a checkpoint is the same whatever the layout.
//
// With the distributed optimizer (dp_shard_group: the data-parallel group,
// more than one rank) the optimizer state is sharded too: the moments
// exist only for this rank's part of each parameter, with its main.* and
// grad_shard.* buffers (trainer/model/step_graphs.h). Checkpoints still
// hold full moments: save_optimizer() gathers them over the group (every
// rank of it must call it), load_optimizer() keeps this rank's part.
class ModelState {
 public:
  ModelState(Device& device, const GptConfig& cfg, bool with_optimizer, int64_t tp_rank = 0,
             dist::Comm* tp_group = nullptr, dist::Comm* dp_shard_group = nullptr)
      : ModelState(device, cfg, gpt_parameters(cfg), with_optimizer, tp_rank, tp_group, dp_shard_group) {}
  // The parameters `params` of cfg's model: several chunks' under the
  // interleaved pipeline schedule (their union; cfg any of them).
  ModelState(Device& device, const GptConfig& cfg, std::vector<ParamSpec> params, bool with_optimizer,
             int64_t tp_rank = 0, dist::Comm* tp_group = nullptr, dist::Comm* dp_shard_group = nullptr);

  const std::vector<ParamSpec>& params() const { return specs_; }

  // GPT-2 initialisation: N(0, std) weights, std/sqrt(2 layers) for the
  // output projections, zero biases, unit LayerNorm gains. Deterministic
  // for a seed. Zeroes gradients and moments.
  void initialize(uint64_t seed);

  // The device buffer behind a port (a parameter, grad.<param>, ...), for
  // the host-side collectives of the distributed trainer.
  DeviceBuffer& buffer(const std::string& port) const { return *buffers_.at(port); }

  // Binds every persistent tensor the executable has a port for.
  void bind(graph::Executable& exe) const;

  std::map<std::string, SafeTensor> save_model() const;
  std::map<std::string, SafeTensor> save_optimizer() const;
  // Throws kiln::Error naming a missing or mis-shaped tensor.
  void load_model(const std::map<std::string, SafeTensor>& tensors);
  void load_optimizer(const std::map<std::string, SafeTensor>& tensors);
  // Fresh AdamW state: zero moments and gradients (--finetune, --no-load-optim).
  void zero_optimizer();

  // Bytes of device memory this rank holds for the AdamW moments, summed
  // over the buffers actually allocated.
  uint64_t moment_bytes() const;
  // Whether the optimizer state is sharded over data-parallel ranks.
  bool optimizer_sharded() const { return dp_group_ != nullptr; }

 private:
  std::vector<float> read(const std::string& port) const;
  // The full tensor of a parameter-shaped port, gathered over the group.
  std::vector<float> read_full(const ParamSpec& spec, const std::string& port) const;
  void write_shard(const ParamSpec& spec, const std::string& port, const std::vector<float>& full);
  // This rank's tensor-parallel shard of a parameter-shaped port; for a
  // data-parallel part of one (distributed optimizer) gathered over the group.
  std::vector<float> read_local(const ParamSpec& spec, const std::string& port) const;
  // Writes a tensor-parallel shard to a port, keeping this data-parallel
  // rank's part for a sharded one (and refreshing main.<param> for a parameter).
  void write_local(const ParamSpec& spec, const std::string& port, const std::vector<float>& local);
  // Whether a port holds only this data-parallel rank's part (the moments,
  // under the distributed optimizer).
  bool holds_part(const ParamSpec& spec, const std::string& port) const;
  // This data-parallel rank's part of a tensor-parallel shard.
  std::vector<float> dp_part(const ParamSpec& spec, const std::vector<float>& local) const;
  void write(const std::string& port, const std::vector<float>& values);
  void zero(const std::string& port);

  Device& device_;
  GptConfig cfg_;
  int64_t tp_rank_ = 0;
  dist::Comm* tp_group_ = nullptr;
  dist::Comm* dp_group_ = nullptr;  // set when the optimizer state is sharded
  std::vector<ParamSpec> specs_;
  std::map<std::string, std::shared_ptr<DeviceBuffer>> buffers_;
  std::map<std::string, graph::Shape> shapes_;
};

}  // namespace kiln::trainer
