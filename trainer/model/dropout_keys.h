// Megatron's dropout in the GPT model (--hidden-dropout after the
// embeddings and on each attention and MLP output before the residual add,
// --attention-dropout on the attention probabilities), with DROPOUT's
// counter-based masks (docs/DROPOUT.md). A mask element is a function of
// (--seed, iteration, site, global element index), where the global index
// counts over the whole data stream as one process would lay it out:
// sample s's elements come after those of samples 0..s-1. So the masks do
// not depend on how a global batch is cut into micro-batches, on the
// data-parallel ranks, or on resuming; and a tensor-parallel rank's
// attention heads draw the single-process masks of those heads (hidden
// dropout is on replicated tensors, so all ranks draw the same mask, as
// Megatron's RNG tracker makes them, or with sequence parallelism on each
// rank's slice of the sequence, the single-process masks of those tokens).
// Evaluation and generation build their graphs without dropout.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "trainer/model/gpt.h"

namespace kiln::trainer {

// A dropout site: one per place in the model, Philox's second key word.
inline int64_t embedding_dropout_site() { return 0; }
inline int64_t attention_probs_dropout_site(int64_t layer) { return 1 + 3 * layer; }
inline int64_t attention_output_dropout_site(int64_t layer) { return 2 + 3 * layer; }
inline int64_t mlp_output_dropout_site(int64_t layer) { return 3 + 3 * layer; }
// Whether a site drops attention probabilities (--attention-dropout) or
// hidden states (--hidden-dropout): their keys count different elements.
inline bool is_attention_dropout_site(int64_t site) { return site % 3 == 1; }

// The graph input holding a site's DROPOUT_KEYED key, i32 [5]. Each site
// has its own, so a layer's graph holds no number of its own (its site
// arrives at run time) and identical layers share one compile unit.
std::string dropout_key_input(int64_t site);
// The site of a dropout_key_input name, or -1 for any other name.
int64_t dropout_key_site(const std::string& input);

struct DropoutKeys {
  std::array<int32_t, 4> hidden{}, attention{};
  // The key of one site: its kind's key with the site as word 4.
  std::array<int32_t, 5> at_site(int64_t site) const;
};

// The keys of a micro-batch whose first sample is `first_sample` of the
// data stream, at `iteration`, on tensor-parallel rank `tp_rank`:
// {seed, iteration, element offset low, high}.
DropoutKeys dropout_keys(const GptConfig& cfg, uint64_t seed, int64_t iteration, int64_t first_sample, int64_t tp_rank);

}  // namespace kiln::trainer
