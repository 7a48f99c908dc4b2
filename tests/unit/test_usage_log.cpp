// The compile cache's usage log (compiler_cache/usage_log.h): records add
// up, and a torn or foreign line is skipped, never fatal. Concurrent
// writers: tests/cache/stats.sh.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "compiler_cache/usage_log.h"

namespace kiln::compiler_cache {
namespace {

namespace fs = std::filesystem;

class UsageLog : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("kiln-usage-" + std::to_string(::getpid()))).string();
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(UsageLog, RecordsAddUp) {
  EXPECT_EQ(read_usage(dir_).records, 0);
  ASSERT_TRUE(append_usage(dir_, {3, 1, 2.5, 0.5}));
  ASSERT_TRUE(append_usage(dir_, {2, 0, 1.0, 0.0}));
  const UsageTotals t = read_usage(dir_);
  EXPECT_EQ(t.records, 2);
  EXPECT_EQ(t.skipped, 0);
  EXPECT_EQ(t.sum.hits, 5);
  EXPECT_EQ(t.sum.misses, 1);
  EXPECT_DOUBLE_EQ(t.sum.seconds_saved, 3.5);
  EXPECT_DOUBLE_EQ(t.sum.compile_seconds, 0.5);
  EXPECT_GT(t.first_unix, 0);
  EXPECT_GE(t.last_unix, t.first_unix);
}

TEST_F(UsageLog, TornAndForeignLinesAreSkipped) {
  ASSERT_TRUE(append_usage(dir_, {1, 0, 1.0, 0.0}));
  {
    std::ofstream out(usage_log_path(dir_), std::ios::app);
    out << "{\"unix\":1,\"hits\":7,\"mis\n";                                               // torn
    out << "{\"unix\":1,\"hits\":\"many\",\"misses\":0,\"saved_s\":0,\"compile_s\":0}\n";  // wrong type
    out << "not json\n\n";
  }
  ASSERT_TRUE(append_usage(dir_, {1, 2, 0.0, 4.0}));
  const UsageTotals t = read_usage(dir_);
  EXPECT_EQ(t.records, 2);
  EXPECT_EQ(t.skipped, 3);
  EXPECT_EQ(t.sum.hits, 2);
  EXPECT_EQ(t.sum.misses, 2);
}

TEST_F(UsageLog, UnwritableDirectoryIsNotAnError) {
  EXPECT_FALSE(append_usage(dir_ + "/missing/dir", {1, 0, 0.0, 0.0}));
}

}  // namespace
}  // namespace kiln::compiler_cache
