// Moving between full tensors (checkpoints, initialisation, the data's
// token ids) and one tensor-parallel rank's part of them. The split itself
// (which parameter, which dim) is declared in trainer/model/gpt.h's ParamSpec.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "trainer/model/gpt.h"

namespace kiln::trainer {

// Rank `rank`'s part of the full tensor `full` (of spec.full_shape): the
// rank-th of tensor_parallel equal slices along spec.shard_dim (of each of
// its spec.shard_chunks chunks), or all of it for a replicated parameter.
std::vector<float> take_shard(const ParamSpec& spec, std::span<const float> full, int64_t tensor_parallel,
                              int64_t rank);
// The inverse: writes `shard` into its place in `full`.
void put_shard(const ParamSpec& spec, std::span<const float> shard, std::span<float> full, int64_t tensor_parallel,
               int64_t rank);

// Target ids as the rank's vocab shard sees them: ids in its range
// [rank x local_vocab, +local_vocab) become local (0-based), every other id
// becomes local_vocab -- outside the shard, so the cross-entropy shard
// skips it.
void shard_token_ids(std::span<int32_t> ids, int64_t local_vocab, int64_t rank);
// Input ids for the vocab-parallel embedding: local ids as above, but
// other shards' ids become row 0 (a valid lookup) with mask 0, which zeroes
// the row; mask 1 for the shard's own ids.
void shard_input_ids(std::span<int32_t> ids, std::span<float> mask, int64_t local_vocab, int64_t rank);

}  // namespace kiln::trainer
