/*
 * standalone_plugin.c - a bare-metal executable plugin (no libc, no TLS, no
 * allocation, no writable globals).
 *
 * Provides one import, `simple_mul_workgroup`, with the argument struct and
 * semantics of IREE's custom CPU dispatch sample, so this plugin (packed into
 * a .sos, or as a plain .so) serves both the "plugin" and "ukernel" flavours
 * of that sample:
 *
 *   for i in [0, size):
 *     binding2[binding2_offset + i] = binding0[binding0_offset + i] *
 *                                     binding1[binding1_offset + i]
 *
 * Plugin name "sample_standalone", features STANDALONE, sanitizer NONE.
 * The only exported symbol is iree_hal_executable_plugin_query.
 */
#include "elfkit_plugin.h"

/* Argument struct of simple_mul_workgroup, as laid out by the compiler:
 * arguments in order, then the requested extra fields.  Offsets and sizes
 * are pointer-sized (`index`), element offsets count floats. */
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

#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(simple_mul_params_t) == 80, "LP64 params are 80 bytes");
_Static_assert(offsetof(simple_mul_params_t, processor_id) == 64, "processor_id at 64");
_Static_assert(offsetof(simple_mul_params_t, processor_data) == 72, "processor_data at 72");
#endif

static int simple_mul_workgroup(void* params_ptr, void* context, void* reserved) {
  (void)context;
  (void)reserved;
  const simple_mul_params_t* p = (const simple_mul_params_t*)params_ptr;
  const float* lhs = p->binding0 + p->binding0_offset;
  const float* rhs = p->binding1 + p->binding1_offset;
  float* out = p->binding2 + p->binding2_offset;
  for (size_t i = 0; i < p->size; ++i) {
    out[i] = lhs[i] * rhs[i];
  }
  return 0;
}

static elfkit_plugin_status_t standalone_load(
    const elfkit_plugin_environment_v0_t* environment, size_t param_count,
    const elfkit_plugin_string_pair_t* params, void** out_self) {
  (void)environment;
  (void)param_count;
  (void)params;
  *out_self = NULL; /* stateless */
  return elfkit_plugin_ok_status();
}

static void standalone_unload(void* self) { (void)self; }

static elfkit_plugin_status_t standalone_resolve(
    void* self, const elfkit_plugin_resolve_params_v0_t* params,
    elfkit_plugin_resolution_t* out_resolution) {
  (void)self;
  const elfkit_plugin_provided_t provided[] = {
      {"simple_mul_workgroup", (void*)simple_mul_workgroup, NULL},
  };
  return elfkit_plugin_resolve_from_table(provided, 1, params, out_resolution);
}

static const elfkit_plugin_header_t standalone_header = {
    .version = ELFKIT_PLUGIN_VERSION_LATEST,
    .name = "sample_standalone",
    .description = "standalone plugin sample (elfkit plugin_src/standalone_plugin.c)",
    .features = ELFKIT_PLUGIN_FEATURE_STANDALONE,
    .sanitizer = ELFKIT_PLUGIN_SANITIZER_KIND,
};

static const elfkit_plugin_v0_t standalone_plugin = {
    .header = &standalone_header,
    .load = standalone_load,
    .unload = standalone_unload,
    .resolve = standalone_resolve,
};

ELFKIT_PLUGIN_EXPORT const elfkit_plugin_header_t** ELFKIT_PLUGIN_QUERY_FN(
    elfkit_plugin_version_t max_version, void* reserved) {
  (void)reserved;
  /* Our only interface is v0.1: answer any host that supports it. */
  return max_version >= ELFKIT_PLUGIN_VERSION_0_1
             ? (const elfkit_plugin_header_t**)&standalone_plugin
             : NULL;
}
