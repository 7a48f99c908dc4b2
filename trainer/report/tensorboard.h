// TensorBoard event files, written without TensorFlow or protobuf: a file
// of TFRecords (uint64 length, masked CRC-32C of the length, payload,
// masked CRC-32C of the payload), each payload one serialized Event
// protobuf {wall_time, step, summary {value {tag, simple_value}}}, encoded
// by hand below. Stock TensorBoard reads them; tests/tools/read_tfevents.py
// decodes them independently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "trainer/report/append_file.h"
#include "trainer/report/megatron_log.h"

namespace kiln::trainer {

// CRC-32C (Castagnoli) and TFRecord's masking of it.
uint32_t crc32c(const void* data, size_t size);
uint32_t masked_crc32c(const void* data, size_t size);

// Serialized Event protobufs.
std::string encode_file_version_event(double wall_time);
std::string encode_scalar_event(double wall_time, int64_t step, const std::string& tag, float value);
// One TFRecord around a payload.
std::string encode_record(const std::string& payload);

class TensorBoardWriter {
 public:
  // Creates dir if needed and a new events.out.tfevents.<time>.<host>.<pid>
  // file in it; throws kiln::Error naming --tensorboard-dir if it cannot.
  explicit TensorBoardWriter(const std::string& dir);
  void add_scalar(const std::string& tag, double value, int64_t step);
  // The scalars of one log line, under Megatron's tag names.
  void add_iteration(const IterationLog& line);
  const std::string& path() const { return path_; }

 private:
  void write(const std::string& payload);
  std::string path_;
  std::unique_ptr<AppendFile> out_;
};

}  // namespace kiln::trainer
