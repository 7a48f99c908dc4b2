// libkiln-backend-template.so: the smallest useful kiln backend plugin, to
// copy when writing your own. See docs/PLUGIN_GUIDE.md in kiln.
//
// Buffers are plain host memory, compile validates the IR and keeps it as
// the "executable", and execute interprets the nodes with one plain loop per
// op. It implements six elementwise ops (FILL, ADD, MUL, SCALE, GELU,
// GELU_GRAD); op_supported says no to every other op, so kiln runs those on
// its cpu backend and copies tensors across, and a model still trains.
//
// Rules every plugin follows (kiln/plugin.h): no C++ exception crosses the
// C boundary (each entry point catches and returns a kiln_error), every args
// struct is checked for struct_size, and nothing trusts the IR bytes until
// they are decoded and validated.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "kiln/ir_decode.hpp"
#include "kiln/op_rules.hpp"
#include "kiln/plugin.h"

// The handle types are opaque to kiln; each plugin defines them.
struct kiln_error {
  int32_t code;
  std::string message;
};
struct kiln_device {
  int index;
};
struct kiln_buffer {
  std::vector<float> data;  // float storage keeps every tensor 4-byte aligned
  uint64_t size;            // bytes asked for
};
struct kiln_loaded_executable {
  kiln::ir::DecodedGraph graph;
  std::vector<uint64_t> slot_bytes;  // how much each bound buffer must hold
};

namespace {

// Part of every compile-cache key: bump it when execute's behaviour changes.
const char kCompilerVersion[] = "template-1";
const char kExecutableMagic[8] = {'K', 'T', 'M', 'P', 'L', '0', '0', '1'};

// ---------------------------------------------------------------- errors

struct Failure {
  int32_t code;
  std::string message;
};

[[noreturn]] void fail(int32_t code, std::string message) { throw Failure{code, std::move(message)}; }

// Handed out when even an error cannot be allocated; never freed.
kiln_error* out_of_memory() {
  static kiln_error oom{KILN_ERR_OUT_OF_MEMORY, "out of host memory"};
  return &oom;
}

kiln_error* make_error(int32_t code, std::string message) {
  try {
    return new kiln_error{code, std::move(message)};
  } catch (...) {
    return out_of_memory();
  }
}

// Runs f, turning any exception into a kiln_error (NULL on success).
template <class F>
kiln_error* guarded(F&& f) {
  try {
    f();
    return nullptr;
  } catch (const Failure& e) {
    return make_error(e.code, e.message);
  } catch (const std::bad_alloc&) {
    return make_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return make_error(KILN_ERR_INTERNAL, e.what());
  } catch (...) {
    return make_error(KILN_ERR_INTERNAL, "unknown error in the template backend");
  }
}

// An args struct from an older host may be shorter than ours. `needed` is
// the size of the fields this call cannot do without (the whole struct,
// unless fields appended in a later minor version are optional: those are
// then used only where KILN_STRUCT_HAS says the host's struct holds them).
template <class Args>
void check_args(const Args* args, const char* what, size_t needed = sizeof(Args)) {
  if (args == nullptr || args->struct_size < needed)
    fail(KILN_ERR_INVALID_ARGUMENT, std::string(what) + ": args missing or too short");
}

// ---------------------------------------------------------------- the ops

// The ops execute implements: the one list op_supported and compile read.
// Add an op here when run_node gains its loop.
const kiln_op kSupportedOps[] = {KILN_OP_FILL,  KILN_OP_ADD,  KILN_OP_MUL,
                                 KILN_OP_SCALE, KILN_OP_GELU, KILN_OP_GELU_GRAD};

bool supported(int32_t op) {
  for (kiln_op s : kSupportedOps)
    if (s == op) return true;
  return false;
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
// is an error, never a bad memory access in execute.
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
}

// Every kernel reads element k of its inputs before writing element k of its
// output, so an output may share memory with an input (in-place updates).
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
    default: fail(KILN_ERR_UNSUPPORTED, "unsupported op reached execute");  // validate() prevents this
  }
}

// ---------------------------------------------------------------- the ABI

void error_destroy(kiln_error* e) {
  if (e != out_of_memory()) delete e;
}
const char* error_message(const kiln_error* e) { return e ? e->message.c_str() : ""; }
int32_t error_code(const kiln_error* e) { return e ? e->code : KILN_OK; }
const char* compiler_version() { return kCompilerVersion; }

kiln_error* device_count(kiln_device_count_args* args) {
  return guarded([&] {
    // Only `count` is needed: a 1.0 host's struct ends right after it (the
    // ABI 1.1 no_devices_reason is only for a plugin that finds no device).
    check_args(args, "device_count", offsetof(kiln_device_count_args, count) + sizeof(args->count));
    args->count = 1;
  });
}

kiln_error* device_properties(kiln_device_properties_args* args) {
  return guarded([&] {
    check_args(args, "device_properties");
    if (args->device_index != 0) fail(KILN_ERR_INVALID_ARGUMENT, "the template backend has one device, 0");
    kiln_device_properties* out = args->properties;
    if (out == nullptr || out->struct_size < sizeof(size_t)) fail(KILN_ERR_INVALID_ARGUMENT, "no properties struct");
    // Fill our own copy, then give the host as much as its struct holds: an
    // older host knows fewer fields.
    kiln_device_properties p{};
    std::strcpy(p.name, "template (host memory)");
    std::strcpy(p.vendor, "kiln example");
    std::strcpy(p.driver_version, kCompilerVersion);
    p.kind = KILN_DEVICE_CPU;
    p.memory_bytes = uint64_t{1} << 30;
    p.compute_units = 1;
    std::strcpy(p.fingerprint, "template-1-host");
    const size_t size = out->struct_size < sizeof(p) ? out->struct_size : sizeof(p);
    p.struct_size = out->struct_size;
    std::memcpy(out, &p, size);
  });
}

kiln_error* device_open(kiln_device_open_args* args) {
  return guarded([&] {
    check_args(args, "device_open");
    if (args->device_index != 0) fail(KILN_ERR_INVALID_ARGUMENT, "the template backend has one device, 0");
    args->device = new kiln_device{args->device_index};
  });
}

void device_close(kiln_device* device) { delete device; }

kiln_error* buffer_alloc(kiln_buffer_alloc_args* args) {
  return guarded([&] {
    check_args(args, "buffer_alloc");
    auto* b = new kiln_buffer;
    b->size = args->size_bytes;
    try {
      b->data.resize((args->size_bytes + 3) / 4);
    } catch (...) {
      delete b;
      throw;
    }
    args->buffer = b;
  });
}

void buffer_free(kiln_device*, kiln_buffer* buffer) { delete buffer; }

unsigned char* range(kiln_buffer* b, uint64_t offset, uint64_t size) {
  if (b == nullptr || offset > b->size || size > b->size - offset)
    fail(KILN_ERR_INVALID_ARGUMENT, "transfer outside the buffer");
  return reinterpret_cast<unsigned char*>(b->data.data()) + offset;
}

kiln_error* buffer_write(kiln_buffer_transfer_args* args) {
  return guarded([&] {
    check_args(args, "buffer_write");
    unsigned char* dst = range(args->buffer, args->offset, args->size_bytes);
    if (args->size_bytes > 0) std::memcpy(dst, args->host, args->size_bytes);
  });
}

kiln_error* buffer_read(kiln_buffer_transfer_args* args) {
  return guarded([&] {
    check_args(args, "buffer_read");
    unsigned char* src = range(args->buffer, args->offset, args->size_bytes);
    if (args->size_bytes > 0) std::memcpy(args->host, src, args->size_bytes);
  });
}

kiln_error* buffer_copy(kiln_buffer_copy_args* args) {
  return guarded([&] {
    check_args(args, "buffer_copy");
    unsigned char* src = range(args->src, args->src_offset, args->size_bytes);
    unsigned char* dst = range(args->dst, args->dst_offset, args->size_bytes);
    if (args->size_bytes > 0) std::memmove(dst, src, args->size_bytes);
  });
}

// Decodes and validates; the error code says whether the bytes are broken
// or merely ask for more than this backend does.
void decode_ir(const uint8_t* bytes, size_t size, kiln::ir::DecodedGraph* g) {
  std::string err = kiln::ir::decode(bytes, size, g);
  if (!err.empty()) fail(err.rfind("IR node has unknown op", 0) == 0 ? KILN_ERR_UNSUPPORTED : KILN_ERR_CORRUPT, err);
  validate(*g);
}

// compile is pure: no device, no global state. The executable is the magic,
// the compiler version and the IR, to be decoded again at load.
kiln_error* compile(kiln_compile_args* args) {
  return guarded([&] {
    check_args(args, "compile");
    kiln::ir::DecodedGraph g;
    decode_ir(args->ir, args->ir_size, &g);
    const size_t header = sizeof(kExecutableMagic) + sizeof(kCompilerVersion);
    auto* out = new uint8_t[header + args->ir_size];
    std::memcpy(out, kExecutableMagic, sizeof(kExecutableMagic));
    std::memcpy(out + sizeof(kExecutableMagic), kCompilerVersion, sizeof(kCompilerVersion));
    std::memcpy(out + header, args->ir, args->ir_size);
    args->executable = out;
    args->executable_size = header + args->ir_size;
  });
}

void executable_bytes_free(uint8_t* bytes) { delete[] bytes; }

kiln_error* load(kiln_load_args* args) {
  return guarded([&] {
    check_args(args, "load");
    const size_t header = sizeof(kExecutableMagic) + sizeof(kCompilerVersion);
    if (args->executable == nullptr || args->executable_size < header ||
        std::memcmp(args->executable, kExecutableMagic, sizeof(kExecutableMagic)) != 0)
      fail(KILN_ERR_CORRUPT, "not a template executable");
    if (std::memcmp(args->executable + sizeof(kExecutableMagic), kCompilerVersion, sizeof(kCompilerVersion)) != 0)
      fail(KILN_ERR_CORRUPT, "executable was compiled by another template version; recompile it");
    auto* loaded = new kiln_loaded_executable;
    try {
      decode_ir(args->executable + header, args->executable_size - header, &loaded->graph);
      loaded->slot_bytes.assign(loaded->graph.num_slots, 0);
      for (const kiln::ir::DecodedValue& v : loaded->graph.values) {
        uint64_t& need = loaded->slot_bytes[v.slot];
        if (v.offset + v.bytes() > need) need = v.offset + v.bytes();
      }
    } catch (...) {
      delete loaded;
      throw;
    }
    args->loaded = loaded;
  });
}

void loaded_free(kiln_device*, kiln_loaded_executable* loaded) { delete loaded; }

kiln_error* execute(kiln_execute_args* args) {
  return guarded([&] {
    check_args(args, "execute");
    const kiln_loaded_executable* exe = args->loaded;
    if (exe == nullptr || args->slots == nullptr || args->num_slots < 0 ||
        static_cast<uint32_t>(args->num_slots) < exe->graph.num_slots)
      fail(KILN_ERR_INVALID_ARGUMENT, "execute: missing executable or slots");
    for (uint32_t s = 0; s < exe->graph.num_slots; ++s)
      if (exe->slot_bytes[s] > 0 && (args->slots[s] == nullptr || args->slots[s]->size < exe->slot_bytes[s]))
        fail(KILN_ERR_INVALID_ARGUMENT, "execute: slot " + std::to_string(s) + " is missing or too small");
    for (const kiln::ir::DecodedNode& n : exe->graph.nodes) run_node(exe->graph, n, args->slots);
  });
}

kiln_error* synchronize(kiln_device*) { return nullptr; }  // execute returns when done

kiln_error* op_supported(kiln_op_supported_args* args) {
  return guarded([&] {
    check_args(args, "op_supported");
    args->supported = supported(args->op) ? 1 : 0;
  });
}

// Filled by name, so the template builds against any plugin.h of ABI 1.x:
// fields a newer header appends stay NULL ("not supported"), e.g.
// op_supported_node (ABI 1.2), since op_supported's per-op answer holds for
// every shape here.
kiln_plugin_api make_api() {
  kiln_plugin_api api{};
  api.struct_size = sizeof(kiln_plugin_api);
  api.abi_major = KILN_ABI_MAJOR;
  api.abi_minor = KILN_ABI_MINOR;
  api.name = "template";
  api.error_destroy = error_destroy;
  api.error_message = error_message;
  api.error_code = error_code;
  api.compiler_version = compiler_version;
  api.device_count = device_count;
  api.device_properties = device_properties;
  api.device_open = device_open;
  api.device_close = device_close;
  api.buffer_alloc = buffer_alloc;
  api.buffer_free = buffer_free;
  api.buffer_write = buffer_write;
  api.buffer_read = buffer_read;
  api.buffer_copy = buffer_copy;
  api.compile = compile;
  api.executable_bytes_free = executable_bytes_free;
  api.load = load;
  api.loaded_free = loaded_free;
  api.execute = execute;
  api.synchronize = synchronize;
  api.op_supported = op_supported;
  return api;
}
const kiln_plugin_api kApi = make_api();

}  // namespace

extern "C" __attribute__((visibility("default"))) const kiln_plugin_api* kiln_plugin_get_api(void) { return &kApi; }

// Optional: cheap, side-effect free. A GPU plugin would check for a driver here.
extern "C" __attribute__((visibility("default"))) int kiln_plugin_probe(char* reason, size_t reason_size) {
  if (reason != nullptr && reason_size > 0) reason[0] = '\0';
  return 1;
}
