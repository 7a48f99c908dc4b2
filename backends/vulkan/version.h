// The code generator's identity. It keys the compile cache and is checked
// when executable bytes are loaded: bump it whenever the shaders, the
// lowering, the schedule or the executable format change.
#pragma once

namespace kiln::vk {
inline constexpr const char* kCompilerVersion =
    "vulkan-18";  // 2: elementwise.comp gained GELU_ERF; 3: gemm_tiled.comp on GPUs;
                  // 4: bf16/f16 (convert16.comp), CAST;
                  // 5: elementwise.comp's OP constant is the op's code in the table, no private numbers;
                  // 6: shaders load and store bf16/f16 themselves (io.glsl, "<shader>16" builds), Pipeline::dtypes;
                  // 7: dropout.comp takes its site from the key (DROPOUT_KEYED) or a push constant;
                  // 8: softmax.comp binds document starts (DOCUMENT_SOFTMAX) and pushes a row's sample;
                  // 9: elementwise chains fused into one fused.comp dispatch (fusion.h);
                  // 10: cast_fp8.comp (CAST_FP8), fp8.glsl's integer FP8 arithmetic;
                  // 11: widening CASTs folded into the MATMULs that read them (cast_folding.h);
                  // 12: gemm.comp's register loops [[unroll]]; half.glsl narrows to f16 with roundEven
                  // 13: gemm_coopmat.comp (VK_NV_cooperative_matrix) for f16 GEMMs, gemm_choice.h;
                  //     the driver string names the device's cooperative-matrix extensions;
                  // 14: gemm_coopmat.comp takes bf16 operands, scaled per slice onto f16 fragments,
                  //     splits K as gemm_tiled does, and has its fragment shape and subgroup size as constants;
                  //     attention.comp loops over EMAX (EACH_U)
                  // 15: gemm_coopmat.comp in 128 x 128 tiles too (gemm_coopmat_large16), 16-byte loads, operands
                  //     staged in their own layout, write-out synchronized per subgroup
                  // 16: EMBEDDING_GRAD links each position to the next with its id first (embedding_links.comp)
                  // 17: colsum.comp sums few columns of many rows in row parts (gl_WorkGroupID.z), then the parts
                  // 18: attention.comp holds its tiles as vec4s (16-byte reads where E and D are multiples of 4)
}  // namespace kiln::vk
