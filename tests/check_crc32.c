/*
 * check_crc32.c -- the project's CRC-32: ISA-L and zlib give the same
 *                  values, and crc32_update() is the one the build chose.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "crc32.h"
#include "heapgen.h"
#include "page.h"
#include "testutil.h"

/* Every length 0..8192 at every alignment 0..63, random bytes. */
START_TEST(isal_and_zlib_agree_everywhere)
{
    if (crc32_update_isal == NULL) {
        ck_assert_str_eq(crc32_impl(), "zlib");
        return; /* built without ISA-L: the zlib-only build is checked below */
    }
    static unsigned char buf[BLCKSZ + 64 + 8];
    uint64_t seed = 0x9e3779b97f4a7c15;
    tu_fill_random(buf, sizeof(buf), &seed);
    for (size_t align = 0; align < 64; align++)
        for (size_t len = 0; len <= BLCKSZ; len++) {
            uint32_t start = (uint32_t)(len * 2654435761u); /* chained from anywhere */
            uint32_t a = crc32_update_isal(start, buf + align, len);
            uint32_t z = crc32_update_zlib(start, buf + align, len);
            ck_assert_msg(a == z, "len %zu align %zu: isal %08x zlib %08x", len, align,
                          a, z);
        }
}
END_TEST

/* The 256-bit fold (crc32.h) against zlib: every length 0..8192 at every
 * alignment 0..63, chained from anywhere, and long buffers that cross the
 * prefetch distance.  Where this CPU or build has no fold the function is
 * the fallback, compared all the same, and the log says so. */
START_TEST(fold256_and_zlib_agree_everywhere)
{
    if (!crc32_can_fold256())
        fprintf(stderr,
                "check_crc32: no 256-bit fold on this CPU or build: its fallback "
                "is compared instead\n");
    enum { LONG = 3 * 1024 * 1024 + 77 };
    unsigned char *buf = malloc(LONG + 64);
    ck_assert_ptr_nonnull(buf);
    uint64_t seed = 0x2545f4914f6cdd1d;
    tu_fill_random(buf, LONG + 64, &seed);
    for (size_t align = 0; align < 64; align++)
        for (size_t len = 0; len <= BLCKSZ; len++) {
            uint32_t start = (uint32_t)(len * 2246822519u + align);
            uint32_t f = crc32_update_fold256(start, buf + align, len);
            uint32_t z = crc32_update_zlib(start, buf + align, len);
            ck_assert_msg(f == z, "len %zu align %zu: fold %08x zlib %08x", len, align,
                          f, z);
        }
    static const size_t lens[] = {1024 * 1024, 1024 * 1024 + 128, LONG};
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
        for (size_t align = 0; align < 64; align += 21)
            ck_assert_uint_eq(crc32_update_fold256(7, buf + align, lens[i]),
                              crc32_update_zlib(7, buf + align, lens[i]));
    free(buf);
}
END_TEST

/* Whichever the build chose, it is zlib's crc32. */
START_TEST(the_chosen_one_is_zlibs_crc32)
{
    const char *impl = crc32_impl();
    ck_assert(strcmp(impl, "zlib") == 0 ||
              (strcmp(impl, "isal") == 0 && crc32_update_isal != NULL) ||
              (strcmp(impl, "isal+fold256") == 0 && crc32_have_fold256() &&
               crc32_can_fold256()));
    static const char text[] = "The quick brown fox jumps over the lazy dog";
    ck_assert_uint_eq(crc32_update(0, text, sizeof(text) - 1), 0x414fa339);
    ck_assert_uint_eq(crc32_update(0, text, sizeof(text) - 1),
                      crc32(0, (const Bytef *)text, sizeof(text) - 1));
    /* chaining: two pieces give the CRC of the whole */
    ck_assert_uint_eq(
        crc32_update(crc32_update(0, text, 10), text + 10, sizeof(text) - 11),
        0x414fa339);
    ck_assert_uint_eq(crc32_update(0, NULL, 0), 0);
}
END_TEST

/* Every page of a generated table checksums the same both ways. */
START_TEST(every_page_of_a_table_agrees)
{
    if (crc32_update_isal == NULL)
        return;
    HeapGenSpec spec = {.hg_seed = 3, .hg_pad_len = 59, .hg_fillfactor = 100};
    unsigned per = heapgen_tuples_per_page(&spec);
    static _Alignas(8) unsigned char page[BLCKSZ];
    for (uint32_t b = 0; b < 300; b++) {
        ck_assert_int_eq(heapgen_page(&spec, b, (int32_t)(b * per + 1), per, page), 0);
        ck_assert_uint_eq(crc32_update_isal(0, page, BLCKSZ),
                          crc32_update_zlib(0, page, BLCKSZ));
        ck_assert_int_eq(page_verify(page, b, PAGE_CHECKSUM_HEAPSCAN, NULL), PAGE_OK);
    }
}
END_TEST

static Suite *crc_suite(void)
{
    Suite *s = suite_create("crc32");
    TCase *tc = tcase_create("crc32");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, isal_and_zlib_agree_everywhere);
    tcase_add_test(tc, fold256_and_zlib_agree_everywhere);
    tcase_add_test(tc, the_chosen_one_is_zlibs_crc32);
    tcase_add_test(tc, every_page_of_a_table_agrees);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(crc_suite());
}
