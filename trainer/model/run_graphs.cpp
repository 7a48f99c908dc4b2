#include "trainer/model/run_graphs.h"

#include "compiler_cache/compile_cache.h"
#include "core/log.h"
#include "trainer/gradient_dump.h"
#include "trainer/model/step_graphs.h"

namespace kiln::trainer {

RunGraphs build_run_graphs(const TrainConfig& cfg) { return build_run_graphs(cfg, cfg.model); }

RunGraphs build_rank_graphs(const TrainConfig& cfg, const Layout& at, bool fused_attention) {
  std::vector<GptConfig> chunks = cfg.stage_chunks(at.pp_rank);
  for (GptConfig& chunk : chunks) chunk.fused_attention = fused_attention;
  RunGraphs g = build_run_graphs(cfg, chunks.front());
  for (size_t c = 1; c < chunks.size(); ++c) g.later_chunks.push_back(build_run_graphs(cfg, chunks[c]));
  return g;
}

RunGraphs build_run_graphs(const TrainConfig& cfg, const GptConfig& model) {
  const int64_t B = cfg.micro_batch_size;
  AdamWConfig adam{static_cast<float>(cfg.adam_beta1), static_cast<float>(cfg.adam_beta2),
                   static_cast<float>(cfg.adam_eps), cfg.decouples_lr()};
  const bool expose = gradient_dump_requested();
  RunGraphs g{build_train_step(model, B, GradMode::Overwrite, expose),
              std::nullopt,
              build_grad_norm(model),
              cfg.shards_optimizer() ? build_sharded_optimizer_step(model, adam, cfg.data_parallel_size)
                                     : build_optimizer_step(model, adam),
              std::nullopt,
              std::nullopt,
              {}};
  // Every micro-batch has B samples (the global batch is a multiple of
  // B x data-parallel size, checked by TrainConfig::finalize), so there is
  // no partial last micro-batch shape to build.
  if (cfg.num_micro_batches() > 1) g.next_micro_batch = build_train_step(model, B, GradMode::Accumulate, expose);
  if (cfg.eval_iters > 0) g.eval = build_eval_step(model, B);
  if (!model.post_process) g.stage_forward = build_stage_forward(model, B);
  return g;
}

std::vector<std::pair<std::string, const graph::Graph*>> RunGraphs::list() const {
  std::vector<std::pair<std::string, const graph::Graph*>> out = {
      {"train step (first micro-batch)", &first_micro_batch}};
  if (next_micro_batch) out.emplace_back("train step (later micro-batches)", &*next_micro_batch);
  out.emplace_back("grad norm", &grad_norm);
  out.emplace_back("optimizer", &optimizer);
  if (eval) out.emplace_back("eval step", &*eval);
  if (stage_forward) out.emplace_back("pipeline stage forward", &*stage_forward);
  for (size_t c = 0; c < later_chunks.size(); ++c) {
    for (const auto& [name, g] : later_chunks[c].list()) {
      std::string chunk_name = "chunk " + std::to_string(c + 1);
      chunk_name += ": ";
      chunk_name += name;
      out.emplace_back(chunk_name, g);
    }
  }
  return out;
}

void log_compile_cache_use() {
  const compiler_cache::CacheStats s = compiler_cache::stats();
  const std::string& dir = compiler_cache::config().dir;
  logger().info(
      "compile cache: {} graphs from the cache (loading took {:.3f} s), {} compiled ({:.2f} s){}", s.hits,
      s.lookup_seconds, s.compiled, s.compile_seconds,
      dir.empty() ? std::string(", no cache") : ", cache " + dir + (compiler_cache::writable() ? "" : " (read-only)"));
  // The figure `--require-precompiled` runs are judged by (issue 32): 0.0
  // after a precompile. It counts the backend compiling what the cache
  // lacked; loading cached executables is not compiling, and is the line
  // above's "loading took".
  logger().info("setup spent {:.1f} s compiling (the backend compiling the {} compile unit{} not in the compile cache)",
                s.compile_seconds, s.compiled, s.compiled == 1 ? "" : "s");
  compiler_cache::record_usage();  // for `kiln cache stats`
}

}  // namespace kiln::trainer
