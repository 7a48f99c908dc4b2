// What every file of the Vulkan plugin shares: the Failure exception and
// the byte reader/writer (from the plugin kit, kiln/plugin_kit.hpp), and checks on VkResult codes.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <string>

#include "kiln/plugin.h"
#include "kiln/plugin_kit.hpp"

#pragma GCC visibility push(hidden)

namespace kiln::vk {

using plugin_kit::fail;
using plugin_kit::Failure;
using plugin_kit::Reader;
using plugin_kit::Writer;

// "VK_ERROR_DEVICE_LOST (-4)".
std::string vk_result_name(VkResult r);

// Throws KILN_ERR_DEVICE (KILN_ERR_OUT_OF_MEMORY for allocation failures)
// naming `what` and the result, unless r is VK_SUCCESS.
void vk_check(VkResult r, const std::string& what);

// Prints "kiln: warning: vulkan: <message>" on stderr.
void warn(const std::string& message);

}  // namespace kiln::vk

#pragma GCC visibility pop
