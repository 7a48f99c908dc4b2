// trainer/fp8_scaling.h against Transformer Engine's recipe semantics,
// written out independently here: with delayed scaling the scale after
// interval k is fp8_max x 2^-margin over the largest amax of the last L
// intervals (a plain window, not TE's rotated layout, which a test of its
// own pins), or over interval k's amax with most_recent; an interval whose
// amax is 0 or not finite keeps the scale; current scaling divides by the
// tensor's own amax.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "trainer/fp8_scaling.h"

namespace kiln::trainer {
namespace {

constexpr float kE4M3Max = 448.0f, kE5M2Max = 57344.0f;

TEST(Fp8Scaling, DelayedScaleIsOverTheLastIntervalsWindow) {
  std::mt19937 rng(35);
  std::uniform_real_distribution<float> log_amax(-8.0f, 8.0f);
  for (const int64_t L : {1, 3, 16}) {
    for (const Fp8AmaxAlgo algo : {Fp8AmaxAlgo::Max, Fp8AmaxAlgo::MostRecent}) {
      Fp8DelayedScaling s(L);
      std::deque<float> window;
      for (int k = 0; k < 50; ++k) {
        const float amax = std::exp2(log_amax(rng));
        // Two casts in the interval (two micro-batches): the larger counts.
        s.record(amax * 0.5f);
        s.record(amax);
        s.update(algo, kE4M3Max, 0);
        window.push_back(amax);
        if (static_cast<int64_t>(window.size()) > L) window.pop_front();
        const float from = algo == Fp8AmaxAlgo::Max ? *std::max_element(window.begin(), window.end()) : amax;
        ASSERT_EQ(s.scale(), kE4M3Max / from) << "L " << L << " interval " << k;
        ASSERT_EQ(s.scale_inv(), 1.0f / (kE4M3Max / from));
        ASSERT_EQ(s.history()[0], 0.0f);
      }
    }
  }
}

TEST(Fp8Scaling, HistoryRotatesAsTransformerEngines) {
  Fp8DelayedScaling s(3);
  s.record(1.0f);
  s.update(Fp8AmaxAlgo::Max, kE4M3Max, 0);
  EXPECT_EQ(s.history(), (std::vector<float>{0.0f, 0.0f, 1.0f}));
  s.record(2.0f);
  s.update(Fp8AmaxAlgo::Max, kE4M3Max, 0);
  EXPECT_EQ(s.history(), (std::vector<float>{0.0f, 1.0f, 2.0f}));
  s.record(3.0f);
  s.update(Fp8AmaxAlgo::Max, kE4M3Max, 0);
  EXPECT_EQ(s.history(), (std::vector<float>{0.0f, 2.0f, 3.0f}));
}

TEST(Fp8Scaling, IntervalsWithoutAFiniteAmaxKeepTheScale) {
  const float inf = std::numeric_limits<float>::infinity();
  Fp8DelayedScaling s(1);
  s.update(Fp8AmaxAlgo::MostRecent, kE5M2Max, 0);  // no cast yet: amax 0
  EXPECT_EQ(s.scale(), 1.0f);
  s.record(4.0f);
  s.update(Fp8AmaxAlgo::MostRecent, kE5M2Max, 0);
  EXPECT_EQ(s.scale(), kE5M2Max / 4.0f);
  s.record(inf);
  s.update(Fp8AmaxAlgo::MostRecent, kE5M2Max, 0);
  EXPECT_EQ(s.scale(), kE5M2Max / 4.0f);
  // A NaN amax is passed over, as CUDA's fmaxf in TE's reductions.
  s.record(std::numeric_limits<float>::quiet_NaN());
  s.record(8.0f);
  s.update(Fp8AmaxAlgo::MostRecent, kE5M2Max, 0);
  EXPECT_EQ(s.scale(), kE5M2Max / 8.0f);
  // An inf stays in a Max window for L intervals, keeping the scale.
  Fp8DelayedScaling w(2);
  w.record(2.0f);
  w.update(Fp8AmaxAlgo::Max, kE4M3Max, 0);
  w.record(inf);
  w.update(Fp8AmaxAlgo::Max, kE4M3Max, 0);
  w.record(1.0f);
  w.update(Fp8AmaxAlgo::Max, kE4M3Max, 0);
  EXPECT_EQ(w.scale(), kE4M3Max / 2.0f);
  w.record(1.0f);
  w.update(Fp8AmaxAlgo::Max, kE4M3Max, 0);
  EXPECT_EQ(w.scale(), kE4M3Max / 1.0f);
}

TEST(Fp8Scaling, MarginAndTinyAmaxes) {
  EXPECT_EQ(fp8_scale_from_amax(3.0f, kE4M3Max, 2, 1.0f), (kE4M3Max / 4.0f) / 3.0f);
  EXPECT_EQ(fp8_scale_from_amax(1e-44f, kE5M2Max, 0, 1.0f), std::numeric_limits<float>::max());
  EXPECT_EQ(fp8_scale_from_amax(-1.0f, kE5M2Max, 0, 7.0f), 7.0f);
  EXPECT_EQ(fp8_current_scale(2.0f, kE4M3Max), 224.0f);
  EXPECT_EQ(fp8_current_scale(0.0f, kE4M3Max), 1.0f);
  EXPECT_EQ(fp8_current_scale(std::numeric_limits<float>::infinity(), kE4M3Max), 1.0f);
  EXPECT_EQ(fp8_current_scale(std::numeric_limits<float>::quiet_NaN(), kE4M3Max), 1.0f);
  EXPECT_EQ(fp8_current_scale(1e-44f, kE4M3Max), std::numeric_limits<float>::max());
}

TEST(Fp8Scaling, FlagsAndCheckpointsAreChecked) {
  EXPECT_EQ(parse_fp8_amax_algo("max"), Fp8AmaxAlgo::Max);
  EXPECT_EQ(parse_fp8_amax_algo("most_recent"), Fp8AmaxAlgo::MostRecent);
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([] { parse_fp8_amax_algo("mean"); }), "--fp8-amax-compute-algo mean: give max or most_recent");
  EXPECT_NE(message([] { Fp8DelayedScaling s(0); }).find("--fp8-amax-history-len must be at least 1"),
            std::string::npos);
  Fp8DelayedScaling s(4);
  EXPECT_NE(message([&] { s.restore({1.0f, 2.0f}, 3.0f); }).find("--fp8-amax-history-len 4"), std::string::npos);
  EXPECT_NE(message([&] { s.restore({0, 0, 0, 0}, 0.0f); }).find("not a positive finite number"), std::string::npos);
  s.restore({0.0f, 1.0f, 2.0f, 5.0f}, 2.0f);
  EXPECT_EQ(s.scale_inv(), 0.5f);
  s.update(Fp8AmaxAlgo::Max, kE4M3Max, 0);
  EXPECT_EQ(s.scale(), kE4M3Max / 5.0f);
}

}  // namespace
}  // namespace kiln::trainer
