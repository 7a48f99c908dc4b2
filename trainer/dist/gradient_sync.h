// Data parallelism's gradient synchronisation: one mechanism over Megatron's
// buckets (trainer/dist/gradient_buckets.h), in one of two modes.
//
// - AllReduce (plain data parallelism): after the local micro-batches every
//   rank's grad.<param> buffers hold its partial sums; each bucket is read
//   from the device and all-reduced, and finish() writes the sums back.
// - Sharded (--use-distributed-optimizer, Megatron's ZeRO-1): data-parallel
//   rank r owns part r of every parameter (trainer/model/step_graphs.h).
//   Each bucket is reduce-scattered so a rank receives the sum of its part
//   only, finish() writes it to grad_shard.<param>, the rank runs AdamW on
//   that part (its moments exist for that part only), and the updated parts
//   are all-gathered back into every rank's full parameters.
//
// A bucket's host buffer holds one block per rank it is split over (one in
// AllReduce mode), block r the concatenation of part r of each of its
// parameters (zero-padded), so one MPI call moves the bucket. With
// --main-grads-dtype bf16 the gradient blocks are bf16 and summed in bf16
// (Comm::start_sum_bf16), as Megatron's bf16 grad buffers. Which part a
// rank owns does not depend on the buckets, so neither do checkpoints.
//
// Overlap (docs/DISTRIBUTED.md): with --overlap-grad-reduce a bucket's
// collective starts once backward has written its last gradient
// (start_ready); with --overlap-param-gather the all-gathers started after
// the optimizer step run on into the next step, whose forward waits for
// each bucket only before the first piece that reads one of its parameters
// (parameters_needed). In AllReduce mode there is no all-gather, and the
// parameter calls find nothing to do.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "trainer/dist/comm.h"
#include "trainer/dist/gradient_buckets.h"
#include "trainer/model/model_state.h"

namespace kiln::trainer::dist {

class GradientSync {
 public:
  enum class Mode { AllReduce, Sharded };
  // `stage`: the model (pipeline stage) `state` holds; `tp_rank`: this
  // rank's place in its tensor-parallel group (a sharded norm counts a
  // replicated parameter once per replica, and a tied embedding once per
  // pipeline).
  GradientSync(Mode mode, Comm& dp_group, const ModelState& state, const GptConfig& stage, int64_t tp_rank,
               int64_t bucket_elements);

  size_t buckets() const { return buckets_.size(); }

  // --overlap-grad-reduce: backward has written the final values of these
  // grad.* ports; starts each bucket whose gradients are now all final
  // (last parameters first, as backward makes them).
  void start_ready(const std::vector<std::string>& ports);
  // Reads the gradients of every bucket not started yet and starts its
  // collective; the caller completes them with the group's wait() (with any
  // other collective it started), then finish() writes this rank's sums.
  void start();
  void finish();
  // Between start() and finish(), after the wait: sums one parameter's
  // summed gradient (this rank's part of it) further over `group`, as a tied
  // embedding's over the first and last pipeline stage, whose parts of it
  // are the same elements.
  void sum_over(Comm& group, const std::string& param, const std::string& what);

  // The squared norm of the summed gradients, each parameter counted once,
  // the same on every rank. AllReduce: every data-parallel rank holds all of
  // its stage's sums; `stage_squares()` measures them (on the device) and
  // `stages` (pipeline parallelism; may be null) adds the other stages'.
  // Sharded: each rank's share of the squares, one all-reduce over `world`.
  double squared_norm(const std::function<double()>& stage_squares, Comm& world, Comm* stages,
                      const std::string& what) const;

  // After the optimizer step updated main.*: starts every bucket's
  // all-gather, the bucket the forward reads first first (Sharded only).
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
    DeviceBuffer* grad;    // grad.<param>, the whole local tensor
    DeviceBuffer* summed;  // where finish() writes this rank's sum: grad.<param>, or grad_shard.<param> sharded
    DeviceBuffer* main;    // main.<param>, this rank's part (Sharded)
    DeviceBuffer* param;   // <param>, the whole local tensor
    std::string name;
    size_t numel, size, offset;  // local elements; part size and offset within its bucket's block
    bool counted_in_norm;        // Sharded: false for a replicated parameter off tensor-parallel rank 0,
                                 // and for the last pipeline stage's tied embedding
  };
  struct Bucket {
    std::vector<Part> parts;
    size_t block = 0;                     // floats per block
    std::vector<float> all, mine;         // every block; this rank's (Sharded): f32 gradients, and the parameters'
                                          // all-gather (Sharded)
    std::vector<uint16_t> all16, mine16;  // the same for bf16 gradients (--main-grads-dtype bf16)
    uint64_t gather_started = 0;          // the group's started() count once its all-gather began
    bool gather_pending = false;          // all-gathered parameters not yet written
  };
  // The sums this rank keeps of bucket b: all of it, or its own block.
  std::span<float> summed(Bucket& b) { return mode_ == Mode::Sharded ? std::span<float>(b.mine) : b.all; }
  std::span<uint16_t> summed16(Bucket& b) {
    return mode_ == Mode::Sharded ? std::span<uint16_t>(b.mine16) : std::span<uint16_t>(b.all16);
  }
  bool bf16() const { return grad_dtype_ == KILN_BF16; }
  size_t blocks() const { return mode_ == Mode::Sharded ? static_cast<size_t>(group_.size()) : 1; }
  void start_bucket(Bucket& b);
  void write_parameters(Bucket& b);

  Mode mode_;
  kiln_dtype grad_dtype_;  // of grad.* and grad_shard.*: f32 or bf16
  Comm& group_;
  bool active_;  // more than one data-parallel rank: otherwise the gradients are already the sums
  GradientBuckets layout_;
  std::vector<Bucket> buckets_;
  std::map<std::string, size_t> bucket_of_param_;  // <param> -> its bucket
};

}  // namespace kiln::trainer::dist
