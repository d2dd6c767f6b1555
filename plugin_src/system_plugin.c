/*
 * system_plugin.c - the same import as standalone_plugin.c, built as an
 * ordinary host shared library that uses libc: every call prints what it
 * does to stdout.
 *
 * Per call of simple_mul_workgroup it prints
 *   processor_id=<u32>
 *   processor_data[0]=<upper-case hex, no padding>   (only if processor_data != NULL)
 *   mul[<tid>:<i>](<lhs> * <rhs> = <out>)            (one line per element, %g)
 *
 * Plugin name "sample_system", features NONE.  The plugin state (host
 * allocator + output stream) is allocated with the host allocator in load()
 * and passed to the import as its context.
 *
 * Build:  cc -shared -fPIC -O2 -Iinclude system_plugin.c -o system_plugin.so
 */
#include <inttypes.h>
#include <stdio.h>

#include "elfkit_plugin.h"

typedef struct simple_mul_params_t {
  const float* restrict binding0;
  size_t binding0_offset;
  const float* restrict binding1;
  size_t binding1_offset;
  float* restrict binding2;
  size_t binding2_offset;
  size_t size;
  size_t tid;
  uint32_t processor_id;
  const uint64_t* restrict processor_data;
} simple_mul_params_t;

typedef struct system_plugin_t {
  elfkit_plugin_allocator_t host_allocator;
  FILE* file;
} system_plugin_t;

static int simple_mul_workgroup(void* params_ptr, void* context, void* reserved) {
  (void)reserved;
  system_plugin_t* plugin = (system_plugin_t*)context;
  const simple_mul_params_t* p = (const simple_mul_params_t*)params_ptr;
  fprintf(plugin->file, "processor_id=%u\n", p->processor_id);
  if (p->processor_data) {
    fprintf(plugin->file, "processor_data[0]=%" PRIX64 "\n", p->processor_data[0]);
  }
  for (size_t i = 0; i < p->size; ++i) {
    float lhs = p->binding0[p->binding0_offset + i];
    float rhs = p->binding1[p->binding1_offset + i];
    float out = lhs * rhs;
    p->binding2[p->binding2_offset + i] = out;
    fprintf(plugin->file, "mul[%zu:%zu](%g * %g = %g)\n", p->tid, i, lhs, rhs, out);
  }
  fflush(plugin->file);
  return 0;
}

static elfkit_plugin_status_t system_load(
    const elfkit_plugin_environment_v0_t* environment, size_t param_count,
    const elfkit_plugin_string_pair_t* params, void** out_self) {
  (void)param_count;
  (void)params;
  system_plugin_t* plugin = NULL;
  elfkit_plugin_status_t status = elfkit_plugin_allocator_malloc(
      environment->host_allocator, sizeof(*plugin), (void**)&plugin);
  if (!elfkit_plugin_status_is_ok(status)) return status;
  plugin->host_allocator = environment->host_allocator;
  plugin->file = stdout;
  *out_self = plugin;
  return elfkit_plugin_ok_status();
}

static void system_unload(void* self) {
  system_plugin_t* plugin = (system_plugin_t*)self;
  if (!plugin) return;
  fflush(plugin->file);
  elfkit_plugin_allocator_free(plugin->host_allocator, plugin);
}

static elfkit_plugin_status_t system_resolve(
    void* self, const elfkit_plugin_resolve_params_v0_t* params,
    elfkit_plugin_resolution_t* out_resolution) {
  /* the context is the plugin state: the import prints to its file */
  const elfkit_plugin_provided_t provided[] = {
      {"simple_mul_workgroup", (void*)simple_mul_workgroup, self},
  };
  return elfkit_plugin_resolve_from_table(provided, 1, params, out_resolution);
}

static const elfkit_plugin_header_t system_header = {
    .version = ELFKIT_PLUGIN_VERSION_LATEST,
    .name = "sample_system",
    .description = "system plugin sample (elfkit plugin_src/system_plugin.c)",
    .features = ELFKIT_PLUGIN_FEATURE_NONE,
    .sanitizer = ELFKIT_PLUGIN_SANITIZER_KIND,
};

static const elfkit_plugin_v0_t system_plugin = {
    .header = &system_header,
    .load = system_load,
    .unload = system_unload,
    .resolve = system_resolve,
};

ELFKIT_PLUGIN_EXPORT const elfkit_plugin_header_t** ELFKIT_PLUGIN_QUERY_FN(
    elfkit_plugin_version_t max_version, void* reserved) {
  (void)reserved;
  /* Our only interface is v0.1: answer any host that supports it. */
  return max_version >= ELFKIT_PLUGIN_VERSION_0_1
             ? (const elfkit_plugin_header_t**)&system_plugin
             : NULL;
}
