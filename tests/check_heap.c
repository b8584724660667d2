/*
 * check_heap.c -- the heap module: what makes a tuple visible without a
 *                 transaction log, the null bitmap, every varlena form
 *                 PostgreSQL stores, and tuples that are not rows of t.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap.h"
#include "testutil.h"

/* ---- visibility ---------------------------------------------------------- */

enum { INVISIBLE = 0, VISIBLE = 1, REFUSED = -1 };

typedef struct VisCase {
    const char *what;
    uint16_t infomask;
    uint32_t xmin, xmax;
    int want;        /* VISIBLE, INVISIBLE or REFUSED */
    const char *msg; /* REFUSED: part of the message */
} VisCase;

#define XC HEAP_XMIN_COMMITTED
#define XI HEAP_XMIN_INVALID
#define XF HEAP_XMIN_FROZEN
#define MC HEAP_XMAX_COMMITTED
#define MI HEAP_XMAX_INVALID
#define LO HEAP_XMAX_LOCK_ONLY
#define EX HEAP_XMAX_EXCL_LOCK
#define KS HEAP_XMAX_KEYSHR_LOCK
#define MU HEAP_XMAX_IS_MULTI

/* PostgreSQL's HeapTupleSatisfiesMVCC() for a snapshot after every
 * transaction ended, with only what the tuple itself says. */
static const VisCase vis_cases[] = {
    {"mkheap's frozen tuple", XF | MI, 2, 0, VISIBLE, NULL},
    {"frozen with a real xmin (9.4+ freezing)", XF | MI, 1234, 0, VISIBLE, NULL},
    {"xmin committed, no deleter", XC | MI, 1234, 0, VISIBLE, NULL},
    {"xmin aborted", XI | MI, 1234, 0, INVISIBLE, NULL},
    {"xmin aborted, a deleter unhinted", XI, 1234, 1235, INVISIBLE, NULL},
    {"xmin 2 (frozen before 9.4) unhinted", 0, 2, 0, VISIBLE, NULL},
    {"xmin 1 (bootstrap) unhinted", 0, 1, 0, VISIBLE, NULL},
    {"xmin 0 (a super-deleted speculative insert)", MI, 0, 0, INVISIBLE, NULL},
    {"xmin unhinted", MI, 1234, 0, REFUSED, "xmin 1234 has no hint bits"},
    {"xmin unhinted, t_xmax 0 unhinted", 0, 1234, 0, REFUSED, "xmin 1234"},
    {"deleted, both hinted", XC | MC, 1234, 1235, INVISIBLE, NULL},
    {"deleter aborted (hint)", XC | MI, 1234, 1235, VISIBLE, NULL},
    {"deleter unhinted", XC, 1234, 1235, REFUSED, "xmax 1235 has no hint bits"},
    {"t_xmax 0 without the hint", XC, 1234, 0, VISIBLE, NULL},
    {"deleted by xid 2", XC, 1234, 2, INVISIBLE, NULL},
    {"xmin unknown but the deleter committed", MC, 1234, 1235, INVISIBLE, NULL},
    {"xmin unknown, deleter aborted", MI, 1234, 1235, REFUSED, "xmin 1234"},
    {"SELECT FOR UPDATE, unhinted", XC | LO | EX, 1234, 1235, VISIBLE, NULL},
    {"SELECT FOR SHARE, unhinted", XC | LO | EX | KS, 1234, 1235, VISIBLE, NULL},
    {"SELECT FOR KEY SHARE, unhinted", XC | LO | KS, 1234, 1235, VISIBLE, NULL},
    {"FOR UPDATE before 9.3: exclusive lock bit alone", XC | EX, 1234, 1235, VISIBLE,
     NULL},
    {"lock-only with XMAX_COMMITTED set", XC | LO | EX | MC, 1234, 1235, VISIBLE, NULL},
    {"MultiXact of lockers", XC | MU | LO | KS, 1234, 7, VISIBLE, NULL},
    {"MultiXact with an updater, unhinted", XC | MU | KS, 1234, 7, REFUSED,
     "xmax MultiXact 7"},
    {"MultiXact whose updater aborted (hint)", XC | MU | MI, 1234, 7, VISIBLE, NULL},
    {"MultiXact with an updater and lock bits", XC | MU | EX, 1234, 7, REFUSED,
     "MultiXact 7"},
    {"moved off by VACUUM FULL before 9.0", HEAP_MOVED_OFF | MI, 1234, 0, REFUSED,
     "VACUUM FULL before PostgreSQL 9.0"},
    {"moved in, but hinted committed", HEAP_MOVED_IN | XC | MI, 1234, 0, VISIBLE, NULL},
};
#define NVIS (int)(sizeof(vis_cases) / sizeof(vis_cases[0]))

START_TEST(visibility_from_the_tuple_alone)
{
    const VisCase *c = &vis_cases[_i];
    HeapTupleHeaderData h = {.t_xmin = c->xmin,
                             .t_xmax = c->xmax,
                             .t_infomask2 = HEAP_NATTS,
                             .t_infomask = (uint16_t)(c->infomask | HEAP_HASVARWIDTH),
                             .t_hoff = HEAP_TUPLE_HOFF};
    HsError err;
    hs_error_clear(&err);
    int rc = heap_tuple_visibility(&h, NULL, &err);
    if (c->want == REFUSED) {
        ck_assert_msg(rc == HS_EREFUSED, "%s: got %d, want a refusal", c->what, rc);
        ck_assert_msg(strstr(err.msg, c->msg) != NULL, "%s: '%s' lacks '%s'", c->what,
                      err.msg, c->msg);
        ck_assert_msg(strstr(err.msg, "VACUUM FREEZE") != NULL, "%s: %s", c->what,
                      err.msg);
    } else {
        ck_assert_msg(rc == c->want, "%s: got %d, want %d (%s)", c->what, rc, c->want,
                      err.msg);
    }
}
END_TEST

START_TEST(refusals_name_both_ways_out)
{
    HeapTupleHeaderData h = {.t_xmin = 4242, .t_infomask = HEAP_XMAX_INVALID};
    HsError err;
    ck_assert_int_eq(heap_tuple_visibility(&h, NULL, &err), HS_EREFUSED);
    ck_assert_ptr_nonnull(strstr(err.msg, "VACUUM FREEZE the table, or scan it with "
                                          "--pgdata"));
}
END_TEST

/* ---- forming and checking rows ---------------------------------------- */

static _Alignas(8) unsigned char tup[MAX_HEAP_TUPLE_SIZE];

/* Where each present column of a row with these nulls starts, by hand:
 * id and k 4-aligned, v 8-aligned, pad at the next byte (short header). */
static size_t expected_len(uint8_t nulls, size_t pad_len)
{
    size_t off = 24;
    if (!(nulls & HEAP_NULL_ID))
        off += 4;
    if (!(nulls & HEAP_NULL_K))
        off += 4;
    if (!(nulls & HEAP_NULL_V))
        off = (off + 7) / 8 * 8 + 8;
    if (!(nulls & HEAP_NULL_PAD))
        off += 1 + pad_len;
    return off;
}

START_TEST(null_bitmap_round_trip)
{
    uint8_t nulls = (uint8_t)_i; /* every combination of the four columns */
    const char pad[] = "null bitmap";
    HeapRow row = {.id = -7,
                   .k = 123456,
                   .v = INT64_MIN + 3,
                   .pad = pad,
                   .pad_len = sizeof(pad) - 1,
                   .nulls = nulls},
            back;
    size_t len = heap_tuple_form(tup, &row, 3, 9);
    ck_assert_uint_eq(len, expected_len(nulls, row.pad_len));
    HeapTupleHeaderData h;
    memcpy(&h, tup, sizeof(h));
    ck_assert_uint_eq(h.t_hoff, 24);
    ck_assert_uint_eq(!!(h.t_infomask & HEAP_HASNULL), nulls != 0);
    if (nulls)
        ck_assert_uint_eq(tup[23], (unsigned)(~nulls & 0x0f)); /* set = present */

    char why[200] = "";
    ck_assert_msg(heap_tuple_check(tup, len, &back, why, sizeof(why)) == 0, "%s", why);
    ck_assert_uint_eq(back.nulls, nulls);
    ck_assert_int_eq(back.id, nulls & HEAP_NULL_ID ? 0 : row.id);
    ck_assert_int_eq(back.k, nulls & HEAP_NULL_K ? 0 : row.k);
    ck_assert(back.v == (nulls & HEAP_NULL_V ? 0 : row.v));
    if (!(nulls & HEAP_NULL_PAD)) {
        ck_assert_uint_eq(back.pad_len, row.pad_len);
        ck_assert_int_eq(memcmp(back.pad, pad, row.pad_len), 0);
        ck_assert_int_eq(back.pad_form, HEAP_PAD_PLAIN);
    }
    /* one byte short or long is not a row of t */
    ck_assert_int_eq(heap_tuple_check(tup, len - 1, &back, why, sizeof(why)), -1);
    if (len < sizeof(tup))
        ck_assert_int_eq(heap_tuple_check(tup, len + 1, &back, why, sizeof(why)), -1);
}
END_TEST

/* A row with pad stored as the caller writes it: bytes of the varlena at
 * the pad offset (40 when nothing is null), and t_infomask as given. */
static size_t row_with_pad(const void *varlena, size_t n, uint16_t extra_infomask)
{
    const char none[] = "";
    HeapRow row = {.id = 1, .k = 2, .v = 3, .pad = none, .pad_len = 0};
    size_t len = heap_tuple_form(tup, &row, 0, 1) - 1; /* up to pad's header */
    memcpy(tup + len, varlena, n);
    uint16_t m;
    memcpy(&m, tup + 20, 2);
    m |= extra_infomask;
    memcpy(tup + 20, &m, 2);
    return len + n;
}

START_TEST(every_varlena_form_postgresql_stores)
{
    unsigned char v[300];
    HeapRow back;
    char why[200];

    /* a 4-byte header on a short text (STORAGE PLAIN keeps it so) */
    uint32_t hdr = (5 + 4) << 2;
    memcpy(v, &hdr, 4);
    memcpy(v + 4, "plain", 5);
    size_t len = row_with_pad(v, 9, 0);
    ck_assert_msg(heap_tuple_check(tup, len, &back, why, sizeof(why)) == 0, "%s", why);
    ck_assert_uint_eq(back.pad_len, 5);
    ck_assert_int_eq(back.pad_form, HEAP_PAD_PLAIN);

    /* compressed inline: header with low bits 10, then raw size and method */
    hdr = (uint32_t)(20 << 2 | 2);
    uint32_t tcinfo = 5000u | 1u << 30; /* 5000 bytes raw, lz4 */
    memcpy(v, &hdr, 4);
    memcpy(v + 4, &tcinfo, 4);
    memset(v + 8, 0x5a, 12);
    len = row_with_pad(v, 20, 0);
    ck_assert_msg(heap_tuple_check(tup, len, &back, why, sizeof(why)) == 0, "%s", why);
    ck_assert_int_eq(back.pad_form, HEAP_PAD_COMPRESSED);
    tcinfo = 5000u | 2u << 30; /* no such method */
    memcpy(v + 4, &tcinfo, 4);
    len = row_with_pad(v, 20, 0);
    ck_assert_int_eq(heap_tuple_check(tup, len, &back, why, sizeof(why)), -1);
    ck_assert_ptr_nonnull(strstr(why, "unknown method 2"));

    /* a TOAST pointer: 0x01, tag 18, 16 bytes; needs HEAP_HASEXTERNAL */
    v[0] = 0x01, v[1] = 18;
    memset(v + 2, 0x11, 16);
    len = row_with_pad(v, 18, HEAP_HASEXTERNAL);
    ck_assert_msg(heap_tuple_check(tup, len, &back, why, sizeof(why)) == 0, "%s", why);
    ck_assert_int_eq(back.pad_form, HEAP_PAD_EXTERNAL);
    len = row_with_pad(v, 18, 0);
    ck_assert_int_eq(heap_tuple_check(tup, len, &back, why, sizeof(why)), -1);
    ck_assert_ptr_nonnull(strstr(why, "HEAP_HASEXTERNAL"));
    v[1] = 1; /* an indirect pointer exists only in memory */
    len = row_with_pad(v, 18, HEAP_HASEXTERNAL);
    ck_assert_int_eq(heap_tuple_check(tup, len, &back, why, sizeof(why)), -1);
    ck_assert_ptr_nonnull(strstr(why, "tag 1"));

    /* a 4-byte header shorter than itself */
    hdr = 3 << 2;
    memcpy(v, &hdr, 4);
    len = row_with_pad(v, 4, 0);
    ck_assert_int_eq(heap_tuple_check(tup, len, &back, why, sizeof(why)), -1);
}
END_TEST

/* Tuples of other tables, each refused with its reason. */
START_TEST(tuples_of_other_schemas_are_refused)
{
    const char pad[] = "abc";
    HeapRow row = {.id = 1, .k = 2, .v = 3, .pad = pad, .pad_len = 3}, back;
    char why[200];
    size_t len = heap_tuple_form(tup, &row, 0, 1);
    ck_assert_int_eq(heap_tuple_check(tup, len, &back, why, sizeof(why)), 0);

    static const struct {
        size_t at;      /* t_infomask2 (18), t_infomask (20) or t_hoff (22) */
        uint16_t value; /* written as 2 bytes, or 1 for t_hoff */
        const char *why;
    } edits[] = {
        {18, 2, "tuple has 2 attributes, t has 4"},
        {18, 5, "tuple has 5 attributes"},
        {22, 32, "t_hoff is 32"},
        {20, HEAP_XMIN_FROZEN | HEAP_HASVARWIDTH | HEAP_HASOID_OLD, "OID"},
        {20, HEAP_XMIN_FROZEN, "HEAP_HASVARWIDTH is clear but pad is present"},
    };
    for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
        heap_tuple_form(tup, &row, 0, 1);
        memcpy(tup + edits[i].at, &edits[i].value, edits[i].at == 22 ? 1 : 2);
        ck_assert_int_eq(heap_tuple_check(tup, len, &back, why, sizeof(why)), -1);
        ck_assert_msg(strstr(why, edits[i].why) != NULL, "'%s' lacks '%s'", why,
                      edits[i].why);
    }
    /* (a int8, b text): 8 bytes then a short varlena, 33 bytes in all */
    heap_tuple_form(tup, &row, 0, 1);
    tup[18] = 2;
    ck_assert_int_eq(heap_tuple_check(tup, 24 + 8 + 4, &back, why, sizeof(why)), -1);
    /* every truncation of a good tuple is refused, never read past */
    heap_tuple_form(tup, &row, 0, 1);
    for (size_t n = 0; n < len; n++) {
        unsigned char *copy = malloc(n ? n : 1);
        memcpy(copy, tup, n);
        ck_assert_int_eq(heap_tuple_check(copy, n, &back, NULL, 0), -1);
        free(copy);
    }
}
END_TEST

START_TEST(pad_null_needs_varwidth_clear)
{
    HeapRow row = {.id = 1, .k = 2, .v = 3, .nulls = HEAP_NULL_PAD}, back;
    char why[200];
    size_t len = heap_tuple_form(tup, &row, 0, 1);
    ck_assert_uint_eq(len, 40);
    ck_assert_int_eq(heap_tuple_check(tup, len, &back, why, sizeof(why)), 0);
    tup[20] |= HEAP_HASVARWIDTH; /* the low byte of t_infomask */
    ck_assert_int_eq(heap_tuple_check(tup, len, &back, why, sizeof(why)), -1);
    ck_assert_ptr_nonnull(strstr(why, "HEAP_HASVARWIDTH is set but pad is null"));
}
END_TEST

START_TEST(plain_tuples_take_the_short_way)
{
    const char pad[] = "0123456789";
    HeapRow row = {.id = 1, .k = 2, .v = 3, .pad = pad, .pad_len = 10};
    heap_tuple_form(tup, &row, 0, 1);
    ck_assert(heap_tuple_is_plain(tup, false));
    row.nulls = HEAP_NULL_K;
    heap_tuple_form(tup, &row, 0, 1);
    ck_assert(!heap_tuple_is_plain(tup, false)); /* a null: the full check */
    row.nulls = 0;
    heap_tuple_form(tup, &row, 0, 1);
    uint16_t m;
    memcpy(&m, tup + 20, 2);
    m &= (uint16_t)~HEAP_XMIN_FROZEN; /* unhinted */
    memcpy(tup + 20, &m, 2);
    ck_assert(!heap_tuple_is_plain(tup, false));
    ck_assert(heap_tuple_is_plain(tup, true)); /* an all-visible page */
}
END_TEST

static Suite *heap_suite(void)
{
    Suite *s = suite_create("heap");
    TCase *tc = tcase_create("visibility");
    tcase_add_loop_test(tc, visibility_from_the_tuple_alone, 0, NVIS);
    tcase_add_test(tc, refusals_name_both_ways_out);
    suite_add_tcase(s, tc);
    tc = tcase_create("rows");
    tcase_add_loop_test(tc, null_bitmap_round_trip, 0, 16);
    tcase_add_test(tc, every_varlena_form_postgresql_stores);
    tcase_add_test(tc, tuples_of_other_schemas_are_refused);
    tcase_add_test(tc, pad_null_needs_varwidth_clear);
    tcase_add_test(tc, plain_tuples_take_the_short_way);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(heap_suite());
}
