// The AVX-512 build of every kernel: CMake compiles *_avx512.cpp with
// -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx2 -mfma. simd.h sees
// __AVX512F__ and puts the same sources in namespace kiln::cpu::avx512
// (16 lanes); the plugin calls avx512::run_node only on the avx512 and amx
// paths (isa.h). As in kernels_avx2.cpp: one translation unit for all of
// them, so helpers in the kernel files' anonymous namespaces need distinct
// names.
//
// Nothing here may allocate through std containers: their out-of-line
// template code would be shared with the other builds by the linker and
// could carry AVX-512 instructions into them.
// Including .cpp files is the point here (one AVX-512 translation unit).
// NOLINTBEGIN(bugprone-suspicious-include)
#include "kernels_alibi.cpp"
#include "kernels_attention.cpp"
#include "kernels_attention16.cpp"
#include "kernels_cast.cpp"
#include "kernels_dispatch.cpp"
#include "kernels_dropout.cpp"
#include "kernels_elementwise.cpp"
#include "kernels_elementwise16.cpp"
#include "kernels_embedding.cpp"
#include "kernels_embedding16.cpp"
#include "kernels_fp8.cpp"
#include "kernels_layout.cpp"
#include "kernels_loss.cpp"
#include "kernels_math.cpp"
#include "kernels_matmul.cpp"
#include "kernels_norm.cpp"
#include "kernels_optimizer.cpp"
#include "kernels_reduce.cpp"
#include "kernels_rmsnorm.cpp"
#include "kernels_rope.cpp"
#include "kernels_vocab_parallel.cpp"
// NOLINTEND(bugprone-suspicious-include)
