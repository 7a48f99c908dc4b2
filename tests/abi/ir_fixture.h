/* A small graph's IR for the ABI interoperability host (host_1_0.c). */
#ifndef KILN_TEST_IR_FIXTURE_H
#define KILN_TEST_IR_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

typedef struct kiln_test_ir {
  uint8_t* ir; /* malloc'ed */
  size_t ir_size;
  uint64_t arena_bytes;
  int32_t num_slots;
  int32_t x_slot; /* input: 8 floats */
  int32_t y_slot; /* output: 8 floats, 2 * (x + x) */
} kiln_test_ir;

/* 1 on success. */
int kiln_test_ir_fixture(kiln_test_ir* out);

#endif
