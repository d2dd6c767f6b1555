/* A hostile test plugin (built by tests/elfkit/exec/hostile/conftest.py with
 * elfkit.toolchain.compile_plugin for every CPU): out-of-bounds pokes,
 * endless loops, huge stack frames, and switching the FPU off. */
#include <stdint.h>

extern int32_t host_add(int32_t a, int32_t b);

/* p[off] = value: off may lie outside the buffer the caller passed */
void poke(uint8_t *p, int64_t off, uint32_t value) { ((volatile uint8_t *)p)[off] = (uint8_t)value; }
uint32_t peek(const uint8_t *p, int64_t off) { return ((volatile const uint8_t *)p)[off]; }

/* the pointer from one call, dereferenced in a later one */
static uint8_t *volatile g_kept;
void keep(uint8_t *p) { g_kept = p; }
void *kept(void) { return g_kept; }
uint32_t read_kept(int64_t off) { return ((volatile uint8_t *)g_kept)[off]; }
void write_kept(int64_t off, uint32_t value) { ((volatile uint8_t *)g_kept)[off] = (uint8_t)value; }

void spin(void) { for (;;) __asm__ volatile(""); }

/* sum of p[0..n), int32 -> int64 */
int64_t sum_i32(const int32_t *p, int64_t n) {
  int64_t s = 0;
  for (int64_t i = 0; i < n; i++) s += p[i];
  return s;
}

/* a frame of n bytes: touches its lowest byte, returns it */
__attribute__((noinline)) uint32_t deep_stack(uint64_t n) {
  volatile uint8_t buf[n];
  buf[0] = 0x5A;
  return buf[0];
}
/* a frame of n bytes that only reads its lowest byte */
__attribute__((noinline)) uint32_t deep_stack_read(uint64_t n) {
  volatile uint8_t buf[n];
  return buf[0];
}

double fmul(double a, double b) { return a * b; }

/* switch the floating-point unit off (or change its mode) and return */
void fpu_off(void) {
#if defined(__riscv)
  __asm__ volatile("csrw mstatus, zero");
#elif defined(__arm__)
  __asm__ volatile("vmsr fpexc, %0" ::"r"(0));
#elif defined(__aarch64__)
  __asm__ volatile("msr cpacr_el1, %0" ::"r"((uint64_t)0));
#elif defined(__x86_64__) || defined(__i386__)
  uint32_t m = 0x1F80 | (3u << 13);            /* MXCSR: round toward zero */
  __asm__ volatile("ldmxcsr %0" ::"m"(m));
  uint16_t cw = 0x37F | (3u << 10);            /* x87: round toward zero */
  __asm__ volatile("fldcw %0" ::"m"(cw));
#endif
}

/* set the rounding mode to "toward +inf" (where there is a user-level control) */
void round_up_mode(void) {
#if defined(__riscv)
  __asm__ volatile("fsrmi 3");
#elif defined(__arm__)
  uint32_t r;
  __asm__ volatile("vmrs %0, fpscr" : "=r"(r));
  r = (r & ~(3u << 22)) | (1u << 22);
  __asm__ volatile("vmsr fpscr, %0" ::"r"(r));
#elif defined(__aarch64__)
  uint64_t r;
  __asm__ volatile("mrs %0, fpcr" : "=r"(r));
  r = (r & ~(3ull << 22)) | (1ull << 22);
  __asm__ volatile("msr fpcr, %0" ::"r"(r));
#elif defined(__x86_64__) || defined(__i386__)
  uint32_t m = 0x1F80 | (2u << 13);
  __asm__ volatile("ldmxcsr %0" ::"m"(m));
  uint16_t cw = 0x37F | (2u << 10);
  __asm__ volatile("fldcw %0" ::"m"(cw));
#endif
}

/* 1.0 / 3.0 computed at run time (its last bit shows the rounding mode) */
double third(double one, double three) { return one / three; }

int32_t call_host_add(int32_t a, int32_t b) { return host_add(a, b); }
