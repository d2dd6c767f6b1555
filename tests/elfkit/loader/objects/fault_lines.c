/*
 * fault_lines.c - a relocatable-object test: built with -g, its fault
 * report must name the line of the faulting store (from the object's
 * .debug_line, relocated by the loader).
 */
#include "test_plugin.h"

static volatile int32_t sink;

EXPORT int32_t add_i32(int32_t a, int32_t b) { return a + b; }

EXPORT void wild_write(int32_t v) {
  sink = v;
  *(volatile int32_t *)(uintptr_t)0xdead0000u = v; /* FAULT LINE */
  sink = v + 1;
}
