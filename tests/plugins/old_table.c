/* A plugin built against an older minor version of plugin.h: its table ends
 * before op_supported, so struct_size is smaller than the host's
 * sizeof(kiln_plugin_api). The host must load it, treat op_supported as
 * absent and never read past the table. The table's storage really is that
 * short (a global of exactly struct_size bytes), so in the ASan build any
 * read past it is caught.
 *
 * It loads, so the host may call it (`kiln devices` does): every function
 * works, for a backend with no devices. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/plugin.h"

#define OLD_TABLE_SIZE offsetof(kiln_plugin_api, op_supported)

struct kiln_error {
  int32_t code;
};

static kiln_error* unsupported(void) {
  kiln_error* e = malloc(sizeof(*e));
  if (e != NULL) e->code = KILN_ERR_UNSUPPORTED;
  return e;
}
static void error_destroy(kiln_error* e) { free(e); }
static const char* error_message(const kiln_error* e) {
  (void)e;
  return "the old_table test backend has no devices";
}
static int32_t error_code(const kiln_error* e) { return e != NULL ? e->code : KILN_OK; }
static const char* compiler_version(void) { return "old_table-1"; }
static kiln_error* device_count(kiln_device_count_args* a) {
  a->count = 0;
  return NULL;
}
static kiln_error* device_properties(kiln_device_properties_args* a) {
  (void)a;
  return unsupported();
}
static kiln_error* device_open(kiln_device_open_args* a) {
  (void)a;
  return unsupported();
}
static void device_close(kiln_device* d) { (void)d; }
static kiln_error* buffer_alloc(kiln_buffer_alloc_args* a) {
  (void)a;
  return unsupported();
}
static void buffer_free(kiln_device* d, kiln_buffer* b) {
  (void)d;
  (void)b;
}
static kiln_error* buffer_transfer(kiln_buffer_transfer_args* a) {
  (void)a;
  return unsupported();
}
static kiln_error* buffer_copy(kiln_buffer_copy_args* a) {
  (void)a;
  return unsupported();
}
static kiln_error* compile(kiln_compile_args* a) {
  (void)a;
  return unsupported();
}
static void executable_bytes_free(uint8_t* bytes) { free(bytes); }
static kiln_error* load(kiln_load_args* a) {
  (void)a;
  return unsupported();
}
static void loaded_free(kiln_device* d, kiln_loaded_executable* l) {
  (void)d;
  (void)l;
}
static kiln_error* execute(kiln_execute_args* a) {
  (void)a;
  return unsupported();
}
static kiln_error* synchronize(kiln_device* d) {
  (void)d;
  return NULL;
}

static const kiln_plugin_api full = {
    .struct_size = OLD_TABLE_SIZE,
    .abi_major = KILN_ABI_MAJOR,
    .abi_minor = 0,
    .name = "old_table",
    .error_destroy = error_destroy,
    .error_message = error_message,
    .error_code = error_code,
    .compiler_version = compiler_version,
    .device_count = device_count,
    .device_properties = device_properties,
    .device_open = device_open,
    .device_close = device_close,
    .buffer_alloc = buffer_alloc,
    .buffer_free = buffer_free,
    .buffer_write = buffer_transfer,
    .buffer_read = buffer_transfer,
    .buffer_copy = buffer_copy,
    .compile = compile,
    .executable_bytes_free = executable_bytes_free,
    .load = load,
    .loaded_free = loaded_free,
    .execute = execute,
    .synchronize = synchronize,
};

/* What an older plugin's static table occupies: only the fields it knew. */
static _Alignas(kiln_plugin_api) unsigned char table[OLD_TABLE_SIZE];

__attribute__((visibility("default"))) const kiln_plugin_api* kiln_plugin_get_api(void) {
  memcpy(table, &full, OLD_TABLE_SIZE);
  return (const kiln_plugin_api*)(const void*)table;
}
