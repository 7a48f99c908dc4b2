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

void ProcessGroups::set(kiln_group name, Collectives* group) {
  if (kiln_group_name(name) == nullptr) throw Error("internal: process group " + std::to_string(name));
  groups_[static_cast<size_t>(name)] = group;
}

Collectives& ProcessGroups::of(const Node& node) const {
  const int64_t name = node.iattrs.back();
  const char* group = kiln_group_name(name);
  if (group == nullptr || groups_[static_cast<size_t>(name)] == nullptr)
    throw Error(std::string("graph has an ") + kiln_op_name(node.op) + " over process group '" +
                (group != nullptr ? group : std::to_string(name).c_str()) +
                "', which this run was not given (internal: ProcessGroups::set)");
  return *groups_[static_cast<size_t>(name)];
}

bool ProcessGroups::empty() const {
  for (const Collectives* g : groups_)
    if (g != nullptr) return false;
  return true;
}

namespace {

// The flag that sets a group's size, for a graph built for another one.
const char* size_flag(int64_t group) {
  switch (group) {
    case KILN_GROUP_TP: return "--tensor-model-parallel-size";
    case KILN_GROUP_CP: return "--context-parallel-size";
    case KILN_GROUP_EP: return "--expert-model-parallel-size";
    case KILN_GROUP_PP: return "--pipeline-model-parallel-size";
    default: return "number of data-parallel ranks";
  }
}

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

void run_host_collective(const Graph& g, const Node& node, const ProcessGroups& groups, std::span<float> x,
                         std::vector<float>& y) {
  const kiln_op op = node.op;
  Collectives& group = groups.of(node);
  if (op == KILN_OP_ALL_REDUCE) {
    group.all_reduce(x, node.iattrs.at(0) == 1 ? Graph::Reduction::Max : Graph::Reduction::Sum);
    y.assign(x.begin(), x.end());
    return;
  }
  const int64_t axis = node.iattrs.at(0), ranks = node.iattrs.at(1);
  if (ranks != group.size()) {
    const int64_t name = node.iattrs.back();
    throw Error(std::string(kiln_op_name(op)) + " over " + std::to_string(ranks) + " ranks runs in a '" +
                kiln_group_name(name) + "' group of " + std::to_string(group.size()) +
                " (the graph was built for another " + size_flag(name) + ")");
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
