// The KILN_TEST_DUMP_GRADIENTS=DIR hook, for tests that check the trainer's
// gradient arithmetic against an independent reference
// (tests/cli/bf16_main_grads_reference.py): each rank appends to
// DIR/rank<R>.bin, per iteration, its parameters before the step, each
// micro-batch's f32 parameter gradients (the train step's
// "micro_grad.<param>" outputs, before they reach the accumulators), the
// accumulators after the data-parallel reduction (their dtype's bytes) and
// the learning rate; DIR/params.txt names the parameters (name, elements,
// weight decay 0/1). One
// process, no pipeline or tensor parallelism, no distributed optimizer: the
// accumulators then hold the reduced sums.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>

#include "graph/executor.h"
#include "trainer/model/model_state.h"

namespace kiln::trainer {

bool gradient_dump_requested();

class GradientDump {
 public:
  // Null unless KILN_TEST_DUMP_GRADIENTS is set.
  static std::unique_ptr<GradientDump> open(int rank);
  GradientDump(const std::string& path, std::string manifest_path);

  // Records: a tag byte, the iteration (int64), then the values.
  void parameters(const ModelState& state, int64_t iteration);                            // 'P'
  void micro_batch(graph::Executable& step, const ModelState& state, int64_t iteration);  // 'G'
  void accumulators(const ModelState& state, int64_t iteration);                          // 'S'
  void learning_rate(double lr, int64_t iteration);                                       // 'L'

 private:
  void header(char tag, int64_t iteration);
  std::ofstream out_;
  std::string manifest_path_;
  bool manifest_written_ = false;
};

}  // namespace kiln::trainer
