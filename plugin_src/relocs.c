/*
 * relocs.c - test plugin whose job is to contain every kind of dynamic
 * relocation a bare-metal plugin can have without imports:
 *
 *   RELATIVE   function-pointer tables, data pointers, .init_array/.fini_array
 *              entries, a run of 70 consecutive pointers (one RELR bitmap)
 *              and pointers 568 bytes apart (separate RELR address entries)
 *   GLOB_DAT   loads of exported (default-visibility, preemptible) globals go
 *              through the GOT (riscv: R_RISCV_64 / R_RISCV_32 in the GOT)
 *   ABS        data words holding the address of an exported symbol
 *              (R_X86_64_64, R_AARCH64_ABS64, R_RISCV_64, R_ARM_ABS32,
 *              R_386_32, R_RISCV_32)
 *   JUMP_SLOT  a call from one export to another (through the PLT, since the
 *              callee is preemptible): against a symbol defined here
 *   IRELATIVE  a hidden ifunc
 *   PC64/PC32  only when built with ELFKIT_PCREL_WORD=1 (the relocs_pcrel
 *              variant), x86_64 / i386 only: a writable word holding
 *              `g_counter - <its own address>` (R_X86_64_PC64, R_386_PC32).
 *              glibc's ld.so (and IREE) do not apply R_X86_64_PC64, so the
 *              other variants leave it out and stay loadable by dlopen.
 *
 * plus DT_INIT (_init), DT_INIT_ARRAY, DT_FINI_ARRAY and DT_FINI (_fini)
 * with observable effects.  No undefined symbols: it loads without any
 * import provider.  Linked three ways (see plugin_src/CMakeLists.txt):
 * relocs (sysv hash), relocs_gnu (gnu hash only), relocs_relr (DT_RELR),
 * and relocs_pcrel (sysv hash, plus the PC-relative data word).
 */
#include "test_plugin.h"

/* ---- exported data: GLOB_DAT (GOT) and absolute relocations ------------- */

EXPORT int32_t g_counter = 41;

/* Absolute relocation against an exported data symbol. */
EXPORT int32_t* g_counter_ptr = &g_counter;

EXPORT NOINLINE int32_t exported_twice(int32_t x) {
  return (int32_t)(2u * (uint32_t)x);
}

/* A call from one export to another goes through the PLT (the callee may be
 * preempted): JUMP_SLOT against a symbol the plugin defines itself.
 * exported_twice(x) + 1. */
EXPORT int32_t twice_plus_one(int32_t x) {
  return (int32_t)((uint32_t)exported_twice(x) + 1u);
}

/* Absolute relocation against an exported function symbol. */
EXPORT int32_t (*g_fn_ptr)(int32_t) = exported_twice;

/* Through the GOT (default visibility => may be preempted => GOT slot). */
EXPORT int32_t get_counter(void) { return g_counter; }
EXPORT void set_counter(int32_t value) { g_counter = value; }
EXPORT int32_t bump_counter(void) { return ++g_counter; }

/* *g_counter_ptr */
EXPORT int32_t read_counter_ptr(void) { return *g_counter_ptr; }

/* g_fn_ptr(x): 2*x unless the host changed g_fn_ptr. */
EXPORT int32_t call_fn_ptr(int32_t x) { return g_fn_ptr(x); }

/* Address of g_counter as seen through the GOT (== exports["g_counter"]). */
EXPORT int32_t* counter_address(void) { return &g_counter; }

/* ---- RELATIVE: function-pointer table ----------------------------------- */

static int32_t op_add(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }
static int32_t op_sub(int32_t a, int32_t b) { return (int32_t)((uint32_t)a - (uint32_t)b); }
static int32_t op_mul(int32_t a, int32_t b) { return (int32_t)((uint32_t)a * (uint32_t)b); }
static int32_t op_xor(int32_t a, int32_t b) { return a ^ b; }

static int32_t (*const ops[4])(int32_t, int32_t) = {op_add, op_sub, op_mul, op_xor};

/* ops[i % 4](a, b): 0 add, 1 sub, 2 mul, 3 xor (wrapping int32). */
EXPORT int32_t call_op(uint32_t i, int32_t a, int32_t b) {
  int32_t (*volatile fn)(int32_t, int32_t) = ops[i & 3u];
  return fn(a, b);
}

/* ---- RELATIVE: data pointers -------------------------------------------- */

static const char greeting[] = "hello, plugin";
/* Exported pointer to a hidden string: RELATIVE. */
EXPORT const char* g_greeting = greeting;

/* Length of g_greeting (13). */
EXPORT uint32_t greeting_len(void) {
  uint32_t n = 0;
  while (g_greeting[n]) ++n;
  return n;
}

/* squares[k] = k*k; square_ptrs[k] = &squares[k]: 70 consecutive RELATIVE
 * words (RELR: one address entry plus bitmap entries). */
#define SQ1(k) (k) * (k)
#define SQ10(b) SQ1(b + 0), SQ1(b + 1), SQ1(b + 2), SQ1(b + 3), SQ1(b + 4), \
                SQ1(b + 5), SQ1(b + 6), SQ1(b + 7), SQ1(b + 8), SQ1(b + 9)
#define P1(k) &squares[k]
#define P10(b) P1(b + 0), P1(b + 1), P1(b + 2), P1(b + 3), P1(b + 4), \
               P1(b + 5), P1(b + 6), P1(b + 7), P1(b + 8), P1(b + 9)
#define NSQUARES 70
static const int32_t squares[NSQUARES] = {SQ10(0), SQ10(10), SQ10(20), SQ10(30),
                                          SQ10(40), SQ10(50), SQ10(60)};
static const int32_t* const square_ptrs[NSQUARES] = {P10(0), P10(10), P10(20), P10(30),
                                                     P10(40), P10(50), P10(60)};

/* sum over k < 70 of *square_ptrs[k] (= sum of k*k = 112385). */
EXPORT int64_t sum_square_ptrs(void) {
  int64_t s = 0;
  for (uint32_t k = 0; k < NSQUARES; ++k) {
    const int32_t* volatile p = square_ptrs[k];
    s += *p;
  }
  return s;
}

/* *square_ptrs[k % 70] */
EXPORT int32_t square_at(uint32_t k) {
  const int32_t* volatile p = square_ptrs[k % NSQUARES];
  return *p;
}

/* Writable pointers far apart (more than 63 words): separate RELR address
 * entries instead of one bitmap. */
struct sparse_entry {
  const char* name;
  uint64_t pad[70];
};
static struct sparse_entry sparse[3] = {{"alpha", {0}}, {"beta", {0}}, {"gamma", {0}}};

/* Length of sparse[i % 3].name: alpha 5, beta 4, gamma 5. */
EXPORT uint32_t sparse_len(uint32_t i) {
  const char* volatile s = sparse[i % 3u].name;
  uint32_t n = 0;
  while (s[n]) ++n;
  return n;
}

/* ---- IRELATIVE: a hidden ifunc ------------------------------------------ */

/* Which implementation the resolver picks (volatile so the compiler cannot
 * fold the resolver away). */
static volatile uint32_t ifunc_choice = 1;
static uint32_t ifunc_resolver_calls;

static int32_t triple_plus_one(int32_t x) { return (int32_t)(3u * (uint32_t)x + 1u); }
static int32_t never_chosen(int32_t x) { return (int32_t)(0u - (uint32_t)x); }

static void* pick_impl(void) {
  ifunc_resolver_calls++;
  return ifunc_choice ? (void*)triple_plus_one : (void*)never_chosen;
}

__attribute__((visibility("hidden"))) int32_t ifunc_target(int32_t x)
    __attribute__((ifunc("pick_impl")));

/* ifunc_target(x) = 3*x + 1 (wrapping int32). */
EXPORT int32_t call_ifunc(int32_t x) { return ifunc_target(x); }

/* How often the ifunc resolver ran (1 after loading). */
EXPORT uint32_t ifunc_resolved(void) { return ifunc_resolver_calls; }

/* ---- PC-relative data relocations (x86 only) ---------------------------- */

#ifndef ELFKIT_PCREL_WORD
#define ELFKIT_PCREL_WORD 0
#endif

/* lld only emits a dynamic PC-relative relocation where the target allows
 * one: R_X86_64_PC64 and R_386_PC32.  The word lives in writable data and
 * holds g_counter - &g_pcrel_word. */
#if ELFKIT_PCREL_WORD && defined(__x86_64__)
__asm__(".pushsection .data.elfkit_pcrel,\"aw\",@progbits\n"
        ".p2align 3\n"
        ".globl g_pcrel_word\n"
        ".type g_pcrel_word,@object\n"
        ".size g_pcrel_word,8\n"
        "g_pcrel_word: .quad g_counter - .\n"
        ".popsection\n");
#define HAVE_PCREL_WORD 1
#elif ELFKIT_PCREL_WORD && defined(__i386__)
__asm__(".pushsection .data.elfkit_pcrel,\"aw\",@progbits\n"
        ".p2align 2\n"
        ".globl g_pcrel_word\n"
        ".type g_pcrel_word,@object\n"
        ".size g_pcrel_word,4\n"
        "g_pcrel_word: .long g_counter - .\n"
        ".popsection\n");
#define HAVE_PCREL_WORD 1
#endif

#ifdef HAVE_PCREL_WORD
extern intptr_t g_pcrel_word;
/* g_pcrel_word = address of g_counter - address of g_pcrel_word. */
EXPORT intptr_t pcrel_value(void) { return g_pcrel_word; }
#endif

/* ---- DT_INIT, .init_array, .fini_array, DT_FINI ------------------------- */

static uint32_t init_log_value;
static uint32_t fini_log_value;
static uint32_t* volatile fini_flag;

static void record_fini(uint32_t step) {
  fini_log_value = fini_log_value * 10u + step;
  uint32_t* flag = fini_flag;
  if (flag) *flag = fini_log_value;
}

/* The linker points DT_INIT / DT_FINI at functions named _init / _fini. */
__attribute__((visibility("hidden"), used)) void _init(void) {
  init_log_value = init_log_value * 10u + 3u;
}
__attribute__((visibility("hidden"), used)) void _fini(void) { record_fini(2u); }

static void init_first(void) { init_log_value = init_log_value * 10u + 1u; }
static void init_second(void) { init_log_value = init_log_value * 10u + 2u; }
static void fini_first(void) { record_fini(1u); }

INIT_ARRAY_ENTRY static void (*const init_entries[2])(void) = {init_first, init_second};
FINI_ARRAY_ENTRY static void (*const fini_entries[1])(void) = {fini_first};

/* Digits of the initialisers in the order they ran: 312 when DT_INIT ran,
 * then .init_array in order (12 without DT_INIT, 0 when nothing ran). */
EXPORT uint32_t init_log(void) { return init_log_value; }

/* Same for finalisers: .fini_array (1) then DT_FINI (2) gives 12. */
EXPORT uint32_t fini_log(void) { return fini_log_value; }

/* After every finaliser step, *flag = fini_log (host memory that outlives
 * the plugin).  NULL turns it off. */
EXPORT void set_fini_flag(uint32_t* flag) { fini_flag = flag; }
