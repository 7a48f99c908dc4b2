/*
 * kiln backend plugin ABI.
 *
 * This is the one header a backend plugin needs. It is pure C (C11) so that
 * a plugin can be written in any language and built with any compiler.
 *
 * Rules (learned from PJRT and ggml-backend):
 *   - A plugin is a shared library `libkiln-backend-<name>.so` exporting
 *     `kiln_plugin_get_api` (required) and `kiln_plugin_probe` (optional).
 *   - Versioning: the host refuses a plugin whose abi_major differs from its
 *     own. Minor versions only append fields, so a host reads a newer or
 *     older plugin's table up to min(struct_size, what it knows).
 *   - Every struct crossing the boundary starts with `struct_size`, set by
 *     the side that allocates it. Fields are only ever appended.
 *   - A NULL function pointer means "not supported".
 *   - Every call that can fail returns a `kiln_error*`; NULL means success.
 *     The caller owns the error and frees it with `error_destroy`.
 *   - No C++ types cross the boundary. The graph crosses as bytes in the
 *     serialization described in `kiln/ir.h`.
 *   - `compile` is pure and thread-safe and needs no open device, so it can
 *     run in a worker process ahead of time. `load` turns executable bytes
 *     into something runnable on an open device; `execute` runs it.
 */
#ifndef KILN_PLUGIN_H
#define KILN_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_ABI_MAJOR 1
#define KILN_ABI_MINOR 5

/* ---------------------------------------------------------------- errors */

typedef enum kiln_error_code {
  KILN_OK = 0,
  KILN_ERR_INVALID_ARGUMENT = 1,
  KILN_ERR_UNSUPPORTED = 2, /* op, dtype or feature not supported */
  KILN_ERR_OUT_OF_MEMORY = 3,
  KILN_ERR_DEVICE = 4,  /* driver or device failure */
  KILN_ERR_CORRUPT = 5, /* malformed IR or executable bytes */
  KILN_ERR_INTERNAL = 6
} kiln_error_code;

/* Opaque, owned by the plugin; released with kiln_plugin_api.error_destroy. */
typedef struct kiln_error kiln_error;

/* ---------------------------------------------------------------- handles */

typedef struct kiln_device kiln_device; /* an opened device */
typedef struct kiln_buffer kiln_buffer; /* device memory */
typedef struct kiln_loaded_executable kiln_loaded_executable;

/* ---------------------------------------------------------------- devices */

typedef enum kiln_device_kind {
  KILN_DEVICE_CPU = 0,
  KILN_DEVICE_GPU = 1,
  KILN_DEVICE_ACCELERATOR = 2,
  KILN_DEVICE_OTHER = 3
} kiln_device_kind;

typedef struct kiln_device_count_args {
  size_t struct_size;
  int32_t count; /* out */
  /* ABI 1.1. When count is 0 the plugin may say why, in one line that names
   * the fix ("no OpenCL platform: install pocl-opencl-icd or a GPU driver");
   * the host shows it instead of a bare "no devices". */
  char no_devices_reason[256]; /* out, optional */
} kiln_device_count_args;

/* True when the struct at `ptr` (of type `type`, sized by its struct_size)
 * is large enough to hold `field`: how a callee reads or writes a field
 * appended in a later minor version. */
#define KILN_STRUCT_HAS(type, ptr, field) ((ptr)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))

/* Strings are copied into fixed arrays so no allocation crosses the ABI. */
typedef struct kiln_device_properties {
  size_t struct_size;
  char name[128];
  char vendor[128];
  char driver_version[128];
  int32_t kind;          /* kiln_device_kind */
  uint64_t memory_bytes; /* usable device memory */
  int32_t compute_units;
  /* Stable identity of the device model + driver, for compile-cache keys:
   * two machines with equal fingerprints can share compiled executables. */
  char fingerprint[65];
  /* ABI 1.3. What the hardware offers for 16-bit floats, as KILN_LOWP_*
   * bits, whether or not the plugin's kernels use it yet (`kiln devices`
   * prints it). 0 from an older plugin: nothing known. */
  uint32_t low_precision;
  /* ABI 1.4. Nonzero: compile each graph whole. The host otherwise cuts
   * step graphs into compile units that repeat across a model's layers
   * (one layer's forward, one layer's backward, the rest), so identical
   * layers compile once; a backend whose step gets slower with the finer
   * units (launch or fusion costs at unit boundaries) sets this. 0 from an
   * older plugin: units. */
  uint32_t whole_graph_units;
} kiln_device_properties;

/* kiln_device_properties.low_precision bits. */
#define KILN_LOWP_16BIT_STORAGE 0x1u   /* kernels load and store 16-bit values directly */
#define KILN_LOWP_F16_ARITHMETIC 0x2u  /* f16 arithmetic in kernels (cl_khr_fp16, shaderFloat16) */
#define KILN_LOWP_F16_CONVERT 0x4u     /* hardware f16 <-> f32 conversion (x86 F16C) */
#define KILN_LOWP_BF16_ARITHMETIC 0x8u /* bf16 dot products (x86 AVX512-BF16, shaderBFloat16Type) */

typedef struct kiln_device_properties_args {
  size_t struct_size;
  int32_t device_index;
  kiln_device_properties* properties; /* in: caller sets its struct_size */
} kiln_device_properties_args;

typedef struct kiln_device_open_args {
  size_t struct_size;
  int32_t device_index;
  int32_t num_threads; /* hint for host-CPU backends; 0 = default */
  kiln_device* device; /* out */
} kiln_device_open_args;

/* ---------------------------------------------------------------- buffers */

typedef struct kiln_buffer_alloc_args {
  size_t struct_size;
  kiln_device* device;
  uint64_t size_bytes;
  kiln_buffer* buffer; /* out */
} kiln_buffer_alloc_args;

typedef struct kiln_buffer_transfer_args {
  size_t struct_size;
  kiln_device* device;
  kiln_buffer* buffer;
  uint64_t offset; /* bytes into the buffer */
  uint64_t size_bytes;
  void* host; /* read: destination; write: source */
} kiln_buffer_transfer_args;

typedef struct kiln_buffer_copy_args {
  size_t struct_size;
  kiln_device* device;
  kiln_buffer* src;
  uint64_t src_offset;
  kiln_buffer* dst;
  uint64_t dst_offset;
  uint64_t size_bytes;
} kiln_buffer_copy_args;

/* ---------------------------------------------------------------- compile */

/* Executable bytes are owned by the plugin until freed with
 * executable_bytes_free; the host copies them (e.g. into the cache). */
typedef struct kiln_compile_args {
  size_t struct_size;
  const uint8_t* ir; /* serialized graph, see kiln/ir.h */
  size_t ir_size;
  const char* options;    /* JSON object of codegen options, may be NULL */
  int32_t device_index;   /* the device model to compile for */
  uint8_t* executable;    /* out */
  size_t executable_size; /* out */
} kiln_compile_args;

typedef struct kiln_load_args {
  size_t struct_size;
  kiln_device* device;
  const uint8_t* executable;
  size_t executable_size;
  kiln_loaded_executable* loaded; /* out */
} kiln_load_args;

/* The graph addresses memory through buffer slots (see kiln/ir.h): slot 0 is
 * the workspace arena sized by the IR header, slots 1..n are the graph's
 * inputs and outputs. The host binds one buffer per slot. */
typedef struct kiln_execute_args {
  size_t struct_size;
  kiln_device* device;
  kiln_loaded_executable* loaded;
  kiln_buffer* const* slots;
  int32_t num_slots;
} kiln_execute_args;

/* Asks whether an op (kiln_op, kiln/ir.h) is implemented. */
typedef struct kiln_op_supported_args {
  size_t struct_size;
  int32_t op;
  int32_t supported; /* out: 0 or 1 */
} kiln_op_supported_args;

/* ABI 1.2. One tensor of a node, as op_supported_node sees it. */
#define KILN_TENSOR_DESC_MAX_RANK 8 /* >= KILN_IR_MAX_RANK (kiln/ir.h) */
typedef struct kiln_tensor_desc {
  size_t struct_size; /* also the stride of the array it is in */
  int32_t dtype;      /* kiln_dtype (kiln/ir.h) */
  int32_t rank;
  int64_t dims[KILN_TENSOR_DESC_MAX_RANK]; /* dims[0..rank) */
} kiln_tensor_desc;

/* Element i of an array of kiln_tensor_desc filled by the other side: its
 * elements are struct_size bytes apart, whatever sizeof says here. */
#define KILN_TENSOR_DESC_AT(array, i) \
  ((const kiln_tensor_desc*)((const char*)(array) + (size_t)(i) * (array)->struct_size))

/* ABI 1.2. Asks whether one node (its op, and the dtypes and shapes of its
 * inputs and outputs) is implemented: a backend whose kernel has a size
 * limit says no to the nodes beyond it, and the host runs just those on its
 * cpu backend. The arrays hold num_inputs / num_outputs elements (read them
 * with KILN_TENSOR_DESC_AT). */
typedef struct kiln_node_supported_args {
  size_t struct_size;
  int32_t op; /* kiln_op */
  int32_t num_inputs;
  const kiln_tensor_desc* inputs;
  int32_t num_outputs;
  const kiln_tensor_desc* outputs;
  int32_t supported; /* out: 0 or 1 */
} kiln_node_supported_args;

/* ABI 1.5. Buffers in host memory, shared with the host's cpu fallback.
 *
 * A device whose buffers are plain memory of the host process (a BLAS or
 * interpreting backend on the CPU) returns a buffer's address here. The
 * address holds for the buffer's life; the device reads a buffer's bytes
 * there when execute runs, and its results are there once synchronize
 * returns. The host may then let its cpu fallback read and write the same
 * bytes instead of copying them across each graph split. `address` must be
 * KILN_IR_ALIGN-aligned (kiln/ir.h); an unaligned one is copied as before. */
typedef struct kiln_buffer_host_address_args {
  size_t struct_size;
  kiln_device* device;
  kiln_buffer* buffer;
  void* address; /* out */
} kiln_buffer_host_address_args;

/* ABI 1.5. A buffer over host memory the caller owns and keeps alive for
 * the buffer's life (a view: buffer_free releases the view, never the
 * memory). What kiln's cpu backend offers so that the host can hand it
 * another device's host-memory buffers. */
typedef struct kiln_buffer_wrap_host_args {
  size_t struct_size;
  kiln_device* device;
  void* address; /* KILN_IR_ALIGN-aligned */
  uint64_t size_bytes;
  kiln_buffer* buffer; /* out */
} kiln_buffer_wrap_host_args;

/* ---------------------------------------------------------------- the table */

typedef struct kiln_plugin_api {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  const char* name; /* backend name, e.g. "cpu" */

  void (*error_destroy)(kiln_error* error);
  const char* (*error_message)(const kiln_error* error);
  int32_t (*error_code)(const kiln_error* error);

  /* Identifies the code generator; part of every compile-cache key. */
  const char* (*compiler_version)(void);

  kiln_error* (*device_count)(kiln_device_count_args* args);
  kiln_error* (*device_properties)(kiln_device_properties_args* args);
  kiln_error* (*device_open)(kiln_device_open_args* args);
  void (*device_close)(kiln_device* device);

  kiln_error* (*buffer_alloc)(kiln_buffer_alloc_args* args);
  void (*buffer_free)(kiln_device* device, kiln_buffer* buffer);
  kiln_error* (*buffer_write)(kiln_buffer_transfer_args* args);
  kiln_error* (*buffer_read)(kiln_buffer_transfer_args* args);
  kiln_error* (*buffer_copy)(kiln_buffer_copy_args* args);

  kiln_error* (*compile)(kiln_compile_args* args);
  void (*executable_bytes_free)(uint8_t* bytes);
  kiln_error* (*load)(kiln_load_args* args);
  void (*loaded_free)(kiln_device* device, kiln_loaded_executable* loaded);
  kiln_error* (*execute)(kiln_execute_args* args);
  /* Blocks until all work queued on the device has finished. */
  kiln_error* (*synchronize)(kiln_device* device);

  /* Optional (may be NULL: every op in kiln/ir.h is then assumed). */
  kiln_error* (*op_supported)(kiln_op_supported_args* args);

  /* ABI 1.2, optional: the shape-aware form of op_supported. When set, the
   * host asks it for every node instead of asking op_supported per op. A
   * compile that still meets a graph it cannot run returns
   * KILN_ERR_UNSUPPORTED: the host then runs that graph piece on its cpu
   * backend and never records the refusal in the compile cache. */
  kiln_error* (*op_supported_node)(kiln_node_supported_args* args);

  /* ABI 1.5, optional: see kiln_buffer_host_address_args. NULL: the
   * device's memory is its own, and values cross to the fallback by copy. */
  kiln_error* (*buffer_host_address)(kiln_buffer_host_address_args* args);
  /* ABI 1.5, optional: see kiln_buffer_wrap_host_args. */
  kiln_error* (*buffer_wrap_host)(kiln_buffer_wrap_host_args* args);
} kiln_plugin_api;

/* The size of each struct's ABI 1.0 fields: the least struct_size a callee
 * accepts from an older caller (fields appended later are optional and
 * read with KILN_STRUCT_HAS). Append-only, like the structs. */
#define KILN_DEVICE_COUNT_ARGS_SIZE_1_0 offsetof(kiln_device_count_args, no_devices_reason)
#define KILN_DEVICE_PROPERTIES_SIZE_1_0 offsetof(kiln_device_properties, low_precision)
#define KILN_DEVICE_PROPERTIES_ARGS_SIZE_1_0 sizeof(kiln_device_properties_args)
#define KILN_DEVICE_OPEN_ARGS_SIZE_1_0 sizeof(kiln_device_open_args)
#define KILN_BUFFER_ALLOC_ARGS_SIZE_1_0 sizeof(kiln_buffer_alloc_args)
#define KILN_BUFFER_TRANSFER_ARGS_SIZE_1_0 sizeof(kiln_buffer_transfer_args)
#define KILN_BUFFER_COPY_ARGS_SIZE_1_0 sizeof(kiln_buffer_copy_args)
#define KILN_COMPILE_ARGS_SIZE_1_0 sizeof(kiln_compile_args)
#define KILN_LOAD_ARGS_SIZE_1_0 sizeof(kiln_load_args)
#define KILN_EXECUTE_ARGS_SIZE_1_0 sizeof(kiln_execute_args)
#define KILN_OP_SUPPORTED_ARGS_SIZE_1_0 sizeof(kiln_op_supported_args)
#define KILN_PLUGIN_API_SIZE_1_0 offsetof(kiln_plugin_api, op_supported_node)

/* Required export. Returns a table with static storage duration. */
typedef const kiln_plugin_api* (*kiln_plugin_get_api_fn)(void);
#define KILN_PLUGIN_GET_API_SYMBOL "kiln_plugin_get_api"

/* Optional export: cheap, side-effect free check that this machine can run
 * the plugin. Returns 1 if usable; otherwise 0 and a reason in `reason`. */
typedef int (*kiln_plugin_probe_fn)(char* reason, size_t reason_size);
#define KILN_PLUGIN_PROBE_SYMBOL "kiln_plugin_probe"

#ifdef __cplusplus
}
#endif

#endif /* KILN_PLUGIN_H */
