#include "trainer/model/model_state.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "trainer/model/position_inputs.h"
#include "trainer/model/step_graphs.h"
#include "trainer/model/tensor_parallel.h"
#include "trainer/rng.h"

namespace kiln::trainer {

ModelState::ModelState(Device& device, const GptConfig& cfg, std::vector<ParamSpec> params, bool with_optimizer,
                       int64_t tp_rank, dist::Comm* tp_group, dist::Comm* dp_shard_group)
    : device_(device),
      cfg_(cfg),
      tp_rank_(tp_rank),
      tp_group_(tp_group),
      dp_group_(with_optimizer && dp_shard_group && dp_shard_group->size() > 1 ? dp_shard_group : nullptr),
      specs_(std::move(params)) {
  if (cfg.tensor_parallel > 1 && (!tp_group || tp_group->size() != cfg.tensor_parallel))
    throw Error("internal: a tensor-parallel model state needs its group of " + std::to_string(cfg.tensor_parallel) +
                " ranks");
  // Every persistent tensor is f32 whatever the compute dtype (--bf16/--fp16
  // cast copies inside the step graphs): main parameters, moments, position
  // tables; the gradient accumulators too, unless --main-grads-dtype bf16
  // makes them (and grad_shard.*) bf16, 2 bytes an element. Nothing reads a
  // gradient back as floats here: checkpoints hold none.
  auto add = [&](const std::string& port, const graph::Shape& shape, size_t element_bytes = sizeof(float)) {
    shapes_[port] = shape;
    buffers_[port] =
        std::make_shared<DeviceBuffer>(device_, static_cast<uint64_t>(graph::numel(shape)) * element_bytes);
  };
  const size_t grad_bytes = kiln_dtype_size(cfg.grad_dtype);
  for (const auto& s : specs_) {
    add(s.name, s.shape);
    if (with_optimizer) add(grad_name(s.name), s.shape, grad_bytes);
    if (with_optimizer && !dp_group_) {
      add(exp_avg_name(s.name), s.shape);
      add(exp_avg_sq_name(s.name), s.shape);
    }
    if (dp_group_) {
      // Only this rank's part of the optimizer state (step_graphs.h).
      const graph::Shape part = {shard_elements(graph::numel(s.shape), dp_group_->size())};
      add(main_param_name(s.name), part);
      add(grad_shard_name(s.name), part, grad_bytes);
      add(exp_avg_name(s.name), part);
      add(exp_avg_sq_name(s.name), part);
    }
  }
  // Constant inputs (rotary tables, ALiBi slopes): written once, bound like parameters.
  for (const auto& [name, input] : position_inputs(cfg, tp_rank)) {
    add(name, input.shape);
    if (!input.ids.empty())
      buffers_.at(name)->write(input.ids.data(), input.ids.size() * sizeof(int32_t));
    else
      write(name, input.values);
  }
}

std::vector<float> ModelState::read(const std::string& port) const {
  std::vector<float> v(static_cast<size_t>(graph::numel(shapes_.at(port))));
  buffers_.at(port)->read(v.data(), v.size() * sizeof(float));
  return v;
}

void ModelState::write(const std::string& port, const std::vector<float>& v) {
  buffers_.at(port)->write(v.data(), v.size() * sizeof(float));
}

std::vector<float> ModelState::read_local(const ParamSpec& spec, const std::string& port) const {
  std::vector<float> part = read(port);
  if (!holds_part(spec, port)) return part;
  // A data-parallel part: gather every rank's, drop the padding.
  const size_t local = static_cast<size_t>(graph::numel(spec.shape));
  std::vector<float> all(part.size() * static_cast<size_t>(dp_group_->size()));
  dp_group_->start_all_gather(part, all);
  dp_group_->wait("data-parallel gather of " + port + " for a checkpoint");
  all.resize(local);
  return all;
}

void ModelState::write_local(const ParamSpec& spec, const std::string& port, const std::vector<float>& local) {
  if (dp_group_ && port == spec.name) write(main_param_name(spec.name), dp_part(spec, local));
  write(port, holds_part(spec, port) ? dp_part(spec, local) : local);
}

std::vector<float> ModelState::dp_part(const ParamSpec& spec, const std::vector<float>& local) const {
  const size_t part = static_cast<size_t>(shard_elements(graph::numel(spec.shape), dp_group_->size()));
  // This rank's elements, zero-padded at the end of the last part.
  std::vector<float> mine(part, 0.0f);
  const size_t first = part * static_cast<size_t>(dp_group_->rank());
  for (size_t i = first; i < std::min(local.size(), first + part); ++i) mine[i - first] = local[i];
  return mine;
}

bool ModelState::holds_part(const ParamSpec& spec, const std::string& port) const {
  return dp_group_ && (port == exp_avg_name(spec.name) || port == exp_avg_sq_name(spec.name));
}

std::vector<float> ModelState::read_full(const ParamSpec& spec, const std::string& port) const {
  std::vector<float> mine = read_local(spec, port);
  if (spec.shard_dim < 0 || cfg_.tensor_parallel == 1) return mine;
  // Each rank fills its slice of a zero tensor; the group's sum is the
  // whole (exactly: every element is one rank's value plus zeros).
  std::vector<float> full(static_cast<size_t>(graph::numel(spec.full_shape)), 0.0f);
  put_shard(spec, mine, full, cfg_.tensor_parallel, tp_rank_);
  tp_group_->sum(std::span<float>(full), "tensor-parallel gather of " + port + " for a checkpoint");
  return full;
}

void ModelState::write_shard(const ParamSpec& spec, const std::string& port, const std::vector<float>& full) {
  write_local(spec, port, take_shard(spec, full, cfg_.tensor_parallel, tp_rank_));
}

void ModelState::zero(const std::string& port) {
  // All-zero bytes: 0.0 in f32 and in bf16 (a bf16 gradient buffer is half the size).
  if (const auto it = buffers_.find(port); it != buffers_.end()) {
    const std::vector<uint8_t> zeros(it->second->size(), 0);
    it->second->write(zeros.data(), zeros.size());
  }
}

void ModelState::initialize(uint64_t seed) {
  const double std = cfg_.init_method_std;
  const double scaled = std / std::sqrt(2.0 * static_cast<double>(cfg_.num_layers));
  for (const ParamSpec& s : specs_) {
    // One stream per parameter (its index in the whole model): adding a
    // layer does not reshuffle the initial values of the others, and a
    // pipeline stage draws what one process draws.
    Rng rng(seed, s.init_stream);
    // The full tensor on every rank, so any layout starts from the same model.
    std::vector<float> v(static_cast<size_t>(graph::numel(s.full_shape)));
    for (float& x : v) {
      switch (s.init) {
        case ParamSpec::Init::Normal: x = static_cast<float>(rng.normal() * std); break;
        case ParamSpec::Init::ScaledNormal: x = static_cast<float>(rng.normal() * scaled); break;
        case ParamSpec::Init::Zeros: x = 0.0f; break;
        case ParamSpec::Init::Ones: x = 1.0f; break;
      }
    }
    write_shard(s, s.name, v);
    zero(grad_name(s.name));
    zero(exp_avg_name(s.name));
    zero(exp_avg_sq_name(s.name));
  }
}

void ModelState::bind(graph::Executable& exe) const {
  for (const auto& port : exe.graph().inputs())
    if (auto it = buffers_.find(port.name); it != buffers_.end()) exe.bind(port.name, it->second);
}

std::map<std::string, SafeTensor> ModelState::save_model() const {
  std::map<std::string, SafeTensor> out;
  for (const auto& s : specs_) out[s.name] = SafeTensor::from_f32(s.full_shape, read_full(s, s.name));
  return out;
}

std::map<std::string, SafeTensor> ModelState::save_optimizer() const {
  std::map<std::string, SafeTensor> out;
  for (const auto& s : specs_) {
    if (!buffers_.count(exp_avg_name(s.name))) continue;
    out[s.name + ".exp_avg"] = SafeTensor::from_f32(s.full_shape, read_full(s, exp_avg_name(s.name)));
    out[s.name + ".exp_avg_sq"] = SafeTensor::from_f32(s.full_shape, read_full(s, exp_avg_sq_name(s.name)));
  }
  return out;
}

namespace {
const SafeTensor& expect(const std::map<std::string, SafeTensor>& t, const std::string& name, const graph::Shape& shape,
                         const char* file) {
  auto it = t.find(name);
  if (it == t.end())
    throw Error(std::string("checkpoint ") + file + " has no tensor '" + name +
                "'; it was saved from a different model configuration");
  if (it->second.shape != shape)
    throw Error(std::string("checkpoint ") + file + " tensor '" + name + "' has shape " +
                graph::to_string(it->second.shape) + ", the model needs " + graph::to_string(shape) +
                "; pass the same model flags as the run that saved it");
  return it->second;
}
}  // namespace

void ModelState::load_model(const std::map<std::string, SafeTensor>& t) {
  for (const auto& s : specs_) write_shard(s, s.name, expect(t, s.name, s.full_shape, "model.safetensors").to_f32());
}

void ModelState::zero_optimizer() {
  for (const auto& s : specs_) {
    if (!buffers_.count(exp_avg_name(s.name))) continue;
    zero(exp_avg_name(s.name));
    zero(exp_avg_sq_name(s.name));
    zero(grad_name(s.name));
  }
}

void ModelState::load_optimizer(const std::map<std::string, SafeTensor>& t) {
  for (const auto& s : specs_) {
    if (!buffers_.count(exp_avg_name(s.name))) continue;
    write_shard(s, exp_avg_name(s.name),
                expect(t, s.name + ".exp_avg", s.full_shape, "optimizer.safetensors").to_f32());
    write_shard(s, exp_avg_sq_name(s.name),
                expect(t, s.name + ".exp_avg_sq", s.full_shape, "optimizer.safetensors").to_f32());
    zero(grad_name(s.name));
  }
}

uint64_t ModelState::moment_bytes() const {
  uint64_t bytes = 0;
  for (const auto& s : specs_)
    for (const std::string& port : {exp_avg_name(s.name), exp_avg_sq_name(s.name)})
      if (auto it = buffers_.find(port); it != buffers_.end()) bytes += it->second->size();
  return bytes;
}

}  // namespace kiln::trainer
