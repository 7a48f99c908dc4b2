// Lowering of a checked graph to one OpenCL C program and the schedule that
// runs it. Every kernel is specialised to its shapes (sizes are literals in
// the source); kernels with identical text are emitted once, so a model's
// repeated layers share code and the program stays small to build.
#pragma once

#include <string>
#include <vector>

#include "device.h"
#include "gemm_choice.h"
#include "lower.h"
#include "schedule.h"

#pragma GCC visibility push(hidden)

namespace kiln::ocl {

// What code generation adapts to. Derived from the device the compile is for.
struct Target {
  // CPU devices (PoCL) run one work item per row for row-wise ops: a work
  // group per row costs a scheduling round each and gains no parallelism.
  bool row_per_item = false;
  size_t max_work_group = 256;
  size_t elementwise_group = 64;  // work-group size of elementwise kernels
  // Batched GEMMs with B transposed run as a transpose kernel plus a plain
  // batched GEMM: CLBlast's direct kernel with B transposed is 3-4x slower
  // on PoCL (attention's q k^T: 6.5 against 23 GFLOP/s).
  bool pretranspose_batched_b = false;
  // MATMUL: the KILN_OPENCL_GEMM policy (gemm_choice.h), whether `auto`
  // may pick kiln's kernel (a CPU device, where it was measured), and the
  // vector width kiln's kernel computes in (the device's preferred float
  // width: 16 on AVX-512, 8 on AVX2).
  GemmPolicy gemm = GemmPolicy::Auto;
  bool cpu_device = false;
  uint32_t float_vector = 8;
  // CL_DEVICE_LOCAL_MEM_SIZE: what a work group's __local arrays may take
  // (attention sizes its tiles to it).
  uint64_t local_mem_bytes = 32768;
};

Target target_for(const DeviceInfo& device);

struct Program {
  std::string source;  // empty when the graph needs no kernels
  Schedule schedule;
};

Program generate(const ir::DecodedGraph& g, const std::vector<NodeInfo>& info, const Target& target);

// The ops the generators emit (each codegen_*.cpp lists its own): the
// plugin's support list.
const std::vector<kiln_op>& supported_ops();

}  // namespace kiln::ocl

#pragma GCC visibility pop
