// The distributed optimizer's collectives (--use-distributed-optimizer,
// Megatron's ZeRO-1 over the data-parallel group). Data-parallel rank r owns
// part r of every parameter (trainer/model/step_graphs.h): instead of an
// all-reduce, the gradients are reduce-scattered so each rank receives the
// sum of its part only, it runs AdamW on that part (its moments exist for
// that part only), and the updated parts are all-gathered back into every
// rank's full parameters.
//
// The collectives go bucket by bucket (trainer/dist/gradient_buckets.h,
// --ddp-bucket-size). A bucket's flat buffer holds one block per rank,
// block r the concatenation of part r of each of its parameters
// (zero-padded), so one MPI_Reduce_scatter_block / MPI_Allgather moves the
// bucket. Which part a rank owns does not depend on the buckets, so neither
// do checkpoints.
//
// Overlap (docs/DISTRIBUTED.md): with --overlap-grad-reduce a bucket's
// reduce-scatter starts once backward has written its last gradient
// (start_ready); with --overlap-param-gather the all-gathers started after
// the optimizer step run on into the next step, whose forward waits for
// each bucket only before the first piece that reads one of its parameters
// (parameters_needed).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "trainer/dist/comm.h"
#include "trainer/dist/gradient_buckets.h"
#include "trainer/model/model_state.h"

namespace kiln::trainer::dist {

class DistributedOptimizer {
 public:
  // `stage`: the model (pipeline stage) `state` holds; `tp_rank`: this
  // rank's place in its tensor-parallel group (the gradient norm counts a
  // replicated parameter once per replica, and a tied embedding once per
  // pipeline).
  DistributedOptimizer(Comm& dp_group, const ModelState& state, const GptConfig& stage, int64_t tp_rank,
                       int64_t bucket_elements);

  size_t buckets() const { return buckets_.size(); }

  // Reads the gradients of every bucket not started yet and starts its
  // reduce-scatter; the caller completes them with the group's wait() (with
  // any other collective it started), then finish_reduce_scatter() writes
  // this rank's summed part to grad_shard.*.
  void start_reduce_scatter();
  // --overlap-grad-reduce: backward has written the final values of these
  // grad.* ports; starts each bucket whose gradients are now all final.
  void start_ready(const std::vector<std::string>& ports);
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

  // After the optimizer step updated main.*: starts every bucket's
  // all-gather, the bucket the forward reads first first.
  void start_parameter_gather();
  // The parameters behind these ports (others are ignored) are about to be
  // read: waits for their buckets' all-gathers and writes those buckets'
  // full parameters. `what` names the wait on a timeout. Returns how many
  // buckets it wrote.
  size_t parameters_needed(const std::vector<std::string>& ports, const std::string& what);
  // Completes every all-gather still running and writes its parameters; a
  // no-op when there is none. Whatever reads the parameters other than a
  // step's forward (evaluation, checkpoints, the weight hash) calls it first.
  void finish_parameter_gather(const std::string& what);

 private:
  struct Part {
    DeviceBuffer* grad;        // grad.<param>, the whole local tensor
    DeviceBuffer* grad_shard;  // grad_shard.<param>, this rank's part
    DeviceBuffer* main;        // main.<param>, this rank's part
    DeviceBuffer* param;       // <param>, the whole local tensor
    std::string name;
    size_t numel, size, offset;  // local elements; part size and offset within its bucket's block
    bool counted_in_norm;        // false for a replicated parameter off tensor-parallel rank 0, and
                                 // for the last pipeline stage's tied embedding
  };
  struct Bucket {
    std::vector<Part> parts;
    size_t block = 0;              // floats per rank
    std::vector<float> all, mine;  // every rank's blocks; this rank's block
    uint64_t gather_started = 0;   // the group's started() count once its all-gather began
    bool gather_pending = false;   // all-gathered parameters not yet written
  };
  void start_bucket(Bucket& b);
  void write_parameters(Bucket& b);
  Comm& group_;
  GradientBuckets layout_;
  std::vector<Bucket> buckets_;
  std::map<std::string, size_t> bucket_of_param_;  // <param> -> its bucket
};

}  // namespace kiln::trainer::dist
