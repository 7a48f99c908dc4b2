// The SPIR-V of the shaders in shaders/*.comp, compiled by glslc at build
// time and embedded in the plugin (the generated shaders_spirv.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common.h"

#pragma GCC visibility push(hidden)

namespace kiln::vk {

// Throws KILN_ERR_INTERNAL for a name the build did not embed.
std::vector<uint32_t> embedded_spirv(const std::string& name);

// Whether `words` can be a SPIR-V module (magic number, header length).
bool looks_like_spirv(const std::vector<uint32_t>& words);

}  // namespace kiln::vk

#pragma GCC visibility pop
