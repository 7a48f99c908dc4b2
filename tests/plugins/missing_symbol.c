/* A plugin that needs a symbol nothing provides (as when it was linked
 * against a library missing at run time): dlopen with RTLD_NOW refuses it,
 * and the host must say so instead of failing later on the first call. */
#include <stddef.h>

#include "kiln/plugin.h"

extern int kiln_test_symbol_nobody_defines(void);

__attribute__((visibility("default"))) const kiln_plugin_api* kiln_plugin_get_api(void) {
  return kiln_test_symbol_nobody_defines() ? NULL : NULL;
}
