// Prints the canonical hash of each training graph for a small GPT config.
// The hash-stability test runs this in two processes (with different
// environment and allocation patterns) and requires identical output.
#include <cstdio>

#include "graph/serialize.h"
#include "trainer/step_graphs.h"

int main() {
  kiln::trainer::GptConfig cfg;
  cfg.num_layers = 2;
  cfg.hidden_size = 32;
  cfg.num_attention_heads = 4;
  cfg.seq_length = 16;
  std::printf("train_step %s\n", kiln::graph::graph_hash(kiln::trainer::build_train_step(cfg, 4)).c_str());
  std::printf("eval_step %s\n", kiln::graph::graph_hash(kiln::trainer::build_eval_step(cfg, 4)).c_str());
  std::printf("optimizer %s\n", kiln::graph::graph_hash(kiln::trainer::build_optimizer_step(cfg, {})).c_str());
  std::printf("grad_norm %s\n", kiln::graph::graph_hash(kiln::trainer::build_grad_norm(cfg)).c_str());
  return 0;
}
