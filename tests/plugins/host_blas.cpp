// The "hostblas" test plugin: a BLAS backend as a plugin author writes one
// (issue 37's trial: GEMMs through a BLAS library, the rest left to kiln's
// cpu fallback), on the kit's interpreter base. Its buffers are host memory
// (ABI 1.5), so the values crossing to the fallback are shared, not copied;
// KILN_SHARE_HOST_MEMORY=0 makes the host copy them, for comparison.
//
// MATMUL runs through oneDNN's dnnl_sgemm (the library under kiln's cpu
// GEMMs), so its kernels are as fast as the cpu backend's; ADD is a plain
// loop. Only f32 nodes run here.
#include <oneapi/dnnl/dnnl.h>

#include "kiln/plugin_interpreter.hpp"

namespace {

using kiln::plugin_kit::fail;
using kiln::plugin_kit::NodeMemory;
using kiln::plugin_kit::NodeTensor;

// y [.., M, N] = op(a) @ op(b), a batch of row-major GEMMs.
void matmul(const NodeMemory& m, const kiln::ir::DecodedNode& n) {
  const std::vector<int64_t>& yd = m.dims(n.outputs[0]);
  const std::vector<int64_t>& ad = m.dims(n.inputs[0]);
  const bool ta = n.iattrs[0] != 0, tb = n.iattrs[1] != 0;
  const int64_t rows = yd[yd.size() - 2], cols = yd.back(), inner = ta ? ad[ad.size() - 2] : ad.back();
  if (rows * cols == 0) return;
  const int64_t batches = m.numel(n.outputs[0]) / (rows * cols);
  const float* a = m.f32(n.inputs[0]);
  const float* b = m.f32(n.inputs[1]);
  float* y = m.f32(n.outputs[0]);
  for (int64_t t = 0; t < batches; ++t, a += rows * inner, b += inner * cols, y += rows * cols) {
    const dnnl_status_t status = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', rows, cols, inner, 1.0f, a,
                                            ta ? rows : inner, b, tb ? inner : cols, 0.0f, y, cols);
    if (status != dnnl_success) fail(KILN_ERR_INTERNAL, "dnnl_sgemm failed with status " + std::to_string(status));
  }
}

struct HostBlasPlugin : kiln::plugin_kit::Interpreter<HostBlasPlugin> {
  static constexpr const char* kName = "hostblas";
  static constexpr const char* kCompilerVersion = "hostblas-1";

  static bool op_supported(int32_t op) { return op == KILN_OP_MATMUL || op == KILN_OP_ADD; }

  static std::string refusal(int32_t, const std::vector<NodeTensor>& inputs, const std::vector<NodeTensor>& outputs) {
    for (const std::vector<NodeTensor>* side : {&inputs, &outputs})
      for (const NodeTensor& t : *side)
        if (t.dtype != KILN_F32) return "hostblas runs only f32 nodes";
    return {};
  }

  static void run_node(const NodeMemory& m, const kiln::ir::DecodedNode& n) {
    if (n.op == KILN_OP_MATMUL) return matmul(m, n);
    // ADD: b broadcasts over a's leading dims (kiln/ir.h).
    const float* a = m.f32(n.inputs[0]);
    const float* b = m.f32(n.inputs[1]);
    float* y = m.f32(n.outputs[0]);
    const int64_t count = m.numel(n.outputs[0]), b_count = m.numel(n.inputs[1]);
    for (int64_t k = 0; k < count; ++k) y[k] = a[k] + b[k % b_count];
  }
};

}  // namespace

KILN_PLUGIN_KIT_EXPORT(HostBlasPlugin)
