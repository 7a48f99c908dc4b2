// The position tables a model's graphs read as inputs, computed once on
// the host: the rotary cos/sin tables (--position-embedding-type rope) and
// one tensor-parallel rank's ALiBi slopes (alibi). ModelState holds them
// beside the parameters and binds them by name like the parameters.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "trainer/model/gpt.h"

namespace kiln::trainer {

inline constexpr const char* kRotaryCosInput = "rotary.cos";      // [T, R]
inline constexpr const char* kRotarySinInput = "rotary.sin";      // [T, R]
inline constexpr const char* kAlibiSlopesInput = "alibi.slopes";  // [heads of the rank]
// 0..T-1, the rows of a learned position table larger than the sequence.
inline constexpr const char* kPositionIdsInput = "embedding.position_ids";  // [T] int32

struct PositionInput {
  graph::Shape shape;
  std::vector<float> values;
  std::vector<int32_t> ids;  // an int32 input instead (kPositionIdsInput)
};

// Empty for learned or no position embedding.
std::map<std::string, PositionInput> position_inputs(const GptConfig& cfg, int64_t tp_rank);

}  // namespace kiln::trainer
