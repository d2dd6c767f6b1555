/* The plugin the gdb tests debug: a call chain dbg_entry -> dbg_middle ->
 * dbg_leaf (not inlined, so a backtrace shows three plugin frames) and a
 * global that dbg_leaf writes (for watchpoints).  Built with -g. */
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))
#define NOINLINE __attribute__((noinline))

EXPORT volatile int32_t dbg_counter;

NOINLINE int32_t dbg_leaf(int32_t x) {
    dbg_counter = dbg_counter + x;
    return x * 3 + 1;
}

NOINLINE int32_t dbg_middle(int32_t x) {
    int32_t r = dbg_leaf(x + 1);
    return r + 2;
}

/* dbg_entry(n) = 3 * (n + 1) + 1 + 2 + 5 = 3n + 11 */
EXPORT int32_t dbg_entry(int32_t n) {
    int32_t r = dbg_middle(n);
    return r + 5;
}
