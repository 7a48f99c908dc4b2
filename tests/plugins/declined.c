/* A complete table whose probe says this machine cannot run it, as a GPU
 * plugin does on a machine without the GPU. The functions are never called
 * by the loader; they only have to be non-NULL. */
#include <string.h>

#include "kiln/plugin.h"

static void never_called(void) {}
#define STUB(type) ((type)(void (*)(void))never_called)

static const kiln_plugin_api api = {
    .struct_size = sizeof(kiln_plugin_api),
    .abi_major = KILN_ABI_MAJOR,
    .abi_minor = KILN_ABI_MINOR,
    .name = "declined",
    .error_destroy = STUB(void (*)(kiln_error*)),
    .error_message = STUB(const char* (*)(const kiln_error*)),
    .error_code = STUB(int32_t(*)(const kiln_error*)),
    .compiler_version = STUB(const char* (*)(void)),
    .device_count = STUB(kiln_error * (*)(kiln_device_count_args*)),
    .device_properties = STUB(kiln_error * (*)(kiln_device_properties_args*)),
    .device_open = STUB(kiln_error * (*)(kiln_device_open_args*)),
    .device_close = STUB(void (*)(kiln_device*)),
    .buffer_alloc = STUB(kiln_error * (*)(kiln_buffer_alloc_args*)),
    .buffer_free = STUB(void (*)(kiln_device*, kiln_buffer*)),
    .buffer_write = STUB(kiln_error * (*)(kiln_buffer_transfer_args*)),
    .buffer_read = STUB(kiln_error * (*)(kiln_buffer_transfer_args*)),
    .buffer_copy = STUB(kiln_error * (*)(kiln_buffer_copy_args*)),
    .compile = STUB(kiln_error * (*)(kiln_compile_args*)),
    .executable_bytes_free = STUB(void (*)(uint8_t*)),
    .load = STUB(kiln_error * (*)(kiln_load_args*)),
    .loaded_free = STUB(void (*)(kiln_device*, kiln_loaded_executable*)),
    .execute = STUB(kiln_error * (*)(kiln_execute_args*)),
    .synchronize = STUB(kiln_error * (*)(kiln_device*)),
};

__attribute__((visibility("default"))) const kiln_plugin_api* kiln_plugin_get_api(void) { return &api; }

__attribute__((visibility("default"))) int kiln_plugin_probe(char* reason, size_t reason_size) {
  strncpy(reason, "no test accelerator on this machine", reason_size - 1);
  return 0;
}
