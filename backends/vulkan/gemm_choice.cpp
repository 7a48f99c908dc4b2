#include "gemm_choice.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "kiln/plugin_kit.hpp"

namespace kiln::vk {

namespace {

using kiln::plugin_kit::fail;

// gemm_coopmat.comp's shared memory in bytes: the A and B slices (64 x 40
// and 32 x 72 staged elements, f16 on tensor cores, f32 emulated), one f32
// fragment per subgroup, a bf16 slice's largest magnitudes (4 words) and
// common.glsl's 256-float reduction array.
uint32_t coopmat_shared_bytes(bool emulated) {
  const uint32_t staged = emulated ? 4 : 2;
  return (64 * 40 + 32 * 72) * staged + kCoopmatSubgroups * kCoopmatFragment.m * kCoopmatFragment.n * 4 + 4 * 4 +
         256 * 4;
}

bool emulated_usable(const GemmDevice& d, std::string* why) {
  if (!d.storage16) {
    *why = "vulkan: KILN_VULKAN_GEMM=coopmat-emulated needs storageBuffer16BitAccess, which " + d.name + " lacks";
    return false;
  }
  if (d.max_invocations < kCoopmatSubgroups * kCoopmatSubgroupSize || d.max_shared_bytes < coopmat_shared_bytes(true)) {
    *why = "vulkan: KILN_VULKAN_GEMM=coopmat-emulated needs 128 invocations and " +
           std::to_string(coopmat_shared_bytes(true)) + " bytes of shared memory per workgroup";
    return false;
  }
  return true;
}

GemmKernel default_kernel(const GemmDevice& d, const GemmProduct& g, GemmOverride o) {
  const bool big = g.m >= 64 && g.n >= 64;
  // gemm_tiled.comp's 128 x 128 tiles need a GPU's register file and 17
  // KiB of shared memory; on a CPU device (lavapipe) they only spill.
  const bool tiled_device = !d.cpu && d.max_invocations >= 256 && d.max_shared_bytes >= 20480;
  if (o == GemmOverride::Simple) return GemmKernel::Simple;
  if (o == GemmOverride::Tiled) return big ? GemmKernel::Tiled : GemmKernel::Simple;
  return tiled_device && big ? GemmKernel::Tiled : GemmKernel::Simple;
}

}  // namespace

GemmOverride parse_gemm_override(const char* text) {
  if (text == nullptr || *text == '\0') return GemmOverride::None;
  if (std::strcmp(text, "tiled") == 0) return GemmOverride::Tiled;
  if (std::strcmp(text, "simple") == 0) return GemmOverride::Simple;
  if (std::strcmp(text, "coopmat") == 0) return GemmOverride::Coopmat;
  if (std::strcmp(text, "coopmat-emulated") == 0) return GemmOverride::CoopmatEmulated;
  fail(KILN_ERR_INVALID_ARGUMENT, std::string("vulkan: KILN_VULKAN_GEMM must be tiled, simple, coopmat or "
                                              "coopmat-emulated, not '") +
                                      text + "'");
}

GemmOverride gemm_override() { return parse_gemm_override(std::getenv("KILN_VULKAN_GEMM")); }

const char* gemm_kernel_name(GemmKernel k) {
  switch (k) {
    case GemmKernel::Simple: return "gemm";
    case GemmKernel::Tiled: return "gemm_tiled";
    case GemmKernel::Coopmat: return "gemm_coopmat";
    case GemmKernel::CoopmatEmulated: return "gemm_coopmat_emulated";
  }
  return "gemm";
}

bool coopmat_usable(const GemmDevice& d, std::string* why) {
  const std::string prefix = "vulkan: " + d.name + ": no tensor-core GEMM: ";
  if (!d.coopmat_extension) {
    *why = prefix + "the device does not list VK_NV_cooperative_matrix";
    return false;
  }
  if (!d.coopmat_feature) {
    *why = prefix + "VK_NV_cooperative_matrix's cooperativeMatrix feature is not set";
    return false;
  }
  if (!d.storage16 || !d.f16_arithmetic || !d.memory_model) {
    *why = prefix + "it needs storageBuffer16BitAccess, shaderFloat16 and vulkanMemoryModel";
    return false;
  }
  if (d.subgroup_size != kCoopmatSubgroupSize || !d.subgroup_arithmetic) {
    *why = prefix +
           "it needs subgroups of 32 invocations with basic and arithmetic subgroup operations in compute "
           "shaders (the device's subgroups: " +
           std::to_string(d.subgroup_size) + (d.subgroup_arithmetic ? "" : ", no arithmetic") + ")";
    return false;
  }
  if (std::find(d.f16_shapes.begin(), d.f16_shapes.end(), kCoopmatFragment) == d.f16_shapes.end()) {
    *why = prefix + "the device reports no 16 x 16 x 16 f16 x f16 + f32 subgroup fragment, the shape it is built for";
    return false;
  }
  if (d.max_invocations < kCoopmatSubgroups * kCoopmatSubgroupSize ||
      d.max_shared_bytes < coopmat_shared_bytes(false)) {
    *why = prefix + "a workgroup of 128 invocations and " + std::to_string(coopmat_shared_bytes(false)) +
           " bytes of shared memory exceeds its limits";
    return false;
  }
  return true;
}

GemmKernel choose_gemm(const GemmDevice& d, const GemmProduct& g, GemmOverride o) {
  const bool sixteen = g.a16 && g.b16;  // bf16 or f16: onto f16 fragments
  std::string why;
  if (o == GemmOverride::CoopmatEmulated) {
    if (!emulated_usable(d, &why)) fail(KILN_ERR_INVALID_ARGUMENT, why);
    if (sixteen) return GemmKernel::CoopmatEmulated;
  } else if (o == GemmOverride::Coopmat) {
    if (!coopmat_usable(d, &why)) fail(KILN_ERR_INVALID_ARGUMENT, why + " (KILN_VULKAN_GEMM=coopmat)");
    if (sixteen) return GemmKernel::Coopmat;
  } else if (o == GemmOverride::None && sixteen && g.m >= kCoopmatTile && g.n >= kCoopmatTile) {
    // Tensor cores where the product fills at least one 64 x 64 tile; below
    // that gemm.comp's 32 x 32 tiles waste less.
    if (coopmat_usable(d, &why)) return GemmKernel::Coopmat;
  }
  return default_kernel(d, g, o);
}

}  // namespace kiln::vk
