// The KILN_TEST_DUMP_BATCHES=FILE hook, for tests that check a training
// step's loss against an independent reference (tests/tools/documents_numpy.py):
// the first rank appends one line per training micro-batch,
//   iteration m tokens... | targets... | loss
// with the tokens and targets as the data holds them (before any
// tensor-parallel sharding of their ids) and the micro-batch's loss as the
// graph computed it, to 9 significant digits. Without pipeline parallelism
// (a micro-batch's loss and its tokens are then on one rank).
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace kiln::trainer {

class BatchDump {
 public:
  // Null unless KILN_TEST_DUMP_BATCHES is set and this is rank 0.
  static std::unique_ptr<BatchDump> open(int rank);
  explicit BatchDump(const std::string& path);

  // The micro-batch about to run, then its loss once it ran.
  void batch(int64_t iteration, int64_t micro_batch, const std::vector<int32_t>& tokens,
             const std::vector<int32_t>& targets);
  void loss(float value);

 private:
  std::ofstream out_;
  std::string path_;
};

}  // namespace kiln::trainer
