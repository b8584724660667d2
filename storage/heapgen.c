/*
 * heapgen.c -- generated rows and the pages holding them (see heapgen.h).
 */
#include "heapgen.h"

#include <string.h>

#define GOLDEN UINT64_C(0x9E3779B97F4A7C15)

/* splitmix64's finaliser: a bijection on 64 bits that mixes every bit. */
static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/*
 * Map each byte b of x to ' ' + (b * 95 >> 8), a printable character, all
 * eight at once: the even and the odd bytes each sit in 16-bit lanes, where
 * b * 95 <= 24225 cannot carry into the next lane.  The same bytes, in
 * little-endian order, as scaling one byte at a time.
 */
static inline uint64_t printable8(uint64_t x)
{
    const uint64_t lanes = UINT64_C(0x00FF00FF00FF00FF);
    uint64_t even = ((x & lanes) * 95 >> 8) & lanes;
    uint64_t odd = (((x >> 8) & lanes) * 95 >> 8) & lanes;
    return (even | odd << 8) + UINT64_C(0x2020202020202020);
}

int heapgen_check(const HeapGenSpec *spec, HsError *err)
{
    if (spec->hg_pad_len > HEAP_PAD_MAX)
        return hs_error_set(err, HS_EUSAGE, NULL, HS_NO_BLOCK,
                            "pad %u does not fit a page: a tuple holds at most "
                            "%d bytes of pad",
                            spec->hg_pad_len, HEAP_PAD_MAX);
    if (spec->hg_fillfactor < 10 || spec->hg_fillfactor > 100)
        return hs_error_set(err, HS_EUSAGE, NULL, HS_NO_BLOCK,
                            "fillfactor %u is outside 10..100", spec->hg_fillfactor);
    return 0;
}

size_t heapgen_reserve(const HeapGenSpec *spec)
{
    return (size_t)BLCKSZ * (100 - spec->hg_fillfactor) / 100;
}

unsigned heapgen_tuples_per_page(const HeapGenSpec *spec)
{
    /* Fill a scratch page by the same rule the writer uses: exact by construction. */
    _Alignas(8) static _Thread_local unsigned char page[BLCKSZ];
    _Alignas(8) unsigned char tuple[MAX_HEAP_TUPLE_SIZE];
    size_t len = heap_tuple_len(spec->hg_pad_len);
    size_t reserve = heapgen_reserve(spec);
    unsigned n = 0;

    memset(tuple, 0, len);
    page_init(page);
    while (page_add_item(page, tuple, len, reserve) != 0)
        n++;
    return n;
}

void heapgen_row(const HeapGenSpec *spec, int32_t id, HeapRow *row, char *padbuf)
{
    uint64_t base = mix64(spec->hg_seed * GOLDEN ^
                          (uint64_t)(uint32_t)id * UINT64_C(0xD1B54A32D192ED03));
    uint64_t r = mix64(base);
    *row = (HeapRow){.id = id,
                     .k = (int32_t)((r >> 32) % HEAPGEN_K_RANGE),
                     .v = (int64_t)(r & UINT32_MAX),
                     .pad = padbuf,
                     .pad_len = spec->hg_pad_len}; /* nothing null */

    /* 8 pad bytes from each further draw, each byte scaled onto ' '..'~'. */
    uint32_t i = 0, lane = 1;
    for (; i + 8 <= spec->hg_pad_len; i += 8, lane++) {
        uint64_t chars = printable8(mix64(base + lane * GOLDEN));
        memcpy(padbuf + i, &chars, 8);
    }
    if (i < spec->hg_pad_len) {
        uint64_t chars = printable8(mix64(base + lane * GOLDEN));
        memcpy(padbuf + i, &chars, spec->hg_pad_len - i);
    }
}

int heapgen_page(const HeapGenSpec *spec, uint32_t blkno, int32_t first_id, unsigned n,
                 void *page)
{
    _Alignas(8) unsigned char tuple[MAX_HEAP_TUPLE_SIZE];
    char pad[HEAP_PAD_MAX];
    size_t reserve = heapgen_reserve(spec);

    page_init(page);
    for (unsigned i = 0; i < n; i++) {
        HeapRow row;
        heapgen_row(spec, first_id + (int32_t)i, &row, pad);
        size_t len = heap_tuple_form(tuple, &row, blkno, i + 1);
        if (page_add_item(page, tuple, len, reserve) != i + 1)
            return -1;
    }
    if (spec->hg_all_visible)
        ((PageHeaderData *)page)->pd_flags |= PD_ALL_VISIBLE;
    page_set_checksum(page, blkno);
    return 0;
}

void heapgen_stats(const HeapGenSpec *spec, uint64_t rows, HeapGenStats *stats)
{
    char pad[HEAP_PAD_MAX];
    HeapGenSpec nopad = *spec;
    nopad.hg_pad_len = 0; /* k and v do not depend on the pad */

    memset(stats, 0, sizeof(*stats));
    stats->hs_rows = rows;
    stats->hs_sum_len = rows * spec->hg_pad_len;
    stats->hs_min_k = rows ? INT32_MAX : 0;
    for (uint64_t id = 1; id <= rows; id++) {
        HeapRow row;
        heapgen_row(&nopad, (int32_t)id, &row, pad);
        stats->hs_sum_v += row.v;
        if (row.k < stats->hs_min_k)
            stats->hs_min_k = row.k;
        if (row.k > stats->hs_max_k)
            stats->hs_max_k = row.k;
    }
}
