/*
 * heapgen.h -- the deterministic rows of a generated table and the pages
 *              that hold them.
 *
 * Entry points: heapgen_check() validates a spec, heapgen_tuples_per_page()
 * says how many rows a page holds, heapgen_page() builds one checksummed
 * page, heapgen_row() and heapgen_stats() say what the table contains.
 * See also: heap.h (tuple format), page.h (page layout and checksum).
 *
 * Row id (1..N) is a pure function of (seed, id): k in [0, 1000000),
 * v in [0, 2^32), pad_len printable ASCII bytes.  Nothing depends on the
 * machine, the order of generation or earlier rows, so the same spec gives a
 * byte-identical table anywhere and any row can be recomputed on its own.
 */
#ifndef HEAPSCAN_HEAPGEN_H
#define HEAPSCAN_HEAPGEN_H

#include <stdbool.h>
#include <stdint.h>

#include "heap.h"
#include "hserror.h"

#define HEAPGEN_K_RANGE      1000000   /* k is in [0, HEAPGEN_K_RANGE) */
#define HEAPGEN_MAX_ROWS     INT32_MAX /* id is an int4 */
#define HEAPGEN_DEFAULT_PAD  59        /* 100-byte tuples, 75 a page */
#define HEAPGEN_DEFAULT_SEED 1

typedef struct HeapGenSpec {
    uint64_t hg_seed;       /* everything is derived from it */
    uint32_t hg_pad_len;    /* bytes of text per row, 0..HEAP_PAD_MAX */
    unsigned hg_fillfactor; /* percent of a page to fill, 10..100 */
    bool hg_all_visible;    /* set PD_ALL_VISIBLE (every tuple is frozen) */
} HeapGenSpec;

/* What a table of n rows holds, as SQL aggregates would report it. */
typedef struct HeapGenStats {
    uint64_t hs_rows;    /* count(*) */
    int64_t hs_sum_v;    /* sum(v): < 2^31 rows * 2^32 fits in 63 bits */
    int32_t hs_min_k;    /* min(k) (0 when there are no rows) */
    int32_t hs_max_k;    /* max(k) */
    uint64_t hs_sum_len; /* sum(length(pad)) */
} HeapGenStats;

/* HS_EUSAGE with a message if the spec is out of range, else 0. */
int heapgen_check(const HeapGenSpec *spec, HsError *err);

/* Bytes a page keeps free under the fillfactor: 8192 * (100 - F) / 100. */
size_t heapgen_reserve(const HeapGenSpec *spec);

/* Rows on each full page: found by filling a page with page_add_item(). */
unsigned heapgen_tuples_per_page(const HeapGenSpec *spec);

/* The values of row id; the pad is written to padbuf (spec->hg_pad_len bytes). */
void heapgen_row(const HeapGenSpec *spec, int32_t id, HeapRow *row, char *padbuf);

/*
 * Build page blkno holding rows first_id .. first_id + n - 1 (n at most
 * heapgen_tuples_per_page()) and set its checksum.  Returns 0, or -1 if
 * the rows did not fit (a caller bug).
 */
int heapgen_page(const HeapGenSpec *spec, uint32_t blkno, int32_t first_id, unsigned n,
                 void *page);

/* The aggregates of rows 1..rows of spec. */
void heapgen_stats(const HeapGenSpec *spec, uint64_t rows, HeapGenStats *stats);

#endif
