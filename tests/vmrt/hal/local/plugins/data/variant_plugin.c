/*
 * variant_plugin.c - a bare-metal executable plugin whose behaviour is set
 * at compile time, for vmrt's plugin tests (built by
 * tests/vmrt_plugins/conftest.py with zig for several CPUs).
 *
 *   VARIANT_NAME            header name                       ("variant")
 *   VARIANT_SANITIZER       header sanitizer value            (0)
 *   VARIANT_FEATURES        header features                   (STANDALONE)
 *   VARIANT_QUERY_NULL      query returns NULL                (0)
 *   VARIANT_QUERY_SPIN      query never returns               (0)
 *   VARIANT_LOAD_STATUS     load() fails with this code       (0)
 *   VARIANT_RESOLVE_STATUS  resolve() returns this code after
 *                           filling what it knows             (0: normal)
 *   VARIANT_FACTOR          simple_mul_workgroup computes
 *                           out = lhs * rhs * FACTOR          (1)
 *   VARIANT_IMPORT_STATUS   simple_mul_workgroup returns this (0)
 *   VARIANT_PROVIDES        bit 0: simple_mul_workgroup,
 *                           bit 1: echo_params,
 *                           bit 2: vmrt_optional_probe        (3)
 *
 * load() keeps its state in memory from the host allocator: a struct
 * (MALLOC) and the parameters as "key=value;" text grown with REALLOC; the
 * import echo_params returns that text through its params struct
 * ({const char* text; size_t length; size_t loads} - results first), with
 * the state as its context.  unload() FREEs both.
 */
#include "elfkit_plugin.h"

#ifndef VARIANT_NAME
#define VARIANT_NAME "variant"
#endif
#ifndef VARIANT_SANITIZER
#define VARIANT_SANITIZER 0
#endif
#ifndef VARIANT_FEATURES
#define VARIANT_FEATURES ELFKIT_PLUGIN_FEATURE_STANDALONE
#endif
#ifndef VARIANT_QUERY_NULL
#define VARIANT_QUERY_NULL 0
#endif
#ifndef VARIANT_QUERY_SPIN
#define VARIANT_QUERY_SPIN 0
#endif
#ifndef VARIANT_LOAD_STATUS
#define VARIANT_LOAD_STATUS 0
#endif
#ifndef VARIANT_RESOLVE_STATUS
#define VARIANT_RESOLVE_STATUS 0
#endif
#ifndef VARIANT_FACTOR
#define VARIANT_FACTOR 1.0f
#endif
#ifndef VARIANT_IMPORT_STATUS
#define VARIANT_IMPORT_STATUS 0
#endif
#ifndef VARIANT_PROVIDES
#define VARIANT_PROVIDES 3
#endif

typedef struct variant_state_t {
  elfkit_plugin_allocator_t allocator;
  char* text;
  size_t length;
  size_t capacity;
} variant_state_t;

typedef struct simple_mul_params_t {
  const float* binding0;
  size_t binding0_offset;
  const float* binding1;
  size_t binding1_offset;
  float* binding2;
  size_t binding2_offset;
  size_t size;
  size_t tid;
  uint32_t processor_id;
  const uint64_t* processor_data;
} simple_mul_params_t;

typedef struct echo_params_t {
  const char* text;
  size_t length;
} echo_params_t;

static int simple_mul_workgroup(void* params_ptr, void* context, void* reserved) {
  (void)context;
  (void)reserved;
  simple_mul_params_t* p = (simple_mul_params_t*)params_ptr;
  for (size_t i = 0; i < p->size; ++i) {
    p->binding2[p->binding2_offset + i] = p->binding0[p->binding0_offset + i] *
                                          p->binding1[p->binding1_offset + i] *
                                          VARIANT_FACTOR;
  }
  return VARIANT_IMPORT_STATUS;
}

static int echo_params(void* params_ptr, void* context, void* reserved) {
  (void)reserved;
  echo_params_t* p = (echo_params_t*)params_ptr;
  variant_state_t* s = (variant_state_t*)context;
  p->text = s ? s->text : 0;
  p->length = s ? s->length : 0;
  return 0;
}

static int optional_probe(void* params_ptr, void* context, void* reserved) {
  (void)params_ptr;
  (void)context;
  (void)reserved;
  return 0;
}

static elfkit_plugin_status_t append(variant_state_t* s, const char* data, size_t n) {
  if (s->length + n + 1 > s->capacity) {
    size_t want = s->capacity ? s->capacity : 8;
    while (want < s->length + n + 1) want *= 2;
    elfkit_plugin_allocator_alloc_params_t ap = {want};
    void* ptr = s->text;
    elfkit_plugin_status_t st = s->allocator.ctl(
        s->allocator.self, ELFKIT_PLUGIN_ALLOCATOR_COMMAND_REALLOC, &ap, &ptr);
    if (!elfkit_plugin_status_is_ok(st)) return st;
    s->text = (char*)ptr;
    s->capacity = want;
  }
  for (size_t i = 0; i < n; ++i) s->text[s->length + i] = data[i];
  s->length += n;
  s->text[s->length] = 0;
  return elfkit_plugin_ok_status();
}

static elfkit_plugin_status_t variant_load(
    const elfkit_plugin_environment_v0_t* environment, size_t param_count,
    const elfkit_plugin_string_pair_t* params, void** out_self) {
  if (VARIANT_LOAD_STATUS) {
    return elfkit_plugin_status_from_code(
        (elfkit_plugin_status_code_t)VARIANT_LOAD_STATUS);
  }
  variant_state_t* s = 0;
  elfkit_plugin_status_t st = elfkit_plugin_allocator_malloc(
      environment->host_allocator, sizeof(*s), (void**)&s);
  if (!elfkit_plugin_status_is_ok(st)) return st;
  s->allocator = environment->host_allocator;
  s->text = 0;
  s->length = 0;
  s->capacity = 0;
  st = append(s, "", 0);
  for (size_t i = 0; elfkit_plugin_status_is_ok(st) && i < param_count; ++i) {
    st = append(s, params[i].key.data, params[i].key.size);
    if (elfkit_plugin_status_is_ok(st)) st = append(s, "=", 1);
    if (elfkit_plugin_status_is_ok(st))
      st = append(s, params[i].value.data, params[i].value.size);
    if (elfkit_plugin_status_is_ok(st)) st = append(s, ";", 1);
  }
  *out_self = s;
  return st;
}

static void variant_unload(void* self) {
  variant_state_t* s = (variant_state_t*)self;
  if (!s) return;
  elfkit_plugin_allocator_t a = s->allocator;
  if (s->text) elfkit_plugin_allocator_free(a, s->text);
  elfkit_plugin_allocator_free(a, s);
}

static elfkit_plugin_status_t variant_resolve(
    void* self, const elfkit_plugin_resolve_params_v0_t* params,
    elfkit_plugin_resolution_t* out_resolution) {
  /* VARIANT_PROVIDES selects the entries; a NULL fn is skipped */
  const elfkit_plugin_provided_t provided[] = {
      {"simple_mul_workgroup", (VARIANT_PROVIDES & 1) ? (void*)simple_mul_workgroup : 0, 0},
      {"echo_params", (VARIANT_PROVIDES & 2) ? (void*)echo_params : 0, self},
      {"vmrt_optional_probe", (VARIANT_PROVIDES & 4) ? (void*)optional_probe : 0, 0},
  };
  elfkit_plugin_status_t st =
      elfkit_plugin_resolve_from_table(provided, 3, params, out_resolution);
  if (VARIANT_RESOLVE_STATUS) {
    return elfkit_plugin_status_from_code(
        (elfkit_plugin_status_code_t)VARIANT_RESOLVE_STATUS);
  }
  return st;
}

static const elfkit_plugin_header_t variant_header = {
    .version = ELFKIT_PLUGIN_VERSION_LATEST,
    .name = VARIANT_NAME,
    .description = "vmrt test plugin (tests/vmrt_plugins/data/variant_plugin.c)",
    .features = VARIANT_FEATURES,
    .sanitizer = (elfkit_plugin_sanitizer_kind_t)VARIANT_SANITIZER,
};

static const elfkit_plugin_v0_t variant_plugin = {
    .header = &variant_header,
    .load = variant_load,
    .unload = variant_unload,
    .resolve = variant_resolve,
};

ELFKIT_PLUGIN_EXPORT const elfkit_plugin_header_t** ELFKIT_PLUGIN_QUERY_FN(
    elfkit_plugin_version_t max_version, void* reserved) {
  (void)reserved;
  if (VARIANT_QUERY_NULL) return 0;
  if (VARIANT_QUERY_SPIN)
    for (;;) __asm__ volatile("");
  return max_version >= ELFKIT_PLUGIN_VERSION_0_1
             ? (const elfkit_plugin_header_t**)&variant_plugin
             : 0;
}
