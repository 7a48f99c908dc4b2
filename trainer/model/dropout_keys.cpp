#include "trainer/model/dropout_keys.h"

namespace kiln::trainer {

namespace {
std::array<int32_t, 4> key(uint64_t seed, int64_t iteration, uint64_t offset) {
  // The words are uint32 bit patterns in i32 slots (DROPOUT's key).
  return {static_cast<int32_t>(static_cast<uint32_t>(seed)), static_cast<int32_t>(static_cast<uint32_t>(iteration)),
          static_cast<int32_t>(static_cast<uint32_t>(offset)),
          static_cast<int32_t>(static_cast<uint32_t>(offset >> 32))};
}
}  // namespace

DropoutKeys dropout_keys(const GptConfig& c, uint64_t seed, int64_t iteration, int64_t first_sample, int64_t tp_rank) {
  const auto T = static_cast<uint64_t>(c.seq_length), C = static_cast<uint64_t>(c.hidden_size);
  const auto H = static_cast<uint64_t>(c.num_attention_heads), local_heads = static_cast<uint64_t>(c.local_heads());
  const auto sample = static_cast<uint64_t>(first_sample), rank = static_cast<uint64_t>(tp_rank);
  DropoutKeys k;
  // Hidden states [B*T, C] hold whole samples of T*C elements each; with
  // sequence parallelism each rank's [B, T/R, C] slice is a column block of
  // [B, T*C] (the graph gives DROPOUT period T/R*C and stride T*C), so the
  // key also names this rank's first token.
  const auto T_local = static_cast<uint64_t>(c.local_seq_length());
  k.hidden = key(seed, iteration, sample * T * C + (c.splits_sequence() ? rank * T_local * C : 0));
  // Probabilities [B, H_local*T*T] are a column block of the single-process
  // [B, H*T*T]: the graph gives DROPOUT period H_local*T*T and stride H*T*T,
  // the key the first sample's row and this rank's first head.
  k.attention = key(seed, iteration, sample * H * T * T + rank * local_heads * T * T);
  return k;
}

}  // namespace kiln::trainer
