/* A plugin built for a future, incompatible ABI: the loader must refuse it
 * by its abi_major alone and never call into the table. */
#include "kiln/plugin.h"

static const kiln_plugin_api api = {
    .struct_size = sizeof(kiln_plugin_api),
    .abi_major = KILN_ABI_MAJOR + 1,
    .abi_minor = 0,
    .name = "wrong_abi",
};

__attribute__((visibility("default"))) const kiln_plugin_api* kiln_plugin_get_api(void) { return &api; }
