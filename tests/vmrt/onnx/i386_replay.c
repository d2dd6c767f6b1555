/* Runs one workgroup call of an i386 dispatch on the real CPU, in a 32-bit
   process (tests/vmrt/onnx/real_i386.py builds it with gcc -m32, freestanding).

   stdin:  u32 count, function, environment, dispatch state, workgroup state;
           then per region: u32 address, size, and its bytes.
   stdout: i32 the function's return value, then each region's bytes after
           the call, in the same order.
   Exit status 0 (also for function 0: a probe that the host runs it);
   3-6 when the input or a mapping fails.

   The regions are mapped at the addresses the emulated guest had them at, so
   every pointer in them stays valid; the process itself lives at 0x70000000
   (linked there) and on the kernel's stack near the top of the 4 GiB. */
typedef unsigned int u32;
typedef unsigned char u8;

static long sys3(long n, long a, long b, long c)
{
    long r;
    __asm__ volatile("int $0x80" : "=a"(r) : "a"(n), "b"(a), "c"(b), "d"(c) : "memory");
    return r;
}

static void leave(int status) { sys3(1, status, 0, 0); }

/* old_mmap(struct): anonymous, private, fixed, read/write/execute */
static long map_fixed(u32 addr, u32 len)
{
    u32 args[6] = {addr, len, 7, 0x32, (u32)-1, 0};
    long r;
    __asm__ volatile("int $0x80" : "=a"(r) : "a"(90), "b"(args) : "memory");
    return r;
}

static void read_all(void *p, u32 n)
{
    u8 *q = p;
    while (n) {
        long r = sys3(3, 0, (long)q, n);
        if (r <= 0)
            leave(3);
        q += r;
        n -= r;
    }
}

static void write_all(const void *p, u32 n)
{
    const u8 *q = p;
    while (n) {
        long r = sys3(4, 1, (long)q, n);
        if (r <= 0)
            leave(4);
        q += r;
        n -= r;
    }
}

static u32 head[5];
static u32 region[256][2];

typedef int (*dispatch_fn)(u32, u32, u32);

void _start(void)
{
    read_all(head, sizeof head);
    u32 n = head[0];
    if (n > 256)
        leave(5);
    for (u32 i = 0; i < n; i++) {
        read_all(region[i], 8);
        u32 lo = region[i][0] & ~0xfffu;
        u32 hi = (region[i][0] + region[i][1] + 0xfffu) & ~0xfffu;
        if (map_fixed(lo, hi - lo) != (long)lo)
            leave(6);
        read_all((void *)region[i][0], region[i][1]);
    }
    if (head[1] == 0)       /* a probe: nothing to call */
        leave(0);
    int rc = ((dispatch_fn)head[1])(head[2], head[3], head[4]);
    write_all(&rc, 4);
    for (u32 i = 0; i < n; i++)
        write_all((void *)region[i][0], region[i][1]);
    leave(0);
}
