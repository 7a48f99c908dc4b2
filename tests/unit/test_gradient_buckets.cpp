// The data-parallel buckets (trainer/dist/gradient_buckets.h): last
// parameters first, closed at the size limit, and a bucket is complete once
// every one of its gradients has been reported final -- once, however often
// a port is reported.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trainer/dist/gradient_buckets.h"
#include "trainer/model/step_graphs.h"

namespace kiln::trainer::dist {
namespace {

std::vector<ParamSpec> params(const std::vector<int64_t>& sizes) {
  std::vector<ParamSpec> out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    ParamSpec p;
    p.name = "p";
    p.name += std::to_string(i);  // (not "p" + ...: GCC 12's false -Wrestrict)
    p.full_shape = p.shape = {sizes[i]};
    out.push_back(p);
  }
  return out;
}

TEST(GradientBuckets, HoldTheLastParametersFirstUpToTheLimit) {
  // 4 + 3 fits 8, 3 + 2 would not: [p3 p2] [p1 p0]... with sizes 2,3,3,4.
  const GradientBuckets buckets(params({2, 3, 3, 4}), 8);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets.members(0), (std::vector<size_t>{3, 2}));
  EXPECT_EQ(buckets.members(1), (std::vector<size_t>{1, 0}));
  EXPECT_EQ(buckets.elements(0), 7u);
  EXPECT_EQ(buckets.elements(1), 5u);
  // A parameter larger than the limit gets a bucket of its own.
  EXPECT_EQ(GradientBuckets(params({10, 1}), 4).size(), 2u);
}

TEST(GradientBuckets, ABucketCompletesOnceAllItsGradientsAreFinal) {
  GradientBuckets buckets(params({2, 3, 3, 4}), 8);
  EXPECT_TRUE(buckets.complete({grad_name("p3"), "loss"}).empty());
  // Reported again (a pipeline stage reports every output after its last
  // backward): counted once.
  EXPECT_TRUE(buckets.complete({grad_name("p3")}).empty());
  EXPECT_EQ(buckets.complete({grad_name("p2"), grad_name("p1")}), (std::vector<size_t>{0}));
  EXPECT_TRUE(buckets.complete({grad_name("p2")}).empty());  // started already
  size_t early = 0;
  EXPECT_EQ(buckets.remaining(&early), (std::vector<size_t>{1}));
  EXPECT_EQ(early, 1u);
  // The next step starts from nothing final.
  buckets.reset();
  EXPECT_TRUE(buckets.complete({grad_name("p0")}).empty());
  EXPECT_EQ(buckets.complete({grad_name("p1")}), (std::vector<size_t>{1}));
  EXPECT_EQ(buckets.remaining(&early), (std::vector<size_t>{0}));
  EXPECT_EQ(early, 1u);
}

}  // namespace
}  // namespace kiln::trainer::dist
