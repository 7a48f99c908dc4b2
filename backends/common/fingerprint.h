// 256 bits of FNV-1a (four seeded lanes, splitmix-finalized) as 64 hex
// digits: the device fingerprints plugins put in compile-cache keys.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#pragma GCC visibility push(hidden)

namespace kiln::backend {

inline std::string fingerprint_hex(const std::string& data) {
  static const uint64_t seeds[4] = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull, 0x9e3779b97f4a7c15ull,
                                    0xc2b2ae3d27d4eb4full};
  std::string out;
  char buf[17];
  for (uint64_t seed : seeds) {
    uint64_t h = seed;
    for (unsigned char c : data) {
      h ^= c;
      h *= 0x100000001b3ull;
    }
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
    out += buf;
  }
  return out;
}

}  // namespace kiln::backend

#pragma GCC visibility pop
