#include "trainer/model/tensor_parallel.h"

#include <algorithm>

#include "core/error.h"

namespace kiln::trainer {

namespace {

// A tensor split along `dim` is `outer` blocks of [dim size x inner]
// elements; a rank owns the same contiguous run in every block. A dim of k
// chunks (SwiGLU's [gate; up]) is k blocks per outer block, so a rank owns
// its run in each chunk.
struct Layout {
  int64_t outer = 1, full_run = 1, shard_run = 1;
};

Layout layout(const ParamSpec& spec, int64_t tensor_parallel) {
  const graph::Shape& s = spec.full_shape;
  const size_t dim = static_cast<size_t>(spec.shard_dim);
  const int64_t chunks = spec.shard_chunks;
  if (dim >= s.size() || chunks <= 0 || s[dim] % (chunks * tensor_parallel) != 0)
    throw Error("internal: parameter " + spec.name + " " + graph::to_string(s) + " cannot be split " +
                std::to_string(tensor_parallel) + " ways along dim " + std::to_string(spec.shard_dim) + " in " +
                std::to_string(chunks) + " chunk(s)");
  Layout l;
  int64_t inner = 1;
  for (size_t i = 0; i < dim; ++i) l.outer *= s[i];
  for (size_t i = dim + 1; i < s.size(); ++i) inner *= s[i];
  l.outer *= chunks;
  l.full_run = s[dim] / chunks * inner;
  l.shard_run = s[dim] / chunks / tensor_parallel * inner;
  return l;
}

void check_sizes(const ParamSpec& spec, size_t full, size_t shard) {
  if (full != static_cast<size_t>(graph::numel(spec.full_shape)) ||
      shard != static_cast<size_t>(graph::numel(spec.shape)))
    throw Error("internal: tensor sizes do not match parameter " + spec.name);
}

}  // namespace

std::vector<float> take_shard(const ParamSpec& spec, std::span<const float> full, int64_t tensor_parallel,
                              int64_t rank) {
  if (spec.shard_dim < 0 || tensor_parallel == 1) return {full.begin(), full.end()};
  const Layout l = layout(spec, tensor_parallel);
  std::vector<float> shard(static_cast<size_t>(l.outer * l.shard_run));
  check_sizes(spec, full.size(), shard.size());
  for (int64_t o = 0; o < l.outer; ++o) {
    const float* from = full.data() + o * l.full_run + rank * l.shard_run;
    std::copy(from, from + l.shard_run, shard.data() + o * l.shard_run);
  }
  return shard;
}

void put_shard(const ParamSpec& spec, std::span<const float> shard, std::span<float> full, int64_t tensor_parallel,
               int64_t rank) {
  if (spec.shard_dim < 0 || tensor_parallel == 1) {
    check_sizes(spec, full.size(), shard.size());
    std::copy(shard.begin(), shard.end(), full.begin());
    return;
  }
  const Layout l = layout(spec, tensor_parallel);
  check_sizes(spec, full.size(), shard.size());
  for (int64_t o = 0; o < l.outer; ++o) {
    const float* from = shard.data() + o * l.shard_run;
    std::copy(from, from + l.shard_run, full.data() + o * l.full_run + rank * l.shard_run);
  }
}

void shard_token_ids(std::span<int32_t> ids, int64_t local_vocab, int64_t rank) {
  const int64_t first = rank * local_vocab;
  for (int32_t& id : ids) {
    const int64_t local = static_cast<int64_t>(id) - first;
    id = static_cast<int32_t>(local >= 0 && local < local_vocab ? local : local_vocab);
  }
}

void shard_input_ids(std::span<int32_t> ids, std::span<float> mask, int64_t local_vocab, int64_t rank) {
  if (mask.size() != ids.size()) throw Error("internal: token mask and ids differ in length");
  const int64_t first = rank * local_vocab;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t local = static_cast<int64_t>(ids[i]) - first;
    const bool mine = local >= 0 && local < local_vocab;
    ids[i] = static_cast<int32_t>(mine ? local : 0);
    mask[i] = mine ? 1.0f : 0.0f;
  }
}

}  // namespace kiln::trainer
