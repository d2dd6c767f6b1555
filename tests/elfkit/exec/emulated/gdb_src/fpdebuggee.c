/* The plugin the gdb float-register tests debug: fp_entry computes a
 * value in a float register and passes it to fp_sink (not inlined, so a
 * breakpoint on fp_sink sees the argument in d0 / v0).  Built with -g. */

#define EXPORT __attribute__((visibility("default")))
#define NOINLINE __attribute__((noinline))

/* fp_sink(v) = v * 2 + 0.5 */
NOINLINE double fp_sink(double v) {
    return v * 2.0 + 0.5;
}

/* fp_entry(x) = fp_sink(x / 3 + 0.25) */
EXPORT double fp_entry(double x) {
    return fp_sink(x / 3.0 + 0.25);
}
