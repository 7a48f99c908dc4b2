#include "trainer/model/model_size.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "compiler_cache/compile_pool.h"
#include "core/error.h"
#include "trainer/model/gpt.h"

namespace kiln::trainer {

namespace {

// include/kiln/ir_decode.hpp: an IR value holds at most 2^40 elements.
constexpr double kMaxTensorElements = 1099511627776.0;
// graph/compile_units.cpp labels layer l's parameter unit 2^30 + l.
constexpr int64_t kMaxLayers = (int64_t{1} << 30) - 1;

struct Sizes {
  double C, F, D, heads, groups, V, positions, fc1_chunks;
};

// Doubles: a size of 2^40 times another must not overflow int64_t before
// it is compared.
Sizes sizes_of(const GptConfig& c) {
  const auto d = [](int64_t v) { return static_cast<double>(v); };
  return {d(c.hidden_size),
          d(c.ffn_hidden()),
          d(c.head_dim()),
          d(c.num_attention_heads),
          d(c.query_groups()),
          d(c.vocab_size),
          c.position_embedding_type == PositionEmbedding::LearnedAbsolute ? d(c.position_table_rows()) : 0.0,
          c.swiglu ? 2.0 : 1.0};
}

// Parameters outside the layers (embeddings, output layer, final norm).
double outer_parameters(const GptConfig& c, const Sizes& s) {
  const double word = s.V * s.C;
  return word * (c.untie_embeddings_and_output_weights ? 2 : 1) + s.positions * s.C + 2 * s.C;
}

// Parameters of one layer, biases and norms counted whether present or not
// (a few times C: an upper bound is as good for a size check).
double layer_parameters(const Sizes& s) {
  const double qkv = (s.heads + 2 * s.groups) * s.D;
  return qkv * s.C + s.C * s.heads * s.D + s.fc1_chunks * s.F * s.C + s.C * s.F + qkv + s.fc1_chunks * s.F + 6 * s.C +
         4 * s.D;
}

std::string bytes_text(double b) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  size_t u = 0;
  while (b >= 1024 && u + 1 < std::size(units)) b /= 1024, ++u;
  return fmt::format("{:.3g} {}", b, units[u]);
}

}  // namespace

double parameter_estimate(const GptConfig& c) {
  const Sizes s = sizes_of(c);
  return outer_parameters(c, s) + static_cast<double>(c.num_layers) * layer_parameters(s);
}

void check_model_size(const GptConfig& c) {
  if (c.num_layers > kMaxLayers)
    throw Error(fmt::format("--num-layers {} is above the {} layers kiln's graphs can number; lower --num-layers",
                            c.num_layers, kMaxLayers));
  const Sizes s = sizes_of(c);
  struct Tensor {
    const char* what;
    double elements;
    const char* flags;
  };
  const Tensor largest[] = {
      {"the word embedding", s.V * s.C, "--vocab-size or --hidden-size"},
      {"the position embedding", s.positions * s.C, "--max-position-embeddings, --seq-length or --hidden-size"},
      {"the QKV weight", (s.heads + 2 * s.groups) * s.D * s.C, "--hidden-size, --kv-channels or --num-attention-heads"},
      {"the MLP's fc1 weight", s.fc1_chunks * s.F * s.C, "--hidden-size or --ffn-hidden-size"},
  };
  for (const Tensor& t : largest)
    if (t.elements > kMaxTensorElements)
      throw Error(fmt::format(
          "{} would hold {:.3g} elements (--hidden-size {}), above kiln's 2^40 per tensor (the IR's limit); lower {}",
          t.what, t.elements, c.hidden_size, t.flags));
  const double available = static_cast<double>(compiler_cache::available_memory_bytes());
  const double needed = static_cast<double>(c.num_layers) * kHostBytesPerLayer;
  if (available > 0 && needed > available)
    throw Error(fmt::format(
        "--num-layers {} needs at least {} of host memory to describe the model's layers, before any weight "
        "(about {} per layer), and {} is available; lower --num-layers",
        c.num_layers, bytes_text(needed), bytes_text(kHostBytesPerLayer), bytes_text(available)));
}

void check_weights_fit(const GptConfig& c, int64_t ranks_sharing) {
  const double available = static_cast<double>(compiler_cache::available_memory_bytes());
  const double parameters = parameter_estimate(c);
  const double bytes = 4 * parameters / static_cast<double>(std::max<int64_t>(1, ranks_sharing));
  if (available <= 0 || bytes <= available) return;
  const Sizes s = sizes_of(c);
  // Name the flags behind the larger part: the layers or the embeddings.
  const bool layers = static_cast<double>(c.num_layers) * layer_parameters(s) >= outer_parameters(c, s);
  throw Error(fmt::format(
      "the model's {:.3g} parameters (--num-layers {}, --hidden-size {}, --vocab-size {}) need {} of fp32 weights "
      "per rank alone, and {} of host memory is available; lower {}",
      parameters, c.num_layers, c.hidden_size, c.vocab_size, bytes_text(bytes), bytes_text(available),
      layers ? "--num-layers or --hidden-size" : "--vocab-size or --hidden-size"));
}

}  // namespace kiln::trainer
