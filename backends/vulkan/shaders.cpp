#include "shaders.h"

#include <cstddef>
#include <cstring>

namespace kiln::vk {

struct EmbeddedShader {
  const char* name;
  const uint32_t* words;
  size_t count;
};
extern const EmbeddedShader kEmbeddedShaders[];  // shaders_spirv.cpp (generated)

std::vector<uint32_t> embedded_spirv(const std::string& name) {
  for (const EmbeddedShader* s = kEmbeddedShaders; s->name != nullptr; ++s)
    if (name == s->name) return std::vector<uint32_t>(s->words, s->words + s->count);
  fail(KILN_ERR_INTERNAL, "vulkan: no embedded shader named " + name);
}

bool looks_like_spirv(const std::vector<uint32_t>& words) { return words.size() >= 5 && words[0] == 0x07230203u; }

}  // namespace kiln::vk
