/*
 * far_provider.c - a relocatable-object test: provides host_add to the
 * imports plugin from another module, loaded far from it (see
 * test_objects.py::test_far_import_goes_through_a_veneer).
 */
#include "test_plugin.h"

EXPORT int32_t host_add(int32_t a, int32_t b) {
  return (int32_t)((uint32_t)a + (uint32_t)b + 1000000u);
}
