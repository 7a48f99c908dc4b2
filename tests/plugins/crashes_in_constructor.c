/* A stray library whose constructor crashes as soon as it is dlopened, before
 * kiln can look up any symbol. Loading it must cost one line naming it, and
 * a command that does not ask for it must never load it. */
#include <signal.h>

__attribute__((constructor)) static void crash_on_load(void) { raise(SIGSEGV); }

__attribute__((visibility("default"))) int kiln_test_crashes_in_constructor(void) { return 0; }
