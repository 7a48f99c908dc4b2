// The Vulkan plugin's GEMM choice (backends/vulkan/gemm_choice.h) over
// synthetic devices: an H100 as its driver reports VK_NV_cooperative_matrix,
// the same GPU without the extension or its feature, and lavapipe. No
// device is needed: the choice is a pure function of what a device reports.
#include "backends/vulkan/gemm_choice.h"

#include <gtest/gtest.h>

#include <string>

#include "kiln/plugin_kit.hpp"

namespace kiln::vk {
namespace {

// An H100 as the NVIDIA driver describes it (subgroup 32, 48 KiB shared
// memory, 1024 invocations) with the NV extension's f16 x f16 + f32 shapes.
GemmDevice h100() {
  GemmDevice d;
  d.name = "NVIDIA H100";
  d.subgroup_size = 32;
  d.subgroup_arithmetic = true;
  d.max_invocations = 1024;
  d.max_shared_bytes = 49152;
  d.storage16 = d.f16_arithmetic = d.memory_model = true;
  d.coopmat_extension = d.coopmat_feature = true;
  d.f16_shapes = {{16, 8, 16}, {16, 8, 8}, {16, 16, 16}};
  return d;
}

// lavapipe: a CPU device, subgroup 8, f16 arithmetic, no cooperative
// matrices.
GemmDevice lavapipe() {
  GemmDevice d;
  d.name = "llvmpipe";
  d.cpu = true;
  d.subgroup_size = 8;
  d.max_invocations = 1024;
  d.max_shared_bytes = 32768;
  d.storage16 = d.f16_arithmetic = true;
  return d;
}

// Products of two 16-bit operands (bf16 or f16: both go onto f16
// fragments) and of two f32 ones.
GemmProduct bits16(uint64_t m, uint64_t n, uint64_t k) { return {m, n, k, true, true}; }
GemmProduct f32(uint64_t m, uint64_t n, uint64_t k) { return {m, n, k, false, false}; }

// The message of the Failure `f` throws, with its code checked.
template <class F>
std::string failure(F f) {
  try {
    f();
  } catch (const plugin_kit::Failure& e) {
    EXPECT_EQ(e.code, KILN_ERR_INVALID_ARGUMENT);
    return e.message;
  }
  ADD_FAILURE() << "no Failure thrown";
  return "";
}

TEST(VulkanGemmChoice, TensorCoresForSixteenBitProductsThatFillATile) {
  // 128 x 128 tiles (8 subgroups) where C has 128 rows and columns.
  const GemmKernel large = choose_gemm(h100(), bits16(768, 768, 768), GemmOverride::None);
  EXPECT_EQ(large, GemmKernel::CoopmatLarge);
  EXPECT_STREQ(gemm_kernel_name(large), "gemm_coopmat_large");
  EXPECT_TRUE(is_coopmat(large));
  EXPECT_EQ(coopmat_layout(large).tile, 128u);
  EXPECT_EQ(coopmat_layout(large).subgroups, 8u);
  // 64 x 64 (4 subgroups) where one side is shorter.
  for (const GemmProduct& g : {bits16(127, 768, 768), bits16(768, 64, 768)}) {
    const GemmKernel small = choose_gemm(h100(), g, GemmOverride::None);
    EXPECT_EQ(small, GemmKernel::Coopmat);
    EXPECT_STREQ(gemm_kernel_name(small), "gemm_coopmat");
    EXPECT_EQ(coopmat_layout(small).tile, 64u);
    EXPECT_EQ(coopmat_layout(small).subgroups, 4u);
  }
  EXPECT_FALSE(is_coopmat(GemmKernel::Tiled));
  EXPECT_FALSE(is_coopmat(GemmKernel::Simple));
}

TEST(VulkanGemmChoice, Coopmat64KeepsTheSmallTile) {
  // For timing the tiles against each other: tensor cores, 64 x 64 only.
  EXPECT_EQ(choose_gemm(h100(), bits16(768, 768, 768), GemmOverride::Coopmat64), GemmKernel::Coopmat);
  EXPECT_EQ(choose_gemm(h100(), bits16(5, 3, 7), GemmOverride::Coopmat64), GemmKernel::Coopmat);
  EXPECT_EQ(choose_gemm(h100(), f32(768, 768, 768), GemmOverride::Coopmat64), GemmKernel::Tiled);
  const std::string why = failure([] { choose_gemm(lavapipe(), bits16(768, 768, 768), GemmOverride::Coopmat64); });
  EXPECT_NE(why.find("(KILN_VULKAN_GEMM=coopmat-64)"), std::string::npos) << why;
}

TEST(VulkanGemmChoice, TheLargeTileOnlyWhereItsWorkgroupFits) {
  // 256 invocations and 29,712 bytes of shared memory (f16 slices of
  // 128 x 40, 8 fragments of scratch); 128 and 15,376 for the small tile.
  GemmDevice d = h100();
  d.max_shared_bytes = 16384;
  EXPECT_EQ(choose_gemm(d, bits16(768, 768, 768), GemmOverride::None), GemmKernel::Coopmat);
  d = h100();
  d.max_invocations = 128;
  EXPECT_EQ(choose_gemm(d, bits16(768, 768, 768), GemmOverride::None), GemmKernel::Coopmat);
  d.max_shared_bytes = 15375;
  EXPECT_FALSE(is_coopmat(choose_gemm(d, bits16(768, 768, 768), GemmOverride::None)));
}

TEST(VulkanGemmChoice, SmallSixteenBitProductsAndF32OperandsStaySimt) {
  // C below one 64 x 64 tile: gemm.comp.
  EXPECT_EQ(choose_gemm(h100(), bits16(32, 768, 768), GemmOverride::None), GemmKernel::Simple);
  EXPECT_EQ(choose_gemm(h100(), bits16(768, 63, 768), GemmOverride::None), GemmKernel::Simple);
  // f32 operands (or one 16-bit and one f32) are never narrowed.
  EXPECT_EQ(choose_gemm(h100(), f32(768, 768, 768), GemmOverride::None), GemmKernel::Tiled);
  EXPECT_EQ(choose_gemm(h100(), {768, 768, 768, true, false}, GemmOverride::None), GemmKernel::Tiled);
  EXPECT_EQ(choose_gemm(h100(), {768, 768, 768, false, true}, GemmOverride::Coopmat), GemmKernel::Tiled);
}

TEST(VulkanGemmChoice, ADeviceWithoutTheFeatureOrShapesUsesTiled) {
  GemmDevice no_feature = h100();
  no_feature.coopmat_feature = false;
  EXPECT_EQ(choose_gemm(no_feature, bits16(768, 768, 768), GemmOverride::None), GemmKernel::Tiled);
  GemmDevice no_f16 = h100();
  no_f16.f16_arithmetic = false;
  EXPECT_EQ(choose_gemm(no_f16, bits16(768, 768, 768), GemmOverride::None), GemmKernel::Tiled);
  // The shader's SPIR-V declares the VulkanMemoryModel capability.
  GemmDevice no_model = h100();
  no_model.memory_model = false;
  EXPECT_EQ(choose_gemm(no_model, bits16(768, 768, 768), GemmOverride::None), GemmKernel::Tiled);
  // It numbers its subgroups with gl_SubgroupID.
  GemmDevice no_subgroups = h100();
  no_subgroups.subgroup_size = 0;
  std::string why;
  EXPECT_FALSE(coopmat_usable(no_subgroups, &why));
  EXPECT_NE(why.find("subgroup operations"), std::string::npos) << why;
  // And a bf16 slice's largest magnitude with subgroupMax.
  GemmDevice no_arithmetic = h100();
  no_arithmetic.subgroup_arithmetic = false;
  EXPECT_FALSE(coopmat_usable(no_arithmetic, &why));
  EXPECT_NE(why.find("arithmetic subgroup operations"), std::string::npos) << why;
  // The shader is built for 16 x 16 x 16 fragments: other shapes do not do.
  GemmDevice other_shapes = h100();
  other_shapes.f16_shapes = {{16, 8, 16}, {16, 8, 8}, {64, 64, 16}};
  EXPECT_FALSE(coopmat_usable(other_shapes, &why));
  EXPECT_NE(why.find("no 16 x 16 x 16 f16 x f16 + f32 subgroup fragment"), std::string::npos) << why;
  EXPECT_EQ(choose_gemm(other_shapes, bits16(768, 768, 768), GemmOverride::None), GemmKernel::Tiled);
}

TEST(VulkanGemmChoice, OnlySubgroupsOf32) {
  // The shader's layout (and its loops' trip counts) assume 32 invocations
  // per subgroup, as NVIDIA's drivers report.
  GemmDevice d = h100();
  d.subgroup_size = 64;
  std::string why;
  EXPECT_FALSE(coopmat_usable(d, &why));
  EXPECT_NE(why.find("subgroups of 32 invocations"), std::string::npos) << why;
  EXPECT_NE(why.find("subgroups: 64"), std::string::npos) << why;
  EXPECT_EQ(choose_gemm(d, bits16(128, 128, 64), GemmOverride::None), GemmKernel::Tiled);
}

TEST(VulkanGemmChoice, LimitsTooSmallForFourSubgroups) {
  GemmDevice d = h100();
  d.max_shared_bytes = 8192;
  std::string why;
  EXPECT_FALSE(coopmat_usable(d, &why));
  EXPECT_NE(why.find("shared memory"), std::string::npos) << why;
  d = h100();
  d.max_invocations = 64;
  EXPECT_FALSE(coopmat_usable(d, &why));
}

TEST(VulkanGemmChoice, LavapipeRunsGemmAndTheEmulatedPathOnRequest) {
  EXPECT_EQ(choose_gemm(lavapipe(), bits16(768, 768, 768), GemmOverride::None), GemmKernel::Simple);
  EXPECT_EQ(choose_gemm(lavapipe(), f32(768, 768, 768), GemmOverride::Tiled), GemmKernel::Tiled);
  EXPECT_EQ(choose_gemm(lavapipe(), f32(768, 32, 768), GemmOverride::Tiled), GemmKernel::Simple);
  // coopmat-emulated: every f16 product, whatever its size; others as usual.
  const GemmKernel e = choose_gemm(lavapipe(), bits16(5, 3, 7), GemmOverride::CoopmatEmulated);
  EXPECT_EQ(e, GemmKernel::CoopmatEmulated);
  EXPECT_STREQ(gemm_kernel_name(e), "gemm_coopmat_emulated");
  // Its 128 x 128 build fits lavapipe's 32 KiB of shared memory.
  const GemmKernel large = choose_gemm(lavapipe(), bits16(128, 128, 7), GemmOverride::CoopmatEmulated);
  EXPECT_EQ(large, GemmKernel::CoopmatLargeEmulated);
  EXPECT_STREQ(gemm_kernel_name(large), "gemm_coopmat_large_emulated");
  EXPECT_EQ(choose_gemm(lavapipe(), f32(768, 768, 768), GemmOverride::CoopmatEmulated), GemmKernel::Simple);
}

TEST(VulkanGemmChoice, ForcedCoopmatOnADeviceWithoutItFailsNamingTheExtension) {
  const std::string why = failure([] { choose_gemm(lavapipe(), bits16(768, 768, 768), GemmOverride::Coopmat); });
  EXPECT_NE(why.find("VK_NV_cooperative_matrix"), std::string::npos) << why;
  EXPECT_NE(why.find("llvmpipe"), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  // Forced, it also runs products below one tile on the tensor cores.
  EXPECT_EQ(choose_gemm(h100(), bits16(5, 3, 7), GemmOverride::Coopmat), GemmKernel::Coopmat);
  GemmDevice no16 = lavapipe();
  no16.storage16 = false;
  EXPECT_NE(failure([&] {
              choose_gemm(no16, bits16(64, 64, 64), GemmOverride::CoopmatEmulated);
            }).find("storageBuffer16BitAccess"),
            std::string::npos);
  // The emulated build stages f16 in shared memory too.
  GemmDevice no_f16 = lavapipe();
  no_f16.f16_arithmetic = false;
  EXPECT_NE(
      failure([&] { choose_gemm(no_f16, bits16(64, 64, 64), GemmOverride::CoopmatEmulated); }).find("shaderFloat16"),
      std::string::npos);
}

TEST(VulkanGemmChoice, OverrideValues) {
  EXPECT_EQ(parse_gemm_override(nullptr), GemmOverride::None);
  EXPECT_EQ(parse_gemm_override(""), GemmOverride::None);
  EXPECT_EQ(parse_gemm_override("tiled"), GemmOverride::Tiled);
  EXPECT_EQ(parse_gemm_override("simple"), GemmOverride::Simple);
  EXPECT_EQ(parse_gemm_override("coopmat"), GemmOverride::Coopmat);
  EXPECT_EQ(parse_gemm_override("coopmat-64"), GemmOverride::Coopmat64);
  EXPECT_EQ(parse_gemm_override("coopmat-emulated"), GemmOverride::CoopmatEmulated);
  const std::string why = failure([] { parse_gemm_override("fast"); });
  EXPECT_EQ(why, "vulkan: KILN_VULKAN_GEMM must be tiled, simple, coopmat, coopmat-64 or coopmat-emulated, not 'fast'");
}

}  // namespace
}  // namespace kiln::vk
