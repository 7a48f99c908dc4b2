// Megatron's flags for packed samples of several documents, each ended by
// the tokenizer's EOD (docs/DOCUMENTS.md): --reset-position-ids restarts
// positions after each EOD, --reset-attention-mask keeps every token's
// attention inside its own document, and --eod-mask-loss leaves the tokens
// whose input is EOD out of the loss and its token count. As Megatron's
// get_ltor_masks_and_position_ids, everything comes from a micro-batch's
// input tokens, so the host computes it per micro-batch and the graphs
// read it as inputs: B x T starts and positions, never a [T, T] mask.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/executor.h"
#include "trainer/model/gpt.h"

namespace kiln::trainer {

// Each query's first visible key: the position after the last EOD before it.
inline constexpr const char* kDocumentStartsInput = "documents.starts";  // [B, T] i32
// Positions since the document's start, for a learned position table.
inline constexpr const char* kDocumentPositionsInput = "documents.position_ids";  // [B, T] i32
// Rotary tables with a row per token of the micro-batch (row b * T + t:
// position_ids[b, t]'s angles), for ROPE over [heads, B * T, D].
inline constexpr const char* kDocumentRotaryCosInput = "documents.rotary_cos";  // [B * T, R]
inline constexpr const char* kDocumentRotarySinInput = "documents.rotary_sin";  // [B * T, R]
// loss_mask / loss_mask.sum(): the weight of each token's loss in the
// micro-batch's mean (0 where the input is EOD; all 0 if every input is).
inline constexpr const char* kLossWeightsInput = "documents.loss_weights";  // [B * T, 1] f32

bool uses_documents(const GptConfig& cfg);

// The per-micro-batch inputs of cfg's document flags, for tokens of the
// data's `eod` id.
class DocumentInputs {
 public:
  DocumentInputs(const GptConfig& cfg, int32_t eod);

  struct Values {
    std::vector<int32_t> starts, position_ids;
    std::vector<float> rotary_cos, rotary_sin, loss_weights;
  };
  // From the input tokens [B, T] of one micro-batch (before any
  // tensor-parallel sharding of their ids); the rotary tables, B * T rows
  // where the rest is B * T values, only `with_rotary`.
  // The loss weights divide by loss_tokens when it is positive (the global
  // batch's kept tokens, --calculate-per-token-loss), else by the
  // micro-batch's own kept tokens.
  Values compute(const std::vector<int32_t>& tokens, bool with_rotary = true, int64_t loss_tokens = 0) const;
  // Writes those of the values that `exe` declares as inputs (a pipeline
  // stage without attention layers computes no rotary tables).
  void feed(graph::Executable& exe, const std::vector<int32_t>& tokens, int64_t loss_tokens = 0) const;
  // The tokens of a micro-batch that count towards the loss (inputs other
  // than EOD under --eod-mask-loss).
  int64_t kept_tokens(const std::vector<int32_t>& tokens) const;

 private:
  GptConfig cfg_;
  int32_t eod_;
  int64_t pairs_ = 0;
  std::vector<float> cos_, sin_;  // [T, R]: position p's angles, p < T
};

}  // namespace kiln::trainer
