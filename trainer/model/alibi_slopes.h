// ALiBi's per-head slopes (--position-embedding-type alibi, a kiln extension
// after llm-foundry's MPT): head h's attention score to a key d positions
// back is lowered by slope[h] * d.
#pragma once

#include <cstdint>
#include <vector>

namespace kiln::trainer {

// llm-foundry's gen_slopes: for n a power of two, slope[h] = 2^(-(h + 1) *
// bias_max / n). Otherwise the slopes of the next power of two N, odd
// positions first then even ones ([1::2] then [::2]), cut to n, as
// Hugging Face and FasterTransformer do.
std::vector<double> alibi_slopes(int64_t heads, double alibi_bias_max);

// The slopes of one tensor-parallel rank's heads (a contiguous run of
// heads / tensor_parallel).
std::vector<double> alibi_slopes_of_rank(int64_t heads, double alibi_bias_max, int64_t tensor_parallel, int64_t rank);

}  // namespace kiln::trainer
