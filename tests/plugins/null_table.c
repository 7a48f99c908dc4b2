/* A plugin whose entry point returns no table (e.g. its own initialisation
 * failed): the host must refuse it without dereferencing anything. */
#include <stddef.h>

#include "kiln/plugin.h"

__attribute__((visibility("default"))) const kiln_plugin_api* kiln_plugin_get_api(void) { return NULL; }
