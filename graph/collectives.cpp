#include "graph/collectives.h"

#include <algorithm>

#include "core/error.h"

namespace kiln::graph {

void Collectives::all_gather(std::span<const float> mine, std::span<float> all) {
  std::fill(all.begin(), all.end(), 0.0f);
  std::copy(mine.begin(), mine.end(), all.begin() + static_cast<std::ptrdiff_t>(mine.size()) * rank());
  all_reduce(all, Graph::Reduction::Sum);
}

void Collectives::reduce_scatter(std::span<const float> all, std::span<float> mine) {
  std::vector<float> sum(all.begin(), all.end());
  all_reduce(sum, Graph::Reduction::Sum);
  const auto first = sum.begin() + static_cast<std::ptrdiff_t>(mine.size()) * rank();
  std::copy(first, first + static_cast<std::ptrdiff_t>(mine.size()), mine.begin());
}

namespace {

// A tensor seen as [outer, R, part]: R slices along an axis, each `part`
// contiguous elements per index of the dims before the axis.
struct Slices {
  size_t outer = 1, ranks = 1, part = 1;
};

Slices slices_of(const Shape& whole, int64_t axis, int64_t ranks) {
  Slices s;
  s.ranks = static_cast<size_t>(ranks);
  for (size_t d = 0; d < whole.size(); ++d)
    (static_cast<int64_t>(d) < axis ? s.outer : s.part) *= static_cast<size_t>(whole[d]);
  s.part /= s.ranks;
  return s;
}

// [outer, R, part] <-> R blocks of [outer, part]: element (o, r, i) of the
// tensor is element (o, i) of block r.
void to_blocks(const Slices& s, std::span<const float> tensor, std::span<float> blocks) {
  for (size_t o = 0; o < s.outer; ++o)
    for (size_t r = 0; r < s.ranks; ++r)
      std::copy_n(tensor.begin() + static_cast<std::ptrdiff_t>((o * s.ranks + r) * s.part), s.part,
                  blocks.begin() + static_cast<std::ptrdiff_t>((r * s.outer + o) * s.part));
}

void from_blocks(const Slices& s, std::span<const float> blocks, std::span<float> tensor) {
  for (size_t o = 0; o < s.outer; ++o)
    for (size_t r = 0; r < s.ranks; ++r)
      std::copy_n(blocks.begin() + static_cast<std::ptrdiff_t>((r * s.outer + o) * s.part), s.part,
                  tensor.begin() + static_cast<std::ptrdiff_t>((o * s.ranks + r) * s.part));
}

}  // namespace

void run_host_collective(const Graph& g, const Node& node, Collectives& group, std::span<float> x,
                         std::vector<float>& y) {
  const kiln_op op = node.op;
  if (op == KILN_OP_ALL_REDUCE) {
    group.all_reduce(x, node.iattrs.at(0) == 1 ? Graph::Reduction::Max : Graph::Reduction::Sum);
    y.assign(x.begin(), x.end());
    return;
  }
  const int64_t axis = node.iattrs.at(0), ranks = node.iattrs.at(1);
  if (ranks != group.size()) {
    std::string why = kiln_op_name(op);
    why += " over " + std::to_string(ranks) + " ranks runs in a tensor-parallel group of ";
    why += std::to_string(group.size());
    why += " (the graph was built for another --tensor-model-parallel-size)";
    throw Error(why);
  }
  y.resize(static_cast<size_t>(numel(g.value(node.outputs.at(0)).shape)));
  std::vector<float> blocks;
  switch (op) {
    case KILN_OP_ALL_GATHER: {
      const Slices s = slices_of(g.value(node.outputs.at(0)).shape, axis, ranks);
      blocks.resize(y.size());
      group.all_gather(x, blocks);
      from_blocks(s, blocks, y);
      return;
    }
    case KILN_OP_REDUCE_SCATTER: {
      const Slices s = slices_of(g.value(node.inputs.at(0)).shape, axis, ranks);
      blocks.resize(x.size());
      to_blocks(s, x, blocks);
      group.reduce_scatter(blocks, y);
      return;
    }
    case KILN_OP_SCATTER: {
      const Slices s = slices_of(g.value(node.inputs.at(0)).shape, axis, ranks);
      blocks.resize(x.size());
      to_blocks(s, x, blocks);
      const auto mine = blocks.begin() + static_cast<std::ptrdiff_t>(y.size()) * group.rank();
      std::copy(mine, mine + static_cast<std::ptrdiff_t>(y.size()), y.begin());
      return;
    }
    default: throw Error(std::string("not a host collective: ") + kiln_op_name(op));
  }
}

}  // namespace kiln::graph
