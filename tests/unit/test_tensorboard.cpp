// The TensorBoard encoders against fixed, published values: CRC-32C's check
// value, and protobuf bytes worked out by hand from the wire format.
#include <gtest/gtest.h>

#include <cstring>

#include "trainer/report/tensorboard.h"

namespace kiln::trainer {
namespace {

TEST(TensorBoard, Crc32cCheckValue) {
  // The CRC-32C (Castagnoli) check value of "123456789" (RFC 3720 B.4).
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c("", 0), 0u);
}

TEST(TensorBoard, ScalarEventBytes) {
  const std::string e = encode_scalar_event(1.5, 300, "lm loss", 2.0f);
  std::string want;
  want += '\x09';  // field 1 (wall_time), fixed64
  const double wall = 1.5;
  want.append(reinterpret_cast<const char*>(&wall), 8);
  want += "\x10\xac\x02";                      // field 2 (step), varint 300
  want += "\x2a\x10";                          // field 5 (summary), 16 bytes
  want += "\x0a\x0e";                          // Summary.value, 14 bytes
  want += "\x0a\x07lm loss";                   // Value.tag
  want += "\x15";                              // Value.simple_value, fixed32
  want += std::string("\x00\x00\x00\x40", 4);  // 2.0f
  EXPECT_EQ(e, want);
}

TEST(TensorBoard, RecordFraming) {
  const std::string payload = "abc";
  const std::string r = encode_record(payload);
  ASSERT_EQ(r.size(), 8 + 4 + 3 + 4);
  uint64_t length = 0;
  std::memcpy(&length, r.data(), 8);
  EXPECT_EQ(length, 3u);
  uint32_t length_crc = 0, data_crc = 0;
  std::memcpy(&length_crc, r.data() + 8, 4);
  std::memcpy(&data_crc, r.data() + 15, 4);
  EXPECT_EQ(length_crc, masked_crc32c(r.data(), 8));
  EXPECT_EQ(data_crc, masked_crc32c("abc", 3));
  const uint32_t c = crc32c("abc", 3);
  EXPECT_EQ(data_crc, ((c >> 15) | (c << 17)) + 0xa282ead8u);
  EXPECT_EQ(r.substr(12, 3), "abc");
}

}  // namespace
}  // namespace kiln::trainer
