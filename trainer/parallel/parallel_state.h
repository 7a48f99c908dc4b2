// ParallelState: a job's parallelism as data. An ordered list of dimensions
// (Megatron's RankGenerator order, tp-cp-ep-dp-pp by default, the first
// varying fastest) is the one rank <-> coordinates mapping: `Setup` places
// its own rank and forms its sub-communicators from it, and `kiln precompile
// --world-size N` places every rank of a job it never launches with it.
//
// `groups(token)` lists the rank groups of a dimension or a set of them
// ("tp", "dp-cp", "tp-pp") in the order Megatron's RankGenerator.get_ranks
// returns them; tests/unit/test_parallel_state.cpp checks that against
// goldens made from Megatron's own code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::trainer {

struct ParallelDim {
  std::string name;  // "tp", "cp", "ep", "dp", "pp"
  int64_t size = 1;
};

class ParallelState {
 public:
  // `dims` in rank order, fastest first. Throws a one-line kiln::Error when
  // a size is not positive, a name repeats, or the sizes' product is not
  // `world_size`.
  ParallelState(std::vector<ParallelDim> dims, int64_t world_size);

  // Megatron's default order, tp-cp-ep-dp-pp.
  static ParallelState megatron(int64_t world_size, int64_t tp, int64_t cp, int64_t ep, int64_t dp, int64_t pp);

  int64_t world_size() const { return world_size_; }
  const std::vector<ParallelDim>& dims() const { return dims_; }
  int64_t size(const std::string& dim) const;

  // A rank's coordinate along each dimension, in `dims()` order, and back.
  std::vector<int64_t> coordinates(int64_t rank) const;
  int64_t coordinate(int64_t rank, const std::string& dim) const;
  int64_t rank(const std::vector<int64_t>& coordinates) const;

  // Every group of `token` ("tp", "tp-pp", "dp-cp": dimensions joined by
  // '-', in any order): the ranks that differ only along those dimensions.
  // Groups are numbered by the other dimensions' coordinates and ranks
  // within a group by the token's, each fastest-first in `dims()` order,
  // which is RankGenerator.get_ranks' order.
  std::vector<std::vector<int64_t>> groups(const std::string& token) const;

  // Where `rank` sits among groups(token): which group (usable as an
  // MPI_Comm_split colour, every group a different one) and its place in
  // it (the split key).
  int64_t group_index(const std::string& token, int64_t rank) const;
  int64_t rank_in_group(const std::string& token, int64_t rank) const;
  std::vector<int64_t> group_of(const std::string& token, int64_t rank) const;

 private:
  // token -> which of dims_ it names; throws on an unknown or repeated name.
  std::vector<bool> mask(const std::string& token) const;
  // The mixed-radix number formed by `coords`' entries where `mask` is
  // `want`, fastest first.
  int64_t mixed_radix(const std::vector<int64_t>& coords, const std::vector<bool>& mask, bool want) const;
  size_t index_of(const std::string& dim) const;
  void check_rank(int64_t rank) const;

  std::vector<ParallelDim> dims_;
  int64_t world_size_ = 1;
};

}  // namespace kiln::trainer
