// Test plugin "hostsplit": the hostblas trial's split (MATMUL and ADD on
// the plugin, every other op on kiln's cpu fallback, f32 only) with the
// cpu backend's own kernels behind it, so that a bench against
// `--backend cpu` measures what the split costs and nothing else
// (bench/host_memory_plugin.sh, issue 37).
//
// It is the real cpu plugin (real_cpu_plugin.h: the fallback and this
// plugin run one copy of its code) with another name and narrower support
// answers. Its buffers are the cpu plugin's host
// memory, offered through buffer_host_address (ABI 1.5), so the executor
// shares them with the fallback instead of copying.
#include <string>

#include "kiln/ir.h"
#include "kiln/ops.h"
#include "kiln/plugin.h"
#include "real_cpu_plugin.h"

namespace {

const kiln_plugin_api* real_api() { return kiln_test::real_cpu_api(); }

bool runs_op(int32_t op) { return op == KILN_OP_MATMUL || op == KILN_OP_ADD; }

// Another code generator's name than the cpu plugin's: the two never share
// compile-cache entries.
const char* compiler_version() {
  static const std::string version = std::string("hostsplit/") + real_api()->compiler_version();
  return version.c_str();
}

kiln_error* op_supported(kiln_op_supported_args* args) {
  args->supported = runs_op(args->op) ? 1 : 0;
  return nullptr;
}

kiln_error* op_supported_node(kiln_node_supported_args* args) {
  args->supported = runs_op(args->op) ? 1 : 0;
  for (int32_t i = 0; i < args->num_inputs + args->num_outputs; ++i) {
    const kiln_tensor_desc* t = i < args->num_inputs ? KILN_TENSOR_DESC_AT(args->inputs, i)
                                                     : KILN_TENSOR_DESC_AT(args->outputs, i - args->num_inputs);
    if (t->dtype != KILN_F32) args->supported = 0;
  }
  return nullptr;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const kiln_plugin_api* kiln_plugin_get_api(void) {
  static kiln_plugin_api table = [] {
    kiln_plugin_api t = kiln_test::real_cpu_table("hostsplit");
    if (t.struct_size == 0) return t;
    t.compiler_version = compiler_version;
    t.op_supported = op_supported;
    t.op_supported_node = op_supported_node;
    return t;
  }();
  return &table;
}
