/* A plugin host built from the frozen ABI 1.0 header (tests/abi/v1_0): it
 * passes 1.0-sized args structs, as a host released with 1.0 would, and
 * drives each plugin named on the command line through listing, buffers,
 * compile, load and execute of y = 2 * (x + x). PLUGIN_GUIDE promises that
 * 1.0 and later hosts and plugins interoperate; this checks that promise
 * against the real plugins (ctest abi.host_1_0_*).
 * Prints one line per plugin: PASS, SKIP (the plugin has no device on this
 * machine) or FAIL with the reason; the exit status is the number of FAILs. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir_fixture.h"
#include "kiln/plugin.h"

#if KILN_ABI_MINOR != 0
#error "host_1_0.c must be built against the frozen 1.0 header in tests/abi/v1_0"
#endif

static const kiln_plugin_api* api;
static char failure[512];

/* Records the first failure; returns 1 if `e` is an error. */
static int failed(kiln_error* e, const char* what) {
  if (e == NULL) return 0;
  if (failure[0] == '\0') snprintf(failure, sizeof(failure), "%s: %s", what, api->error_message(e));
  api->error_destroy(e);
  return 1;
}

static int run(const char* path, const kiln_test_ir* fixture) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    printf("FAIL %s: dlopen: %s\n", path, dlerror());
    return 1;
  }
  /* POSIX lets dlsym's object pointer hold a function; ISO C has no cast. */
  void* sym = dlsym(lib, KILN_PLUGIN_GET_API_SYMBOL);
  kiln_plugin_get_api_fn get = NULL;
  if (sym != NULL) memcpy(&get, &sym, sizeof(get));
  api = get ? get() : NULL;
  if (api == NULL || api->abi_major != KILN_ABI_MAJOR || api->struct_size < sizeof(kiln_plugin_api)) {
    printf("FAIL %s: no ABI %d table of at least the 1.0 size\n", path, KILN_ABI_MAJOR);
    return 1;
  }
  failure[0] = '\0';

  kiln_device_count_args count = {sizeof(count), 0};
  if (failed(api->device_count(&count), "device_count")) goto fail;
  if (count.count == 0) {
    printf("SKIP %s: backend %s (ABI %u.%u) has no device here\n", path, api->name, api->abi_major, api->abi_minor);
    return 0;
  }
  kiln_device_properties props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  kiln_device_properties_args pargs = {sizeof(pargs), 0, &props};
  if (failed(api->device_properties(&pargs), "device_properties")) goto fail;
  kiln_device_open_args open = {sizeof(open), 0, 1, NULL};
  if (failed(api->device_open(&open), "device_open")) goto fail;

  uint64_t sizes[16] = {0};
  kiln_buffer* slots[16] = {NULL};
  if (fixture->num_slots > 16) {
    snprintf(failure, sizeof(failure), "fixture has %d slots", (int)fixture->num_slots);
    goto fail;
  }
  sizes[0] = fixture->arena_bytes > 64 ? fixture->arena_bytes : 64;
  sizes[fixture->x_slot] = sizes[fixture->y_slot] = 8 * sizeof(float);
  for (int32_t s = 0; s < fixture->num_slots; ++s) {
    kiln_buffer_alloc_args alloc = {sizeof(alloc), open.device, sizes[s] ? sizes[s] : 64, NULL};
    if (failed(api->buffer_alloc(&alloc), "buffer_alloc")) goto fail;
    slots[s] = alloc.buffer;
  }
  float x[8], y[8];
  for (int i = 0; i < 8; ++i) x[i] = (float)i + 0.5f;
  kiln_buffer_transfer_args write = {sizeof(write), open.device, slots[fixture->x_slot], 0, sizeof(x), x};
  if (failed(api->buffer_write(&write), "buffer_write")) goto fail;

  kiln_compile_args compile = {sizeof(compile), fixture->ir, fixture->ir_size, NULL, 0, NULL, 0};
  if (failed(api->compile(&compile), "compile")) goto fail;
  kiln_load_args load = {sizeof(load), open.device, compile.executable, compile.executable_size, NULL};
  kiln_error* load_error = api->load(&load);
  api->executable_bytes_free(compile.executable);
  if (failed(load_error, "load")) goto fail;
  kiln_execute_args exec = {sizeof(exec), open.device, load.loaded, slots, fixture->num_slots};
  if (failed(api->execute(&exec), "execute") || failed(api->synchronize(open.device), "synchronize")) goto fail;
  kiln_buffer_transfer_args read = {sizeof(read), open.device, slots[fixture->y_slot], 0, sizeof(y), y};
  if (failed(api->buffer_read(&read), "buffer_read")) goto fail;
  for (int i = 0; i < 8; ++i)
    if (y[i] != 4.0f * x[i]) {
      snprintf(failure, sizeof(failure), "y[%d] = %g, expected %g", i, (double)y[i], (double)(4.0f * x[i]));
      goto fail;
    }
  api->loaded_free(open.device, load.loaded);
  for (int32_t s = 0; s < fixture->num_slots; ++s) api->buffer_free(open.device, slots[s]);
  api->device_close(open.device);
  printf("PASS %s: backend %s (ABI %u.%u) on \"%s\": 1.0-sized args, y = 2 * (x + x) correct\n", path, api->name,
         api->abi_major, api->abi_minor, props.name);
  return 0;
fail:
  printf("FAIL %s: backend %s (ABI %u.%u): %s\n", path, api->name, api->abi_major, api->abi_minor, failure);
  return 1;
}

int main(int argc, char** argv) {
  kiln_test_ir fixture;
  if (!kiln_test_ir_fixture(&fixture)) {
    printf("FAIL: cannot build the IR fixture\n");
    return 1;
  }
  int failures = 0;
  for (int i = 1; i < argc; ++i) failures += run(argv[i], &fixture);
  free(fixture.ir);
  return failures;
}
