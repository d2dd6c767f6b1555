/* Shared helpers of the test plugins (not part of the plugin ABI). */
#ifndef ELFKIT_TEST_PLUGIN_H_
#define ELFKIT_TEST_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

/* Everything is compiled with -fvisibility=hidden; exports say so. */
#define EXPORT __attribute__((visibility("default")))
#define NOINLINE __attribute__((noinline))

/* An .init_array / .fini_array entry.  (`__attribute__((constructor))` emits
 * nothing for freestanding zig targets, so the tables are written directly.) */
#define INIT_ARRAY_ENTRY __attribute__((used, section(".init_array")))
#define FINI_ARRAY_ENTRY __attribute__((used, section(".fini_array")))

#endif /* ELFKIT_TEST_PLUGIN_H_ */
