// libkiln-backend-template.so: the smallest useful kiln backend plugin, to
// copy when writing your own. See docs/PLUGIN_GUIDE.md in kiln.
//
// Buffers are plain host memory, compile validates the IR and keeps it as
// the "executable", and execute interprets the nodes with one plain loop per
// op. It implements six elementwise ops (FILL, ADD, MUL, SCALE, GELU,
// GELU_GRAD) and MATMUL; op_supported says no to every other op, so kiln
// runs those on its cpu backend and copies tensors across, and a model
// still trains. Support can also depend on a node's shapes and dtypes:
// op_supported_node (ABI 1.2) keeps the GEMMs too big for a plain loop, and
// any 16-bit node, off this backend (kiln runs just those nodes on cpu).
//
// The C boundary of kiln/plugin.h (argument checks, errors that never let
// an exception cross it, the function table, the executable container) is
// the plugin kit's, kiln/plugin_kit.hpp: this file is the device part only,
// the TemplatePlugin class at the end. Nothing trusts the IR bytes until
// they are decoded and validated. This is the shape of a device with memory
// and executables of its own (a GPU, an accelerator: here the "device" is
// host memory it owns and the "executable" the checked IR). A device that
// only interprets the IR in host memory leaves the buffers, compile, load
// and execute to the kit's interpreter base, kiln/plugin_interpreter.hpp:
// interpreter.cpp beside this file is the same backend in that shape.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels.h"
#include "kiln/ir_decode.hpp"
#include "kiln/op_rules.hpp"
#include "kiln/plugin.h"
#include "kiln/plugin_kit.hpp"

// The handle types are opaque to kiln; each plugin defines them.
struct kiln_device {
  int index;
};
struct kiln_buffer {
  std::vector<float> data;  // float storage keeps every tensor 4-byte aligned
  uint64_t size;            // bytes asked for
};
struct kiln_loaded_executable {
  const kiln_device* device;  // the device it was loaded on
  kiln::ir::DecodedGraph graph;
  std::vector<uint64_t> slot_bytes;  // how much each bound buffer must hold
};

namespace {

using kiln::plugin_kit::fail;

// Part of every compile-cache key: bump it when execute's behaviour changes.
const char kCompilerVersion[] = "template-2";  // 2: the kit's executable container

// The executable: the kit's container (magic, format, compiler version)
// around one section, the IR, decoded again at load.
constexpr kiln::plugin_kit::ContainerFormat kFormat{
    {'K', 'T', 'M', 'P', 'L', '0', '0', '1'}, 2, "template", kCompilerVersion};
enum : uint32_t { kSectionIR = 1 };

void check_device_index(int32_t index) {
  if (index != 0) fail(KILN_ERR_INVALID_ARGUMENT, "the template backend has one device, 0");
}

// ---------------------------------------------------------------- the ops

// The op list, the per-node refusal and the loops are kernels.h's, shared
// with interpreter.cpp.
using template_kernels::refusal;
using template_kernels::supported;

// Refuses an op this backend lacks (a capability gap: kiln runs it on its
// cpu backend instead) and any value stored in a dtype its kernels do not
// read (they read f32 and i32; bf16 and f16 are 2-byte storage, see
// kiln/half.h), then checks the graph against the op rules kiln itself uses
// (kiln/op_rules.hpp: arity, dtypes, shapes, attributes), so malformed IR
// is an error, never a bad memory access in execute; last, any node
// op_supported_node would have refused.
void validate(const kiln::ir::DecodedGraph& g) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!supported(g.nodes[i].op))
      fail(KILN_ERR_UNSUPPORTED, "node " + std::to_string(i) + ": op " + kiln_op_name(g.nodes[i].op) +
                                     " is not supported by the template backend");
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].dtype != KILN_F32 && g.values[v].dtype != KILN_I32)
      fail(KILN_ERR_UNSUPPORTED, "value " + std::to_string(v) + " is " + kiln_dtype_name(g.values[v].dtype) +
                                     ": the template backend stores only f32 and i32");
  const std::string err = kiln::ir::check_graph(g);
  if (!err.empty()) fail(KILN_ERR_INVALID_ARGUMENT, err);
  auto tensors = [&](const std::vector<uint32_t>& values) {
    std::vector<kiln::plugin_kit::NodeTensor> out;
    for (uint32_t v : values) out.push_back({g.values[v].dtype, g.values[v].dims});
    return out;
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const kiln::ir::DecodedNode& n = g.nodes[i];
    const std::string why = refusal(n.op, tensors(n.inputs), tensors(n.outputs));
    if (!why.empty()) fail(KILN_ERR_UNSUPPORTED, "node " + std::to_string(i) + ": " + why);
  }
}

// One node, on the memory of the buffers bound to the graph's slots.
void run_node(const kiln::ir::DecodedGraph& g, const kiln::ir::DecodedNode& n, kiln_buffer* const* slots) {
  auto address = [&](uint32_t value) {
    const kiln::ir::DecodedValue& v = g.values[value];
    return reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(slots[v.slot]->data.data()) + v.offset);
  };
  float* y = address(n.outputs[0]);
  const float* a = n.inputs.size() > 0 ? address(n.inputs[0]) : nullptr;
  const float* b = n.inputs.size() > 1 ? address(n.inputs[1]) : nullptr;
  if (n.op == KILN_OP_MATMUL)
    return template_kernels::matmul(g.values[n.outputs[0]].dims, g.values[n.inputs[0]].dims, n.iattrs[0] != 0,
                                    n.iattrs[1] != 0, a, b, y);
  const int64_t b_count = n.inputs.size() > 1 ? g.values[n.inputs[1]].numel() : 0;
  template_kernels::elementwise(n.op, n.fattrs, a, b, b_count, y, g.values[n.outputs[0]].numel());
}

// Decodes and validates; the error code says whether the bytes are broken
// or merely ask for more than this backend does.
void decode_ir(const uint8_t* bytes, size_t size, kiln::ir::DecodedGraph* g) {
  std::string err = kiln::ir::decode(bytes, size, g);
  if (!err.empty()) fail(err.rfind("IR node has unknown op", 0) == 0 ? KILN_ERR_UNSUPPORTED : KILN_ERR_CORRUPT, err);
  validate(*g);
}

// ---------------------------------------------------------------- the device part

// What the kit's C entry points call (kiln/plugin_kit.hpp lists them). The
// kit has already checked every args struct, NULL handle, transfer range and
// execute slot.
struct TemplatePlugin {
  static constexpr const char* kName = "template";
  static constexpr const char* kCompilerVersion = ::kCompilerVersion;

  static int32_t device_count() { return 1; }

  static kiln::plugin_kit::DeviceProperties device_properties(int32_t index) {
    check_device_index(index);
    return {"template (host memory)", "kiln example", kCompilerVersion, KILN_DEVICE_CPU, uint64_t{1} << 30, 1,
            "template-1-host"};
  }

  static kiln_device* device_open(int32_t index, int32_t) {
    check_device_index(index);
    return new kiln_device{index};
  }

  static kiln_buffer* buffer_alloc(kiln_device*, uint64_t size) {
    auto b = std::make_unique<kiln_buffer>();
    b->size = size;
    b->data.resize((size + 3) / 4);
    return b.release();
  }
  static void buffer_free(kiln_device*, kiln_buffer* buffer) { delete buffer; }
  static uint64_t buffer_size(const kiln_buffer* b) { return b->size; }
  static unsigned char* bytes(kiln_buffer* b, uint64_t offset) {
    return reinterpret_cast<unsigned char*>(b->data.data()) + offset;
  }
  static void buffer_write(kiln_device*, kiln_buffer* b, uint64_t offset, const void* host, uint64_t size) {
    std::memcpy(bytes(b, offset), host, size);
  }
  static void buffer_read(kiln_device*, kiln_buffer* b, uint64_t offset, void* host, uint64_t size) {
    std::memcpy(host, bytes(b, offset), size);
  }
  static void buffer_copy(kiln_device*, kiln_buffer* src, uint64_t src_offset, kiln_buffer* dst, uint64_t dst_offset,
                          uint64_t size) {
    std::memmove(bytes(dst, dst_offset), bytes(src, src_offset), size);  // the ranges may overlap
  }

  // Pure: no device, no global state.
  static std::vector<uint8_t> compile(const kiln_compile_args& args) {
    check_device_index(args.device_index);
    kiln::ir::DecodedGraph g;
    decode_ir(args.ir, args.ir_size, &g);
    kiln::plugin_kit::Container c;
    c.sections.push_back({kSectionIR, args.ir, args.ir_size});
    return kiln::plugin_kit::write_container(kFormat, c);
  }

  static kiln_loaded_executable* load(kiln_device* device, const uint8_t* bytes, size_t size) {
    const kiln::plugin_kit::Container c = kiln::plugin_kit::read_container(kFormat, bytes, size);
    const kiln::plugin_kit::Section* ir = c.find(kSectionIR);
    if (ir == nullptr) fail(KILN_ERR_CORRUPT, "template executable has no IR section");
    auto loaded = std::make_unique<kiln_loaded_executable>();
    loaded->device = device;
    decode_ir(ir->data, ir->size, &loaded->graph);
    loaded->slot_bytes.assign(loaded->graph.num_slots, 0);
    for (const kiln::ir::DecodedValue& v : loaded->graph.values) {
      uint64_t& need = loaded->slot_bytes[v.slot];
      if (v.offset + v.bytes() > need) need = v.offset + v.bytes();
    }
    return loaded.release();
  }
  static void loaded_free(kiln_device*, kiln_loaded_executable* loaded) { delete loaded; }
  static const kiln_device* loaded_device(const kiln_loaded_executable* exe) { return exe->device; }
  static const std::vector<uint64_t>& slot_bytes(const kiln_loaded_executable* exe) { return exe->slot_bytes; }

  static void execute(kiln_device*, kiln_loaded_executable* exe, kiln_buffer* const* slots) {
    for (const kiln::ir::DecodedNode& n : exe->graph.nodes) run_node(exe->graph, n, slots);
  }

  static void synchronize(kiln_device*) {}  // execute returns when done
  static bool op_supported(int32_t op) { return supported(op); }
  // Optional (ABI 1.2): asked per node, and only for ops op_supported allows.
  static bool op_supported_node(int32_t op, const std::vector<kiln::plugin_kit::NodeTensor>& inputs,
                                const std::vector<kiln::plugin_kit::NodeTensor>& outputs) {
    return refusal(op, inputs, outputs).empty();
  }

  // Optional: cheap, side-effect free. A GPU plugin would check for a driver
  // here and say what to install in `reason`.
  static bool probe(std::string*) { return true; }
};

}  // namespace

KILN_PLUGIN_KIT_EXPORT(TemplatePlugin)
