/* Provides host_add to the hostile plugin from another module (import
 * providers' lifetimes, tests/elfkit/exec/hostile/test_lifetimes.py). */
#include <stdint.h>

int32_t host_add(int32_t a, int32_t b) { return a * 10 + b; }
