/*
 * heap.c -- forming and deforming tuples of t (see heap.h).
 */
#include "heap.h"

#include <string.h>

size_t heap_tuple_form(void *dst, const HeapRow *row, uint32_t blkno, unsigned offnum)
{
    unsigned char *p = dst;
    HeapTupleHeaderData h = {
        .t_xmin = FROZEN_TRANSACTION_ID,
        .t_xmax = 0,
        .t_cid = 0,
        .t_ctid_bi_hi = (uint16_t)(blkno >> 16),
        .t_ctid_bi_lo = (uint16_t)blkno,
        .t_ctid_posid = (uint16_t)offnum,
        .t_infomask2 = HEAP_NATTS,
        .t_infomask = HEAP_XMIN_FROZEN | HEAP_XMAX_INVALID | HEAP_HASVARWIDTH,
        .t_hoff = HEAP_TUPLE_HOFF,
    };
    memcpy(p, &h, sizeof(h));
    p[sizeof(h)] = 0; /* padding up to t_hoff */

    unsigned char *d = p + HEAP_TUPLE_HOFF;
    memcpy(d + 0, &row->id, 4);
    memcpy(d + 4, &row->k, 4);
    memcpy(d + 8, &row->v, 8);

    uint32_t n = row->pad_len;
    unsigned char *vl = d + HEAP_DATA_PAD_OFF;
    if (n <= HEAP_SHORT_VARLENA_MAX) {
        vl[0] = (unsigned char)(((n + 1) << 1) | 1);
    } else {
        /* HEAP_DATA_PAD_OFF is a multiple of 4, so no alignment padding is needed */
        uint32_t hdr = (n + 4) << 2;
        memcpy(vl, &hdr, 4);
    }
    memcpy(p + heap_pad_data_off(n), row->pad, n);
    return heap_tuple_len(n);
}

int heap_tuple_deform(const void *tup, size_t len, HeapRow *row)
{
    const unsigned char *p = tup;
    HeapTupleHeaderData h;

    if (len < HEAP_TUPLE_HOFF + HEAP_DATA_PAD_OFF + 1)
        return -1;
    memcpy(&h, p, sizeof(h));
    if ((h.t_infomask2 & HEAP_NATTS_MASK) != HEAP_NATTS || h.t_hoff != HEAP_TUPLE_HOFF)
        return -1;

    const unsigned char *d = p + HEAP_TUPLE_HOFF;
    memcpy(&row->id, d + 0, 4);
    memcpy(&row->k, d + 4, 4);
    memcpy(&row->v, d + 8, 8);

    const unsigned char *vl = d + HEAP_DATA_PAD_OFF;
    size_t data_off, n;
    if (vl[0] & 1) {
        /* 1-byte header; 0x01 alone would be an external TOAST pointer */
        if (vl[0] == 0x01)
            return -1;
        n = (size_t)(vl[0] >> 1) - 1;
        data_off = HEAP_TUPLE_HOFF + HEAP_DATA_PAD_OFF + 1;
    } else {
        uint32_t hdr;
        if (len < HEAP_TUPLE_HOFF + HEAP_DATA_PAD_OFF + 4)
            return -1;
        memcpy(&hdr, vl, 4);
        if (hdr & 3) /* compressed inline: not something we write */
            return -1;
        if ((hdr >> 2) < 4)
            return -1;
        n = (hdr >> 2) - 4;
        data_off = HEAP_TUPLE_HOFF + HEAP_DATA_PAD_OFF + 4;
    }
    if (data_off + n > len)
        return -1;
    row->pad = (const char *)p + data_off;
    row->pad_len = (uint32_t)n;
    return 0;
}
