/*
 * crc32.h -- the one CRC-32 of the project (the IEEE polynomial, reflected,
 *            as zlib's crc32() and gzip compute it).
 *
 * Entry points: crc32_update() continues a CRC over more bytes (start from
 * 0); crc32_impl() names the code that computes it.  Page checksums, the
 * benchmark baselines that add "a crc32 pass", and iobench's and rawread's
 * file CRCs all go through here, so a contender and its baseline always
 * use the same CRC code.
 *
 * Two libraries give the same values: zlib's crc32() (the reference
 * and the fallback, table-driven: 3.5 GB/s on the 2-vCPU AMD EPYC (Zen 3)
 * this was measured on) and Intel ISA-L's crc32_gzip_refl() (carry-less
 * multiplication, the code picked at run time; issue 12 measured about
 * 31 GB/s on a 2-vCPU Xeon with AVX-512).  Without AVX-512, ISA-L 2.30
 * multiplies 16 bytes an instruction (12 GB/s on Zen 3), so on CPUs with
 * VPCLMULQDQ and AVX2 but no AVX-512 (AMD Zen 3, for one) long
 * buffers are folded 32 bytes an instruction here and ISA-L finishes them
 * ("fold256": 25 GB/s in cache, 17-18 from memory).  Meson's -Dcrc=auto|isal|zlib
 * chooses at build time; auto takes ISA-L when it is found.
 */
#ifndef HEAPSCAN_CRC32_H
#define HEAPSCAN_CRC32_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The CRC-32 of buf continued from crc (0 for a fresh one). */
uint32_t crc32_update(uint32_t crc, const void *buf, size_t len);

/* "zlib", "isal", or "isal+fold256": the code crc32_update() uses here. */
const char *crc32_impl(void);

/* Each implementation by itself, for tests and benchmarks that compare
 * them.  crc32_update_isal is the ISA-L-based code as crc32_update() runs
 * it in a build that takes ISA-L (folding first where crc32_have_fold256()),
 * NULL when the build has no ISA-L. */
uint32_t crc32_update_zlib(uint32_t crc, const void *buf, size_t len);
extern uint32_t (*const crc32_update_isal)(uint32_t crc, const void *buf, size_t len);

/* crc32_can_fold256(): this build and CPU can fold with 256-bit VPCLMULQDQ;
 * crc32_have_fold256(): and ISA-L has no faster loop here (no AVX-512), so
 * the ISA-L code folds.  crc32_update_fold256() folds wherever it can, for
 * tests (ISA-L alone under 256 bytes), and is ISA-L's, or zlib's without
 * ISA-L, where it cannot. */
bool crc32_can_fold256(void);
bool crc32_have_fold256(void);
uint32_t crc32_update_fold256(uint32_t crc, const void *buf, size_t len);

#endif
