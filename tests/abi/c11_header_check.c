/* The plugin ABI headers must be plain C11: this file includes them with
 * -std=c11 -Wall -Wextra -Wpedantic -Werror (tests/CMakeLists.txt) and checks
 * the layout facts the loader relies on. Running it (ctest abi.c11_headers)
 * also checks that a C program sees the same struct sizes as this build's
 * C++ host does when it prints them. */
#include <stddef.h>
#include <stdio.h>

#include "kiln/fp8.h"
#include "kiln/half.h"
#include "kiln/ir.h"
#include "kiln/plugin.h"

/* Every table and args struct starts with struct_size. */
_Static_assert(offsetof(kiln_plugin_api, struct_size) == 0, "struct_size first");
_Static_assert(offsetof(kiln_compile_args, struct_size) == 0, "struct_size first");
_Static_assert(offsetof(kiln_device_properties, struct_size) == 0, "struct_size first");
/* The loader reads abi_major/abi_minor/name before trusting anything else. */
_Static_assert(offsetof(kiln_plugin_api, abi_major) == sizeof(size_t), "abi_major after struct_size");
_Static_assert(offsetof(kiln_plugin_api, name) < offsetof(kiln_plugin_api, error_destroy), "header first");
_Static_assert(KILN_OP_COUNT_ > KILN_OP_ADAMW, "op codes are dense");
_Static_assert(KILN_IR_MAX_RANK >= 4, "attention needs rank 4");

static const kiln_plugin_api* unused_get_api(void) { return NULL; }

int main(void) {
  kiln_plugin_get_api_fn fn = unused_get_api;
  kiln_plugin_api api = {0};
  api.struct_size = sizeof(api);
  api.abi_major = KILN_ABI_MAJOR;
  api.abi_minor = KILN_ABI_MINOR;
  printf("kiln ABI %u.%u from C11: kiln_plugin_api is %zu bytes, kiln_compile_args %zu, IR version %d\n",
         (unsigned)api.abi_major, (unsigned)api.abi_minor, api.struct_size, sizeof(kiln_compile_args), KILN_IR_VERSION);
  return fn() == NULL ? 0 : 1;
}
