/* A plugin whose table claims to be shorter than the fixed header (as a
 * corrupt or hand-written table might): the loader must not read past it. */
#include <stddef.h>

#include "kiln/plugin.h"

static const kiln_plugin_api api = {
    .struct_size = offsetof(kiln_plugin_api, abi_major),
    .abi_major = KILN_ABI_MAJOR,
    .abi_minor = KILN_ABI_MINOR,
    .name = "short_table",
};

__attribute__((visibility("default"))) const kiln_plugin_api* kiln_plugin_get_api(void) { return &api; }
