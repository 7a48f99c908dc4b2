#include "gemm_choice.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "kiln/plugin_kit.hpp"

namespace kiln::vk {

namespace {

using kiln::plugin_kit::fail;

// gemm_coopmat.comp's shared memory in bytes: A's and B's slices as f16
// (tile x 32 elements in rows padded by 8, the larger of the two ways an
// operand may be stored), one f32 fragment per subgroup, a bf16 slice's
// largest magnitudes (4 words) and common.glsl's 256-float reduction array.
uint32_t coopmat_shared_bytes(CoopmatLayout l) {
  const uint32_t slice = std::max(l.tile * (32 + 8), 32 * (l.tile + 8));
  return 2 * slice * 2 + l.subgroups * kCoopmatFragment.m * kCoopmatFragment.n * 4 + 4 * 4 + 256 * 4;
}

bool fits(const GemmDevice& d, CoopmatLayout l) {
  return d.max_invocations >= l.subgroups * kCoopmatSubgroupSize && d.max_shared_bytes >= coopmat_shared_bytes(l);
}

bool emulated_usable(const GemmDevice& d, std::string* why) {
  if (!d.storage16 || !d.f16_arithmetic) {
    *why =
        "vulkan: KILN_VULKAN_GEMM=coopmat-emulated needs storageBuffer16BitAccess and shaderFloat16 (f16 shared "
        "memory), which " +
        d.name + " lacks";
    return false;
  }
  if (!fits(d, kCoopmatSmall)) {
    *why = "vulkan: KILN_VULKAN_GEMM=coopmat-emulated needs 128 invocations and " +
           std::to_string(coopmat_shared_bytes(kCoopmatSmall)) + " bytes of shared memory per workgroup";
    return false;
  }
  return true;
}

// The larger tile where C fills it and the device holds its workgroup.
GemmKernel coopmat_for(const GemmDevice& d, const GemmProduct& g, bool emulated) {
  const bool large = g.m >= kCoopmatLarge.tile && g.n >= kCoopmatLarge.tile && fits(d, kCoopmatLarge);
  if (emulated) return large ? GemmKernel::CoopmatLargeEmulated : GemmKernel::CoopmatEmulated;
  return large ? GemmKernel::CoopmatLarge : GemmKernel::Coopmat;
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
  if (std::strcmp(text, "coopmat-64") == 0) return GemmOverride::Coopmat64;
  if (std::strcmp(text, "coopmat-emulated") == 0) return GemmOverride::CoopmatEmulated;
  fail(KILN_ERR_INVALID_ARGUMENT, std::string("vulkan: KILN_VULKAN_GEMM must be tiled, simple, coopmat, "
                                              "coopmat-64 or coopmat-emulated, not '") +
                                      text + "'");
}

GemmOverride gemm_override() { return parse_gemm_override(std::getenv("KILN_VULKAN_GEMM")); }

const char* gemm_kernel_name(GemmKernel k) {
  switch (k) {
    case GemmKernel::Simple: return "gemm";
    case GemmKernel::Tiled: return "gemm_tiled";
    case GemmKernel::Coopmat: return "gemm_coopmat";
    case GemmKernel::CoopmatLarge: return "gemm_coopmat_large";
    case GemmKernel::CoopmatEmulated: return "gemm_coopmat_emulated";
    case GemmKernel::CoopmatLargeEmulated: return "gemm_coopmat_large_emulated";
  }
  return "gemm";
}

bool is_coopmat(GemmKernel k) { return k != GemmKernel::Simple && k != GemmKernel::Tiled; }

CoopmatLayout coopmat_layout(GemmKernel k) {
  return k == GemmKernel::CoopmatLarge || k == GemmKernel::CoopmatLargeEmulated ? kCoopmatLarge : kCoopmatSmall;
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
  if (!fits(d, kCoopmatSmall)) {
    *why = prefix + "a workgroup of 128 invocations and " + std::to_string(coopmat_shared_bytes(kCoopmatSmall)) +
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
    if (sixteen) return coopmat_for(d, g, true);
  } else if (o == GemmOverride::Coopmat || o == GemmOverride::Coopmat64) {
    const bool small_only = o == GemmOverride::Coopmat64;
    if (!coopmat_usable(d, &why))
      fail(KILN_ERR_INVALID_ARGUMENT,
           why + (small_only ? " (KILN_VULKAN_GEMM=coopmat-64)" : " (KILN_VULKAN_GEMM=coopmat)"));
    if (sixteen) return small_only ? GemmKernel::Coopmat : coopmat_for(d, g, false);
  } else if (o == GemmOverride::None && sixteen && g.m >= kCoopmatSmall.tile && g.n >= kCoopmatSmall.tile) {
    // Tensor cores where the product fills at least one 64 x 64 tile; below
    // that gemm.comp's 32 x 32 tiles waste less.
    if (coopmat_usable(d, &why)) return coopmat_for(d, g, false);
  }
  return default_kernel(d, g, o);
}

}  // namespace kiln::vk
