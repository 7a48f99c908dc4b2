// The distributed optimizer's collectives (--use-distributed-optimizer,
// Megatron's ZeRO-1 over the data-parallel group). Data-parallel rank r owns
// part r of every parameter (trainer/model/step_graphs.h): instead of an
// all-reduce, the gradients are reduce-scattered so each rank receives the
// sum of its part only, it runs AdamW on that part (its moments exist for
// that part only), and the updated parts are all-gathered back into every
// rank's full parameters.
//
// The flat buffer of one collective holds one block per rank, block r the
// concatenation of part r of every parameter (zero-padded), so a single
// MPI_Reduce_scatter_block / MPI_Allgather moves it all.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "trainer/dist/comm.h"
#include "trainer/model/model_state.h"

namespace kiln::trainer::dist {

class DistributedOptimizer {
 public:
  // `stage`: the model (pipeline stage) `state` holds; `tp_rank`: this
  // rank's place in its tensor-parallel group (the gradient norm counts a
  // replicated parameter once per replica, and a tied embedding once per
  // pipeline).
  DistributedOptimizer(Comm& dp_group, const ModelState& state, const GptConfig& stage, int64_t tp_rank);

  // Reads every gradient and starts the reduce-scatter; the caller completes
  // it with the group's wait() (with any other collective it started), then
  // finish_reduce_scatter() writes this rank's summed part to grad_shard.*.
  void start_reduce_scatter();
  void finish_reduce_scatter();
  // Between the two: this rank's summed part of one parameter's gradient,
  // for a further sum (a tied embedding's over the first and last pipeline
  // stage, whose parts of it are the same elements).
  std::span<float> summed_part(const std::string& param);
  // This rank's share of the squared global gradient norm (of the sums, as
  // reduced): its part of every tensor-parallel-sharded parameter, and of
  // every replicated one on tensor-parallel rank 0 only, so the sum over all
  // ranks of the job is the square of the norm -- one all-reduce.
  double local_grad_squares() const;
  // After the optimizer step updated main.*: gathers every rank's part and
  // writes the full parameters (blocking; `what` names it on a timeout).
  void gather_parameters(const std::string& what);

 private:
  struct Part {
    DeviceBuffer* grad;        // grad.<param>, the whole local tensor
    DeviceBuffer* grad_shard;  // grad_shard.<param>, this rank's part
    DeviceBuffer* main;        // main.<param>, this rank's part
    DeviceBuffer* param;       // <param>, the whole local tensor
    std::string name;
    size_t numel, size, offset;  // local elements; part size and offset within a block
    bool counted_in_norm;        // false for a replicated parameter off tensor-parallel rank 0, and
                                 // for the last pipeline stage's tied embedding
  };
  Comm& group_;
  std::vector<Part> parts_;
  size_t block_ = 0;               // floats per rank
  std::vector<float> all_, mine_;  // every rank's blocks; this rank's block
  std::vector<float> staging_;     // one whole local tensor
};

}  // namespace kiln::trainer::dist
