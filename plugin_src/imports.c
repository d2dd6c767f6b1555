/*
 * imports.c - test plugin that calls functions the host provides.
 *
 * Required imports:  int32_t host_add(int32_t a, int32_t b)
 *                    void    host_log(int32_t code)
 *                    double  host_scale(double x, float s)
 * Optional (weak):   int32_t host_optional(int32_t x)   -- may be missing
 *
 * Calls through the PLT give JUMP_SLOT relocations; the weak import's
 * address test gives a GLOB_DAT (riscv: R_RISCV_64/32) against an undefined
 * weak symbol; g_host_add_ptr is an absolute relocation against an import.
 *
 * The initialiser calls host_log(100) and the finaliser host_log(200), so
 * imports must be bound before .init_array runs.
 */
#include "test_plugin.h"

extern int32_t host_add(int32_t a, int32_t b);
extern void host_log(int32_t code);
extern double host_scale(double x, float s);
extern int32_t host_optional(int32_t x) __attribute__((weak));

/* Absolute relocation against an imported function (exported so the
 * compiler cannot assume it still holds host_add). */
EXPORT int32_t (*g_host_add_ptr)(int32_t, int32_t) = host_add;

/* host_add(a, b) */
EXPORT int32_t call_host_add(int32_t a, int32_t b) { return host_add(a, b); }

/* g_host_add_ptr(a, b) */
EXPORT int32_t call_host_add_ptr(int32_t a, int32_t b) { return g_host_add_ptr(a, b); }

/* acc = 0; for i < n: acc = host_add(acc, p[i]); return acc */
EXPORT int32_t sum_via_host(const int32_t* p, int32_t n) {
  int32_t acc = 0;
  for (int32_t i = 0; i < n; ++i) acc = host_add(acc, p[i]);
  return acc;
}

/* host_log(code) */
EXPORT void call_host_log(int32_t code) { host_log(code); }

/* host_scale(x, s) */
EXPORT double call_host_scale(double x, float s) { return host_scale(x, s); }

/* 1 when the host provided host_optional, else 0. */
EXPORT int32_t has_optional(void) { return host_optional ? 1 : 0; }

/* host_optional(x) when provided, else -1. */
EXPORT int32_t call_optional(int32_t x) { return host_optional ? host_optional(x) : -1; }

static void imports_init(void) { host_log(100); }
static void imports_fini(void) { host_log(200); }

INIT_ARRAY_ENTRY static void (*const init_entries[1])(void) = {imports_init};
FINI_ARRAY_ENTRY static void (*const fini_entries[1])(void) = {imports_fini};
