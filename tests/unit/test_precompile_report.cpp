// What `kiln precompile` reports: the summary (text, JSON, exit status), the
// progress line and its terminal/plain forms, and the memory-based worker
// count. The processes themselves are in tests/cache/{json_summary,
// progress_lines,worker_memory,read_only}.sh.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <string>
#include <string_view>

#include "compiler_cache/compile_pool.h"
#include "compiler_cache/pool_progress.h"
#include "compiler_cache/precompile_summary.h"

namespace kiln::compiler_cache {
namespace {

TEST(PrecompileSummary, ExitStatusIsFailuresCappedAt255) {
  PrecompileSummary s;
  EXPECT_EQ(exit_status(s), 0);
  s.failed = 7;
  EXPECT_EQ(exit_status(s), 7);
  s.failed = 255;
  EXPECT_EQ(exit_status(s), 255);
  // npc's raw count would wrap to 0 here and read as success.
  s.failed = 256;
  EXPECT_EQ(exit_status(s), 255);
  s.failed = 1000;
  EXPECT_EQ(exit_status(s), 255);
}

TEST(PrecompileSummary, JsonHasEveryCountAndTheExitStatus) {
  PrecompileSummary s;
  s.graphs = 5;
  s.units = 9;
  s.unique_units = 6;
  s.cached = 2;
  s.compiled = 3;
  s.failed = 300;
  s.fell_back = 1;
  s.retried_for_memory = 1;
  s.workers = 2;
  s.stored = false;
  s.seconds = 1.5;
  s.compile_seconds = 1.25;
  s.ranks = 4;
  s.rank_graphs = 20;
  s.rank_units = 36;
  const nlohmann::json j = nlohmann::json::parse(summary_json(s).dump());
  EXPECT_EQ(j.at("graphs"), 5);
  EXPECT_EQ(j.at("units"), 9);
  EXPECT_EQ(j.at("unique_units"), 6);
  EXPECT_EQ(j.at("cached"), 2);
  EXPECT_EQ(j.at("compiled"), 3);
  EXPECT_EQ(j.at("failed"), 300);
  EXPECT_EQ(j.at("fell_back"), 1);
  EXPECT_EQ(j.at("retried_for_memory"), 1);
  EXPECT_EQ(j.at("workers"), 2);
  EXPECT_EQ(j.at("stored"), false);
  EXPECT_DOUBLE_EQ(j.at("seconds").get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j.at("compile_seconds").get<double>(), 1.25);
  EXPECT_EQ(j.at("exit_status"), 255);
  EXPECT_EQ(j.at("ranks"), 4);
  EXPECT_EQ(j.at("rank_graphs"), 20);
  EXPECT_EQ(j.at("rank_units"), 36);
}

TEST(PrecompileSummary, TextIsNpcsBlock) {
  PrecompileSummary s;
  s.unique_units = 6;
  s.cached = 2;
  s.compiled = 3;
  s.failed = 1;
  EXPECT_EQ(summary_text(s),
            "Total graphs: 6\nAlready cached: 2\nTotal successful compilations: 3\nTotal failed compilations: 1\n");
}

// Units on the cpu fallback are not failures: their own line, with the ones
// the plugin refused at compile counted apart and the ops that ran there.
TEST(PrecompileSummary, FallbacksNameTheirOps) {
  PrecompileSummary s;
  s.unique_units = 6;
  s.compiled = 3;
  s.fell_back = 3;
  s.refused = 1;
  s.fallback_ops = {"matmul", "rope"};
  EXPECT_EQ(summary_text(s),
            "Total graphs: 6\nAlready cached: 0\nTotal successful compilations: 3\nTotal failed compilations: 0\n"
            "Unsupported by the backend (run on the cpu fallback): 3 (1 refused at compile); ops: matmul rope\n");
  const nlohmann::json j = nlohmann::json::parse(summary_json(s).dump());
  EXPECT_EQ(j.at("refused"), 1);
  EXPECT_EQ(j.at("fallback_ops"), nlohmann::json::array({"matmul", "rope"}));
}

// "precompile: N/3 done, 0 failed, 0 running, 0 locked, T s" with an optional
// ", ETA T s" or ", ETA ?". Matched by hand: GCC 12's <regex> trips
// -Wmaybe-uninitialized under the ASan preset's -O2.
bool skip_number(std::string_view& s) {
  size_t n = 0;
  while (n < s.size() && (std::isdigit(static_cast<unsigned char>(s[n])) != 0 || s[n] == '.')) ++n;
  s.remove_prefix(n);
  return n > 0;
}

bool skip_text(std::string_view& s, std::string_view text) {
  if (!s.starts_with(text)) return false;
  s.remove_prefix(text.size());
  return true;
}

bool is_progress_line(std::string_view s) {
  if (!skip_text(s, "precompile: ") || !skip_number(s)) return false;
  if (!skip_text(s, "/3 done, 0 failed, 0 running, 0 locked, ") || !skip_number(s) || !skip_text(s, " s")) return false;
  if (s.empty()) return true;
  if (!skip_text(s, ", ETA ")) return false;
  if (s == "?") return true;
  return skip_number(s) && s == " s";
}

TEST(PoolProgress, LineHasCountsElapsedAndEta) {
  ProgressCounts c;
  c.total = 10;
  c.done = 4;
  c.failed = 1;
  c.running = 2;
  c.locked = 0;
  c.compiled_here = 0;
  c.queued_here = 5;
  EXPECT_EQ(progress_line(c, 3.0), "precompile: 4/10 done, 1 failed, 2 running, 0 locked, 3.0 s, ETA ?");
  // 2 finished in 4 s, 5 left: 10 s more at that pace.
  c.compiled_here = 2;
  EXPECT_EQ(progress_line(c, 4.0), "precompile: 4/10 done, 1 failed, 2 running, 0 locked, 4.0 s, ETA 10 s");
  c.queued_here = 0;
  EXPECT_EQ(progress_line(c, 12.0), "precompile: 4/10 done, 1 failed, 2 running, 0 locked, 12 s");
}

// What `progress` wrote to its stream.
std::string written(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  for (int ch = std::fgetc(f); ch != EOF; ch = std::fgetc(f)) out += static_cast<char>(ch);
  return out;
}

TEST(PoolProgress, PlainFormPrintsOnChangeAtMostOnceASecond) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  PoolProgress progress(f, /*terminal=*/false);
  const auto t0 = PoolProgress::Clock::now();
  ProgressCounts c;
  c.total = 3;
  c.queued_here = 3;
  progress.update(c, t0);  // first: printed
  c.done = 1;
  progress.update(c, t0 + std::chrono::milliseconds(300));   // changed, too soon
  progress.update(c, t0 + std::chrono::milliseconds(1200));  // changed, due
  progress.update(c, t0 + std::chrono::milliseconds(2500));  // unchanged: not yet
  progress.update(c, t0 + std::chrono::seconds(12));         // unchanged for 10 s: a heartbeat
  progress.message("precompile: FAILED x");
  c.done = 3;
  c.queued_here = 0;
  progress.finish(c, t0 + std::chrono::seconds(13));
  const std::string out = written(f);
  std::fclose(f);
  EXPECT_EQ(out.find('\r'), std::string::npos);
  int progress_lines = 0;
  size_t start = 0;
  for (size_t nl = out.find('\n'); nl != std::string::npos; start = nl + 1, nl = out.find('\n', start)) {
    const std::string l = out.substr(start, nl - start);
    if (l == "precompile: FAILED x") continue;
    EXPECT_TRUE(is_progress_line(l)) << l;
    ++progress_lines;
  }
  EXPECT_EQ(progress_lines, 4) << out;
  EXPECT_NE(out.find("precompile: 3/3 done"), std::string::npos);
}

TEST(PoolProgress, TerminalFormRewritesOneLine) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  PoolProgress progress(f, /*terminal=*/true);
  const auto t0 = PoolProgress::Clock::now();
  ProgressCounts c;
  c.total = 2;
  c.queued_here = 2;
  progress.update(c, t0);
  progress.message("precompile: FAILED x");
  c.done = 2;
  c.queued_here = 0;
  progress.finish(c, t0 + std::chrono::seconds(2));
  const std::string out = written(f);
  std::fclose(f);
  // The line, cleared for the message, then the last state and one newline.
  EXPECT_EQ(out.rfind("\rprecompile: 0/2 done", 0), 0u) << out;
  EXPECT_NE(out.find("\r\033[Kprecompile: FAILED x\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\rprecompile: 2/2 done, 0 failed, 0 running, 0 locked, 2.0 s\033[K\n"), std::string::npos) << out;
}

TEST(CompilePool, ParallelismForMemoryIsBoundedByCoresAndMemory) {
  const int start = default_parallelism();
  EXPECT_GE(start, 1);
  // Unmeasured: the conservative start.
  EXPECT_EQ(parallelism_for_memory(0, 0), start);
  // A tiny worker: cores decide.
  const int small = parallelism_for_memory(1 << 20, 0);
  EXPECT_GE(small, start);
  // A worker bigger than all the memory: one at a time.
  EXPECT_EQ(parallelism_for_memory(available_memory_bytes() * 4, 0), 1);
  EXPECT_GT(available_memory_bytes(), 0);
}

}  // namespace
}  // namespace kiln::compiler_cache
