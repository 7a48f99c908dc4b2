// When pipeline ranks post their messages (trainer/pipeline_messages.h):
// replaying every rank's batches with MPI's rendezvous rule (a message
// moves once its send and its receive are both posted; a batch ends when
// all of its messages have moved), no layout of either training order or of
// evaluation leaves a rank waiting for good, every input arrives before the
// pass that reads it, and each (sender, receiver, tag) stream is received in
// the order sent, so every buffer gets its own micro-batch. Orders that
// cannot run are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.h"
#include "trainer/pipeline_messages.h"

namespace kiln::trainer {
namespace {

using Orders = std::vector<std::vector<PipelinePass>>;
// A message, named by its reader: (rank, forward, micro-batch, chunk).
using Message = std::tuple<int64_t, bool, int64_t, int64_t>;
Message reader(int64_t rank, const PipelinePass& pass) { return {rank, pass.forward, pass.micro_batch, pass.chunk}; }

TEST(PipelineMessages, InputsComeFromTheNeighbouringVirtualStage) {
  // P = 2, vp = 2: virtual stages rank 0 chunk 0, rank 1 chunk 0, rank 0 chunk 1, rank 1 chunk 1.
  EXPECT_FALSE(pipeline_input(2, 2, 0, {true, 3, 0}));   // the first virtual stage reads tokens
  EXPECT_FALSE(pipeline_input(2, 2, 1, {false, 3, 1}));  // the last starts the backward
  const auto ring = pipeline_input(2, 2, 0, {true, 3, 1});
  ASSERT_TRUE(ring);
  EXPECT_EQ(ring->rank, 1);
  EXPECT_EQ(ring->pass, (PipelinePass{true, 3, 0}));
  const auto back = pipeline_input(2, 2, 1, {false, 2, 0});
  ASSERT_TRUE(back);
  EXPECT_EQ(back->rank, 0);
  EXPECT_EQ(back->pass, (PipelinePass{false, 2, 1}));
  const auto plain = pipeline_input(4, 1, 2, {false, 5, 0});
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->rank, 3);
  EXPECT_EQ(plain->pass, (PipelinePass{false, 5, 0}));
}

// Replays the batches of every rank (batch i before pass i, the last after
// the last pass) and checks what the header promises.
void expect_runs(const Orders& orders, int64_t vp, const std::string& what) {
  const auto P = static_cast<int64_t>(orders.size());
  // Where each message is posted: (rank, batch) of its send and of its receive.
  std::map<Message, std::pair<int64_t, size_t>> send_at, receive_at;
  std::vector<std::vector<std::vector<Message>>> batches(orders.size());
  // Per stream (sender, receiver, forward, reading chunk): messages as sent and as received.
  std::map<std::tuple<int64_t, int64_t, bool, int64_t>, std::vector<Message>> sent, received;
  std::vector<std::map<Message, size_t>> position(orders.size());  // of each own pass
  for (int64_t r = 0; r < P; ++r)
    for (size_t i = 0; i < orders[static_cast<size_t>(r)].size(); ++i)
      position[static_cast<size_t>(r)][reader(r, orders[static_cast<size_t>(r)][i])] = i;
  for (int64_t r = 0; r < P; ++r) {
    const auto& order = orders[static_cast<size_t>(r)];
    const std::vector<std::vector<PipelinePass>> receives = pipeline_receives(orders, vp, r);
    ASSERT_EQ(receives.size(), order.size()) << what;
    auto& mine = batches[static_cast<size_t>(r)];
    mine.resize(order.size() + 1);
    for (size_t i = 0; i < order.size(); ++i) {
      for (const PipelinePass& pass : receives[i]) {
        const Message m = reader(r, pass);
        ASSERT_FALSE(receive_at.count(m)) << "received twice, " << what;
        receive_at[m] = {r, i};
        EXPECT_LE(i, position[static_cast<size_t>(r)].at(m)) << "input posted after its reader, " << what;
        mine[i].push_back(m);
        const auto input = pipeline_input(P, vp, r, pass);
        ASSERT_TRUE(input) << what;
        received[{input->rank, r, pass.forward, pass.chunk}].push_back(m);
      }
    }
  }
  // Each input's send goes in the batch after the pass that produced it.
  for (int64_t q = 0; q < P; ++q)
    for (const PipelinePass& pass : orders[static_cast<size_t>(q)]) {
      const auto input = pipeline_input(P, vp, q, pass);
      if (!input) continue;
      const Message m = reader(q, pass);
      ASSERT_TRUE(receive_at.count(m)) << "never received, " << what;
      const size_t after = position[static_cast<size_t>(input->rank)].at(reader(input->rank, input->pass)) + 1;
      send_at[m] = {input->rank, after};
      batches[static_cast<size_t>(input->rank)][after].push_back(m);
    }
  for (const auto& [m, at] : send_at) {
    const auto& [rank, forward, micro_batch, chunk] = m;
    sent[{at.first, rank, forward, chunk}].push_back(m);
  }
  for (auto& [stream, messages] : sent) {  // sent: in batch order on the sender
    std::stable_sort(messages.begin(), messages.end(),
                     [&](const Message& a, const Message& b) { return send_at[a].second < send_at[b].second; });
    EXPECT_EQ(messages, received[stream]) << "a stream received out of order, " << what;
  }
  // MPI's rendezvous: a batch ends once the partner of each of its messages has posted it.
  std::vector<size_t> at(orders.size(), 0);
  for (bool moved = true; moved;) {
    moved = false;
    for (int64_t r = 0; r < P; ++r) {
      size_t& b = at[static_cast<size_t>(r)];
      if (b == batches[static_cast<size_t>(r)].size()) continue;
      bool ready = true;
      for (const Message& m : batches[static_cast<size_t>(r)][b]) {
        const auto& partner = send_at[m].first == r ? receive_at[m] : send_at[m];
        ready = ready && at[static_cast<size_t>(partner.first)] >= partner.second;
      }
      if (ready) {
        ++b;
        moved = true;
      }
    }
  }
  for (int64_t r = 0; r < P; ++r)
    EXPECT_EQ(at[static_cast<size_t>(r)], batches[static_cast<size_t>(r)].size())
        << "rank " << r << " waits for good, " << what;
}

TEST(PipelineMessages, EveryLayoutRunsWithoutDeadlock) {
  for (int64_t P : {2, 3, 4, 8})
    for (int64_t vp : {1, 2, 3})
      for (int64_t M : {int64_t{1}, P - 1, P, P + 1, 2 * P, 3 * P}) {
        const std::string what = "P " + std::to_string(P) + " vp " + std::to_string(vp) + " M " + std::to_string(M);
        Orders evaluation(static_cast<size_t>(P), forward_only_order(vp, M));
        expect_runs(evaluation, vp, "evaluation " + what);
        if (vp > 1 && M % P != 0) continue;  // Megatron's interleaved schedule needs whole rounds
        Orders training;
        for (int64_t p = 0; p < P; ++p) training.push_back(training_order(P, p, vp, M));
        expect_runs(training, vp, "training " + what);
      }
}

// Rank 0 would run micro-batch 0's backward before its forward: the
// backward reads rank 1's gradients, which follow rank 1's forward, which
// reads the activations of rank 0's forward.
TEST(PipelineMessages, OrdersThatWaitOnEachOtherAreRefused) {
  const Orders orders = {{{false, 0, 0}, {true, 0, 0}}, {{true, 0, 0}, {false, 0, 0}}};
  EXPECT_THROW(pipeline_receives(orders, 1, 0), Error);
}

}  // namespace
}  // namespace kiln::trainer
