/*
 * check_page.c -- the page and tuple format, the checksum, and verification
 *                 of arbitrary bytes.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "heap.h"
#include "heapgen.h"
#include "page.h"
#include "testutil.h"

static _Alignas(8) unsigned char page[BLCKSZ];

static uint16_t rd16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}
static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static HeapGenSpec spec(uint32_t pad, unsigned ff)
{
    return (HeapGenSpec){.hg_seed = 42, .hg_pad_len = pad, .hg_fillfactor = ff};
}

/* A full page of generated rows as block blkno. */
static void full_page(uint32_t pad, uint32_t blkno)
{
    HeapGenSpec s = spec(pad, 100);
    ck_assert_int_eq(heapgen_page(&s, blkno, 1, heapgen_tuples_per_page(&s), page), 0);
}

/* ---- layout ---------------------------------------------------------- */

START_TEST(header_fields_at_their_offsets)
{
    HeapGenSpec s = spec(59, 100);
    ck_assert_int_eq(heapgen_page(&s, 7, 1, 3, page), 0);
    ck_assert_uint_eq(rd32(page + 0), 0); /* pd_lsn.xlogid */
    ck_assert_uint_eq(rd32(page + 4), 0); /* pd_lsn.xrecoff */
    ck_assert_uint_eq(rd16(page + 8), page_checksum(page, 7));
    ck_assert_uint_eq(rd16(page + 10), 0);          /* pd_flags */
    ck_assert_uint_eq(rd16(page + 12), 24 + 3 * 4); /* pd_lower */
    ck_assert_uint_eq(rd16(page + 14), 8192 - 3 * 104);
    ck_assert_uint_eq(rd16(page + 16), 8192);   /* pd_special */
    ck_assert_uint_eq(rd16(page + 18), 0x2004); /* pd_pagesize_version */
    ck_assert_uint_eq(rd32(page + 20), 0);      /* pd_prune_xid */
    ck_assert_uint_eq(sizeof(PageHeaderData), 24);
}
END_TEST

START_TEST(line_pointer_packing)
{
    ItemId id = item_id_make(8088, LP_NORMAL, 100);
    ck_assert_uint_eq(id, 8088u | 1u << 15 | 100u << 17);
    ck_assert_uint_eq(item_id_off(id), 8088);
    ck_assert_uint_eq(item_id_flags(id), LP_NORMAL);
    ck_assert_uint_eq(item_id_len(id), 100);
    /* the extremes of each 15-bit field survive */
    id = item_id_make(0x7fff, LP_DEAD, 0x7fff);
    ck_assert_uint_eq(item_id_off(id), 0x7fff);
    ck_assert_uint_eq(item_id_flags(id), LP_DEAD);
    ck_assert_uint_eq(item_id_len(id), 0x7fff);

    HeapGenSpec s = spec(59, 100);
    heapgen_page(&s, 0, 1, 2, page);
    /* first tuple at the very end of the page, the second right below it */
    ck_assert_uint_eq(rd32(page + 24), (8192u - 104) | 1u << 15 | 100u << 17);
    ck_assert_uint_eq(rd32(page + 28), (8192u - 208) | 1u << 15 | 100u << 17);
}
END_TEST

START_TEST(tuple_header_and_int8_alignment)
{
    char pad[8] = "abcdefg";
    HeapRow row = {.id = 0x01020304,
                   .k = 0x0a0b0c0d,
                   .v = INT64_C(0x1122334455667788),
                   .pad = pad,
                   .pad_len = 7};
    _Alignas(8) unsigned char t[64];
    memset(t, 0xee, sizeof(t));
    ck_assert_uint_eq(heap_tuple_form(t, &row, 0x00050006, 9), 24 + 16 + 1 + 7);
    ck_assert_uint_eq(rd32(t + 0), 2);       /* t_xmin frozen */
    ck_assert_uint_eq(rd32(t + 4), 0);       /* t_xmax */
    ck_assert_uint_eq(rd32(t + 8), 0);       /* t_cid */
    ck_assert_uint_eq(rd16(t + 12), 0x0005); /* ctid block hi */
    ck_assert_uint_eq(rd16(t + 14), 0x0006); /* ctid block lo */
    ck_assert_uint_eq(rd16(t + 16), 9);      /* ctid offset */
    ck_assert_uint_eq(rd16(t + 18), 4);      /* natts */
    ck_assert_uint_eq(rd16(t + 20), 0x0B02); /* infomask */
    ck_assert_uint_eq(t[22], 24);            /* t_hoff */
    ck_assert_uint_eq(t[23], 0);             /* padding is zero */
    ck_assert_uint_eq(rd32(t + 24), 0x01020304);
    ck_assert_uint_eq(rd32(t + 28), 0x0a0b0c0d);
    /* v is 8-aligned: 32 from a MAXALIGNed tuple start */
    ck_assert_uint_eq((24 + 8) % 8, 0);
    ck_assert_uint_eq(rd32(t + 32), 0x55667788);
    ck_assert_uint_eq(rd32(t + 36), 0x11223344);
    ck_assert_uint_eq(t[40], ((7 + 1) << 1) | 1);
    ck_assert_mem_eq(t + 41, "abcdefg", 7);
}
END_TEST

START_TEST(varlena_headers_and_alignment)
{
    static char pad[300];
    memset(pad, 'x', sizeof(pad));
    _Alignas(8) unsigned char t[400];
    struct {
        uint32_t n;
        size_t hdr;
    } cases[] = {{0, 1}, {59, 1}, {126, 1}, {127, 4}, {200, 4}, {300, 4}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint32_t n = cases[i].n;
        HeapRow row = {.id = 1, .k = 2, .v = 3, .pad = pad, .pad_len = n}, back;
        size_t len = heap_tuple_form(t, &row, 0, 1);
        ck_assert_uint_eq(len, 40 + cases[i].hdr + n);
        if (cases[i].hdr == 1) {
            ck_assert_uint_eq(t[40], ((n + 1) << 1) | 1);
        } else {
            /* a 4-byte header is 4-aligned: 40 is, so there is no padding */
            ck_assert_uint_eq(40 % 4, 0);
            ck_assert_uint_eq(rd32(t + 40), (n + 4) << 2);
        }
        ck_assert_int_eq(heap_tuple_deform(t, len, &back), 0);
        ck_assert_uint_eq(back.pad_len, n);
        ck_assert_ptr_eq(back.pad, (char *)t + 40 + cases[i].hdr);
        ck_assert_int_eq(back.v, 3);
        /* a tuple cut short is refused, not read past its end */
        if (n > 0)
            ck_assert_int_eq(heap_tuple_deform(t, len - 1, &back), -1);
    }
    /* the design's 100-byte tuple */
    ck_assert_uint_eq(heap_tuple_len(59), 100);
}
END_TEST

/* PostgreSQL's placement rule written out: MAXALIGN(len) + line pointer
 * must fit between pd_lower and pd_upper, non-first tuples also leave the
 * fillfactor's reserve free, and at most 291 line pointers. */
static unsigned model_per_page(uint32_t pad, unsigned ff)
{
    size_t len = 24 + 16 + (pad <= 126 ? 1 : 4) + pad;
    long need = (long)((len + 7) / 8 * 8);
    long reserve = 8192L * (100 - ff) / 100;
    long lower = 24, upper = 8192;
    unsigned n = 0;
    while (n < 291) {
        long avail = upper - lower - 4;
        if (need > avail || (n > 0 && need + reserve > avail))
            break;
        upper -= need;
        lower += 4;
        n++;
    }
    return n;
}

START_TEST(tuples_per_page)
{
    const uint32_t pads[] = {0, 59, 200};
    const unsigned ffs[] = {50, 100};
    for (int p = 0; p < 3; p++) {
        for (int f = 0; f < 2; f++) {
            HeapGenSpec s = spec(pads[p], ffs[f]);
            unsigned n = heapgen_tuples_per_page(&s);
            ck_assert_msg(n == model_per_page(pads[p], ffs[f]),
                          "pad %u ff %u: %u a page, model %u", pads[p], ffs[f], n,
                          model_per_page(pads[p], ffs[f]));
            /* the page really holds n and not n + 1 */
            ck_assert_int_eq(heapgen_page(&s, 0, 1, n, page), 0);
            ck_assert_int_eq(page_max_offset(page), n);
        }
    }
    /* worked by hand: (8192 - 24) / (MAXALIGN(len) + 4) at fillfactor 100 */
    HeapGenSpec s = spec(59, 100);
    ck_assert_uint_eq(heapgen_tuples_per_page(&s), 8168 / 108); /* 75 */
    s = spec(0, 100);
    ck_assert_uint_eq(heapgen_tuples_per_page(&s), 8168 / 52); /* 157 */
    s = spec(200, 100);
    ck_assert_uint_eq(heapgen_tuples_per_page(&s), 8168 / 252); /* 32 */
    /* fillfactor 50 keeps 4096 free: 1 + floor((8164 - 104 - 4096) / 108) = 37 */
    s = spec(59, 50);
    ck_assert_uint_eq(heapgen_tuples_per_page(&s), 37);
}
END_TEST

START_TEST(generated_page_reads_back)
{
    HeapGenSpec s = spec(59, 100);
    s.hg_all_visible = true;
    char pad[HEAP_PAD_MAX];
    ck_assert_int_eq(heapgen_page(&s, 123456, 1001, 75, page), 0);
    ck_assert_uint_eq(page_header(page)->pd_flags, PD_ALL_VISIBLE);
    ck_assert_int_eq(page_verify(page, 123456, PAGE_CHECKSUM_HEAPSCAN, NULL), PAGE_OK);
    for (unsigned off = 1; off <= 75; off++) {
        ItemId id = page_item_id(page, off);
        HeapRow got, want;
        ck_assert_int_eq(
            heap_tuple_deform(page + item_id_off(id), item_id_len(id), &got), 0);
        heapgen_row(&s, 1000 + (int32_t)off, &want, pad);
        ck_assert_int_eq(got.id, want.id);
        ck_assert_int_eq(got.k, want.k);
        ck_assert_int_eq(got.v, want.v);
        ck_assert_mem_eq(got.pad, want.pad, 59);
        ck_assert_int_ge(got.k, 0);
        ck_assert_int_lt(got.k, 1000000);
        ck_assert_int_ge(got.v, 0);
        ck_assert_int_le(got.v, UINT32_MAX);
        for (int i = 0; i < 59; i++)
            ck_assert(got.pad[i] >= 0x20 && got.pad[i] <= 0x7e);
        const HeapTupleHeaderData *h = (const void *)(page + item_id_off(id));
        ck_assert_uint_eq(h->t_ctid_bi_hi, 123456 >> 16);
        ck_assert_uint_eq(h->t_ctid_bi_lo, 123456 & 0xffff);
        ck_assert_uint_eq(h->t_ctid_posid, off);
    }
}
END_TEST

/* ---- checksum -------------------------------------------------------- */

START_TEST(checksum_is_the_documented_crc)
{
    full_page(59, 131077);
    /* crc32 of the page with pd_checksum zeroed, then the block number LE */
    static unsigned char copy[BLCKSZ];
    memcpy(copy, page, BLCKSZ);
    copy[8] = copy[9] = 0;
    unsigned char le[4] = {0x05, 0x00, 0x02, 0x00}; /* 131077 = 0x00020005 */
    uLong c = crc32(0, copy, BLCKSZ);
    c = crc32(c, le, 4);
    ck_assert_uint_eq(rd16(page + 8), (c ^ (c >> 16)) & 0xffff);
}
END_TEST

START_TEST(every_single_bit_flip_is_detected)
{
    const uint32_t blocks[] = {0, 131072 + 5};
    for (int b = 0; b < 2; b++) {
        full_page(_i ? 200 : 59, blocks[b]);
        ck_assert_int_eq(page_verify(page, blocks[b], PAGE_CHECKSUM_HEAPSCAN, NULL),
                         PAGE_OK);
        for (unsigned bit = 0; bit < BLCKSZ * 8; bit++) {
            page[bit / 8] ^= (unsigned char)(1u << (bit % 8));
            PageFault f;
            ck_assert_msg(page_verify(page, blocks[b], PAGE_CHECKSUM_HEAPSCAN, &f) !=
                              PAGE_OK,
                          "flip of bit %u (byte %u) of block %u not detected", bit,
                          bit / 8, blocks[b]);
            page[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        }
        ck_assert_int_eq(page_verify(page, blocks[b], PAGE_CHECKSUM_HEAPSCAN, NULL),
                         PAGE_OK);
    }
}
END_TEST

START_TEST(page_at_the_wrong_block_fails)
{
    full_page(59, 1000);
    const uint32_t others[] = {0, 999, 1001, 1000 + 131072, 1000 ^ 0x80000000u};
    for (int i = 0; i < 5; i++) {
        PageFault f;
        ck_assert_int_eq(page_verify(page, others[i], PAGE_CHECKSUM_HEAPSCAN, &f),
                         PAGE_BAD_CHECKSUM);
        ck_assert_uint_eq(f.stored, rd16(page + 8));
        ck_assert_uint_eq(f.computed, page_checksum(page, others[i]));
    }
    /* without the checksum the structure alone is sound */
    ck_assert_int_eq(page_verify(page, 0, PAGE_CHECKSUM_NONE, NULL), PAGE_OK);
}
END_TEST

START_TEST(zero_page_is_valid_and_empty)
{
    memset(page, 0, BLCKSZ);
    ck_assert(page_is_zero(page));
    ck_assert_int_eq(page_verify(page, 17, PAGE_CHECKSUM_HEAPSCAN, NULL), PAGE_OK);
    ck_assert_int_eq(page_max_offset(page), 0);
    /* ... but one stray byte anywhere makes it something else */
    const unsigned offs[] = {0, 9, 100, 8191};
    for (int i = 0; i < 4; i++) {
        page[offs[i]] = 1;
        ck_assert_int_ne(page_verify(page, 17, PAGE_CHECKSUM_HEAPSCAN, NULL), PAGE_OK);
        page[offs[i]] = 0;
    }
}
END_TEST

/* ---- verification of garbage ----------------------------------------- */

static uint64_t rng = 88172645463325252ull;

/* For a page verify() accepted, every normal item lies inside the page. */
static void assert_accepted_page_is_in_bounds(void)
{
    const PageHeaderData *ph = page_header(page);
    ck_assert_uint_le(ph->pd_lower, ph->pd_upper);
    ck_assert_uint_le(ph->pd_upper, BLCKSZ);
    for (unsigned off = 1; off <= page_max_offset(page); off++) {
        ItemId id = page_item_id(page, off);
        if (item_id_flags(id) == LP_NORMAL)
            ck_assert_uint_le(item_id_off(id) + item_id_len(id), BLCKSZ);
    }
}

START_TEST(random_pages_are_refused_without_harm)
{
    /* heap-allocated exactly 8192 bytes, so ASan sees any read past the end */
    unsigned char *p = malloc(BLCKSZ);
    for (int i = 0; i < 2000; i++) {
        tu_fill_random(p, BLCKSZ, &rng);
        PageFault f;
        char msg[512];
        ck_assert_int_ne(page_verify(p, (uint32_t)i, PAGE_CHECKSUM_HEAPSCAN, &f),
                         PAGE_OK);
        ck_assert_ptr_nonnull(page_fault_describe(&f, msg, sizeof(msg)));
    }
    free(p);
}
END_TEST

START_TEST(random_line_pointers_on_a_sane_header)
{
    /* a valid header and random line pointers, checksummed: only the line
     * pointer checks stand between these and the scan */
    int accepted = 0;
    for (int i = 0; i < 20000; i++) {
        page_init(page);
        PageHeaderData *ph = (PageHeaderData *)page;
        unsigned n = (unsigned)(tu_xorshift(&rng) % 40);
        ph->pd_lower = (uint16_t)(24 + 4 * n);
        ph->pd_upper =
            (uint16_t)(ph->pd_lower + tu_xorshift(&rng) % (8192 - ph->pd_lower + 1));
        for (unsigned k = 0; k < n; k++) {
            uint64_t r = tu_xorshift(&rng);
            /* mostly plausible offsets, now and then anything */
            unsigned off = (r & 1) ? (unsigned)(r >> 8) & 0x7fff
                                   : ph->pd_upper + (unsigned)((r >> 8) % 64) * 8;
            unsigned len =
                (r & 2) ? (unsigned)(r >> 24) & 0x7fff : (unsigned)(r >> 40) % 400;
            page_linp(page)[k] = item_id_make(off, (unsigned)(r >> 4) & 3, len);
        }
        page_set_checksum(page, 5);
        if (page_verify(page, 5, PAGE_CHECKSUM_HEAPSCAN, NULL) == PAGE_OK) {
            accepted++;
            assert_accepted_page_is_in_bounds();
        }
    }
    ck_assert_int_gt(accepted, 0); /* the generator does reach the accepting path */
}
END_TEST

/* Damage a sound page with fn, fix its checksum, and expect kind. */
static void expect_fault(void (*damage)(PageHeaderData *), PageFaultKind kind,
                         const char *words)
{
    PageFault f;
    char msg[512];
    full_page(59, 3);
    damage((PageHeaderData *)page);
    page_set_checksum(page, 3);
    ck_assert_int_eq(page_verify(page, 3, PAGE_CHECKSUM_HEAPSCAN, &f), kind);
    page_fault_describe(&f, msg, sizeof(msg));
    ck_assert_msg(strstr(msg, words) != NULL, "'%s' lacks '%s'", msg, words);
}

static void lp_off_past_page(PageHeaderData *ph)
{
    page_linp(ph)[2] = item_id_make(8184, LP_NORMAL, 100);
}
static void lp_len_past_page(PageHeaderData *ph)
{
    ItemId id = page_linp(ph)[4];
    page_linp(ph)[4] = item_id_make(item_id_off(id), LP_NORMAL, 8192);
}
static void lp_below_upper(PageHeaderData *ph)
{
    page_linp(ph)[0] = item_id_make(ph->pd_upper - 8, LP_NORMAL, 100);
}
static void lp_unaligned(PageHeaderData *ph)
{
    ItemId id = page_linp(ph)[1];
    page_linp(ph)[1] = item_id_make(item_id_off(id) + 2, LP_NORMAL, 90);
}
static void lower_above_upper(PageHeaderData *ph)
{
    ph->pd_lower = ph->pd_upper + 4;
}
static void lower_below_header(PageHeaderData *ph)
{
    ph->pd_lower = 20;
}
static void special_wrong(PageHeaderData *ph)
{
    ph->pd_special = 8000;
}
static void special_past_page(PageHeaderData *ph)
{
    ph->pd_special = 8200;
}
static void flags_unknown(PageHeaderData *ph)
{
    ph->pd_flags = 0x0010;
}
static void version_wrong(PageHeaderData *ph)
{
    ph->pd_pagesize_version = 0x2005;
}

START_TEST(damaged_structure_is_named)
{
    expect_fault(lp_off_past_page, PAGE_BAD_ITEM, "line pointer 3 out of bounds");
    expect_fault(lp_len_past_page, PAGE_BAD_ITEM, "line pointer 5 out of bounds");
    expect_fault(lp_below_upper, PAGE_BAD_ITEM, "line pointer 1");
    expect_fault(lp_unaligned, PAGE_BAD_ITEM, "line pointer 2");
    expect_fault(lower_above_upper, PAGE_BAD_HEADER, "invalid page header");
    expect_fault(lower_below_header, PAGE_BAD_HEADER, "pd_lower 20");
    expect_fault(special_wrong, PAGE_BAD_HEADER, "pd_special 8000");
    expect_fault(special_past_page, PAGE_BAD_HEADER, "pd_special 8200");
    expect_fault(flags_unknown, PAGE_BAD_HEADER, "pd_flags 0x0010");
    expect_fault(version_wrong, PAGE_BAD_HEADER, "0x2005");
}
END_TEST

/* PostgreSQL's data checksum, against what a real PostgreSQL 15 server
 * stored and what pageinspect's page_checksum() computes
 * (tests/data/pgpage-k.txt). */
START_TEST(postgres_checksum_matches_a_real_server)
{
    static const struct {
        const char *file;
        uint32_t blkno;
        uint16_t want;
    } pages[] = {{"pgpage-k-blk0.bin", 0, 0x8FBD},
                 {"pgpage-k-blk1.bin", 1, 0xFA3D},
                 {"pgpage-k-blk0.bin", 131072, 0x8FBB}};
    for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
        size_t len;
        unsigned char *p = tu_read_file(tu_fixture(pages[i].file), &len);
        ck_assert_msg(p != NULL && len == BLCKSZ, "%s", pages[i].file);
        memcpy(page, p, BLCKSZ);
        free(p);
        ck_assert_uint_eq(page_pg_checksum(page, pages[i].blkno), pages[i].want);
        PageFault f;
        PageFaultKind k = page_verify(page, pages[i].blkno, PAGE_CHECKSUM_POSTGRES, &f);
        ck_assert_int_eq(k, pages[i].blkno < 2 ? PAGE_OK : PAGE_BAD_CHECKSUM);
        /* checked as heapscan's, the message says whose checksum it holds */
        if (pages[i].blkno < 2) {
            char msg[256];
            ck_assert_int_eq(
                page_verify(page, pages[i].blkno, PAGE_CHECKSUM_HEAPSCAN, &f),
                PAGE_BAD_CHECKSUM);
            ck_assert_ptr_nonnull(strstr(page_fault_describe(&f, msg, sizeof(msg)),
                                         "PostgreSQL's data checksum"));
        }
    }
    /* every single-bit flip outside pd_checksum changes it */
    size_t len;
    unsigned char *p = tu_read_file(tu_fixture("pgpage-k-blk1.bin"), &len);
    memcpy(page, p, BLCKSZ);
    free(p);
    int missed = 0;
    for (unsigned bit = 0; bit < BLCKSZ * 8; bit += 7) {
        if (bit / 8 == 8 || bit / 8 == 9)
            continue;
        page[bit / 8] ^= (unsigned char)(1u << bit % 8);
        missed += page_verify(page, 1, PAGE_CHECKSUM_POSTGRES, NULL) == PAGE_OK;
        page[bit / 8] ^= (unsigned char)(1u << bit % 8);
    }
    ck_assert_int_le(missed, 3); /* the modulo fold may miss about one flip a page */
}
END_TEST

START_TEST(checksum_message_names_both_values)
{
    PageFault f;
    char msg[256], want[128];
    full_page(59, 9);
    page[5000] ^= 0x40;
    ck_assert_int_eq(page_verify(page, 9, PAGE_CHECKSUM_HEAPSCAN, &f),
                     PAGE_BAD_CHECKSUM);
    snprintf(want, sizeof(want), "checksum mismatch (stored 0x%04x, computed 0x%04x)",
             rd16(page + 8), page_checksum(page, 9));
    ck_assert_str_eq(page_fault_describe(&f, msg, sizeof(msg)), want);
}
END_TEST

static Suite *page_suite(void)
{
    Suite *s = suite_create("page");
    TCase *tc = tcase_create("layout");
    tcase_add_test(tc, header_fields_at_their_offsets);
    tcase_add_test(tc, line_pointer_packing);
    tcase_add_test(tc, tuple_header_and_int8_alignment);
    tcase_add_test(tc, varlena_headers_and_alignment);
    tcase_add_test(tc, tuples_per_page);
    tcase_add_test(tc, generated_page_reads_back);
    suite_add_tcase(s, tc);

    tc = tcase_create("checksum");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, checksum_is_the_documented_crc);
    tcase_add_loop_test(tc, every_single_bit_flip_is_detected, 0, 2);
    tcase_add_test(tc, page_at_the_wrong_block_fails);
    tcase_add_test(tc, zero_page_is_valid_and_empty);
    suite_add_tcase(s, tc);

    tc = tcase_create("verify");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, random_pages_are_refused_without_harm);
    tcase_add_test(tc, random_line_pointers_on_a_sane_header);
    tcase_add_test(tc, damaged_structure_is_named);
    tcase_add_test(tc, checksum_message_names_both_values);
    tcase_add_test(tc, postgres_checksum_matches_a_real_server);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(page_suite());
}
