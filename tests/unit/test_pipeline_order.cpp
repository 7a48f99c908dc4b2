// The pipeline's pass orders (trainer/pipeline_order.h): Megatron's 1F1B
// and interleaved 1F1B orders pass by pass, and on every rank of many
// layouts that each order runs every pass once, a chunk's forward before
// its backward. Whether the ranks' orders fit together: test_pipeline_messages.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "trainer/pipeline_order.h"

namespace kiln::trainer {
namespace {

PipelinePass F(int64_t m, int64_t c = 0) { return {true, m, c}; }
PipelinePass B(int64_t m, int64_t c = 0) { return {false, m, c}; }

// Stage p of P warms up with min(P - p - 1, M) forwards, alternates one
// forward and one backward, and cools down with the remaining backwards;
// fewer micro-batches than stages (M < P) cut the warm-up short.
TEST(PipelineOrder, OneFOneBWarmsUpAlternatesAndCoolsDown) {
  struct Case {
    int64_t P, p, M;
    std::vector<PipelinePass> order;
  };
  const std::vector<Case> cases = {
      {2, 0, 1, {F(0), B(0)}},                                                  // M < P
      {4, 0, 2, {F(0), F(1), B(0), B(1)}},                                      // M < P: all warm-up
      {4, 2, 2, {F(0), F(1), B(0), B(1)}},                                      // M < P, warm-up 1
      {4, 3, 2, {F(0), B(0), F(1), B(1)}},                                      // the last stage never warms up
      {2, 0, 2, {F(0), F(1), B(0), B(1)}},                                      // M = P
      {2, 1, 2, {F(0), B(0), F(1), B(1)}},                                      // M = P
      {4, 1, 4, {F(0), F(1), F(2), B(0), F(3), B(1), B(2), B(3)}},              // M = P
      {3, 0, 5, {F(0), F(1), F(2), B(0), F(3), B(1), F(4), B(2), B(3), B(4)}},  // M > P
      {3, 2, 5, {F(0), B(0), F(1), B(1), F(2), B(2), F(3), B(3), F(4), B(4)}},  // M > P
  };
  for (const Case& c : cases) {
    EXPECT_EQ(one_f_one_b_order(c.P, c.p, c.M), c.order) << "P " << c.P << " p " << c.p << " M " << c.M;
  }
  // The rule itself, on a wider table: the leading forwards are the warm-up
  // plus the first steady forward, and the passes alternate until the cool-down.
  for (int64_t P : {2, 3, 4, 8})
    for (int64_t M : {1, 2, 3, 4, 5, 8, 9, 16})
      for (int64_t p = 0; p < P; ++p) {
        const std::vector<PipelinePass> order = one_f_one_b_order(P, p, M);
        const int64_t warmup = std::min(P - p - 1, M), steady = M - warmup;
        ASSERT_EQ(order.size(), static_cast<size_t>(2 * M));
        for (int64_t i = 0; i < 2 * M; ++i) {
          const bool in_steady = i >= warmup && i < warmup + 2 * steady;
          const bool forward = i < warmup || (in_steady && (i - warmup) % 2 == 0);
          EXPECT_EQ(order[static_cast<size_t>(i)].forward, forward) << "P " << P << " p " << p << " M " << M;
        }
      }
}

// Megatron's order for P = 2, vp = 2, M = 4: rank 0 warms up with 4
// forwards ((P - p - 1) x 2 + (vp - 1) x P), rank 1 with 2; micro-batches
// go through the chunks in rounds of P, backwards through the chunks in reverse.
TEST(PipelineOrder, InterleavedOrderIsMegatrons) {
  EXPECT_EQ(interleaved_warmup(2, 0, 2, 4), 4);
  EXPECT_EQ(interleaved_warmup(2, 1, 2, 4), 2);
  EXPECT_EQ(interleaved_warmup(2, 1, 2, 2), 4);  // M = P: all warm-up
  const std::vector<PipelinePass> rank0 = {F(0, 0), F(1, 0), F(0, 1), F(1, 1), F(2, 0), B(0, 1), F(3, 0), B(1, 1),
                                           F(2, 1), B(0, 0), F(3, 1), B(1, 0), B(2, 1), B(3, 1), B(2, 0), B(3, 0)};
  EXPECT_EQ(interleaved_order(2, 0, 2, 4), rank0);
  const std::vector<PipelinePass> rank1 = {F(0, 0), F(1, 0), F(0, 1), B(0, 1), F(1, 1), B(1, 1), F(2, 0), B(0, 0),
                                           F(3, 0), B(1, 0), F(2, 1), B(2, 1), F(3, 1), B(3, 1), B(2, 0), B(3, 0)};
  EXPECT_EQ(interleaved_order(2, 1, 2, 4), rank1);
  // One chunk per rank: Megatron's plain 1F1B.
  EXPECT_EQ(training_order(3, 0, 1, 5), one_f_one_b_order(3, 0, 5));
  EXPECT_EQ(training_order(2, 0, 2, 4), rank0);
}

// Each (micro-batch, chunk) runs forward once and backward once (none in
// evaluation), the forward first, and a chunk sees its micro-batches in
// order both ways (what the chunk-tagged messages and the first
// micro-batch's gradient overwrite rely on).
void expect_every_pass_once_in_order(const std::vector<PipelinePass>& order, int64_t vp, int64_t M, bool backwards,
                                     const std::string& what) {
  ASSERT_EQ(order.size(), static_cast<size_t>((backwards ? 2 : 1) * M * vp)) << what;
  std::map<std::pair<int64_t, int64_t>, int> forwards;
  std::vector<int64_t> next_forward(static_cast<size_t>(vp)), next_backward(static_cast<size_t>(vp));
  for (const PipelinePass& pass : order) {
    const auto key = std::make_pair(pass.micro_batch, pass.chunk);
    ASSERT_TRUE(pass.chunk >= 0 && pass.chunk < vp) << what;
    auto& next = pass.forward ? next_forward : next_backward;
    EXPECT_EQ(pass.micro_batch, next[static_cast<size_t>(pass.chunk)]++) << what;
    if (pass.forward) {
      ++forwards[key];
    } else {
      EXPECT_EQ(forwards[key], 1) << "backward before forward, " << what;
    }
  }
  for (int64_t c = 0; c < vp; ++c) {
    EXPECT_EQ(next_forward[static_cast<size_t>(c)], M) << what;
    EXPECT_EQ(next_backward[static_cast<size_t>(c)], backwards ? M : 0) << what;
  }
}

TEST(PipelineOrder, EveryOrderRunsEveryPassOnceForwardFirst) {
  for (int64_t P : {2, 3, 4}) {
    for (int64_t M : {int64_t{1}, P - 1, P, P + 1, 3 * P})
      for (int64_t p = 0; p < P; ++p) {
        const std::string what = "1F1B P " + std::to_string(P) + " p " + std::to_string(p) + " M " + std::to_string(M);
        expect_every_pass_once_in_order(one_f_one_b_order(P, p, M), 1, M, true, what);
      }
    for (int64_t vp : {2, 3})
      for (int64_t M : {P, 2 * P, 3 * P})  // Megatron: a multiple of P
        for (int64_t p = 0; p < P; ++p) {
          const std::string what = "interleaved P " + std::to_string(P) + " vp " + std::to_string(vp) + " p " +
                                   std::to_string(p) + " M " + std::to_string(M);
          expect_every_pass_once_in_order(interleaved_order(P, p, vp, M), vp, M, true, what);
        }
  }
  for (int64_t vp : {1, 2, 3})
    for (int64_t M : {1, 4}) expect_every_pass_once_in_order(forward_only_order(vp, M), vp, M, false, "forward only");
}

}  // namespace
}  // namespace kiln::trainer
