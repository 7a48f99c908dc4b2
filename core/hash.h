// SHA-256, for compile-cache keys and graph identity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln {

// Lower-case hex digest (64 chars).
std::string sha256_hex(const void* data, size_t size);

}  // namespace kiln
