// Little helpers for the plugin's own byte formats (executable, schedule):
// appends plain values to a vector, and reads them back with every length
// checked against the buffer, so corrupt bytes fail with KILN_ERR_CORRUPT.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "failure.h"

#pragma GCC visibility push(hidden)

namespace kiln::backend {

class Writer {
 public:
  template <class T>
  void put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void put_bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    put_bytes(s.data(), s.size());
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

class Reader {
 public:
  Reader(const uint8_t* p, size_t n, const char* what) : p_(p), n_(n), what_(what) {}
  template <class T>
  T get() {
    T v;
    std::memcpy(&v, take(sizeof(T)), sizeof(T));
    return v;
  }
  const uint8_t* take(uint64_t n) {
    if (n > n_ - pos_) fail(KILN_ERR_CORRUPT, std::string(what_) + " is truncated");
    const uint8_t* at = p_ + pos_;
    pos_ += n;
    return at;
  }
  std::string get_string() {
    const auto n = get<uint64_t>();
    const uint8_t* s = take(n);
    return std::string(reinterpret_cast<const char*>(s), n);
  }
  // A count of items each at least `min_bytes` long: bounded by what is left,
  // so corrupt counts cannot trigger huge allocations.
  uint64_t get_count(uint64_t min_bytes) {
    const auto n = get<uint64_t>();
    if (min_bytes > 0 && n > (n_ - pos_) / min_bytes)
      fail(KILN_ERR_CORRUPT, std::string(what_) + " has an impossible count");
    return n;
  }
  bool done() const { return pos_ == n_; }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  const char* what_;
};

}  // namespace kiln::backend

#pragma GCC visibility pop
