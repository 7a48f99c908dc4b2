#include "trainer/batch_dump.h"

#include <fmt/format.h>

#include <cstdlib>

#include "core/error.h"

namespace kiln::trainer {

std::unique_ptr<BatchDump> BatchDump::open(int rank) {
  const char* path = std::getenv("KILN_TEST_DUMP_BATCHES");
  if (path == nullptr || *path == '\0' || rank != 0) return nullptr;
  return std::make_unique<BatchDump>(path);
}

BatchDump::BatchDump(const std::string& path) : out_(path, std::ios::trunc), path_(path) {
  if (!out_) throw Error("KILN_TEST_DUMP_BATCHES: cannot write " + path + "; give a writable file path");
}

void BatchDump::batch(int64_t iteration, int64_t micro_batch, const std::vector<int32_t>& tokens,
                      const std::vector<int32_t>& targets) {
  out_ << iteration << ' ' << micro_batch;
  for (int32_t t : tokens) out_ << ' ' << t;
  out_ << " |";
  for (int32_t t : targets) out_ << ' ' << t;
  out_ << " |";
}

void BatchDump::loss(float value) {
  out_ << fmt::format(" {:.9g}\n", value);
  out_.flush();
  if (!out_) throw Error("KILN_TEST_DUMP_BATCHES: writing " + path_ + " failed (disk full?)");
}

}  // namespace kiln::trainer
