#include "trainer/model/position_inputs.h"

#include "trainer/model/alibi_slopes.h"
#include "trainer/model/rotary_tables.h"

namespace kiln::trainer {

namespace {
std::vector<float> to_f32(const std::vector<double>& v) { return {v.begin(), v.end()}; }
}  // namespace

std::map<std::string, PositionInput> position_inputs(const GptConfig& cfg, int64_t tp_rank) {
  std::map<std::string, PositionInput> inputs;
  if (cfg.position_embedding_type == PositionEmbedding::Rope) {
    const RotaryTables t = rotary_tables(cfg);
    inputs[kRotaryCosInput] = {{t.positions, t.pairs}, to_f32(t.cos), {}};
    inputs[kRotarySinInput] = {{t.positions, t.pairs}, to_f32(t.sin), {}};
  }
  if (cfg.position_embedding_type == PositionEmbedding::Alibi)
    inputs[kAlibiSlopesInput] = {
        {cfg.local_heads()},
        to_f32(alibi_slopes_of_rank(cfg.num_attention_heads, cfg.alibi_bias_max, cfg.tensor_parallel, tp_rank)),
        {}};
  if (cfg.position_embedding_type == PositionEmbedding::LearnedAbsolute && cfg.position_table_rows() > cfg.seq_length) {
    PositionInput& ids = inputs[kPositionIdsInput];
    ids.shape = {cfg.seq_length};
    for (int64_t t = 0; t < cfg.seq_length; ++t) ids.ids.push_back(static_cast<int32_t>(t));
  }
  return inputs;
}

}  // namespace kiln::trainer
