// The plugin runtime kit: everything a kiln backend plugin does at the C
// boundary of kiln/plugin.h, so that a plugin author writes only the device
// part (in the manner of PJRT's C API wrapper helpers).
//
// A plugin is a class of static functions (its device part, listed at
// PluginApi below) and one line, KILN_PLUGIN_KIT_EXPORT(Class), which makes
// kiln_plugin_get_api and kiln_plugin_probe. The kit then owns:
//   - the error object (kiln_error) and the out-of-memory singleton;
//   - the exception guard: anything thrown becomes a kiln_error naming the
//     ABI function (kit::fail throws the code and message of your choice);
//   - struct-size-aware argument checks (the ABI 1.0 sizes in plugin.h);
//   - fixed-string copying and device_properties for a host of any minor;
//   - the device list, enumerated once (DeviceList);
//   - buffer range checks and execute-slot validation;
//   - the executable container (magic, format, compiler version, device,
//     tagged sections) and the byte writer/reader for a plugin's sections;
//   - a per-step profile table for KILN_<NAME>_PROFILE=1;
//   - op_supported_node (ABI 1.2) from an optional per-node method, with
//     the tensor descriptors checked and copied (NodeTensor).
//
// Header-only C++17. It compiles against the plugin.h of any ABI 1.x (a
// plugin built from the 1.0 header still works: tests/abi).
#ifndef KILN_PLUGIN_KIT_HPP
#define KILN_PLUGIN_KIT_HPP

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/ir.h"
#include "kiln/plugin.h"

// The handle every plugin returns errors in: opaque to the host, owned by
// the kit (each plugin is a library of its own, so one definition each).
struct kiln_error {
  int32_t code;
  std::string message;
};

// Internal to the plugin: keep the kit out of its dynamic symbol table.
#pragma GCC visibility push(hidden)

namespace kiln::plugin_kit {

// ---------------------------------------------------------------- errors

// Thrown anywhere in a plugin; the guard turns it into a kiln_error.
struct Failure {
  int32_t code;
  std::string message;
};

[[noreturn]] inline void fail(int32_t code, std::string message) { throw Failure{code, std::move(message)}; }

// Handed out when even an error object cannot be allocated; never freed.
inline kiln_error* out_of_memory_error() {
  static kiln_error oom{KILN_ERR_OUT_OF_MEMORY, "out of host memory"};
  return &oom;
}

inline kiln_error* make_error(int32_t code, std::string message) {
  try {
    return new kiln_error{code, std::move(message)};
  } catch (...) {
    return out_of_memory_error();
  }
}

// Runs f; NULL on success, otherwise a kiln_error. A Failure keeps its code
// and message; any other exception is named with the ABI `function` and the
// `backend`, so the host can say where it came from.
template <class F>
kiln_error* guarded(const char* backend, const char* function, F&& f) noexcept {
  try {
    f();
    return nullptr;
  } catch (const Failure& e) {
    return make_error(e.code, e.message);
  } catch (const std::bad_alloc&) {
    return make_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    std::string message = function;
    message += ": ";
    message += e.what();
    return make_error(KILN_ERR_INTERNAL, std::move(message));
  } catch (...) {
    std::string message = "unknown exception in the ";
    message += backend;
    message += " backend's ";
    message += function;
    return make_error(KILN_ERR_INTERNAL, std::move(message));
  }
}

// ---------------------------------------------------------------- argument checks

// The least struct_size accepted for each args struct: its ABI 1.0 fields
// (plugin.h). Built from the 1.0 header itself, sizeof is that size.
template <class Args>
constexpr size_t size_1_0() {
  return sizeof(Args);
}
#ifdef KILN_DEVICE_COUNT_ARGS_SIZE_1_0
template <>
constexpr size_t size_1_0<kiln_device_count_args>() {
  return KILN_DEVICE_COUNT_ARGS_SIZE_1_0;
}
#endif

// `what` names the ABI function in the message.
template <class Args>
void check_args(const Args* args, const char* what) {
  if (args == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, std::string(what) + ": args is NULL");
  if (args->struct_size < size_1_0<Args>()) {
    std::string message = what;
    message += ": args struct_size " + std::to_string(args->struct_size);
    message += " is smaller than " + std::to_string(size_1_0<Args>());
    fail(KILN_ERR_INVALID_ARGUMENT, std::move(message));
  }
}

inline void check_not_null(const void* p, const char* what, const char* name) {
  if (p == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, std::string(what) + ": " + name + " is NULL");
}

// ---------------------------------------------------------------- strings and properties

// Copies s into a fixed array, truncated and always NUL-terminated: strings
// cross the ABI in arrays so that nothing allocated crosses it.
template <size_t N>
void copy_string(char (&dst)[N], const std::string& s) {
  const size_t n = std::min(N - 1, s.size());
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

// A device as its plugin describes it; fill_properties copies it out.
struct DeviceProperties {
  std::string name;
  std::string vendor;
  std::string driver_version;
  int32_t kind = KILN_DEVICE_OTHER;
  uint64_t memory_bytes = 0;
  int32_t compute_units = 0;
  std::string fingerprint;         // stable identity of device model + driver
  uint32_t low_precision = 0;      // KILN_LOWP_* bits (ABI 1.3)
  bool whole_graph_units = false;  // compile whole graphs, not per-layer units (ABI 1.4)
};

// An older host knows a shorter struct: fills only what it has room for and
// leaves its struct_size as it set it.
inline void fill_properties(kiln_device_properties* out, const DeviceProperties& d) {
  if (out == nullptr || out->struct_size < sizeof(size_t))
    fail(KILN_ERR_INVALID_ARGUMENT, "device_properties: properties is NULL or has no struct_size");
  kiln_device_properties p{};
  copy_string(p.name, d.name);
  copy_string(p.vendor, d.vendor);
  copy_string(p.driver_version, d.driver_version);
  p.kind = d.kind;
  p.memory_bytes = d.memory_bytes;
  p.compute_units = d.compute_units;
  copy_string(p.fingerprint, d.fingerprint);
#if KILN_ABI_MINOR >= 3
  p.low_precision = d.low_precision;
#endif
#if KILN_ABI_MINOR >= 4
  p.whole_graph_units = d.whole_graph_units ? 1u : 0u;
#endif
  const size_t caller_size = out->struct_size;
  p.struct_size = caller_size;
  std::memcpy(out, &p, std::min(caller_size, sizeof(p)));
}

// ---------------------------------------------------------------- device fingerprints

// 256 bits of FNV-1a (four seeded lanes, splitmix-finalized) as 64 hex
// digits: the fingerprint a plugin puts in device_properties, from the
// device model, driver and anything else that changes generated code.
inline std::string fingerprint_hex(const std::string& data) {
  static const uint64_t seeds[4] = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull, 0x9e3779b97f4a7c15ull,
                                    0xc2b2ae3d27d4eb4full};
  std::string out;
  char buf[17];
  for (uint64_t seed : seeds) {
    uint64_t h = seed;
    for (unsigned char c : data) {
      h ^= c;
      h *= 0x100000001b3ull;
    }
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
    out += buf;
  }
  return out;
}

// ---------------------------------------------------------------- the device list

// The devices a plugin finds, enumerated on first use and kept for the
// process. `enumerate` returns them, or an empty list and (in *why_none)
// one line naming the fix; if it throws, the next call tries again, so a
// transient driver failure is not remembered as "no devices".
template <class Info>
class DeviceList {
 public:
  using Enumerate = std::vector<Info> (*)(std::string* why_none);

  // `backend` names the plugin in errors; `no_devices` is the reason given
  // when enumerate finds nothing and does not say why.
  DeviceList(const char* backend, Enumerate enumerate, const char* no_devices)
      : backend_(backend), enumerate_(enumerate), no_devices_(no_devices) {}

  const std::vector<Info>& all() {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!done_) {
      std::string why;
      list_ = enumerate_(&why);
      why_none_ = list_.empty() ? (why.empty() ? std::string(no_devices_) : why) : std::string();
      done_ = true;
    }
    return list_;
  }

  int32_t count() { return static_cast<int32_t>(all().size()); }

  // Why all() is empty; empty when it is not.
  std::string why_none() {
    all();
    const std::lock_guard<std::mutex> lock(mutex_);
    return why_none_;
  }

  // KILN_ERR_INVALID_ARGUMENT for an index outside all().
  const Info& at(int32_t index) {
    const std::vector<Info>& list = all();
    if (index < 0 || static_cast<size_t>(index) >= list.size()) {
      std::string message = "device index " + std::to_string(index) + " out of range (the ";
      message += backend_;
      message += " backend has " + std::to_string(list.size()) + (list.size() == 1 ? " device)" : " devices)");
      fail(KILN_ERR_INVALID_ARGUMENT, std::move(message));
    }
    return list[static_cast<size_t>(index)];
  }

 private:
  const char* backend_;
  Enumerate enumerate_;
  const char* no_devices_;
  std::mutex mutex_;
  bool done_ = false;
  std::vector<Info> list_;
  std::string why_none_;
};

// ---------------------------------------------------------------- buffers and slots

// `buffer_size` is the size of the buffer a transfer names, or a null
// `buffer` for none; `what` names the call ("buffer_copy (source)").
inline void check_range(const char* what, const void* buffer, uint64_t buffer_size, uint64_t offset, uint64_t size) {
  if (buffer == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, std::string(what) + ": buffer is NULL");
  if (offset > buffer_size || size > buffer_size - offset) {
    std::string message = what;
    message += ": " + std::to_string(size) + " bytes at offset " + std::to_string(offset);
    message += " overrun a buffer of " + std::to_string(buffer_size) + " bytes";
    fail(KILN_ERR_INVALID_ARGUMENT, std::move(message));
  }
}

// The buffers bound to an execute: at least as many slots as the graph
// addresses, and each slot the graph uses bound and large enough.
// `slot_bytes[s]` is what slot s must hold (0: unused); `size_of(buffer)`.
template <class Buffer, class SizeOf>
void check_slots(Buffer* const* slots, int32_t num_slots, const std::vector<uint64_t>& slot_bytes, SizeOf size_of) {
  const size_t needed = slot_bytes.size();
  if (num_slots < 0 || static_cast<size_t>(num_slots) < needed) {
    std::string message = "execute: the graph addresses " + std::to_string(needed);
    message += " slots, " + std::to_string(num_slots) + " bound";
    fail(KILN_ERR_INVALID_ARGUMENT, std::move(message));
  }
  if (slots == nullptr && needed > 0) fail(KILN_ERR_INVALID_ARGUMENT, "execute: slots is NULL");
  for (size_t s = 0; s < needed; ++s) {
    if (slot_bytes[s] == 0) continue;
    const Buffer* b = slots[s];
    if (b == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "execute: slot " + std::to_string(s) + " is not bound");
    const uint64_t have = size_of(b);
    if (have < slot_bytes[s]) {
      std::string message = "execute: slot " + std::to_string(s) + " holds " + std::to_string(have);
      message += " bytes; the graph needs " + std::to_string(slot_bytes[s]);
      fail(KILN_ERR_INVALID_ARGUMENT, std::move(message));
    }
  }
}

// ---------------------------------------------------------------- per-node support

// One input or output of a node, as the device part's optional
// op_supported_node sees it: the host's kiln_tensor_desc (ABI 1.2), copied
// out of the caller's array once its sizes and rank are checked.
struct NodeTensor {
  int32_t dtype = 0;  // kiln_dtype
  std::vector<int64_t> dims;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
};

#if KILN_ABI_MINOR >= 2
// The `count` descriptors at `descs` (elements struct_size bytes apart, as
// KILN_TENSOR_DESC_AT reads them); `what` names the array in errors.
inline std::vector<NodeTensor> read_node_tensors(const kiln_tensor_desc* descs, int32_t count, const char* what) {
  std::vector<NodeTensor> out;
  if (count < 0) fail(KILN_ERR_INVALID_ARGUMENT, std::string(what) + ": count " + std::to_string(count) + " < 0");
  if (count == 0) return out;
  if (descs == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL");
  const size_t stride = descs->struct_size;
  if (stride < offsetof(kiln_tensor_desc, dims))
    fail(KILN_ERR_INVALID_ARGUMENT,
         std::string(what) + ": struct_size " + std::to_string(stride) + " does not reach the dims");
  for (int32_t i = 0; i < count; ++i) {
    const kiln_tensor_desc* t = KILN_TENSOR_DESC_AT(descs, i);
    if (t->rank < 0 || t->rank > KILN_TENSOR_DESC_MAX_RANK ||
        offsetof(kiln_tensor_desc, dims) + static_cast<size_t>(t->rank) * sizeof(int64_t) > stride) {
      std::string message = what;
      message += "[" + std::to_string(i) + "]: rank " + std::to_string(t->rank) + " does not fit its struct_size " +
                 std::to_string(stride) + " (at most " + std::to_string(KILN_TENSOR_DESC_MAX_RANK) + ")";
      fail(KILN_ERR_INVALID_ARGUMENT, std::move(message));
    }
    NodeTensor n;
    n.dtype = t->dtype;
    n.dims.assign(t->dims, t->dims + t->rank);
    out.push_back(std::move(n));
  }
  return out;
}
#endif

// ---------------------------------------------------------------- bytes

// Appends plain values to a byte vector (a plugin's sections).
class Writer {
 public:
  template <class T>
  void put(T v) {
    static_assert(std::is_trivially_copyable<T>::value, "Writer::put takes plain values");
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void put_bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  void put_string(const std::string& s) {  // u64 length + bytes
    put<uint64_t>(s.size());
    put_bytes(s.data(), s.size());
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

// Reads them back with every length checked against the bytes, so corrupt
// input fails with KILN_ERR_CORRUPT naming `what`.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n, const char* what) : p_(p), n_(n), what_(what) {}
  template <class T>
  T get() {
    T v;
    std::memcpy(&v, take(sizeof(T)), sizeof(T));
    return v;
  }
  const uint8_t* take(uint64_t n) {
    if (n > n_ - pos_) fail(KILN_ERR_CORRUPT, std::string(what_) + " is truncated");
    const uint8_t* at = p_ + pos_;
    pos_ += n;
    return at;
  }
  std::string get_string() {
    const auto n = get<uint64_t>();
    const uint8_t* s = take(n);
    return std::string(reinterpret_cast<const char*>(s), n);
  }
  // A count of items each at least `min_bytes` long: bounded by what is
  // left, so a corrupt count cannot trigger a huge allocation.
  uint64_t get_count(uint64_t min_bytes) {
    const auto n = get<uint64_t>();
    if (min_bytes > 0 && n > (n_ - pos_) / min_bytes)
      fail(KILN_ERR_CORRUPT, std::string(what_) + " has an impossible count");
    return n;
  }
  bool done() const { return pos_ == n_; }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  const char* what_;
};

// ---------------------------------------------------------------- the executable container
//   char magic[8] | u32 format | string compiler version |
//   string device fingerprint | string device name | u32 sections |
//   { u32 tag, u64 size, bytes }...
// (strings: u64 length + bytes). Unknown section tags are skipped on read,
// so a later version may append sections.

struct ContainerFormat {
  char magic[8];
  uint32_t format;
  const char* backend;           // "opencl": names the plugin in messages
  const char* compiler_version;  // an executable from another is refused
};

struct Section {
  uint32_t tag = 0;
  const uint8_t* data = nullptr;
  uint64_t size = 0;
};

// Who made an executable, from the container's header.
struct ContainerStamp {
  std::string compiler_version;  // on write: the format's, whatever this says
  std::string fingerprint;       // of the device compiled for
  std::string device_name;
};

struct Container {
  ContainerStamp stamp;
  std::vector<Section> sections;  // on read: views into the bytes read
  // The first section with `tag`, or NULL.
  const Section* find(uint32_t tag) const {
    for (const Section& s : sections)
      if (s.tag == tag) return &s;
    return nullptr;
  }
};

inline std::vector<uint8_t> write_container(const ContainerFormat& f, const Container& c) {
  Writer w;
  w.put_bytes(f.magic, sizeof(f.magic));
  w.put<uint32_t>(f.format);
  w.put_string(f.compiler_version);
  w.put_string(c.stamp.fingerprint);
  w.put_string(c.stamp.device_name);
  w.put<uint32_t>(static_cast<uint32_t>(c.sections.size()));
  for (const Section& s : c.sections) {
    w.put<uint32_t>(s.tag);
    w.put<uint64_t>(s.size);
    w.put_bytes(s.data, s.size);
  }
  return std::move(w.bytes());
}

// Throws KILN_ERR_CORRUPT for anything malformed, including an executable
// from another compiler version (it must be recompiled, not reinterpreted).
inline Container read_container(const ContainerFormat& f, const uint8_t* bytes, size_t size) {
  const std::string what = std::string(f.backend) + " executable";
  if (bytes == nullptr || size < sizeof(f.magic) || std::memcmp(bytes, f.magic, sizeof(f.magic)) != 0)
    fail(KILN_ERR_CORRUPT,
         std::string(std::strchr("aeiou", f.backend[0]) ? "not an " : "not a ") + what + " (bad magic)");
  Reader r(bytes, size, what.c_str());
  r.take(sizeof(f.magic));
  const auto format = r.get<uint32_t>();
  if (format != f.format) {
    std::string message = what;
    message += " format " + std::to_string(format) + " is not supported (want " + std::to_string(f.format) + ")";
    fail(KILN_ERR_CORRUPT, std::move(message));
  }
  Container c;
  c.stamp.compiler_version = r.get_string();
  if (c.stamp.compiler_version != f.compiler_version) {
    std::string message = "executable was compiled by ";
    message += c.stamp.compiler_version + ", this plugin is " + f.compiler_version + "; recompile it";
    fail(KILN_ERR_CORRUPT, std::move(message));
  }
  c.stamp.fingerprint = r.get_string();
  c.stamp.device_name = r.get_string();
  const auto count = r.get<uint32_t>();
  for (uint32_t i = 0; i < count; ++i) {
    Section s;
    s.tag = r.get<uint32_t>();
    s.size = r.get<uint64_t>();
    s.data = r.take(s.size);
    c.sections.push_back(s);
  }
  if (!r.done()) fail(KILN_ERR_CORRUPT, what + " has trailing bytes");
  return c;
}

// ---------------------------------------------------------------- profiling

// True when the environment variable is set to anything but "" or "0"
// (KILN_CPU_PROFILE=1 and the like).
inline bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Time per step label (an op, a kernel, a shader), printed slowest first.
class ProfileTable {
 public:
  // `flops`: the work the call did, for a GFLOP/s column (0: none).
  void add(const std::string& label, double seconds, double flops = 0.0) {
    Row& r = rows_[label];
    r.seconds += seconds;
    r.flops += flops;
    r.calls += 1;
  }
  // "<title>: T s in <unit>", then a row per label.
  void print(std::FILE* out, const std::string& title, const char* unit) const {
    std::vector<std::pair<std::string, Row>> rows(rows_.begin(), rows_.end());
    std::stable_sort(rows.begin(), rows.end(),
                     [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
    double total = 0.0;
    for (const auto& r : rows) total += r.second.seconds;
    std::fprintf(out, "%s: %.3f s in %s\n", title.c_str(), total, unit);
    for (const auto& [label, t] : rows) {
      std::fprintf(out, "  %9.3f s %5.1f%% %8llu %s  %s", t.seconds, total > 0 ? 100.0 * t.seconds / total : 0.0,
                   static_cast<unsigned long long>(t.calls), unit, label.c_str());
      if (t.flops > 0 && t.seconds > 0) std::fprintf(out, "  %.1f GFLOP/s", t.flops / t.seconds / 1e9);
      std::fprintf(out, "\n");
    }
  }
  bool empty() const { return rows_.empty(); }

 private:
  struct Row {
    double seconds = 0.0, flops = 0.0;
    uint64_t calls = 0;
  };
  std::map<std::string, Row> rows_;
};

// ---------------------------------------------------------------- the function table
//
// The device part, as static functions of a class P (every function may
// throw; fail() picks the error code):
//   static constexpr const char* kName;             // backend name, "cpu"
//   static constexpr const char* kCompilerVersion;  // keys the compile cache
//   int32_t device_count();
//   DeviceProperties device_properties(int32_t device_index);
//   kiln_device* device_open(int32_t device_index, int32_t num_threads);
//   kiln_buffer* buffer_alloc(kiln_device*, uint64_t size_bytes);
//   void buffer_free(kiln_device*, kiln_buffer*);      // buffer not NULL
//   uint64_t buffer_size(const kiln_buffer*);
//   void buffer_write(kiln_device*, kiln_buffer*, uint64_t offset, const void* host, uint64_t size);
//   void buffer_read(kiln_device*, kiln_buffer*, uint64_t offset, void* host, uint64_t size);
//   void buffer_copy(kiln_device*, kiln_buffer* src, uint64_t src_offset,
//                    kiln_buffer* dst, uint64_t dst_offset, uint64_t size);  // may overlap
//   std::vector<uint8_t> compile(const kiln_compile_args&);  // pure, thread-safe
//   kiln_loaded_executable* load(kiln_device*, const uint8_t* bytes, size_t size);
//   void loaded_free(kiln_device*, kiln_loaded_executable*);  // not NULL
//   const kiln_device* loaded_device(const kiln_loaded_executable*);
//   const std::vector<uint64_t>& slot_bytes(const kiln_loaded_executable*);
//   void execute(kiln_device*, kiln_loaded_executable*, kiln_buffer* const* slots);
//   void synchronize(kiln_device*);
//   bool op_supported(int32_t op);
// and optionally `std::string no_devices_reason()` (asked when device_count
// is 0: one line naming the fix), `bool probe(std::string* reason)`
// (cheap: no driver initialisation) and
//   bool op_supported_node(int32_t op, const std::vector<NodeTensor>& inputs,
//                          const std::vector<NodeTensor>& outputs);
// (ABI 1.2: whether this node, by its dtypes and shapes, runs here; the kit
// asks it only for ops op_supported allows, so it narrows that answer, e.g.
// to the GEMMs large enough to pay for a launch). Built against a header
// before 1.2 the hook is not exported, and compile must refuse (with
// KILN_ERR_UNSUPPORTED) what it would have refused. Two more are optional
// (ABI 1.5), for devices whose buffers are host memory:
//   void* buffer_host_address(kiln_buffer*);  // where its bytes are
//   kiln_buffer* buffer_wrap_host(kiln_device*, void* address, uint64_t size);
// (a view of memory the host owns; buffer_free then frees only the view).
// The kit checks every args struct, NULL handle, transfer
// range and execute slot before calling these, and device_close deletes
// the device.
// T, named through P: a type the compiler looks at only where the kit's
// code is instantiated, in the plugin after it has defined its handles.
template <class P, class T>
struct Dependent {
  using type = T;
};

template <class P>
struct PluginApi {
  static constexpr const char* name = P::kName;

  template <class F>
  static kiln_error* guard(const char* function, F&& f) noexcept {
    return guarded(name, function, std::forward<F>(f));
  }

  static void error_destroy(kiln_error* e) {
    if (e != nullptr && e != out_of_memory_error()) delete e;
  }
  static const char* error_message(const kiln_error* e) { return e ? e->message.c_str() : ""; }
  static int32_t error_code(const kiln_error* e) { return e ? e->code : KILN_OK; }
  static const char* compiler_version() { return P::kCompilerVersion; }

  static kiln_error* device_count(kiln_device_count_args* args) {
    return guard("device_count", [&] {
      check_args(args, "device_count");
      args->count = P::device_count();
#if KILN_ABI_MINOR >= 1
      if constexpr (HasNoDevicesReason<P>::value)
        if (args->count == 0 && KILN_STRUCT_HAS(kiln_device_count_args, args, no_devices_reason))
          copy_string(args->no_devices_reason, P::no_devices_reason());
#endif
    });
  }

  static kiln_error* device_properties(kiln_device_properties_args* args) {
    return guard("device_properties", [&] {
      check_args(args, "device_properties");
      const DeviceProperties d = P::device_properties(args->device_index);
      fill_properties(args->properties, d);
    });
  }

  static kiln_error* device_open(kiln_device_open_args* args) {
    return guard("device_open", [&] {
      check_args(args, "device_open");
      args->device = P::device_open(args->device_index, args->num_threads);
    });
  }

  static void device_close(kiln_device* device) {
    delete static_cast<typename Dependent<P, kiln_device>::type*>(device);  // the plugin's complete type
  }

  static kiln_error* buffer_alloc(kiln_buffer_alloc_args* args) {
    return guard("buffer_alloc", [&] {
      check_args(args, "buffer_alloc");
      check_not_null(args->device, "buffer_alloc", "device");
      args->buffer = P::buffer_alloc(args->device, args->size_bytes);
    });
  }

  static void buffer_free(kiln_device* device, kiln_buffer* buffer) {
    if (buffer != nullptr) P::buffer_free(device, buffer);
  }

  static void check_transfer(const kiln_buffer_transfer_args* args, const char* what) {
    check_args(args, what);
    check_not_null(args->device, what, "device");
    check_range(what, args->buffer, args->buffer ? P::buffer_size(args->buffer) : 0, args->offset, args->size_bytes);
    if (args->size_bytes > 0) check_not_null(args->host, what, "host");
  }

  static kiln_error* buffer_write(kiln_buffer_transfer_args* args) {
    return guard("buffer_write", [&] {
      check_transfer(args, "buffer_write");
      if (args->size_bytes > 0) P::buffer_write(args->device, args->buffer, args->offset, args->host, args->size_bytes);
    });
  }

  static kiln_error* buffer_read(kiln_buffer_transfer_args* args) {
    return guard("buffer_read", [&] {
      check_transfer(args, "buffer_read");
      if (args->size_bytes > 0) P::buffer_read(args->device, args->buffer, args->offset, args->host, args->size_bytes);
    });
  }

  static kiln_error* buffer_copy(kiln_buffer_copy_args* args) {
    return guard("buffer_copy", [&] {
      check_args(args, "buffer_copy");
      check_not_null(args->device, "buffer_copy", "device");
      check_range("buffer_copy (source)", args->src, args->src ? P::buffer_size(args->src) : 0, args->src_offset,
                  args->size_bytes);
      check_range("buffer_copy (destination)", args->dst, args->dst ? P::buffer_size(args->dst) : 0, args->dst_offset,
                  args->size_bytes);
      if (args->size_bytes > 0)
        P::buffer_copy(args->device, args->src, args->src_offset, args->dst, args->dst_offset, args->size_bytes);
    });
  }

  static kiln_error* compile(kiln_compile_args* args) {
    return guard("compile", [&] {
      check_args(args, "compile");
      if (args->ir == nullptr && args->ir_size != 0) fail(KILN_ERR_INVALID_ARGUMENT, "compile: ir is NULL");
      const std::vector<uint8_t> bytes = P::compile(*args);
      // malloc'ed: executable_bytes_free frees it whatever P allocates with.
      auto* out = static_cast<uint8_t*>(std::malloc(std::max<size_t>(bytes.size(), 1)));
      if (out == nullptr) throw std::bad_alloc();
      if (!bytes.empty()) std::memcpy(out, bytes.data(), bytes.size());
      args->executable = out;
      args->executable_size = bytes.size();
    });
  }

  static void executable_bytes_free(uint8_t* bytes) { std::free(bytes); }

  static kiln_error* load(kiln_load_args* args) {
    return guard("load", [&] {
      check_args(args, "load");
      check_not_null(args->device, "load", "device");
      check_not_null(args->executable, "load", "executable");
      args->loaded = P::load(args->device, args->executable, args->executable_size);
    });
  }

  static void loaded_free(kiln_device* device, kiln_loaded_executable* loaded) {
    if (loaded != nullptr) P::loaded_free(device, loaded);
  }

  static kiln_error* execute(kiln_execute_args* args) {
    return guard("execute", [&] {
      check_args(args, "execute");
      kiln_device* dev = args->device;
      kiln_loaded_executable* exe = args->loaded;
      if (dev == nullptr || exe == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "execute: device or executable is NULL");
      if (P::loaded_device(exe) != dev)
        fail(KILN_ERR_INVALID_ARGUMENT, "execute: the executable was loaded on another device");
      check_slots(args->slots, args->num_slots, P::slot_bytes(exe),
                  [](const kiln_buffer* b) { return P::buffer_size(b); });
      P::execute(dev, exe, args->slots);
    });
  }

  static kiln_error* synchronize(kiln_device* device) {
    return guard("synchronize", [&] {
      check_not_null(device, "synchronize", "device");
      P::synchronize(device);
    });
  }

  static kiln_error* op_supported(kiln_op_supported_args* args) {
    return guard("op_supported", [&] {
      check_args(args, "op_supported");
      args->supported = P::op_supported(args->op) ? 1 : 0;
    });
  }

#if KILN_ABI_MINOR >= 2
  static kiln_error* op_supported_node(kiln_node_supported_args* args) {
    return guard("op_supported_node", [&] {
      check_args(args, "op_supported_node");
      const std::vector<NodeTensor> in = read_node_tensors(args->inputs, args->num_inputs, "op_supported_node inputs");
      const std::vector<NodeTensor> out =
          read_node_tensors(args->outputs, args->num_outputs, "op_supported_node outputs");
      // The host asks this instead of op_supported: an op denied there is
      // denied at every shape.
      args->supported = P::op_supported(args->op) && P::op_supported_node(args->op, in, out) ? 1 : 0;
    });
  }
#endif

#if KILN_ABI_MINOR >= 5
  static kiln_error* buffer_host_address(kiln_buffer_host_address_args* args) {
    return guard("buffer_host_address", [&] {
      check_args(args, "buffer_host_address");
      check_not_null(args->device, "buffer_host_address", "device");
      check_not_null(args->buffer, "buffer_host_address", "buffer");
      args->address = P::buffer_host_address(args->buffer);
    });
  }

  static kiln_error* buffer_wrap_host(kiln_buffer_wrap_host_args* args) {
    return guard("buffer_wrap_host", [&] {
      check_args(args, "buffer_wrap_host");
      check_not_null(args->device, "buffer_wrap_host", "device");
      check_not_null(args->address, "buffer_wrap_host", "address");
      if (reinterpret_cast<uintptr_t>(args->address) % KILN_IR_ALIGN != 0)
        fail(KILN_ERR_INVALID_ARGUMENT,
             "buffer_wrap_host: address is not " + std::to_string(KILN_IR_ALIGN) + "-byte aligned");
      args->buffer = P::buffer_wrap_host(args->device, args->address, args->size_bytes);
    });
  }
#endif

  // Filled by name: fields a newer header appends stay NULL ("not
  // supported"), and so does op_supported_node (ABI 1.2) unless the device
  // part has one: op_supported's per-op answer then holds for every shape.
  static kiln_plugin_api make() {
    kiln_plugin_api api{};
    api.struct_size = sizeof(kiln_plugin_api);
    api.abi_major = KILN_ABI_MAJOR;
    api.abi_minor = KILN_ABI_MINOR;
    api.name = P::kName;
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
#if KILN_ABI_MINOR >= 2
    if constexpr (HasOpSupportedNode<P>::value) api.op_supported_node = op_supported_node;
#endif
#if KILN_ABI_MINOR >= 5
    if constexpr (HasHostAddress<P>::value) api.buffer_host_address = buffer_host_address;
    if constexpr (HasWrapHost<P>::value) api.buffer_wrap_host = buffer_wrap_host;
#endif
    return api;
  }

  static const kiln_plugin_api* table() {
    static const kiln_plugin_api api = make();
    return &api;
  }

  template <class Q, class = void>
  struct HasNoDevicesReason : std::false_type {};
  template <class Q>
  struct HasNoDevicesReason<Q, std::void_t<decltype(Q::no_devices_reason())>> : std::true_type {};

  template <class Q, class = void>
  struct HasProbe : std::false_type {};
  template <class Q>
  struct HasProbe<Q, std::void_t<decltype(Q::probe(static_cast<std::string*>(nullptr)))>> : std::true_type {};

  template <class Q, class = void>
  struct HasOpSupportedNode : std::false_type {};
  template <class Q>
  struct HasOpSupportedNode<
      Q, std::void_t<decltype(Q::op_supported_node(int32_t{}, std::declval<const std::vector<NodeTensor>&>(),
                                                   std::declval<const std::vector<NodeTensor>&>()))>> : std::true_type {
  };

  template <class Q, class = void>
  struct HasHostAddress : std::false_type {};
  template <class Q>
  struct HasHostAddress<Q, std::void_t<decltype(Q::buffer_host_address(static_cast<kiln_buffer*>(nullptr)))>>
      : std::true_type {};

  template <class Q, class = void>
  struct HasWrapHost : std::false_type {};
  template <class Q>
  struct HasWrapHost<Q, std::void_t<decltype(Q::buffer_wrap_host(static_cast<kiln_device*>(nullptr),
                                                                 static_cast<void*>(nullptr), uint64_t{}))>>
      : std::true_type {};

  static int probe(char* reason, size_t reason_size) noexcept {
    if (reason != nullptr && reason_size > 0) reason[0] = '\0';
    if constexpr (HasProbe<P>::value) {
      std::string why;
      bool usable = false;
      try {
        usable = P::probe(&why);
      } catch (...) {
        why = std::string(name) + " probe failed";
      }
      if (!usable && reason != nullptr && reason_size > 0) {
        const size_t n = std::min(reason_size - 1, why.size());
        std::memcpy(reason, why.data(), n);
        reason[n] = '\0';
      }
      return usable ? 1 : 0;
    } else {
      return 1;
    }
  }
};

}  // namespace kiln::plugin_kit

#pragma GCC visibility pop

// The plugin's two exports, made from its device-part class.
#define KILN_PLUGIN_KIT_EXPORT(PluginClass)                                                                   \
  extern "C" __attribute__((visibility("default"))) const kiln_plugin_api* kiln_plugin_get_api(void) {        \
    return ::kiln::plugin_kit::PluginApi<PluginClass>::table();                                               \
  }                                                                                                           \
  extern "C" __attribute__((visibility("default"))) int kiln_plugin_probe(char* reason, size_t reason_size) { \
    return ::kiln::plugin_kit::PluginApi<PluginClass>::probe(reason, reason_size);                            \
  }

#endif  // KILN_PLUGIN_KIT_HPP
