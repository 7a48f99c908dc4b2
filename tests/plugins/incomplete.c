/* Right ABI, but the table lacks the required functions: the loader must
 * name what is missing instead of crashing on a NULL call later. */
#include "kiln/plugin.h"

static const kiln_plugin_api api = {
    .struct_size = sizeof(kiln_plugin_api),
    .abi_major = KILN_ABI_MAJOR,
    .abi_minor = KILN_ABI_MINOR,
    .name = "incomplete",
};

__attribute__((visibility("default"))) const kiln_plugin_api* kiln_plugin_get_api(void) { return &api; }
