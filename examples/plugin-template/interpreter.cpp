// libkiln-backend-interpreter.so: template.cpp's backend in the other shape
// a plugin can take, for a device that runs the decoded IR in host memory at
// execute time (a BLAS library, a reference implementation, a simulator).
// The kit's interpreter base, kiln/plugin_interpreter.hpp, supplies the
// buffers (host memory, which kiln's cpu fallback shares instead of copying:
// ABI 1.5), compile, load and execute; this file states the op list, the
// per-node refusal and how one node runs. The kernels are kernels.h's.
#include "kernels.h"
#include "kiln/plugin_interpreter.hpp"

namespace {

struct InterpreterPlugin : kiln::plugin_kit::Interpreter<InterpreterPlugin> {
  static constexpr const char* kName = "interpreter";
  // Part of every compile-cache key: bump it when run_node's behaviour changes.
  static constexpr const char* kCompilerVersion = "interpreter-1";

  static bool op_supported(int32_t op) { return template_kernels::supported(op); }
  // Optional (ABI 1.2): asked per node, enforced at compile.
  static std::string refusal(int32_t op, const std::vector<kiln::plugin_kit::NodeTensor>& inputs,
                             const std::vector<kiln::plugin_kit::NodeTensor>& outputs) {
    return template_kernels::refusal(op, inputs, outputs);
  }

  static void run_node(const kiln::plugin_kit::NodeMemory& m, const kiln::ir::DecodedNode& n) {
    float* y = m.f32(n.outputs[0]);
    const float* a = n.inputs.size() > 0 ? m.f32(n.inputs[0]) : nullptr;
    const float* b = n.inputs.size() > 1 ? m.f32(n.inputs[1]) : nullptr;
    if (n.op == KILN_OP_MATMUL)
      return template_kernels::matmul(m.dims(n.outputs[0]), m.dims(n.inputs[0]), n.iattrs[0] != 0, n.iattrs[1] != 0, a,
                                      b, y);
    const int64_t b_count = n.inputs.size() > 1 ? m.numel(n.inputs[1]) : 0;
    template_kernels::elementwise(n.op, n.fattrs, a, b, b_count, y, m.numel(n.outputs[0]));
  }
};

}  // namespace

KILN_PLUGIN_KIT_EXPORT(InterpreterPlugin)
