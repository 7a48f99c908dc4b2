/* A stray library whose constructor calls exit(0) when dlopened: before the
 * guard, `kiln train --save D` with it on the path exited 0 without
 * training. Loading it must be reported as an error, never as success. */
#include <stdlib.h>

__attribute__((constructor)) static void exit_on_load(void) { exit(0); }

__attribute__((visibility("default"))) int kiln_test_exits_in_constructor(void) { return 0; }
