/*
 * crc32.c -- CRC-32 by ISA-L or zlib, the same values (see crc32.h).
 */
#include "crc32.h"

#include <limits.h>
#include <zlib.h>

#if HEAPSCAN_HAVE_ISAL
#include <isa-l/crc.h>
#endif

#if HEAPSCAN_HAVE_ISAL && defined(__x86_64__)
#define HAVE_FOLD256 1
#include <immintrin.h>
#else
#define HAVE_FOLD256 0
#endif

uint32_t crc32_update_zlib(uint32_t crc, const void *buf, size_t len)
{
    const unsigned char *p = buf;
    uLong c = crc;
    while (len > 0) { /* zlib takes a uInt length */
        uInt n = len > UINT_MAX ? UINT_MAX : (uInt)len;
        c = crc32(c, p, n);
        p += n;
        len -= n;
    }
    return (uint32_t)c;
}

/* ISA-L's reflected gzip CRC inverts before and after, as zlib does, so the
 * two chain the same way: each can continue the other's CRC. */

#if HAVE_FOLD256
/*
 * Folding (Gopal et al., "Fast CRC Computation for Generic Polynomials Using
 * PCLMULQDQ Instruction", Intel, 2009), 32 bytes an instruction.  A 128-bit
 * lane X, its first 8 bytes X.lo, stands for X.lo x^(64+d) + X.hi x^d modulo
 * P; moving it d bits further on is two carry-less products with
 * bitrev33(x^(d+32) mod P) and bitrev33(x^(d-32) mod P), the constants for
 * the reflected form.  The buffer is folded into 16 bytes with the same CRC
 * register as the whole (the initial register XORed into the first 4 bytes),
 * and ISA-L finishes: the 16 bytes from a zero register, then the tail.
 */
#define FOLD_MIN 256 /* below this, ISA-L's own loop is as fast */

/* Constants for d = 1024 (128 bytes: four registers of two lanes), d = 256
 * (one register onto the next), d = 128 (one lane onto the next). */
#define K1024_LO 0x1e88ef372
#define K1024_HI 0x14a7fe880
#define K256_LO  0x0f1da05aa
#define K256_HI  0x15a546366
#define K128_LO  0x1751997d0
#define K128_HI  0x0ccaa009e

#define FOLD_TARGET __attribute__((target("avx2,vpclmulqdq,pclmul")))

FOLD_TARGET static inline __m256i fold(__m256i x, __m256i k, __m256i next)
{
    __m256i lo = _mm256_clmulepi64_epi128(x, k, 0x00);
    __m256i hi = _mm256_clmulepi64_epi128(x, k, 0x11);
    return _mm256_xor_si256(_mm256_xor_si256(lo, hi), next);
}

FOLD_TARGET static inline __m256i load(const unsigned char *p)
{
    return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

FOLD_TARGET static uint32_t fold256_update(uint32_t crc, const unsigned char *p,
                                           size_t len)
{
    const __m256i k1024 = _mm256_set_epi64x(K1024_HI, K1024_LO, K1024_HI, K1024_LO);
    const __m256i k256 = _mm256_set_epi64x(K256_HI, K256_LO, K256_HI, K256_LO);
    const __m128i k128 = _mm_set_epi64x(K128_HI, K128_LO);
    __m256i x0 =
        _mm256_xor_si256(load(p), _mm256_zextsi128_si256(_mm_cvtsi32_si128((int)~crc)));
    __m256i x1 = load(p + 32), x2 = load(p + 64), x3 = load(p + 96);
    for (p += 128, len -= 128; len >= 128; p += 128, len -= 128) {
        /* From memory the loop outruns the hardware prefetcher: 14.7 GB/s
         * without these, 17-18.6 with them, over 185 MB (25 GB/s in cache).
         * The addresses may be past the end: computed as integers, and a
         * prefetch never faults. */
        _mm_prefetch((const char *)((uintptr_t)p + 1024), _MM_HINT_T0);
        _mm_prefetch((const char *)((uintptr_t)p + 1088), _MM_HINT_T0);
        x0 = fold(x0, k1024, load(p));
        x1 = fold(x1, k1024, load(p + 32));
        x2 = fold(x2, k1024, load(p + 64));
        x3 = fold(x3, k1024, load(p + 96));
    }
    x3 = fold(fold(fold(x0, k256, x1), k256, x2), k256, x3);
    __m128i a = _mm256_castsi256_si128(x3), b = _mm256_extracti128_si256(x3, 1);
    __m128i r = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(a, k128, 0x00),
                                            _mm_clmulepi64_si128(a, k128, 0x11)),
                              b);
    unsigned char rest[16];
    _mm_storeu_si128((__m128i *)(void *)rest, r);
    /* zlib's convention: crc32(~0, X) runs X from a zero register */
    return crc32_gzip_refl(crc32_gzip_refl(0xffffffffu, rest, sizeof(rest)), p, len);
}

/* Where this CPU can fold. */
static bool fold256_cpu(void)
{
    return __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("avx2");
}

/* Where ISA-L 2.30 has a vector loop (AVX-512 with VPCLMULQDQ: 31 GB/s
 * measured by issue 12 on a Xeon) it is left to it; without AVX-512 it runs
 * 16 bytes an instruction (12 GB/s on Zen 3, 25 with the fold above). */
static bool fold256_preferred(void)
{
    return fold256_cpu() && !__builtin_cpu_supports("avx512vl");
}

/* ISA-L, folding first where that is faster: the code pages are checked
 * with when the build takes ISA-L. */
static uint32_t isal_update(uint32_t crc, const void *buf, size_t len)
{
    if (len >= FOLD_MIN && fold256_preferred())
        return fold256_update(crc, buf, len);
    return crc32_gzip_refl(crc, buf, len);
}
#elif HEAPSCAN_HAVE_ISAL
static uint32_t isal_update(uint32_t crc, const void *buf, size_t len)
{
    return crc32_gzip_refl(crc, buf, len);
}
#endif

#if HEAPSCAN_HAVE_ISAL
uint32_t (*const crc32_update_isal)(uint32_t, const void *, size_t) = isal_update;
#else
uint32_t (*const crc32_update_isal)(uint32_t, const void *, size_t) = NULL;
#endif

bool crc32_can_fold256(void)
{
#if HAVE_FOLD256
    return fold256_cpu();
#else
    return false;
#endif
}

bool crc32_have_fold256(void)
{
#if HAVE_FOLD256
    return fold256_preferred();
#else
    return false;
#endif
}

uint32_t crc32_update_fold256(uint32_t crc, const void *buf, size_t len)
{
#if HAVE_FOLD256
    if (len >= FOLD_MIN && fold256_cpu())
        return fold256_update(crc, buf, len);
#endif
#if HEAPSCAN_HAVE_ISAL
    return crc32_gzip_refl(crc, buf, len);
#else
    return crc32_update_zlib(crc, buf, len);
#endif
}

uint32_t crc32_update(uint32_t crc, const void *buf, size_t len)
{
#if HEAPSCAN_USE_ISAL
    return isal_update(crc, buf, len);
#else
    return crc32_update_zlib(crc, buf, len);
#endif
}

const char *crc32_impl(void)
{
    if (!HEAPSCAN_USE_ISAL)
        return "zlib";
    return crc32_have_fold256() ? "isal+fold256" : "isal";
}
