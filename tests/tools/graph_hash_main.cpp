// Prints, for each training graph of a small GPT config, its canonical hash
// and the compile-cache key it gets on a fixed backend/device (compiler_cache/key.h
// over the IR exactly as graph::CompiledGraph serializes it). The
// hash-stability test runs this in two processes (with different
// environment and allocation patterns) and requires identical output.
#include <cstdio>

#include "compiler_cache/key.h"
#include "core/hash.h"
#include "graph/memory_plan.h"
#include "graph/passes.h"
#include "graph/serialize.h"
#include "trainer/model/step_graphs.h"

namespace {

std::string cache_key(const kiln::graph::Graph& graph) {
  const kiln::graph::Graph g = kiln::graph::eliminate_dead_code(graph);
  const std::vector<uint8_t> ir = kiln::graph::serialize(g, kiln::graph::plan_memory(g));
  kiln::compiler_cache::KeyParts parts;
  parts.backend = "cpu";
  parts.compiler_version = "cpu-1";
  parts.device_fingerprint = std::string(64, 'f');
  parts.ir_hash = kiln::sha256_hex(ir.data(), ir.size());
  return kiln::compiler_cache::compute_key(parts);
}

void print(const char* name, const kiln::graph::Graph& g) {
  std::printf("%s %s %s\n", name, kiln::graph::graph_hash(g).c_str(), cache_key(g).c_str());
}

}  // namespace

int main() {
  kiln::trainer::GptConfig cfg;
  cfg.num_layers = 2;
  cfg.hidden_size = 32;
  cfg.num_attention_heads = 4;
  cfg.seq_length = 16;
  print("train_step", kiln::trainer::build_train_step(cfg, 4));
  print("eval_step", kiln::trainer::build_eval_step(cfg, 4));
  print("optimizer", kiln::trainer::build_optimizer_step(cfg, {}));
  print("grad_norm", kiln::trainer::build_grad_norm(cfg));
  return 0;
}
