#include "trainer/model/document_inputs.h"

#include <algorithm>

#include "core/error.h"
#include "trainer/model/rotary_tables.h"

namespace kiln::trainer {

bool uses_documents(const GptConfig& c) { return c.reset_position_ids || c.reset_attention_mask || c.eod_mask_loss; }

DocumentInputs::DocumentInputs(const GptConfig& cfg, int32_t eod) : cfg_(cfg), eod_(eod) {
  if (uses_documents(cfg) && eod < 0)
    throw Error(
        "--reset-position-ids, --reset-attention-mask and --eod-mask-loss find documents by the tokenizer's EOD, and "
        "this run's data has none: train on --data-path with a tokenizer (kiln preprocess --append-eod writes EOD)");
  if (cfg.reset_position_ids && cfg.position_embedding_type == PositionEmbedding::Rope) {
    const RotaryTables t = rotary_tables(cfg);
    pairs_ = t.pairs;
    cos_.assign(t.cos.begin(), t.cos.end());
    sin_.assign(t.sin.begin(), t.sin.end());
  }
}

int64_t DocumentInputs::kept_tokens(const std::vector<int32_t>& tokens) const {
  if (!cfg_.eod_mask_loss) return static_cast<int64_t>(tokens.size());
  int64_t kept = 0;
  for (int32_t id : tokens) kept += id != eod_ ? 1 : 0;
  return kept;
}

DocumentInputs::Values DocumentInputs::compute(const std::vector<int32_t>& tokens, bool with_rotary,
                                               int64_t loss_tokens) const {
  const int64_t T = cfg_.seq_length, B = static_cast<int64_t>(tokens.size()) / T;
  Values v;
  v.starts.resize(tokens.size());
  v.position_ids.resize(tokens.size());
  for (int64_t b = 0; b < B; ++b) {
    int32_t start = 0;  // an EOD belongs to the document it ends
    for (int64_t t = 0; t < T; ++t) {
      const auto k = static_cast<size_t>(b * T + t);
      v.starts[k] = start;
      v.position_ids[k] = static_cast<int32_t>(t) - start;
      if (tokens[k] == eod_) start = static_cast<int32_t>(t + 1);
    }
  }
  if (with_rotary && !cos_.empty()) {
    v.rotary_cos.resize(tokens.size() * static_cast<size_t>(pairs_));
    v.rotary_sin.resize(v.rotary_cos.size());
    for (size_t k = 0; k < tokens.size(); ++k) {
      const auto from = static_cast<size_t>(v.position_ids[k]) * static_cast<size_t>(pairs_);
      std::copy_n(cos_.begin() + static_cast<std::ptrdiff_t>(from), pairs_,
                  v.rotary_cos.begin() + static_cast<std::ptrdiff_t>(k) * pairs_);
      std::copy_n(sin_.begin() + static_cast<std::ptrdiff_t>(from), pairs_,
                  v.rotary_sin.begin() + static_cast<std::ptrdiff_t>(k) * pairs_);
    }
  }
  if (cfg_.eod_mask_loss) {
    const int64_t kept = loss_tokens > 0 ? loss_tokens : kept_tokens(tokens);
    v.loss_weights.resize(tokens.size());
    for (size_t k = 0; k < tokens.size(); ++k)
      v.loss_weights[k] = tokens[k] != eod_ ? static_cast<float>(1.0 / static_cast<double>(kept)) : 0.0f;
  }
  return v;
}

void DocumentInputs::feed(graph::Executable& exe, const std::vector<int32_t>& tokens, int64_t loss_tokens) const {
  if (!uses_documents(cfg_)) return;
  const Values v = compute(tokens, exe.graph().find_input(kDocumentRotaryCosInput) != nullptr, loss_tokens);
  auto write = [&](const char* port, const auto& values) {
    if (exe.graph().find_input(port) != nullptr)
      exe.buffer(port)->write(values.data(), values.size() * sizeof(values[0]));
  };
  write(kDocumentStartsInput, v.starts);
  write(kDocumentPositionsInput, v.position_ids);
  if (!v.rotary_cos.empty()) {
    write(kDocumentRotaryCosInput, v.rotary_cos);
    write(kDocumentRotarySinInput, v.rotary_sin);
  }
  if (!v.loss_weights.empty()) write(kLossWeightsInput, v.loss_weights);
}

}  // namespace kiln::trainer
