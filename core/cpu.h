/* cpu.h - what the processor can do, for code that picks its widest
 * vector steps at run time (the build targets plain x86-64, where SSE2 is
 * the most that can be assumed), and its hint for a polling loop. */
#ifndef TABLED_CPU_H
#define TABLED_CPU_H

/* 1 when the processor has AVX2; asked once (per file that uses it). */
static inline int cpu_has_avx2(void)
{
#if defined(__x86_64__) || defined(__i386__)
    static int avx2 = -1;
    if (avx2 < 0)
        avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
    return avx2;
#else
    return 0;
#endif
}

/* A hint inside a loop that polls memory another thread will change: lets
 * the other hardware thread of the core run, and saves power. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#endif
