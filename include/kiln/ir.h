/*
 * kiln graph IR: op codes and the serialized form plugins receive.
 *
 * Pure C (C11). The host builds graphs in C++ (graph/), serializes them to
 * the canonical byte form below, hashes those bytes for the compile cache,
 * and hands them to a plugin's `compile`. A plugin may decode the bytes with
 * the header-only helper in `kiln/ir_decode.hpp` or with its own reader.
 *
 * Op codes and attribute meanings are append-only: a code is never reused.
 *
 * ---------------------------------------------------------------- format
 * All integers little-endian, no padding, no pointers, no names.
 *
 *   header:
 *     char     magic[8]       "KILNIR\0\0"
 *     u32      version        KILN_IR_VERSION
 *     u32      num_slots      buffer slots the graph addresses (>= 1)
 *     u64      arena_bytes    size of slot 0, the workspace arena
 *     u32      num_values
 *     u32      num_nodes
 *   values[num_values]:
 *     u8       dtype          kiln_dtype (f32, i32, bf16, f16)
 *     u8       rank           0..KILN_IR_MAX_RANK
 *     u16      reserved       0
 *     u32      slot           buffer slot holding the value
 *     u64      offset         byte offset into that slot's buffer
 *     i64      dims[rank]
 *   nodes[num_nodes]          in a valid execution (topological) order
 *     u16      op             kiln_op
 *     u8       num_inputs
 *     u8       num_outputs
 *     u8       num_iattrs
 *     u8       num_fattrs
 *     u16      reserved       0
 *     u32      inputs[num_inputs]     value ids
 *     u32      outputs[num_outputs]   value ids
 *     i64      iattrs[num_iattrs]
 *     f32      fattrs[num_fattrs]
 *
 * Values that no node produces are graph inputs. Every tensor is dense,
 * row-major, and starts at (slot, offset); offsets are 64-byte aligned.
 * An output may share a slot with an input (in-place update, e.g. AdamW);
 * the host guarantees no node reads the old contents after it is written.
 * Elementwise ops (KILN_OPP_ELEMENTWISE in kiln/ops.h) must give
 * the right answer when an output occupies the same memory as an input,
 * i.e. read element k of every input before writing element k.
 * That exact alias (same slot, offset and size; or a RESHAPE, which moves
 * no bytes) is the only sharing allowed within a node: otherwise a node's
 * outputs share no byte with its inputs or with each other. The decoder
 * refuses IR that breaks this, so no kernel reads what it is writing.
 * Broadcasting rule for binary elementwise ops: the second operand's shape
 * must equal a suffix of the first's (e.g. a bias [C] over [N, C]).
 */
#ifndef KILN_IR_H
#define KILN_IR_H

#include <stdint.h>

#define KILN_IR_VERSION 1
#define KILN_IR_MAX_RANK 6
#define KILN_IR_ALIGN 64

/* Element types, append-only codes. bf16 and f16 are storage formats: ops
 * on them compute in f32 and round once when they store (kiln/ops.h; the
 * conversions are in kiln/half.h). A reader meeting a code it does not know
 * must refuse the graph (kiln/ir_decode.hpp does, naming the code). */
typedef enum kiln_dtype { KILN_F32 = 0, KILN_I32 = 1, KILN_BF16 = 2, KILN_F16 = 3 } kiln_dtype;

/* Bytes per element of a dtype, 0 for a code this header does not know. A
 * value's bytes are numel * kiln_dtype_size(dtype). */
static inline uint32_t kiln_dtype_size(int dtype) {
  switch (dtype) {
    case KILN_F32:
    case KILN_I32: return 4;
    case KILN_BF16:
    case KILN_F16: return 2;
    default: return 0;
  }
}

/* "f32", "i32", "bf16", "f16", or "unknown". */
static inline const char* kiln_dtype_name(int dtype) {
  switch (dtype) {
    case KILN_F32: return "f32";
    case KILN_I32: return "i32";
    case KILN_BF16: return "bf16";
    case KILN_F16: return "f16";
    default: return "unknown";
  }
}

/* Whether a dtype holds floats (f32, bf16, f16). */
static inline int kiln_dtype_is_float(int dtype) {
  return dtype == KILN_F32 || dtype == KILN_BF16 || dtype == KILN_F16;
}

/* The op codes, their names, arities, properties and shape rules: one row
 * per op in kiln/ops.h (the enum kiln_op is generated from those rows). */
#include "kiln/ops.h"

#endif /* KILN_IR_H */
