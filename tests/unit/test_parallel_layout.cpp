// Rank placement shared by `kiln train` (its own rank) and `kiln precompile
// --world-size N` (every rank): Megatron's order, the world-size checks and
// their words, and that the ranks of one pipeline stage build the same
// graphs (what lets precompile build each stage's once).
// tests/cli/mpi_precompile_world_size.sh checks the keys end to end.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>

#include "core/error.h"
#include "graph/serialize.h"
#include "trainer/model/run_graphs.h"
#include "trainer/parallel_layout.h"

namespace kiln::trainer {
namespace {

TEST(ParallelLayout, MegatronRankOrderTensorThenDataThenPipeline) {
  // 8 ranks, TP 2, PP 2 (so DP 2): docs/DISTRIBUTED.md's example, ranks
  // 0-3 on stage 0 and 4-7 on stage 1.
  const int64_t expected[8][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0},
                                  {0, 0, 1}, {1, 0, 1}, {0, 1, 1}, {1, 1, 1}};  // tp, dp, pp
  std::set<std::tuple<int64_t, int64_t, int64_t>> seen;
  for (int64_t rank = 0; rank < 8; ++rank) {
    const Layout at = rank_layout(job_parallel_state(8, 2, 2), rank);
    EXPECT_EQ(at.tp_rank, expected[rank][0]) << "rank " << rank;
    EXPECT_EQ(at.dp_rank, expected[rank][1]) << "rank " << rank;
    EXPECT_EQ(at.pp_rank, expected[rank][2]) << "rank " << rank;
    EXPECT_EQ(at.dp, 2);
    EXPECT_EQ(at.tp, 2);
    EXPECT_EQ(at.pp, 2);
    seen.emplace(at.tp_rank, at.dp_rank, at.pp_rank);
  }
  EXPECT_EQ(seen.size(), 8U);
}

TEST(ParallelLayout, EveryRankWhereDistributedMdSaysForManyLayouts) {
  // docs/DISTRIBUTED.md's formula, world rank = (pp_rank x DP + dp_rank) x
  // TP + tp_rank, which kiln placed ranks by before ParallelState.
  for (int64_t tp : {1, 2, 4})
    for (int64_t pp : {1, 2, 4})
      for (int64_t dp : {1, 2, 3}) {
        const int64_t world = tp * pp * dp;
        const ParallelState state = job_parallel_state(world, tp, pp);
        for (int64_t rank = 0; rank < world; ++rank) {
          const Layout at = rank_layout(state, rank);
          EXPECT_EQ((at.pp_rank * dp + at.dp_rank) * tp + at.tp_rank, rank);
          EXPECT_EQ(at.tp_rank, rank % tp);
          EXPECT_EQ(at.dp_rank, rank / tp % dp);
          EXPECT_EQ(at.pp_rank, rank / (tp * dp));
          EXPECT_EQ(at.dp, dp);
          // Setup's MPI_Comm_split colours, the same integers as the
          // hand-written ones they replaced (so the same communicators).
          EXPECT_EQ(state.group_index("tp", rank), at.pp_rank * dp + at.dp_rank);
          EXPECT_EQ(state.group_index("dp", rank), at.pp_rank * tp + at.tp_rank);
          EXPECT_EQ(state.group_index("pp", rank), at.dp_rank * tp + at.tp_rank);
          EXPECT_EQ(static_cast<int64_t>(state.groups("pp").size()), dp * tp);
        }
      }
}

TEST(ParallelLayout, WorldSizeSetsDataParallelOrIsRefusedInOneLine) {
  TrainConfig cfg;
  cfg.tensor_model_parallel_size = 2;
  set_world_size(cfg, 8, "--world-size N");
  EXPECT_EQ(cfg.data_parallel_size, 4);
  cfg.pipeline_model_parallel_size = 2;
  set_world_size(cfg, 8, "--world-size N");
  EXPECT_EQ(cfg.data_parallel_size, 2);

  auto message = [](TrainConfig c, int64_t world) {
    try {
      set_world_size(c, world, "--world-size N");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  TrainConfig tp2;
  tp2.tensor_model_parallel_size = 2;
  EXPECT_EQ(message(tp2, 3),
            "--tensor-model-parallel-size 2 does not divide the 3 ranks of this job; launch a multiple of it "
            "(--world-size N)");
  EXPECT_EQ(message(cfg, 6),
            "--pipeline-model-parallel-size 2 x --tensor-model-parallel-size 2 does not divide the 6 ranks of this "
            "job; launch a multiple of it (--world-size N)");
  // A size of 0 is not a divisibility problem (N81).
  TrainConfig pp0;
  pp0.pipeline_model_parallel_size = 0;
  EXPECT_EQ(message(pp0, 2), "--pipeline-model-parallel-size must be positive, got 0");
  TrainConfig tp0;
  tp0.tensor_model_parallel_size = 0;
  EXPECT_EQ(message(tp0, 2), "--tensor-model-parallel-size must be positive, got 0");
}

TEST(ParallelLayout, RanksOfOneStageBuildTheSameGraphs) {
  TrainConfig cfg;
  cfg.model.num_layers = 2;
  cfg.model.hidden_size = 32;
  cfg.model.num_attention_heads = 4;
  cfg.model.seq_length = 16;
  cfg.model.tensor_parallel = 2;
  cfg.tensor_model_parallel_size = 2;
  cfg.pipeline_model_parallel_size = 2;
  cfg.micro_batch_size = 2;
  auto hashes = [&](int64_t rank) {
    std::vector<std::string> out;
    const RunGraphs graphs = build_rank_graphs(cfg, rank_layout(job_parallel_state(8, 2, 2), rank));
    for (const auto& [name, g] : graphs.list()) out.push_back(name + " " + graph::graph_hash(*g));
    return out;
  };
  const std::vector<std::string> stage0 = hashes(0), stage1 = hashes(4);
  for (int64_t rank : {1, 2, 3}) EXPECT_EQ(hashes(rank), stage0) << "rank " << rank;
  for (int64_t rank : {5, 6, 7}) EXPECT_EQ(hashes(rank), stage1) << "rank " << rank;
  EXPECT_NE(stage0, stage1);
}

}  // namespace
}  // namespace kiln::trainer
