#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "core/error.h"
#include "trainer/lr_schedule.h"

using kiln::trainer::LrSchedule;

// Values below are worked by hand from Megatron's get_lr() with
// max 1e-3, min 1e-4, warmup 10, decay 110 (so 100 decay steps).

TEST(LrSchedule, WarmupIsLinearFromZero) {
  for (const char* style : {"constant", "linear", "cosine"}) {
    LrSchedule s(1e-3, 1e-4, 10, 110, style);
    EXPECT_DOUBLE_EQ(s.lr(0), 0.0) << style;
    EXPECT_DOUBLE_EQ(s.lr(1), 1e-4) << style;
    EXPECT_DOUBLE_EQ(s.lr(5), 5e-4) << style;
    EXPECT_DOUBLE_EQ(s.lr(10), 1e-3) << style;
  }
}

TEST(LrSchedule, Linear) {
  LrSchedule s(1e-3, 1e-4, 10, 110, "linear");
  EXPECT_DOUBLE_EQ(s.lr(11), 1e-4 + 0.99 * 9e-4);
  EXPECT_DOUBLE_EQ(s.lr(35), 1e-4 + 0.75 * 9e-4);
  EXPECT_DOUBLE_EQ(s.lr(60), 5.5e-4);
  EXPECT_DOUBLE_EQ(s.lr(110), 1e-4);
  EXPECT_DOUBLE_EQ(s.lr(111), 1e-4);
  EXPECT_DOUBLE_EQ(s.lr(100000), 1e-4);
}

TEST(LrSchedule, Cosine) {
  LrSchedule s(1e-3, 1e-4, 10, 110, "cosine");
  EXPECT_NEAR(s.lr(35), 1e-4 + 9e-4 * 0.5 * (std::sqrt(0.5) + 1.0), 1e-15);
  EXPECT_NEAR(s.lr(60), 5.5e-4, 1e-15);
  EXPECT_NEAR(s.lr(85), 1e-4 + 9e-4 * 0.5 * (1.0 - std::sqrt(0.5)), 1e-15);
  EXPECT_NEAR(s.lr(110), 1e-4, 1e-15);
  EXPECT_DOUBLE_EQ(s.lr(500), 1e-4);
}

TEST(LrSchedule, ConstantStaysAtMaxAfterWarmup) {
  LrSchedule s(3e-4, 0.0, 10, 110, "constant");
  EXPECT_DOUBLE_EQ(s.lr(11), 3e-4);
  EXPECT_DOUBLE_EQ(s.lr(110), 3e-4);
  EXPECT_DOUBLE_EQ(s.lr(10000), 3e-4);
}

TEST(LrSchedule, NoWarmupStartsAtMax) {
  LrSchedule s(1e-3, 0.0, 0, 100, "linear");
  EXPECT_DOUBLE_EQ(s.lr(0), 1e-3);
  EXPECT_DOUBLE_EQ(s.lr(50), 5e-4);
  EXPECT_DOUBLE_EQ(s.lr(100), 0.0);
}

TEST(LrSchedule, InverseSquareRoot) {
  LrSchedule s(1e-3, 1e-5, 100, 1000, "inverse-square-root");
  EXPECT_DOUBLE_EQ(s.lr(50), 5e-4);
  EXPECT_DOUBLE_EQ(s.lr(400), 5e-4);
  EXPECT_DOUBLE_EQ(s.lr(100000000), 1e-5);  // floored at min, decays past decay iters
}

TEST(LrSchedule, InvalidStyleListsValidOnes) {
  try {
    LrSchedule s(1e-3, 0.0, 0, 100, "cosin");
    FAIL() << "expected kiln::Error";
  } catch (const kiln::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'cosin'"), std::string::npos) << msg;
    for (const auto& style : LrSchedule::valid_styles()) EXPECT_NE(msg.find(style), std::string::npos) << msg;
  }
}

TEST(LrSchedule, RejectsInconsistentValues) {
  EXPECT_THROW(LrSchedule(1e-3, 1e-2, 0, 100, "linear"), kiln::Error);  // min > max
  EXPECT_THROW(LrSchedule(-1.0, 0.0, 0, 100, "linear"), kiln::Error);
  EXPECT_THROW(LrSchedule(1e-3, 0.0, 100, 100, "cosine"), kiln::Error);  // warmup >= decay
  EXPECT_THROW(LrSchedule(1e-3, 0.0, -1, 100, "cosine"), kiln::Error);
  EXPECT_THROW(LrSchedule(1e-3, 0.0, 0, 0, "constant"), kiln::Error);
  EXPECT_THROW(LrSchedule(NAN, 0.0, 0, 10, "constant"), kiln::Error);
}
