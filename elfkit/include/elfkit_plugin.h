/*
 * elfkit_plugin.h - the executable-plugin ABI, version 1.
 *
 * A plugin is a shared object that exports one C function,
 * `iree_hal_executable_plugin_query`.  The host calls it to get a table of
 * three functions (load, unload, resolve); resolve hands out the functions
 * ("imports") that compiled dispatch code calls.  This header describes that
 * ABI with elfkit's own names.  Struct layouts, constant values and the
 * exported symbol name are binary compatible with IREE's executable plugins
 * (iree/hal/local/executable_plugin.h), so a plugin built against this
 * header can be loaded by IREE's runtime and by elfkit/vmrt.
 *
 * The header is self-contained (only <stdbool.h>, <stddef.h>, <stdint.h>)
 * and usable in bare-metal builds: plugins link nothing from the host.
 *
 * Status values cross the boundary as pointer-sized opaque values.  A plain
 * status code cast to a pointer is a valid status (0 is OK); plugins built
 * with a richer status representation must declare
 * ELFKIT_PLUGIN_FEATURE_FULL_STATUS.
 */
#ifndef ELFKIT_PLUGIN_H_
#define ELFKIT_PLUGIN_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Versions and the exported entry point                                    */
/* ------------------------------------------------------------------------ */

typedef uint32_t elfkit_plugin_version_t;

/* v0 interface (header + load/unload/resolve). */
#define ELFKIT_PLUGIN_VERSION_0_1 0x00000001u
#define ELFKIT_PLUGIN_VERSION_LATEST ELFKIT_PLUGIN_VERSION_0_1

/* Name of the one symbol a plugin must export. */
#define ELFKIT_PLUGIN_QUERY_NAME "iree_hal_executable_plugin_query"
#define ELFKIT_PLUGIN_QUERY_FN iree_hal_executable_plugin_query

#if defined(_WIN32) || defined(__CYGWIN__)
#define ELFKIT_PLUGIN_EXPORT __declspec(dllexport)
#else
#define ELFKIT_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* Size type used by the ABI for lengths and counts. */
#ifndef ELFKIT_PLUGIN_HOST_SIZE_T
#define ELFKIT_PLUGIN_HOST_SIZE_T size_t
#endif
typedef ELFKIT_PLUGIN_HOST_SIZE_T elfkit_plugin_size_t;

/* ------------------------------------------------------------------------ */
/* Features and sanitizers                                                  */
/* ------------------------------------------------------------------------ */

typedef uint32_t elfkit_plugin_features_t;
enum {
  ELFKIT_PLUGIN_FEATURE_NONE = 0u,
  /* No libc, TLS, syscalls or allocation outside the host allocator: the
   * plugin can be loaded by a platform-independent (embedded) ELF loader. */
  ELFKIT_PLUGIN_FEATURE_STANDALONE = 1u << 0,
  /* Returned statuses may be full status objects, not just codes. */
  ELFKIT_PLUGIN_FEATURE_FULL_STATUS = 1u << 1,
};

/* A C enum: 4 bytes on every supported target. */
typedef enum elfkit_plugin_sanitizer_kind_e {
  ELFKIT_PLUGIN_SANITIZER_NONE = 0,
  ELFKIT_PLUGIN_SANITIZER_ADDRESS = 1,
  ELFKIT_PLUGIN_SANITIZER_MEMORY = 2,
  ELFKIT_PLUGIN_SANITIZER_THREAD = 3,
  ELFKIT_PLUGIN_SANITIZER_UNDEFINED = 4,
  ELFKIT_PLUGIN_SANITIZER_MAX_ENUM = INT32_MAX,
} elfkit_plugin_sanitizer_kind_t;

/* The sanitizer this translation unit is compiled with (UBSan is not
 * detectable this way and is reported as NONE). */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ELFKIT_PLUGIN_SANITIZER_KIND ELFKIT_PLUGIN_SANITIZER_ADDRESS
#elif __has_feature(memory_sanitizer)
#define ELFKIT_PLUGIN_SANITIZER_KIND ELFKIT_PLUGIN_SANITIZER_MEMORY
#elif __has_feature(thread_sanitizer)
#define ELFKIT_PLUGIN_SANITIZER_KIND ELFKIT_PLUGIN_SANITIZER_THREAD
#endif
#endif
#if !defined(ELFKIT_PLUGIN_SANITIZER_KIND) && defined(__SANITIZE_ADDRESS__)
#define ELFKIT_PLUGIN_SANITIZER_KIND ELFKIT_PLUGIN_SANITIZER_ADDRESS
#endif
#if !defined(ELFKIT_PLUGIN_SANITIZER_KIND) && defined(__SANITIZE_THREAD__)
#define ELFKIT_PLUGIN_SANITIZER_KIND ELFKIT_PLUGIN_SANITIZER_THREAD
#endif
#ifndef ELFKIT_PLUGIN_SANITIZER_KIND
#define ELFKIT_PLUGIN_SANITIZER_KIND ELFKIT_PLUGIN_SANITIZER_NONE
#endif

/* ------------------------------------------------------------------------ */
/* Status                                                                   */
/* ------------------------------------------------------------------------ */

/* The numeric codes (same values as the host runtime's status codes). */
typedef enum elfkit_plugin_status_code_e {
  ELFKIT_PLUGIN_STATUS_OK = 0,
  ELFKIT_PLUGIN_STATUS_CANCELLED = 1,
  ELFKIT_PLUGIN_STATUS_UNKNOWN = 2,
  ELFKIT_PLUGIN_STATUS_INVALID_ARGUMENT = 3,
  ELFKIT_PLUGIN_STATUS_DEADLINE_EXCEEDED = 4,
  ELFKIT_PLUGIN_STATUS_NOT_FOUND = 5,
  ELFKIT_PLUGIN_STATUS_ALREADY_EXISTS = 6,
  ELFKIT_PLUGIN_STATUS_PERMISSION_DENIED = 7,
  ELFKIT_PLUGIN_STATUS_RESOURCE_EXHAUSTED = 8,
  ELFKIT_PLUGIN_STATUS_FAILED_PRECONDITION = 9,
  ELFKIT_PLUGIN_STATUS_ABORTED = 10,
  ELFKIT_PLUGIN_STATUS_OUT_OF_RANGE = 11,
  ELFKIT_PLUGIN_STATUS_UNIMPLEMENTED = 12,
  ELFKIT_PLUGIN_STATUS_INTERNAL = 13,
  ELFKIT_PLUGIN_STATUS_UNAVAILABLE = 14,
  ELFKIT_PLUGIN_STATUS_DATA_LOSS = 15,
  ELFKIT_PLUGIN_STATUS_UNAUTHENTICATED = 16,
  ELFKIT_PLUGIN_STATUS_DEFERRED = 17,
  ELFKIT_PLUGIN_STATUS_CODE_MASK = 0x1F,
} elfkit_plugin_status_code_t;

/* Opaque, pointer-sized.  NULL means OK. */
typedef struct elfkit_plugin_status_handle_s* elfkit_plugin_status_t;

static inline elfkit_plugin_status_t elfkit_plugin_status_from_code(
    elfkit_plugin_status_code_t code) {
  return (elfkit_plugin_status_t)(uintptr_t)((uint32_t)code &
                                             ELFKIT_PLUGIN_STATUS_CODE_MASK);
}
static inline elfkit_plugin_status_t elfkit_plugin_ok_status(void) {
  return (elfkit_plugin_status_t)0;
}
static inline bool elfkit_plugin_status_is_ok(elfkit_plugin_status_t status) {
  return status == (elfkit_plugin_status_t)0;
}
static inline elfkit_plugin_status_code_t elfkit_plugin_status_code(
    elfkit_plugin_status_t status) {
  return (elfkit_plugin_status_code_t)((uintptr_t)status &
                                       ELFKIT_PLUGIN_STATUS_CODE_MASK);
}

/* ------------------------------------------------------------------------ */
/* Strings                                                                  */
/* ------------------------------------------------------------------------ */

/* A length-delimited string; `data` is not NUL-terminated. */
typedef struct elfkit_plugin_string_view_t {
  const char* data;
  elfkit_plugin_size_t size;
} elfkit_plugin_string_view_t;

/* A key/value pair of string views (load-time parameters). */
typedef struct elfkit_plugin_string_pair_t {
  union {
    elfkit_plugin_string_view_t first;
    elfkit_plugin_string_view_t key;
  };
  union {
    elfkit_plugin_string_view_t second;
    elfkit_plugin_string_view_t value;
  };
} elfkit_plugin_string_pair_t;

/* Byte-wise unsigned comparison (like strcmp), usable without libc. */
static inline int elfkit_plugin_strcmp(const char* a, const char* b) {
  const unsigned char* x = (const unsigned char*)a;
  const unsigned char* y = (const unsigned char*)b;
  while (*x && *x == *y) {
    ++x;
    ++y;
  }
  return (int)*x - (int)*y;
}

/* ------------------------------------------------------------------------ */
/* Host allocator                                                           */
/* ------------------------------------------------------------------------ */

typedef enum elfkit_plugin_allocator_command_e {
  ELFKIT_PLUGIN_ALLOCATOR_COMMAND_MALLOC = 0,  /* uninitialised memory */
  ELFKIT_PLUGIN_ALLOCATOR_COMMAND_CALLOC = 1,  /* zeroed memory */
  ELFKIT_PLUGIN_ALLOCATOR_COMMAND_REALLOC = 2,
  ELFKIT_PLUGIN_ALLOCATOR_COMMAND_FREE = 3,
} elfkit_plugin_allocator_command_t;

typedef struct elfkit_plugin_allocator_alloc_params_t {
  elfkit_plugin_size_t byte_length;
} elfkit_plugin_allocator_alloc_params_t;

/* ctl(self, command, params, inout_ptr): params points at an
 * elfkit_plugin_allocator_alloc_params_t for MALLOC/CALLOC/REALLOC and is
 * NULL for FREE; *inout_ptr is the block in and out. */
typedef elfkit_plugin_status_t (*elfkit_plugin_allocator_ctl_fn_t)(
    void* self, elfkit_plugin_allocator_command_t command, const void* params,
    void** inout_ptr);

typedef struct elfkit_plugin_allocator_t {
  void* self;
  elfkit_plugin_allocator_ctl_fn_t ctl;
} elfkit_plugin_allocator_t;

static inline elfkit_plugin_status_t elfkit_plugin_allocator_malloc(
    elfkit_plugin_allocator_t allocator, elfkit_plugin_size_t byte_length,
    void** out_ptr) {
  elfkit_plugin_allocator_alloc_params_t params = {byte_length};
  return allocator.ctl(allocator.self, ELFKIT_PLUGIN_ALLOCATOR_COMMAND_MALLOC,
                       &params, out_ptr);
}

static inline void elfkit_plugin_allocator_free(
    elfkit_plugin_allocator_t allocator, void* ptr) {
  allocator.ctl(allocator.self, ELFKIT_PLUGIN_ALLOCATOR_COMMAND_FREE, NULL,
                &ptr);
}

/* ------------------------------------------------------------------------ */
/* The plugin header and the v0 interface                                   */
/* ------------------------------------------------------------------------ */

typedef struct elfkit_plugin_header_t {
  /* ELFKIT_PLUGIN_VERSION_* the plugin implements. */
  elfkit_plugin_version_t version;
  /* Identifier used in logs and error messages, e.g. "my_plugin". */
  const char* name;
  /* Free-form description. */
  const char* description;
  /* ELFKIT_PLUGIN_FEATURE_* bits. */
  elfkit_plugin_features_t features;
  /* The sanitizer the plugin is built with; the host refuses plugins that
   * need a sanitizer runtime it does not have. */
  elfkit_plugin_sanitizer_kind_t sanitizer;
  /* Must be zero. */
  uint64_t reserved[8];
} elfkit_plugin_header_t;

/* Environment handed to load(); the pointer is only valid during the call
 * but the allocator may be kept until unload(). */
typedef struct elfkit_plugin_environment_v0_t {
  elfkit_plugin_allocator_t host_allocator;
} elfkit_plugin_environment_v0_t;

/* Bits of *out_resolution. */
typedef uint32_t elfkit_plugin_resolution_t;
enum {
  /* At least one optional ("?"-prefixed) import was not found. */
  ELFKIT_PLUGIN_RESOLUTION_MISSING_OPTIONAL = 1u << 0,
};

/* resolve() input: `count` symbol names (sorted ascending by byte-wise
 * strcmp), and the host's live slots for the function pointers and their
 * contexts.  A name starting with '?' is optional.  Slots that are already
 * non-NULL must be skipped and left unchanged. */
typedef struct elfkit_plugin_resolve_params_v0_t {
  elfkit_plugin_size_t count;
  const char* const* symbol_names;
  void** out_fn_ptrs;
  void** out_fn_contexts;
} elfkit_plugin_resolve_params_v0_t;

typedef elfkit_plugin_status_t (*elfkit_plugin_load_fn_v0_t)(
    const elfkit_plugin_environment_v0_t* environment,
    elfkit_plugin_size_t param_count, const elfkit_plugin_string_pair_t* params,
    void** out_self);

typedef void (*elfkit_plugin_unload_fn_v0_t)(void* self);

/* Returns OK when every required import was resolved (MISSING_OPTIONAL may
 * be set), NOT_FOUND when some required import is unknown (known ones are
 * still filled in); any other code is a hard failure. */
typedef elfkit_plugin_status_t (*elfkit_plugin_resolve_fn_v0_t)(
    void* self, const elfkit_plugin_resolve_params_v0_t* params,
    elfkit_plugin_resolution_t* out_resolution);

/* What the query function returns (as `const elfkit_plugin_header_t**`: the
 * header pointer is the first member).  May live in read-only data. */
typedef struct elfkit_plugin_v0_t {
  const elfkit_plugin_header_t* header;
  elfkit_plugin_load_fn_v0_t load;
  elfkit_plugin_unload_fn_v0_t unload;
  elfkit_plugin_resolve_fn_v0_t resolve;
} elfkit_plugin_v0_t;

/* The exported entry point.  Returns NULL when the plugin cannot provide an
 * interface at or below `max_version`; `reserved` is NULL.  Must be pure. */
typedef const elfkit_plugin_header_t** (*elfkit_plugin_query_fn_t)(
    elfkit_plugin_version_t max_version, void* reserved);

/* True when an import name is optional ('?' prefix). */
static inline bool elfkit_plugin_import_is_optional(const char* symbol_name) {
  return symbol_name && symbol_name[0] == '?';
}

/* The name without its optional '?' prefix. */
static inline const char* elfkit_plugin_import_name(const char* symbol_name) {
  return elfkit_plugin_import_is_optional(symbol_name) ? symbol_name + 1
                                                       : symbol_name;
}

/* ------------------------------------------------------------------------ */
/* Import functions                                                         */
/* ------------------------------------------------------------------------ */

/* Every function handed out by resolve() has this type.  `params` points to
 * the call's argument struct (results first, then arguments, then extra
 * fields such as processor_id/processor_data; natural alignment), `context`
 * is what resolve() stored next to the function pointer, `reserved` is NULL.
 * 0 means success; anything else is a fatal error for the dispatch. */
typedef int (*elfkit_plugin_import_fn_v0_t)(void* params, void* context,
                                            void* reserved);

/* One function a plugin provides: its import name (without '?'), the
 * function, and the context to store next to it.  An entry whose `fn` is
 * NULL is skipped (handy for entries enabled at build or load time). */
typedef struct elfkit_plugin_provided_t {
  const char* name;
  void* fn;
  void* context;
} elfkit_plugin_provided_t;

/* The whole resolve() protocol over a table of provided functions: skip slots
 * that are already filled, strip an optional '?', fill what the table has,
 * set MISSING_OPTIONAL for unknown optional names, and return NOT_FOUND if a
 * required name is unknown (known ones are still filled in). */
static inline elfkit_plugin_status_t elfkit_plugin_resolve_from_table(
    const elfkit_plugin_provided_t* table, elfkit_plugin_size_t table_count,
    const elfkit_plugin_resolve_params_v0_t* params,
    elfkit_plugin_resolution_t* out_resolution) {
  *out_resolution = 0;
  bool any_required_missing = false;
  for (elfkit_plugin_size_t i = 0; i < params->count; ++i) {
    if (params->out_fn_ptrs[i]) continue; /* resolved by a newer provider */
    const char* name = params->symbol_names[i];
    bool optional = elfkit_plugin_import_is_optional(name);
    name = elfkit_plugin_import_name(name);
    bool found = false;
    for (elfkit_plugin_size_t k = 0; k < table_count && !found; ++k) {
      if (table[k].fn && elfkit_plugin_strcmp(name, table[k].name) == 0) {
        params->out_fn_ptrs[i] = table[k].fn;
        params->out_fn_contexts[i] = table[k].context;
        found = true;
      }
    }
    if (found) continue;
    if (optional) {
      *out_resolution |= ELFKIT_PLUGIN_RESOLUTION_MISSING_OPTIONAL;
    } else {
      any_required_missing = true;
    }
  }
  return any_required_missing
             ? elfkit_plugin_status_from_code(ELFKIT_PLUGIN_STATUS_NOT_FOUND)
             : elfkit_plugin_ok_status();
}

/* ------------------------------------------------------------------------ */
/* Layout checks                                                            */
/* ------------------------------------------------------------------------ */

#if !defined(__cplusplus) && defined(__STDC_VERSION__) && \
    __STDC_VERSION__ >= 201112L
#define ELFKIT_PLUGIN_STATIC_ASSERT_(c, m) _Static_assert(c, m)
#elif defined(__cplusplus) && __cplusplus >= 201103L
#define ELFKIT_PLUGIN_STATIC_ASSERT_(c, m) static_assert(c, m)
#else
#define ELFKIT_PLUGIN_STATIC_ASSERT_(c, m)
#endif

ELFKIT_PLUGIN_STATIC_ASSERT_(sizeof(elfkit_plugin_sanitizer_kind_t) == 4,
                             "sanitizer kind is 4 bytes");
ELFKIT_PLUGIN_STATIC_ASSERT_(sizeof(elfkit_plugin_v0_t) == 4 * sizeof(void*),
                             "v0 is four pointers");
ELFKIT_PLUGIN_STATIC_ASSERT_(offsetof(elfkit_plugin_header_t, name) ==
                                 sizeof(void*),
                             "header.name follows the padded version");
ELFKIT_PLUGIN_STATIC_ASSERT_(sizeof(elfkit_plugin_resolve_params_v0_t) ==
                                 4 * sizeof(void*),
                             "resolve params are four words");
#if UINTPTR_MAX == UINT64_MAX
ELFKIT_PLUGIN_STATIC_ASSERT_(sizeof(elfkit_plugin_header_t) == 96,
                             "LP64 header is 96 bytes");
ELFKIT_PLUGIN_STATIC_ASSERT_(offsetof(elfkit_plugin_header_t, features) == 24,
                             "LP64 header.features at 24");
ELFKIT_PLUGIN_STATIC_ASSERT_(offsetof(elfkit_plugin_header_t, reserved) == 32,
                             "LP64 header.reserved at 32");
ELFKIT_PLUGIN_STATIC_ASSERT_(sizeof(elfkit_plugin_string_pair_t) == 32,
                             "LP64 string pair is 32 bytes");
ELFKIT_PLUGIN_STATIC_ASSERT_(sizeof(elfkit_plugin_environment_v0_t) == 16,
                             "LP64 environment is 16 bytes");
#endif

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* ELFKIT_PLUGIN_H_ */
