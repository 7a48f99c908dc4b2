// The host's side of FP8 training (--fp8-format): every cast tensor's scale,
// fed to the step graphs as an input (trainer/model/fp8_recipe.h), and under
// the delayed recipe its amax history, as Transformer Engine's
// DelayedScaling keeps them (trainer/fp8_scaling.h).
//
// An interval is one iteration: every micro-batch of it casts with the same
// scales, each cast's amax goes into its tensor's interval maximum, and
// after the iteration the maxima are reduced over the ranks that hold the
// same tensors (data- and tensor-parallel, TE's amax reduction group) and
// the scales updated. The scales are then one function of the global
// batch's data, whatever the pipeline schedule or the micro-batch count.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/executor.h"
#include "trainer/checkpoint/safetensors.h"
#include "trainer/dist/comm.h"
#include "trainer/fp8_scaling.h"
#include "trainer/mixed_precision.h"
#include "trainer/model/gpt.h"

namespace kiln::trainer {

class Fp8State {
 public:
  Fp8State() = default;  // no FP8
  // The tensors of the layers of `chunks` (this rank's model chunks), each
  // with an empty history and scale 1, TE's initial state.
  Fp8State(const MixedPrecision& precision, const std::vector<GptConfig>& chunks);

  bool enabled() const { return enabled_; }
  // Writes each FP8 scale input of `exe`: its tensor's scale (1 under the
  // tensorwise recipe, whose casts ignore it).
  void feed(graph::Executable& exe) const;
  // Records each FP8 amax output of `exe` (a train step that just ran) in
  // its tensor's interval.
  void record(graph::Executable& exe);
  // The end of an iteration: the interval maxima over `groups`, then each
  // tensor's new scale. `what` names the collective in a failure.
  void end_interval(const std::vector<dist::Comm*>& groups, const std::string& what);

  // The checkpoint's tensors: fp8.<tensor>.scale [1] and
  // fp8.<tensor>.amax_history [--fp8-amax-history-len], saved beside the
  // optimizer state as Megatron saves its grad scaler. `load` throws
  // kiln::Error naming `file` for a missing or misshapen one.
  void save(std::map<std::string, SafeTensor>& tensors) const;
  void load(const std::map<std::string, SafeTensor>& tensors, const std::string& file);
  // meta.json's optimizer.fp8 ({"amax_history_len": L}) when save() saves
  // anything, so that a loader knows the tensors; null otherwise.
  nlohmann::json checkpoint_meta() const;
  // The names and shapes save() gives the layers of `chunk`, by the history
  // length (the pipeline gather, the checkpoint loader's expected tensors).
  static std::vector<std::pair<std::string, std::vector<int64_t>>> checkpoint_tensors(int64_t history_len,
                                                                                      const GptConfig& chunk);

  // One line for the start-up log.
  std::string describe(const MixedPrecision& precision) const;

 private:
  struct Tensor {
    Fp8DelayedScaling scaling;
    float fp8_max;  // its format's
  };
  bool enabled_ = false, delayed_ = false;
  Fp8AmaxAlgo algo_ = Fp8AmaxAlgo::MostRecent;
  int margin_ = 0;
  int64_t history_len_ = 1;
  std::map<std::string, Tensor> tensors_;  // by tensor name
};

}  // namespace kiln::trainer
