// The interpreter base of the plugin kit: everything but the kernels of a
// backend that runs the decoded IR at execute time (a BLAS library, a
// reference implementation, a simulator), so that such a plugin is its op
// list and one function that runs a node.
//
// It defines the plugin's handle types (so include it instead of defining
// kiln_device, kiln_buffer and kiln_loaded_executable) and
// kiln::plugin_kit::Interpreter<P>, which supplies the kit's device part:
//   - one host device; buffers are 64-byte aligned host memory, offered to
//     kiln as host memory (ABI 1.5 buffer_host_address), so the values a
//     graph split passes to kiln's cpu fallback are shared, not copied;
//   - compile: decode the IR, check it against kiln's op rules
//     (kiln/op_rules.hpp) and the plugin's support answers, keep it as the
//     executable (in the kit's container);
//   - load: decode it again; execute: P::run_node for each node in order.
// P, derived from Interpreter<P>, states:
//   static constexpr const char* kName;             // the backend name
//   static constexpr const char* kCompilerVersion;  // bump when run_node changes
//   static bool op_supported(int32_t op);
//   static void run_node(const NodeMemory& m, const kiln::ir::DecodedNode& n);
// and optionally
//   static std::string refusal(int32_t op, const std::vector<NodeTensor>& inputs,
//                              const std::vector<NodeTensor>& outputs);
// (why a node of a supported op does not run here, by dtypes and shapes; ""
// when it does: the kit's op_supported_node answer, enforced at compile),
// and any function of PluginApi's list to replace the base's
// (device_properties, probe, ...). Then KILN_PLUGIN_KIT_EXPORT(P).
//
// Nothing reaches run_node that check_graph has not matched: the arity,
// dtypes, shapes and attributes of every node are those kiln/ir.h states.
#ifndef KILN_PLUGIN_INTERPRETER_HPP
#define KILN_PLUGIN_INTERPRETER_HPP

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kiln/ir_decode.hpp"
#include "kiln/op_rules.hpp"
#include "kiln/plugin_kit.hpp"

struct kiln_device {
  int threads;  // the host's --num-threads hint, 0: the plugin's choice
};
struct kiln_buffer {
  void* data;
  uint64_t size;
};
struct kiln_loaded_executable {
  const kiln_device* device;  // the device it was loaded on
  kiln::ir::DecodedGraph graph;
  std::vector<uint64_t> slot_bytes;  // how much each bound buffer must hold
};

#pragma GCC visibility push(hidden)

namespace kiln::plugin_kit {

// The memory of one execute: where each value is, in the buffers bound to
// the graph's slots.
class NodeMemory {
 public:
  NodeMemory(const ir::DecodedGraph& g, kiln_buffer* const* slots) : graph(g), slots_(slots) {}
  const ir::DecodedGraph& graph;

  void* at(uint32_t value) const {
    const ir::DecodedValue& v = graph.values[value];
    return static_cast<unsigned char*>(slots_[v.slot]->data) + v.offset;
  }
  float* f32(uint32_t value) const { return static_cast<float*>(at(value)); }
  int32_t* i32(uint32_t value) const { return static_cast<int32_t*>(at(value)); }
  const std::vector<int64_t>& dims(uint32_t value) const { return graph.values[value].dims; }
  int64_t numel(uint32_t value) const { return graph.values[value].numel(); }

 private:
  kiln_buffer* const* slots_;
};

template <class P>
struct Interpreter {
  // One section, the IR; the magic names the base, the version the plugin.
  static ContainerFormat format() {
    return {{'K', 'I', 'N', 'T', 'E', 'R', 'P', '1'}, 1, P::kName, P::kCompilerVersion};
  }

  static void check_device_index(int32_t index) {
    if (index != 0) fail(KILN_ERR_INVALID_ARGUMENT, std::string("the ") + P::kName + " backend has one device, 0");
  }

  static int32_t device_count() { return 1; }
  static DeviceProperties device_properties(int32_t index) {
    check_device_index(index);
    DeviceProperties d;
    d.name = std::string(P::kName) + " (host memory)";
    d.vendor = P::kName;
    d.driver_version = P::kCompilerVersion;
    d.kind = KILN_DEVICE_CPU;
    d.memory_bytes = uint64_t{1} << 34;
    d.compute_units = 1;
    d.fingerprint = fingerprint_hex(std::string(P::kName) + "/" + P::kCompilerVersion);
    return d;
  }
  static kiln_device* device_open(int32_t index, int32_t threads) {
    check_device_index(index);
    return new kiln_device{threads};
  }

  static kiln_buffer* buffer_alloc(kiln_device*, uint64_t size) {
    const uint64_t rounded = (std::max<uint64_t>(size, 1) + KILN_IR_ALIGN - 1) / KILN_IR_ALIGN * KILN_IR_ALIGN;
    void* data = rounded < size ? nullptr : std::aligned_alloc(KILN_IR_ALIGN, rounded);
    if (data == nullptr) fail(KILN_ERR_OUT_OF_MEMORY, "cannot allocate a buffer of " + std::to_string(size) + " bytes");
    return new kiln_buffer{data, size};
  }
  static void buffer_free(kiln_device*, kiln_buffer* b) {
    std::free(b->data);
    delete b;
  }
  static uint64_t buffer_size(const kiln_buffer* b) { return b->size; }
  static unsigned char* bytes(kiln_buffer* b, uint64_t offset) { return static_cast<unsigned char*>(b->data) + offset; }
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
  // ABI 1.5: the buffers are host memory, and execute blocks, so kiln's cpu
  // fallback may work in them directly.
  static void* buffer_host_address(kiln_buffer* b) { return b->data; }

  template <class Q, class = void>
  struct HasRefusal : std::false_type {};
  template <class Q>
  struct HasRefusal<Q, std::void_t<decltype(Q::refusal(int32_t{}, std::declval<const std::vector<NodeTensor>&>(),
                                                       std::declval<const std::vector<NodeTensor>&>()))>>
      : std::true_type {};

  // Unsupported ops and refused nodes are KILN_ERR_UNSUPPORTED (kiln runs
  // that piece on its cpu backend); malformed IR is an error, never a bad
  // memory access in run_node.
  static void decode_checked(const uint8_t* bytes, size_t size, ir::DecodedGraph* g) {
    const std::string err = ir::decode(bytes, size, g);
    if (!err.empty()) fail(err.rfind("IR node has unknown op", 0) == 0 ? KILN_ERR_UNSUPPORTED : KILN_ERR_CORRUPT, err);
    for (size_t i = 0; i < g->nodes.size(); ++i)
      if (!P::op_supported(g->nodes[i].op))
        fail(KILN_ERR_UNSUPPORTED, "node " + std::to_string(i) + ": op " + kiln_op_name(g->nodes[i].op) +
                                       " is not supported by the " + P::kName + " backend");
    const std::string invalid = ir::check_graph(*g);
    if (!invalid.empty()) fail(KILN_ERR_INVALID_ARGUMENT, invalid);
    if constexpr (HasRefusal<P>::value) {
      auto tensors = [&](const std::vector<uint32_t>& values) {
        std::vector<NodeTensor> out;
        for (uint32_t v : values) out.push_back({g->values[v].dtype, g->values[v].dims});
        return out;
      };
      for (size_t i = 0; i < g->nodes.size(); ++i) {
        const ir::DecodedNode& n = g->nodes[i];
        const std::string why = P::refusal(n.op, tensors(n.inputs), tensors(n.outputs));
        if (!why.empty()) fail(KILN_ERR_UNSUPPORTED, "node " + std::to_string(i) + ": " + why);
      }
    }
  }

  // Pure: no device, no global state.
  static std::vector<uint8_t> compile(const kiln_compile_args& args) {
    check_device_index(args.device_index);
    ir::DecodedGraph g;
    decode_checked(args.ir, args.ir_size, &g);
    Container c;
    c.sections.push_back({1, args.ir, args.ir_size});
    return write_container(format(), c);
  }

  static kiln_loaded_executable* load(kiln_device* device, const uint8_t* bytes, size_t size) {
    const Container c = read_container(format(), bytes, size);
    const Section* ir = c.find(1);
    if (ir == nullptr) fail(KILN_ERR_CORRUPT, std::string(P::kName) + " executable has no IR section");
    auto loaded = std::make_unique<kiln_loaded_executable>();
    loaded->device = device;
    decode_checked(ir->data, ir->size, &loaded->graph);
    loaded->slot_bytes.assign(loaded->graph.num_slots, 0);
    for (const ir::DecodedValue& v : loaded->graph.values) {
      uint64_t& need = loaded->slot_bytes[v.slot];
      need = std::max(need, v.offset + v.bytes());
    }
    return loaded.release();
  }
  static void loaded_free(kiln_device*, kiln_loaded_executable* loaded) { delete loaded; }
  static const kiln_device* loaded_device(const kiln_loaded_executable* exe) { return exe->device; }
  static const std::vector<uint64_t>& slot_bytes(const kiln_loaded_executable* exe) { return exe->slot_bytes; }

  static void execute(kiln_device*, kiln_loaded_executable* exe, kiln_buffer* const* slots) {
    const NodeMemory memory(exe->graph, slots);
    for (const ir::DecodedNode& n : exe->graph.nodes) P::run_node(memory, n);
  }
  static void synchronize(kiln_device*) {}  // execute returns when done

  // ABI 1.2, from P::refusal when P has one.
  template <class Q = P, std::enable_if_t<HasRefusal<Q>::value, int> = 0>
  static bool op_supported_node(int32_t op, const std::vector<NodeTensor>& inputs,
                                const std::vector<NodeTensor>& outputs) {
    return Q::refusal(op, inputs, outputs).empty();
  }
};

}  // namespace kiln::plugin_kit

#pragma GCC visibility pop

#endif  // KILN_PLUGIN_INTERPRETER_HPP
