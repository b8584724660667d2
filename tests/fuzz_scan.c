/*
 * fuzz_scan.c -- a libFuzzer target over page verification and the tuple
 *                walk (built with -Dfuzz=true by clang; run by
 *                scripts/fuzz).
 *
 * Input: 10 bytes that choose the qual (column, operator, a 64-bit value),
 * then up to 8192 bytes of page (zero-padded).  For every input:
 *   - page_verify() under each checksum kind reads only the page (ASan);
 *   - the walk with the common case's short way and the walk with the full
 *     decision for every tuple agree exactly: the same status and message,
 *     the same visible count, the same matching line pointers;
 *   - every tuple the walk keeps reads back as a row of t that passes the
 *     qual;
 *   - a page that passes verification never gives a line pointer out of
 *     bounds in the walk (verification checks what the walk relies on).
 * A disagreement aborts, which libFuzzer reports with the input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap.h"
#include "page.h"
#include "qual.h"
#include "seqscan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CONTROL 10

static void fail(const char *what)
{
    fprintf(stderr, "fuzz_scan: %s\n", what);
    abort();
}

/* Walk page with the short way on or off; the error message in err. */
static int walk(SeqScan *ss, const Qual *q, bool fast, const unsigned char *page,
                HsError *err)
{
    seqscan_init(ss, "fuzz", NULL, q);
    ss->ss_fast = fast;
    hs_error_clear(err);
    return seqscan_walk_page(ss, page, 7, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static _Alignas(8) unsigned char page[BLCKSZ];
    if (size < CONTROL)
        return 0;
    Qual q = {.q_col = (QualCol)(data[0] % 3), .q_op = (QualOp)(data[1] % 6)};
    memcpy(&q.q_value, data + 2, 8);
    size_t n = size - CONTROL < BLCKSZ ? size - CONTROL : BLCKSZ;
    memset(page, 0, BLCKSZ);
    memcpy(page, data + CONTROL, n);

    PageFault f;
    bool sound = page_verify(page, 7, PAGE_CHECKSUM_NONE, &f) == PAGE_OK;
    (void)page_verify(page, 7, PAGE_CHECKSUM_HEAPSCAN, &f);
    (void)page_verify(page, 7, PAGE_CHECKSUM_POSTGRES, &f);

    static SeqScan a, b;
    static HsError ea, eb;
    int ra = walk(&a, &q, true, page, &ea), rb = walk(&b, &q, false, page, &eb);
    if (ra != rb || strcmp(ea.msg, eb.msg) != 0)
        fail("the short way and the full decision disagree on the outcome");
    if (sound && ra == HS_ECORRUPT && strstr(ea.msg, "out of bounds"))
        fail("a verified page has a line pointer out of bounds in the walk");
    if (ra < 0)
        return 0;
    if (a.ss_rows_scanned != b.ss_rows_scanned || a.ss_nmatch != b.ss_nmatch ||
        memcmp(a.ss_match, b.ss_match, a.ss_nmatch * sizeof(a.ss_match[0])) != 0)
        fail("the short way and the full decision keep different tuples");
    for (unsigned i = 0; i < a.ss_nmatch; i++) {
        ItemId id = (ItemId)a.ss_match[i];
        HeapRow row;
        if (item_id_off(id) + item_id_len(id) > BLCKSZ ||
            heap_tuple_deform(page + item_id_off(id), item_id_len(id), &row) < 0)
            fail("a kept tuple is not a row of t");
        if (!qual_row_test(&q, &row))
            fail("a kept tuple does not pass the qual");
    }
    return 0;
}
