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
// and executables of its own; one that only interprets the IR in host
// memory can leave the buffers, compile, load and execute to the kit's
// interpreter base, kiln/plugin_interpreter.hpp (PLUGIN_GUIDE.md section 9).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

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

// The ops execute implements: the one list op_supported and compile read.
// Add an op here when run_node gains its loop.
const kiln_op kSupportedOps[] = {KILN_OP_FILL, KILN_OP_ADD,       KILN_OP_MUL,   KILN_OP_SCALE,
                                 KILN_OP_GELU, KILN_OP_GELU_GRAD, KILN_OP_MATMUL};

bool supported(int32_t op) {
  for (kiln_op s : kSupportedOps)
    if (s == op) return true;
  return false;
}

// The plain-loop MATMUL runs at well under a GFLOP/s: a GEMM of more
// multiply-adds than this is faster on kiln's cpu backend, copies included.
// (A GPU plugin draws the line the other way: GEMMs too small to pay for a
// launch stay on the host.)
constexpr int64_t kMaxMatmulMacs = int64_t{1} << 22;

// Why a node of a supported op does not run here, by its tensors' dtypes and
// shapes; empty when it does. The one answer op_supported_node gives the
// host and compile enforces (a host before ABI 1.2, or this file built on an
// older header, never asks per node).
std::string refusal(int32_t op, const std::vector<kiln::plugin_kit::NodeTensor>& inputs,
                    const std::vector<kiln::plugin_kit::NodeTensor>& outputs) {
  for (const std::vector<kiln::plugin_kit::NodeTensor>* side : {&inputs, &outputs})
    for (const kiln::plugin_kit::NodeTensor& t : *side)
      if (t.dtype != KILN_F32 && t.dtype != KILN_I32)
        return std::string("a ") + kiln_dtype_name(static_cast<kiln_dtype>(t.dtype)) +
               " tensor: the template backend stores only f32 and i32";
  if (op == KILN_OP_MATMUL && !inputs.empty() && !outputs.empty() && !outputs[0].dims.empty()) {
    // y [.., M, N] = a [.., M, K] @ b: a's elements times N.
    const int64_t macs = inputs[0].numel() * outputs[0].dims.back();
    if (macs > kMaxMatmulMacs)
      return "a matmul of " + std::to_string(macs) + " multiply-adds, above the template's " +
             std::to_string(kMaxMatmulMacs);
  }
  return {};
}

// GELU with the tanh approximation, as kiln/ir.h defines it.
double gelu(double x) {
  const double k = 0.7978845608028654;  // sqrt(2 / pi)
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

double gelu_derivative(double x) {
  const double k = 0.7978845608028654;
  const double t = std::tanh(k * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x);
}

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

// y [.., M, N] = op(a) @ op(b) over the leading (batch) dims, summed in
// double; check_graph has matched the shapes, and y shares no memory with a
// or b.
void matmul(const kiln::ir::DecodedGraph& g, const kiln::ir::DecodedNode& n, const float* a, const float* b, float* y) {
  const std::vector<int64_t>& yd = g.values[n.outputs[0]].dims;
  const std::vector<int64_t>& ad = g.values[n.inputs[0]].dims;
  const bool ta = n.iattrs[0] != 0, tb = n.iattrs[1] != 0;
  const int64_t rows = yd[yd.size() - 2], cols = yd.back(), inner = ta ? ad[ad.size() - 2] : ad.back();
  if (rows * cols == 0) return;
  const int64_t batches = g.values[n.outputs[0]].numel() / (rows * cols);
  for (int64_t t = 0; t < batches; ++t, a += rows * inner, b += inner * cols, y += rows * cols)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        double sum = 0.0;
        for (int64_t k = 0; k < inner; ++k)
          sum +=
              static_cast<double>(ta ? a[k * rows + i] : a[i * inner + k]) * (tb ? b[j * inner + k] : b[k * cols + j]);
        y[i * cols + j] = static_cast<float>(sum);
      }
}

// Every elementwise kernel reads element k of its inputs before writing
// element k of its output, so an output may share memory with an input
// (in-place updates; kiln updates in place only through elementwise ops).
void run_node(const kiln::ir::DecodedGraph& g, const kiln::ir::DecodedNode& n, kiln_buffer* const* slots) {
  auto address = [&](uint32_t value) {
    const kiln::ir::DecodedValue& v = g.values[value];
    return reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(slots[v.slot]->data.data()) + v.offset);
  };
  float* y = address(n.outputs[0]);
  const int64_t count = g.values[n.outputs[0]].numel();
  const float* a = n.inputs.size() > 0 ? address(n.inputs[0]) : nullptr;
  const float* b = n.inputs.size() > 1 ? address(n.inputs[1]) : nullptr;
  const int64_t b_count = n.inputs.size() > 1 ? g.values[n.inputs[1]].numel() : 0;
  switch (n.op) {
    case KILN_OP_FILL:
      for (int64_t k = 0; k < count; ++k) y[k] = n.fattrs[0];
      break;
    case KILN_OP_ADD:
      for (int64_t k = 0; k < count; ++k) y[k] = a[k] + b[k % b_count];
      break;
    case KILN_OP_MUL:
      for (int64_t k = 0; k < count; ++k) y[k] = a[k] * b[k % b_count];
      break;
    case KILN_OP_SCALE:
      for (int64_t k = 0; k < count; ++k) y[k] = a[k] * n.fattrs[0];
      break;
    case KILN_OP_GELU:
      for (int64_t k = 0; k < count; ++k) y[k] = static_cast<float>(gelu(a[k]));
      break;
    case KILN_OP_GELU_GRAD:  // inputs (x, dy)
      for (int64_t k = 0; k < count; ++k) y[k] = static_cast<float>(b[k] * gelu_derivative(a[k]));
      break;
    case KILN_OP_MATMUL: matmul(g, n, a, b, y); break;
    default: fail(KILN_ERR_UNSUPPORTED, "unsupported op reached execute");  // validate() prevents this
  }
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
