#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "trainer/batch_rampup.h"

using kiln::trainer::BatchRampup;

// Values worked by hand from Megatron's RampupBatchsizeNumMicroBatchesCalculator:
// increments = (GBS - START) / INCREMENT, samples per increment = SAMPLES /
// increments, batch = START + int(consumed / samples per increment) x
// INCREMENT while consumed <= SAMPLES, GBS after.

TEST(BatchRampup, Gpt3ExampleRamp) {
  // examples/gpt3/train_gpt3_175b_distributed.sh: 16 16 5859375 up to 1536:
  // 95 increments of 5859375 / 95 = 61677.63... samples.
  const BatchRampup r({"16", "16", "5859375"}, 1536, 1);
  EXPECT_EQ(r.global_batch(0), 16);
  EXPECT_EQ(r.global_batch(61677), 16);
  EXPECT_EQ(r.global_batch(61678), 32);
  EXPECT_EQ(r.global_batch(123355), 32);  // 2 x 61677.63 = 123355.26
  EXPECT_EQ(r.global_batch(123356), 48);
  EXPECT_EQ(r.global_batch(5859374), 16 + 94 * 16);  // 94.99998 increments
  EXPECT_EQ(r.global_batch(5859375), 1536);          // exactly 95
  EXPECT_EQ(r.global_batch(5859376), 1536);          // past the ramp
  EXPECT_EQ(r.global_batch(1000000000), 1536);
  // The example's --train-samples 146484375: Megatron's update_train_iters
  // loop (worked with a few lines of Python of its formula) takes 19802
  // ramp steps to 5859424 samples, then (146484375 - 5859424) // 1536 =
  // 91552 more.
  EXPECT_EQ(r.consumed_after(19802), 5859424);
  EXPECT_EQ(r.train_iters(146484375), 19802 + 91552);
}

TEST(BatchRampup, SmallRampAndItsIterations) {
  // 2 2 24 up to 8: 3 increments of 8 samples.
  const BatchRampup r({"2", "2", "24"}, 8, 2);
  const std::vector<int64_t> want = {2, 2, 2, 2, 4, 4, 6, 6, 8, 8, 8, 8};
  int64_t consumed = 0;
  for (int64_t batch : want) {
    EXPECT_EQ(r.global_batch(consumed), batch) << "at " << consumed;
    consumed += batch;
  }
  // update_train_iters: ramp steps while consumed <= 24 (8 steps, 28
  // samples), then (64 - 28) // 8 = 4 more.
  EXPECT_EQ(r.train_iters(64), 12);
  EXPECT_EQ(r.train_iters(67), 12);  // the partial last batch is dropped
  EXPECT_EQ(r.train_iters(68), 13);
  // Fewer samples than the ramp: steps while consumed <= 10, the last one
  // overshooting (2 2 2 2 4 = 12 samples), as Megatron's loop does.
  EXPECT_EQ(r.train_iters(10), 5);
  EXPECT_EQ(r.consumed_after(5), 12);
  EXPECT_EQ(r.consumed_after(8), 28);
  EXPECT_EQ(r.consumed_after(12), 60);
  EXPECT_EQ(r.consumed_after(0), 0);
}

TEST(BatchRampup, StartEqualToGlobalBatchIsNoRamp) {
  const BatchRampup r({"8", "2", "24"}, 8, 2);
  EXPECT_EQ(r.global_batch(0), 8);
  EXPECT_EQ(r.global_batch(12), 8);
  EXPECT_EQ(r.train_iters(64), 8);
}

TEST(BatchRampup, RefusesMegatronsBadValues) {
  auto message = [](const std::vector<std::string>& words, int64_t gbs, int64_t micro_times_dp) {
    try {
      BatchRampup(words, gbs, micro_times_dp);
    } catch (const kiln::Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message({"2", "2"}, 8, 2).find("expected the following format"), std::string::npos);
  EXPECT_NE(message({"2", "4", "24"}, 8, 2).find("interval (6) to be divisible by global batch size increment (4)"),
            std::string::npos);
  EXPECT_NE(message({"16", "2", "24"}, 8, 2).find("greater than or equal to start batch size (16)"), std::string::npos);
  EXPECT_NE(message({"3", "1", "24"}, 8, 2).find("start batch size 3 is not divisible"), std::string::npos);
  EXPECT_NE(message({"2", "1", "24"}, 8, 2).find("increment 1 is not divisible"), std::string::npos);
  EXPECT_NE(message({"0", "2", "24"}, 8, 2).find("must be positive"), std::string::npos);
  EXPECT_NE(message({"2", "2", "-1"}, 8, 2).find("must not be negative"), std::string::npos);
  EXPECT_NE(message({"2", "2", "1e3"}, 8, 2).find("'1e3' is not an integer"), std::string::npos);
}
