#include "trainer/parallel/parallel_state.h"

#include <utility>

#include "core/error.h"

namespace kiln::trainer {

namespace {

std::string describe(const std::vector<ParallelDim>& dims) {
  std::string out;
  for (const ParallelDim& d : dims) {
    if (!out.empty()) out += " x ";
    out += d.name + " " + std::to_string(d.size);
  }
  return out;
}

}  // namespace

ParallelState::ParallelState(std::vector<ParallelDim> dims, int64_t world_size)
    : dims_(std::move(dims)), world_size_(world_size) {
  int64_t product = 1;
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (dims_[i].size <= 0)
      throw Error("parallel dimension " + dims_[i].name + " has size " + std::to_string(dims_[i].size) +
                  "; every size must be at least 1");
    for (size_t j = 0; j < i; ++j)
      if (dims_[j].name == dims_[i].name) throw Error("parallel dimension " + dims_[i].name + " is listed twice");
    product *= dims_[i].size;
  }
  if (product != world_size)
    throw Error("parallel sizes " + describe(dims_) + " make " + std::to_string(product) + " ranks, not the " +
                std::to_string(world_size) + " of this job");
}

ParallelState ParallelState::megatron(int64_t world_size, int64_t tp, int64_t cp, int64_t ep, int64_t dp, int64_t pp) {
  return ParallelState({{"tp", tp}, {"cp", cp}, {"ep", ep}, {"dp", dp}, {"pp", pp}}, world_size);
}

size_t ParallelState::index_of(const std::string& dim) const {
  for (size_t i = 0; i < dims_.size(); ++i)
    if (dims_[i].name == dim) return i;
  throw Error("no parallel dimension '" + dim + "' in " + describe(dims_));
}

int64_t ParallelState::size(const std::string& dim) const { return dims_[index_of(dim)].size; }

void ParallelState::check_rank(int64_t rank) const {
  if (rank < 0 || rank >= world_size_)
    throw Error("rank " + std::to_string(rank) + " is outside the " + std::to_string(world_size_) + " ranks of " +
                describe(dims_));
}

std::vector<int64_t> ParallelState::coordinates(int64_t rank) const {
  check_rank(rank);
  std::vector<int64_t> coords;
  for (const ParallelDim& d : dims_) {  // the first dimension varies fastest
    coords.push_back(rank % d.size);
    rank /= d.size;
  }
  return coords;
}

int64_t ParallelState::coordinate(int64_t rank, const std::string& dim) const {
  return coordinates(rank)[index_of(dim)];
}

int64_t ParallelState::rank(const std::vector<int64_t>& coords) const {
  if (coords.size() != dims_.size())
    throw Error(std::to_string(coords.size()) + " coordinates for the " + std::to_string(dims_.size()) +
                " parallel dimensions " + describe(dims_));
  int64_t rank = 0;
  for (size_t i = dims_.size(); i-- > 0;) {
    if (coords[i] < 0 || coords[i] >= dims_[i].size)
      throw Error("coordinate " + std::to_string(coords[i]) + " is outside " + dims_[i].name + " size " +
                  std::to_string(dims_[i].size));
    rank = rank * dims_[i].size + coords[i];
  }
  return rank;
}

std::vector<bool> ParallelState::mask(const std::string& token) const {
  std::vector<bool> in(dims_.size(), false);
  size_t start = 0;
  while (true) {
    const size_t end = token.find('-', start);
    const std::string name = token.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const size_t i = index_of(name);
    if (in[i]) {
      std::string message = "parallel group '" + token + "' names ";
      message += name;
      message += " twice";
      throw Error(message);
    }
    in[i] = true;
    if (end == std::string::npos) return in;
    start = end + 1;
  }
}

int64_t ParallelState::mixed_radix(const std::vector<int64_t>& coords, const std::vector<bool>& mask, bool want) const {
  int64_t value = 0;
  for (size_t i = dims_.size(); i-- > 0;)
    if (mask[i] == want) value = value * dims_[i].size + coords[i];
  return value;
}

std::vector<std::vector<int64_t>> ParallelState::groups(const std::string& token) const {
  const std::vector<bool> in = mask(token);
  int64_t group_size = 1;
  for (size_t i = 0; i < dims_.size(); ++i)
    if (in[i]) group_size *= dims_[i].size;
  // A rank's group is numbered by its coordinates outside the token and its
  // place in the group by those inside, so placing each rank at
  // [group_index][rank_in_group] lists the groups in Megatron's order.
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(world_size_ / group_size),
                                        std::vector<int64_t>(static_cast<size_t>(group_size)));
  for (int64_t r = 0; r < world_size_; ++r) {
    const std::vector<int64_t> coords = coordinates(r);
    out[static_cast<size_t>(mixed_radix(coords, in, false))][static_cast<size_t>(mixed_radix(coords, in, true))] = r;
  }
  return out;
}

int64_t ParallelState::group_index(const std::string& token, int64_t rank) const {
  return mixed_radix(coordinates(rank), mask(token), false);
}

int64_t ParallelState::rank_in_group(const std::string& token, int64_t rank) const {
  return mixed_radix(coordinates(rank), mask(token), true);
}

std::vector<int64_t> ParallelState::group_of(const std::string& token, int64_t rank) const {
  return groups(token)[static_cast<size_t>(group_index(token, rank))];
}

}  // namespace kiln::trainer
