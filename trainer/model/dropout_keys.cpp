#include "trainer/model/dropout_keys.h"

#include <charconv>
#include <string_view>

namespace kiln::trainer {

namespace {
std::array<int32_t, 4> key(uint64_t seed, int64_t iteration, uint64_t offset) {
  // The words are uint32 bit patterns in i32 slots (DROPOUT's key).
  return {static_cast<int32_t>(static_cast<uint32_t>(seed)), static_cast<int32_t>(static_cast<uint32_t>(iteration)),
          static_cast<int32_t>(static_cast<uint32_t>(offset)),
          static_cast<int32_t>(static_cast<uint32_t>(offset >> 32))};
}
}  // namespace

std::string dropout_key_input(int64_t site) { return "dropout.site" + std::to_string(site) + ".key"; }

int64_t dropout_key_site(const std::string& input) {
  static constexpr std::string_view kPrefix = "dropout.site", kSuffix = ".key";
  const std::string_view s = input;
  if (s.size() <= kPrefix.size() + kSuffix.size() || !s.starts_with(kPrefix) || !s.ends_with(kSuffix)) return -1;
  const std::string_view digits = s.substr(kPrefix.size(), s.size() - kPrefix.size() - kSuffix.size());
  int64_t site = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), site);
  return ec == std::errc() && end == digits.data() + digits.size() && site >= 0 ? site : -1;
}

std::array<int32_t, 5> DropoutKeys::at_site(int64_t site) const {
  const std::array<int32_t, 4>& k = is_attention_dropout_site(site) ? attention : hidden;
  return {k[0], k[1], k[2], k[3], static_cast<int32_t>(static_cast<uint32_t>(site))};
}

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
