/*
 * common_init.c - a relocatable-object test: COMMON symbols (compiled with
 * -fcommon), initialiser and finaliser arrays with priorities, and a host
 * import that records the order they run in.
 */
#include "test_plugin.h"

extern void host_log(int32_t code);

/* tentative definitions: SHN_COMMON symbols with -fcommon */
EXPORT int32_t common_counter;
EXPORT int64_t common_table[64];

EXPORT int32_t init_order;     /* digits of the initialisers, in run order */

EXPORT int32_t get_common(void) { return common_counter; }
EXPORT void set_common(int32_t v) { common_counter = v; }
EXPORT int64_t table_sum(void) {
  int64_t s = 0;
  for (int i = 0; i < 64; ++i) s += common_table[i];
  return s;
}
EXPORT void table_fill(int64_t v) {
  for (int i = 0; i < 64; ++i) common_table[i] = v + i;
}
EXPORT void* table_address(void) { return common_table; }

static void init_a(void) { init_order = init_order * 10 + 1; }
static void init_b(void) { init_order = init_order * 10 + 2; }
static void init_c(void) { init_order = init_order * 10 + 3; host_log(init_order); }
static void fini_a(void) { host_log(-1); }
static void fini_b(void) { host_log(-2); }

/* linkers run .init_array.N by priority N, then .init_array */
__attribute__((used, section(".init_array"))) static void (*const init_last)(void) = init_c;
__attribute__((used, section(".init_array.200"))) static void (*const init_mid)(void) = init_b;
__attribute__((used, section(".init_array.101"))) static void (*const init_first)(void) = init_a;
/* finalisers run in reverse order of the array: fini_b, then fini_a */
__attribute__((used, section(".fini_array"))) static void (*const fini_entries[2])(void) = {
    fini_a, fini_b};
