/* A valid shared library named like a plugin but without the kiln entry
 * point, e.g. a stray file in the plugin directory. */
__attribute__((visibility("default"))) int not_a_plugin_answer(void) { return 42; }
