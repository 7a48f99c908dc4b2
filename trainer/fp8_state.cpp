#include "trainer/fp8_state.h"

#include <cstring>
#include <span>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"

namespace kiln::trainer {

namespace {

// Each (tensor, format) of a chunk's layers: inputs and weights in the
// forward format, output gradients in the backward one.
template <class F>
void for_each_tensor(const Fp8Recipe& recipe, const GptConfig& chunk, F&& fn) {
  for (int64_t l = chunk.first_layer; l < chunk.stage_end(); ++l)
    for (const std::string& linear : fp8_linears(l))
      for (const char* role : kFp8Roles)
        fn(fp8_tensor_name(linear, role), std::strcmp(role, "grad_output") == 0 ? recipe.backward : recipe.forward);
}

std::string scale_key(const std::string& tensor) { return "fp8." + tensor + ".scale"; }
std::string history_key(const std::string& tensor) { return "fp8." + tensor + ".amax_history"; }

}  // namespace

Fp8State::Fp8State(const MixedPrecision& precision, const std::vector<GptConfig>& chunks) {
  const Fp8Recipe recipe = precision.fp8();
  enabled_ = recipe.enabled;
  if (!enabled_) return;
  delayed_ = precision.fp8_delayed();
  algo_ = parse_fp8_amax_algo(precision.fp8_amax_compute_algo);
  margin_ = static_cast<int>(precision.fp8_margin);
  history_len_ = precision.fp8_amax_history_len;
  for (const GptConfig& chunk : chunks)
    for_each_tensor(recipe, chunk, [&](const std::string& name, kiln_fp8_format format) {
      tensors_.emplace(name, Tensor{Fp8DelayedScaling(precision.fp8_amax_history_len), kiln_fp8_max(format)});
    });
}

void Fp8State::feed(graph::Executable& exe) const {
  if (!enabled_) return;
  for (const graph::Port& port : exe.graph().inputs()) {
    const std::string tensor = fp8_tensor_of_scale_port(port.name);
    if (tensor.empty()) continue;
    const auto it = tensors_.find(tensor);
    if (it == tensors_.end()) throw Error("internal: FP8 scale input " + port.name + " of no tensor of this rank");
    const float scale = it->second.scaling.scale();
    exe.buffer(port.name)->write(&scale, sizeof scale);
  }
}

void Fp8State::record(graph::Executable& exe) {
  if (!delayed_) return;
  for (const graph::Port& port : exe.graph().outputs()) {
    const std::string tensor = fp8_tensor_of_amax_port(port.name);
    if (tensor.empty()) continue;
    float amax = 0;
    exe.buffer(port.name)->read(&amax, sizeof amax);
    tensors_.at(tensor).scaling.record(amax);
  }
}

void Fp8State::end_interval(const std::vector<dist::Comm*>& groups, const std::string& what) {
  if (!delayed_ || tensors_.empty()) return;
  // Every rank of a group holds the same tensors, so the sorted maps line up.
  std::vector<float> amaxes;
  for (const auto& [name, t] : tensors_) amaxes.push_back(t.scaling.history()[0]);
  for (dist::Comm* group : groups) {
    if (group == nullptr || group->size() == 1) continue;
    group->start_max(std::span<float>(amaxes));
    group->wait(what);
  }
  size_t i = 0;
  for (auto& [name, t] : tensors_) {
    t.scaling.record(amaxes[i++]);  // the group's maximum, at least this rank's
    t.scaling.update(algo_, t.fp8_max, margin_);
  }
}

void Fp8State::save(std::map<std::string, SafeTensor>& tensors) const {
  if (!delayed_) return;
  for (const auto& [name, t] : tensors_) {
    tensors[scale_key(name)] = SafeTensor::from_f32({1}, {t.scaling.scale()});
    const std::vector<float>& h = t.scaling.history();
    tensors[history_key(name)] = SafeTensor::from_f32({static_cast<int64_t>(h.size())}, h);
  }
}

void Fp8State::load(const std::map<std::string, SafeTensor>& tensors, const std::string& file) {
  if (!delayed_) return;
  for (auto& [name, t] : tensors_) {
    const auto scale = tensors.find(scale_key(name)), history = tensors.find(history_key(name));
    if (scale == tensors.end() || history == tensors.end())
      throw Error(
          fmt::format("{} has no FP8 scaling state for {} (saved without --fp8-format or with another "
                      "--fp8-recipe); resume with the saving run's FP8 flags, or pass --no-load-optim to "
                      "start the scales afresh",
                      file, name));
    const std::vector<float> s = scale->second.to_f32();
    if (s.size() != 1) throw Error(file + ": " + scale_key(name) + " must hold one value");
    try {
      t.scaling.restore(history->second.to_f32(), s[0]);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}: {}", file, name, e.what()));
    }
  }
}

nlohmann::json Fp8State::checkpoint_meta() const {
  if (!delayed_) return nullptr;
  return {{"amax_history_len", history_len_}};
}

std::vector<std::pair<std::string, std::vector<int64_t>>> Fp8State::checkpoint_tensors(int64_t history_len,
                                                                                       const GptConfig& chunk) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  for_each_tensor(Fp8Recipe{}, chunk, [&](const std::string& name, kiln_fp8_format) {
    out.push_back({scale_key(name), {1}});
    out.push_back({history_key(name), {history_len}});
  });
  return out;
}

std::string Fp8State::describe(const MixedPrecision& precision) const {
  if (!enabled_) return {};
  std::string s = "FP8: --fp8-format " + precision.fp8_format +
                  (precision.fp8_format == "hybrid" ? " (E4M3 inputs and weights, E5M2 gradients)" : " (E4M3)") + ", " +
                  precision.fp8_recipe + " scaling";
  if (delayed_)
    s += " (amax history " + std::to_string(precision.fp8_amax_history_len) + ", " + precision.fp8_amax_compute_algo +
         ", margin " + std::to_string(precision.fp8_margin) + ")";
  s += ", on " + std::to_string(tensors_.size() / 3) + " linear layers of this rank";
  return s;
}

}  // namespace kiln::trainer
