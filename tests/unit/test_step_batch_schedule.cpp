#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "trainer/step_batch_schedule.h"

using kiln::trainer::StepBatchSchedule;

// Expected values worked with a few lines of Python that follow Megatron's
// StepBatchsizeNumMicroBatchesCalculator and update_train_iters loop
// (while consumed < train_samples: consumed += batch(consumed)).

TEST(StepBatchSchedule, Gpt3ExampleSchedule) {
  // examples/gpt3/train_gpt3_175b_distributed.sh (2026): tokens at
  // --seq-length 2048, so 2.4B tokens is 1171875 samples.
  const StepBatchSchedule s("0:16 2.4B:320 4.8B:624 7.2B:928 9.6B:1232 12B:1536", 2048);
  const std::vector<std::pair<int64_t, int64_t>> want = {{0, 16},        {1171875, 320},  {2343750, 624},
                                                         {3515625, 928}, {4687500, 1232}, {5859375, 1536}};
  EXPECT_EQ(s.entries(), want);
  EXPECT_EQ(s.last_batch(), 1536);
  EXPECT_EQ(s.max_batch(), 1536);
  EXPECT_EQ(s.global_batch(0), 16);
  EXPECT_EQ(s.global_batch(1171874), 16);
  EXPECT_EQ(s.global_batch(1171875), 320);
  EXPECT_EQ(s.global_batch(100000000), 1536);
  EXPECT_EQ(s.consumed_after(73242), 1171872);  // the last step of 16 ends 3 samples short
  EXPECT_EQ(s.consumed_after(73243), 1171888);  // one more 16 crosses the threshold
  EXPECT_EQ(s.consumed_after(73244), 1172208);  // then 320
  EXPECT_EQ(s.consumed_after(80000), 4644368);
  EXPECT_EQ(s.consumed_after(500000), 649446688);
  EXPECT_EQ(s.train_iters(1171875), 73243);
  EXPECT_EQ(s.train_iters(10000000), 83694);
}

TEST(StepBatchSchedule, CommasUnsortedEntriesAndSuffixes) {
  // Megatron sorts the entries, reads commas as spaces and suffixes in any case; "0.5k" tokens at
  // seq 32 is 15 samples (500 // 32).
  const StepBatchSchedule s("512:8, 0:2 256:4", 32);
  const std::vector<std::pair<int64_t, int64_t>> want = {{0, 2}, {8, 4}, {16, 8}};
  EXPECT_EQ(s.entries(), want);
  const std::vector<int64_t> consumed = {0, 2, 4, 6, 8, 12, 16, 24, 32, 40, 48, 56};
  for (size_t i = 0; i < consumed.size(); ++i) EXPECT_EQ(s.consumed_after(static_cast<int64_t>(i)), consumed[i]);
  EXPECT_EQ(s.train_iters(40), 9);
  EXPECT_EQ(s.train_iters(41), 10);  // the last step ends past --train-samples
  EXPECT_EQ(StepBatchSchedule("0:2 0.5k:4", 32).entries().back().first, 15);
  EXPECT_EQ(StepBatchSchedule("0:1K", 32).last_batch(), 1000);
  // A schedule that shrinks: the most a step takes is not the last.
  const StepBatchSchedule down("0:8 64:4", 32);
  EXPECT_EQ(down.last_batch(), 4);
  EXPECT_EQ(down.max_batch(), 8);
}

TEST(StepBatchSchedule, RefusesBadSchedules) {
  auto message = [](const std::string& text) {
    try {
      StepBatchSchedule(text, 32);
    } catch (const kiln::Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("0-16").find("expected format THRESHOLD:BATCH_SIZE"), std::string::npos);
  EXPECT_NE(message("").find("has no entries"), std::string::npos);
  EXPECT_NE(message("64:16").find("first schedule entry must have threshold 0, got 2"), std::string::npos);
  EXPECT_NE(message("0:16 0:32").find("strictly increasing"), std::string::npos);
  EXPECT_NE(message("0:16 16:32").find("strictly increasing"), std::string::npos);  // 16 tokens: 0 samples
  EXPECT_NE(message("0:0").find("batch size must be positive"), std::string::npos);
  EXPECT_NE(message("0:16 x:32").find("'x' in entry \"x:32\" is not a non-negative number"), std::string::npos);
  EXPECT_NE(message("0:16 -64:32").find("is not a non-negative number"), std::string::npos);
  EXPECT_NE(message("0:16 1e30:32").find("is not a non-negative number"), std::string::npos);
}
