// When a pipeline rank posts the messages of its pass order
// (trainer/pipeline_order.h; the executor: trainer/pipeline_schedule.h).
//
// A chunk's forward reads the activations of the previous virtual stage
// (virtual stage c x P + p is rank p's chunk c: the last rank's chunk c
// feeds rank 0's chunk c + 1), a backward the input gradients of the next
// one. Each rank posts, in one batch completed before its next pass, the
// send of its last pass's output and the receives the plan puts there.
//
// The plan times every rank's order on one clock: each pass takes one tick
// and starts as soon as its rank is free and its input has arrived, the
// tick after it was produced. A message is sent and received at the same
// tick boundary, and each rank posts its boundaries in increasing order, so
// every batch's partner operations are posted by neighbours that have
// finished all earlier boundaries: no rank waits on one that waits on it,
// whatever the order functions, as long as their passes can run at all
// (pipeline_receives throws when they cannot). Megatron's batched p2p gives
// the same guarantee by hand-written rules per schedule.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "trainer/pipeline_order.h"

namespace kiln::trainer {

struct RankPass {
  int64_t rank = 0;
  PipelinePass pass;
};

// The pass of another rank whose output `pass` of rank p reads, in a pipeline
// of P ranks with vp chunks each; none for the first virtual stage's forward
// and the last one's backward.
std::optional<RankPass> pipeline_input(int64_t P, int64_t vp, int64_t p, const PipelinePass& pass);

// For each pass i of rank p's order (orders: every rank's, by rank): the
// inputs it receives in the batch before pass i, named by the pass that
// reads each, in the order they must be posted.
std::vector<std::vector<PipelinePass>> pipeline_receives(const std::vector<std::vector<PipelinePass>>& orders,
                                                         int64_t vp, int64_t p);

}  // namespace kiln::trainer
