// Which GEMM shader a MATMUL runs on Vulkan, per product shape: gemm.comp
// (simple), gemm_tiled.comp (SIMT, GPUs) or gemm_coopmat.comp (tensor
// cores through VK_NV_cooperative_matrix, f16 fragments: f16 operands as
// they are, bf16 ones scaled per slice by a power of two, exactly; see the
// shader), in 128 x 128 tiles where C has at least 128 rows and columns
// and 64 x 64 below that. A pure
// function of what the device reported and the product, so it is tested
// without a device (tests/unit/test_vulkan_gemm_choice.cpp). The choice
// changes the executable, so KILN_VULKAN_GEMM is part of the device
// fingerprint (device.h, fingerprint()), like KILN_OPENCL_GEMM on OpenCL.
//
// KILN_VULKAN_GEMM overrides the choice:
//   tiled             gemm_tiled wherever C is at least 64 x 64
//   simple            gemm everywhere
//   coopmat           gemm_coopmat for every GEMM of 16-bit (bf16 or f16)
//                     A and B, tile by C's shape; the compile fails where
//                     the device lacks it
//   coopmat-64        the same in 64 x 64 tiles only (to time the tiles
//                     against each other on a GPU)
//   coopmat-emulated  its _emulated16 builds likewise, on any device with
//                     16-bit storage and arithmetic: the same tiling with the
//                     fragment operations in plain arithmetic, a test path
//                     for devices without tensor cores
// GEMMs with an f32 operand are never converted to f16 (lossy): with
// coopmat, coopmat-64 or coopmat-emulated they keep the default choice.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#pragma GCC visibility push(hidden)

namespace kiln::vk {

enum class GemmKernel : uint8_t { Simple, Tiled, Coopmat, CoopmatLarge, CoopmatEmulated, CoopmatLargeEmulated };
enum class GemmOverride : uint8_t { None, Simple, Tiled, Coopmat, Coopmat64, CoopmatEmulated };

// An M x N x K fragment shape (C is M x N, A M x K, B K x N).
struct FragmentShape {
  uint32_t m = 0, n = 0, k = 0;
  bool operator==(const FragmentShape&) const = default;
};

// What the choice needs to know of a device (device.h's DeviceInfo).
struct GemmDevice {
  std::string name;
  bool cpu = false;                  // a CPU device (lavapipe): gemm_tiled only spills there
  uint32_t subgroup_size = 0;        // 0: no basic subgroup operations in compute shaders
  bool subgroup_arithmetic = false;  // subgroupMax and the like (a bf16 slice's largest magnitude)
  uint32_t max_invocations = 128;
  uint32_t max_shared_bytes = 16384;
  bool storage16 = false;          // storageBuffer16BitAccess
  bool f16_arithmetic = false;     // shaderFloat16: f16 shared memory and fragments
  bool coopmat_extension = false;  // VK_NV_cooperative_matrix listed
  bool coopmat_feature = false;    // ... and its cooperativeMatrix feature set
  bool memory_model = false;       // vulkanMemoryModel, which the shader's SPIR-V declares
  // Subgroup-scope shapes with A = B = f16 and C = D = f32.
  std::vector<FragmentShape> f16_shapes;
};

// One MATMUL: C = op(A) @ op(B), C M x N, inner dimension K.
struct GemmProduct {
  uint64_t m = 0, n = 0, k = 0;
  bool a16 = false, b16 = false;  // bf16 or f16, as the shader loads them (after cast folding)
};

// gemm_coopmat.comp's builds: a tile x tile block of C per workgroup of
// `subgroups` subgroups of 32 invocations, on 16 x 16 x 16 fragments
// (constants in the shader, so that its loops unroll; see there).
struct CoopmatLayout {
  uint32_t tile = 0, subgroups = 0;
};
inline constexpr CoopmatLayout kCoopmatSmall{64, 4};   // gemm_coopmat16
inline constexpr CoopmatLayout kCoopmatLarge{128, 8};  // gemm_coopmat_large16
inline constexpr uint32_t kCoopmatSubgroupSize = 32;
inline constexpr FragmentShape kCoopmatFragment{16, 16, 16};

bool is_coopmat(GemmKernel k);
CoopmatLayout coopmat_layout(GemmKernel k);  // of a coopmat kernel

// KILN_VULKAN_GEMM's text parsed. Throws KILN_ERR_INVALID_ARGUMENT naming
// the accepted values for any other non-empty text.
GemmOverride parse_gemm_override(const char* text);
GemmOverride gemm_override();  // the environment's, read now

// Whether gemm_coopmat runs on this device (its 64 x 64 build), or why
// not: the missing extension, feature, subgroup size, fragment shape or
// limit.
bool coopmat_usable(const GemmDevice& d, std::string* why);

// The kernel for one product. Throws KILN_ERR_INVALID_ARGUMENT for
// KILN_VULKAN_GEMM=coopmat or coopmat-64 on a device where coopmat_usable
// is false.
GemmKernel choose_gemm(const GemmDevice& d, const GemmProduct& g, GemmOverride o);

const char* gemm_kernel_name(GemmKernel k);

}  // namespace kiln::vk

#pragma GCC visibility pop
