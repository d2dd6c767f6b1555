/*
 * kernels.c - computational test plugin: scalar and buffer kernels over
 * integers and floats, calling-convention stress (many / mixed arguments),
 * a large .bss, and functions that misbehave on purpose (wild stores and
 * loads, endless loops, deep recursion) for fault, timeout and stack tests.
 *
 * No imports (linked with --no-undefined).  Every export is documented in
 * tests/plugins.py together with the formula its result follows.
 *
 * Floating point: no contraction (a*b+c is two roundings, never an fma)
 * and sums run left to right, so results can be reproduced exactly.
 * Only int32 -> double conversions are used: on 32-bit targets int64 <->
 * double needs compiler-rt, which a bare-metal plugin does not link.
 */
#include "test_plugin.h"

#pragma STDC FP_CONTRACT OFF
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

/* ---- scalar integer ---------------------------------------------------- */

EXPORT int32_t add_i32(int32_t a, int32_t b) {
  return (int32_t)((uint32_t)a + (uint32_t)b);
}

EXPORT int64_t add_i64(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a + (uint64_t)b);
}

EXPORT uint64_t mul_u64(uint64_t a, uint64_t b) { return a * b; }

/* a0 + 2*a1 + ... + 10*a9, exact in int64. */
EXPORT int64_t many_i32(int32_t a0, int32_t a1, int32_t a2, int32_t a3,
                        int32_t a4, int32_t a5, int32_t a6, int32_t a7,
                        int32_t a8, int32_t a9) {
  return (int64_t)a0 + 2 * (int64_t)a1 + 3 * (int64_t)a2 + 4 * (int64_t)a3 +
         5 * (int64_t)a4 + 6 * (int64_t)a5 + 7 * (int64_t)a6 +
         8 * (int64_t)a7 + 9 * (int64_t)a8 + 10 * (int64_t)a9;
}

/* a0 + 2*a1 + ... + 10*a9, modulo 2**64. */
EXPORT int64_t many_i64(int64_t a0, int64_t a1, int64_t a2, int64_t a3,
                        int64_t a4, int64_t a5, int64_t a6, int64_t a7,
                        int64_t a8, int64_t a9) {
  uint64_t r = (uint64_t)a0 + 2u * (uint64_t)a1 + 3u * (uint64_t)a2 +
               4u * (uint64_t)a3 + 5u * (uint64_t)a4 + 6u * (uint64_t)a5 +
               7u * (uint64_t)a6 + 8u * (uint64_t)a7 + 9u * (uint64_t)a8 +
               10u * (uint64_t)a9;
  return (int64_t)r;
}

/* ---- scalar floating point --------------------------------------------- */

/* a*b + c with two roundings. */
EXPORT double muladd_f64(double a, double b, double c) {
  double p = a * b;
  return p + c;
}

EXPORT float scale_f32(float x, float s) { return x * s; }

/* (double)a*x + (double)b*(double)y */
EXPORT double mix_if(int32_t a, double x, int32_t b, float y) {
  double l = (double)a * x;
  double r = (double)b * (double)y;
  return l + r;
}

/* ((((a + 2b) + 3c) + 4d) + 5e), all in double; on arm hard-float the
 * floats back-fill single registers between the doubles. */
EXPORT double mix_fd(float a, double b, float c, double d, float e) {
  double r = (double)a;
  r = r + 2.0 * b;
  r = r + 3.0 * (double)c;
  r = r + 4.0 * d;
  r = r + 5.0 * (double)e;
  return r;
}

/* d0 + 2*d1 + ... + 10*d9, left to right. */
EXPORT double many_f64(double d0, double d1, double d2, double d3, double d4,
                       double d5, double d6, double d7, double d8, double d9) {
  double r = d0;
  r = r + 2.0 * d1;
  r = r + 3.0 * d2;
  r = r + 4.0 * d3;
  r = r + 5.0 * d4;
  r = r + 6.0 * d5;
  r = r + 7.0 * d6;
  r = r + 8.0 * d7;
  r = r + 9.0 * d8;
  r = r + 10.0 * d9;
  return r;
}

/* f0 + 2*f1 + ... + 10*f9, left to right, every step rounded to float. */
EXPORT float many_f32(float f0, float f1, float f2, float f3, float f4,
                      float f5, float f6, float f7, float f8, float f9) {
  float r = f0;
  r = r + 2.0f * f1;
  r = r + 3.0f * f2;
  r = r + 4.0f * f3;
  r = r + 5.0f * f4;
  r = r + 6.0f * f5;
  r = r + 7.0f * f6;
  r = r + 8.0f * f7;
  r = r + 9.0f * f8;
  r = r + 10.0f * f9;
  return r;
}

/* acc = 0; for k in 0..9: acc = (acc + (k+1)*(double)i_k) + d_k */
EXPORT double many_mixed(int32_t i0, double d0, int32_t i1, double d1,
                         int32_t i2, double d2, int32_t i3, double d3,
                         int32_t i4, double d4, int32_t i5, double d5,
                         int32_t i6, double d6, int32_t i7, double d7,
                         int32_t i8, double d8, int32_t i9, double d9) {
  double acc = 0.0;
  acc = (acc + 1.0 * (double)i0) + d0;
  acc = (acc + 2.0 * (double)i1) + d1;
  acc = (acc + 3.0 * (double)i2) + d2;
  acc = (acc + 4.0 * (double)i3) + d3;
  acc = (acc + 5.0 * (double)i4) + d4;
  acc = (acc + 6.0 * (double)i5) + d5;
  acc = (acc + 7.0 * (double)i6) + d6;
  acc = (acc + 8.0 * (double)i7) + d7;
  acc = (acc + 9.0 * (double)i8) + d8;
  acc = (acc + 10.0 * (double)i9) + d9;
  return acc;
}

/* ---- buffer kernels ---------------------------------------------------- */

/* p[0] + ... + p[n-1] in int64 (n <= 0: 0). */
EXPORT int64_t sum_i32(const int32_t* p, int64_t n) {
  int64_t s = 0;
  for (int64_t i = 0; i < n; ++i) s += p[i];
  return s;
}

/* out[i] = start + i (wrapping int32), i < n. */
EXPORT void iota_i32(int32_t* out, int64_t n, int32_t start) {
  for (int64_t i = 0; i < n; ++i) out[i] = (int32_t)((uint32_t)start + (uint32_t)i);
}

/* out[i] = a[i] + b[i] (float32), i < n. */
EXPORT void add_f32(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

/* out[i] = in[i] * s (float64), i < n. */
EXPORT void scale_f64(double* out, const double* in, double s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = in[i] * s;
}

/* ((a[0]*b[0] + a[1]*b[1]) + ...) left to right, no fma. */
EXPORT double dot_f64(const double* a, const double* b, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    double p = a[i] * b[i];
    s = s + p;
  }
  return s;
}

/* ---- a large .bss ------------------------------------------------------ */

#define BIG_BSS_SIZE (1u << 20) /* 1 MiB */
static uint8_t big_bss[BIG_BSS_SIZE];

EXPORT uint32_t bss_size(void) { return BIG_BSS_SIZE; }

/* big_bss[i] = (value + i) & 0xff for every i. */
EXPORT void bss_fill(uint32_t value) {
  for (uint32_t i = 0; i < BIG_BSS_SIZE; ++i) big_bss[i] = (uint8_t)(value + i);
}

/* Sum of all bytes of big_bss (0 right after loading). */
EXPORT uint64_t bss_sum(void) {
  uint64_t s = 0;
  for (uint32_t i = 0; i < BIG_BSS_SIZE; ++i) s += big_bss[i];
  return s;
}

/* big_bss[i % size] */
EXPORT uint32_t bss_get(uint32_t i) { return big_bss[i % BIG_BSS_SIZE]; }

/* Address of big_bss (to check it is inside the image). */
EXPORT void* bss_address(void) { return big_bss; }

/* ---- misbehaviour ------------------------------------------------------ */

/* Store `value` at an arbitrary address (a wild / out-of-bounds write). */
EXPORT void write_u32(uintptr_t address, uint32_t value) {
  *(volatile uint32_t*)address = value;
}

/* Load from an arbitrary address. */
EXPORT uint32_t read_u32(uintptr_t address) {
  return *(volatile const uint32_t*)address;
}

/* Store 0xDEADBEEF to the fixed address 0x10 (the unmapped first page). */
EXPORT void crash_store(void) {
  *(volatile uint32_t*)(uintptr_t)0x10 = 0xDEADBEEFu;
}

/* Write `n` bytes of `value` starting at `p`: out of bounds when `n` is
 * larger than the buffer. */
EXPORT void fill_u8(uint8_t* p, int64_t n, uint32_t value) {
  volatile uint8_t* q = p;
  for (int64_t i = 0; i < n; ++i) q[i] = (uint8_t)value;
}

/* Never returns. */
EXPORT void spin_forever(void) {
  volatile uint32_t n = 0;
  for (;;) n = n + 1;
}

/* Busy loop of `n` iterations; returns n. */
EXPORT uint64_t spin(uint64_t n) {
  volatile uint64_t i = 0;
  while (i < n) i = i + 1;
  return i;
}

static NOINLINE uint64_t recurse_impl(uint64_t depth) {
  volatile uint8_t frame[64];
  if (depth == 0) return 0;
  /* Volatile stores to every byte: the whole buffer stays on the stack. */
  frame[0] = (uint8_t)depth;
  for (uint32_t i = 1; i < 64; ++i) frame[i] = (uint8_t)i;
  uint64_t below = recurse_impl(depth - 1);
  return below + frame[0] + frame[1];
}

/* recurse(0) = 0; recurse(d) = recurse(d-1) + (d & 0xff) + 1.
 * Not a tail call: every level keeps a 64-byte buffer alive across the
 * recursive call, so the stack grows by at least 64 bytes per level (80-96
 * with the saved registers, depending on the arch). */
EXPORT uint64_t recurse(uint64_t depth) { return recurse_impl(depth); }
