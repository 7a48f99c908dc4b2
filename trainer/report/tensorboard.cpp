#include "trainer/report/tensorboard.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace kiln::trainer {

namespace {

std::array<uint32_t, 256> make_crc32c_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // reflected Castagnoli
    t[i] = c;
  }
  return t;
}

// Protobuf wire format: a key is (field << 3) | wire type.
enum WireType : uint8_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void put_key(std::string& out, int field, WireType type) { put_varint(out, static_cast<uint64_t>(field) << 3 | type); }
template <typename T>
void put_fixed(std::string& out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));  // little-endian host, as protobuf
  out.append(bytes, sizeof(T));
}
void put_bytes(std::string& out, int field, const std::string& bytes) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out += bytes;
}

// Event fields (tensorflow/core/util/event.proto).
constexpr int kEventWallTime = 1, kEventStep = 2, kEventFileVersion = 3, kEventSummary = 5;
// Summary.value, Summary.Value.tag, Summary.Value.simple_value (summary.proto).
constexpr int kSummaryValue = 1, kValueTag = 1, kValueSimpleValue = 2;

std::string event_header(double wall_time, int64_t step) {
  std::string e;
  put_key(e, kEventWallTime, kFixed64);
  put_fixed(e, wall_time);
  if (step != 0) {
    put_key(e, kEventStep, kVarint);
    put_varint(e, static_cast<uint64_t>(step));
  }
  return e;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

uint32_t crc32c(const void* data, size_t size) {
  static const std::array<uint32_t, 256> table = make_crc32c_table();
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const void* data, size_t size) {
  const uint32_t c = crc32c(data, size);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string encode_file_version_event(double wall_time) {
  std::string e = event_header(wall_time, 0);
  put_bytes(e, kEventFileVersion, "brain.Event:2");
  return e;
}

std::string encode_scalar_event(double wall_time, int64_t step, const std::string& tag, float value) {
  std::string v;
  put_bytes(v, kValueTag, tag);
  put_key(v, kValueSimpleValue, kFixed32);
  put_fixed(v, value);
  std::string summary;
  put_bytes(summary, kSummaryValue, v);
  std::string e = event_header(wall_time, step);
  put_bytes(e, kEventSummary, summary);
  return e;
}

std::string encode_record(const std::string& payload) {
  std::string r;
  const uint64_t length = payload.size();
  put_fixed(r, length);
  put_fixed(r, masked_crc32c(r.data(), sizeof(length)));
  r += payload;
  put_fixed(r, masked_crc32c(payload.data(), payload.size()));
  return r;
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  path_ = (std::filesystem::path(dir) / ("events.out.tfevents." + std::to_string(static_cast<int64_t>(now_seconds())) +
                                         "." + host + "." + std::to_string(getpid())))
              .string();
  out_ = std::make_unique<AppendFile>(path_, "--tensorboard-dir");
  write(encode_file_version_event(now_seconds()));
}

void TensorBoardWriter::write(const std::string& payload) {
  out_->append(encode_record(payload));  // whole records, at once: TensorBoard follows the file while training runs
}

void TensorBoardWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  write(encode_scalar_event(now_seconds(), step, tag, static_cast<float>(value)));
}

void TensorBoardWriter::add_iteration(const IterationLog& l) {
  if (l.lm_loss) add_scalar("lm loss", *l.lm_loss, l.iteration);
  add_scalar("learning-rate", l.learning_rate, l.iteration);
  if (l.decoupled_learning_rate) add_scalar("decoupled-learning-rate", *l.decoupled_learning_rate, l.iteration);
  if (l.grad_norm) add_scalar("grad-norm", *l.grad_norm, l.iteration);
  if (l.loss_scale) add_scalar("loss-scale", *l.loss_scale, l.iteration);  // Megatron's tag (--bf16/--fp16 runs)
  add_scalar("throughput/tokens-per-sec", l.tokens_per_second, l.iteration);
  add_scalar("iteration-time", l.ms_per_iteration / 1000.0, l.iteration);
  add_scalar("batch-size", static_cast<double>(l.global_batch_size), l.iteration);
}

}  // namespace kiln::trainer
