/*
 * crc32.c -- CRC-32 by ISA-L or zlib, the same values (see crc32.h).
 */
#include "crc32.h"

#include <limits.h>
#include <zlib.h>

#if HEAPSCAN_HAVE_ISAL
#include <isa-l/crc.h>
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

#if HEAPSCAN_HAVE_ISAL
/* ISA-L's reflected gzip CRC inverts before and after, as zlib does, so the
 * two chain the same way. */
static uint32_t isal_update(uint32_t crc, const void *buf, size_t len)
{
    return crc32_gzip_refl(crc, buf, len);
}
uint32_t (*const crc32_update_isal)(uint32_t, const void *, size_t) = isal_update;
#else
uint32_t (*const crc32_update_isal)(uint32_t, const void *, size_t) = NULL;
#endif

uint32_t crc32_update(uint32_t crc, const void *buf, size_t len)
{
#if HEAPSCAN_USE_ISAL
    return crc32_gzip_refl(crc, buf, len);
#else
    return crc32_update_zlib(crc, buf, len);
#endif
}

const char *crc32_impl(void)
{
    return HEAPSCAN_USE_ISAL ? "isal" : "zlib";
}
