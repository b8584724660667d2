/*
 * heap.h -- the heap tuple format of the table t (id int4, k int4, v int8,
 *           pad text), byte-compatible with PostgreSQL 15.
 *
 * Entry points: heap_tuple_len() and heap_tuple_form() build a tuple,
 * heap_tuple_deform() reads one back, checking it stays inside its item.
 * See also: page.h -- the page the tuples live on.
 *
 * A tuple is a 23-byte header padded to t_hoff = 24, then the columns:
 *
 *   off  0  t_xmin      2 (FrozenTransactionId): visible to everyone, forever
 *   off  4  t_xmax      0
 *   off  8  t_cid       0
 *   off 12  t_ctid      (block hi, block lo, offset): the tuple's own address
 *   off 18  t_infomask2 4 (number of attributes)
 *   off 20  t_infomask  0x0B02 = XMIN_FROZEN | XMAX_INVALID | HASVARWIDTH
 *   off 22  t_hoff      24
 *   off 24  id   int4
 *   off 28  k    int4
 *   off 32  v    int8 (8-aligned: 32 is)
 *   off 40  pad  text: up to 126 bytes a 1-byte header ((n + 1) << 1) | 1 and
 *                no alignment; longer a 4-byte header (n + 4) << 2 aligned
 *                to 4 (40 already is), then the n bytes.
 *
 * No column is ever null, so there is no null bitmap.  Frozen tuples are
 * what make the file safe for a real server: it never needs to set hint
 * bits on them and VACUUM and amcheck accept them as they are.
 */
#ifndef HEAPSCAN_HEAP_H
#define HEAPSCAN_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "page.h"

#define FROZEN_TRANSACTION_ID 2
#define HEAP_HASVARWIDTH      0x0002
#define HEAP_XMIN_COMMITTED   0x0100
#define HEAP_XMIN_INVALID     0x0200
#define HEAP_XMIN_FROZEN      (HEAP_XMIN_COMMITTED | HEAP_XMIN_INVALID)
#define HEAP_XMAX_INVALID     0x0800
#define HEAP_NATTS_MASK       0x07FF

#define HEAP_NATTS        4
#define HEAP_TUPLE_HOFF   24 /* MAXALIGN(23): no null bitmap */
#define HEAP_DATA_PAD_OFF 16 /* pad's varlena header, from t_hoff */

/* Longest text that fits a 1-byte varlena header (its length byte holds n + 1 <= 127).
 */
#define HEAP_SHORT_VARLENA_MAX 126

/*
 * The largest tuple PostgreSQL will store on a page (MaxHeapTupleSize):
 * BLCKSZ - MAXALIGN(page header + one line pointer) = 8192 - 32 = 8160.
 */
#define MAX_HEAP_TUPLE_SIZE                                                            \
    (BLCKSZ - (int)MAXALIGN(SIZE_OF_PAGE_HEADER + sizeof(ItemId)))
/* and so the longest pad: 8160 - 24 - 16 - 4-byte header */
#define HEAP_PAD_MAX (MAX_HEAP_TUPLE_SIZE - HEAP_TUPLE_HOFF - HEAP_DATA_PAD_OFF - 4)

/* HeapTupleHeaderData: the 23 bytes before t_hoff. */
typedef struct __attribute__((packed)) HeapTupleHeaderData {
    uint32_t t_xmin;       /* inserting transaction (2: frozen) */
    uint32_t t_xmax;       /* deleting transaction (0: none) */
    uint32_t t_cid;        /* command id (0) */
    uint16_t t_ctid_bi_hi; /* t_ctid: block number, high 16 bits */
    uint16_t t_ctid_bi_lo; /* t_ctid: block number, low 16 bits */
    uint16_t t_ctid_posid; /* t_ctid: 1-based line pointer number */
    uint16_t t_infomask2;  /* number of attributes, and HOT flags */
    uint16_t t_infomask;   /* HEAP_* flags */
    uint8_t t_hoff;        /* offset to the user data */
} HeapTupleHeaderData;

_Static_assert(sizeof(HeapTupleHeaderData) == 23, "tuple header is 23 bytes");
_Static_assert(offsetof(HeapTupleHeaderData, t_ctid_bi_hi) == 12, "t_ctid at 12");
_Static_assert(offsetof(HeapTupleHeaderData, t_infomask2) == 18, "t_infomask2 at 18");
_Static_assert(offsetof(HeapTupleHeaderData, t_infomask) == 20, "t_infomask at 20");
_Static_assert(offsetof(HeapTupleHeaderData, t_hoff) == 22, "t_hoff at 22");

/* One row of t.  pad points at pad_len bytes, not NUL-terminated. */
typedef struct HeapRow {
    int32_t id;
    int32_t k;
    int64_t v;
    const char *pad;
    uint32_t pad_len;
} HeapRow;

/* Offset of pad's bytes from the start of the tuple, for a pad of pad_len. */
static inline size_t heap_pad_data_off(size_t pad_len)
{
    return HEAP_TUPLE_HOFF + HEAP_DATA_PAD_OFF +
           (pad_len <= HEAP_SHORT_VARLENA_MAX ? 1 : 4);
}

/* Unpadded length of the tuple holding a pad of pad_len bytes (lp_len). */
static inline size_t heap_tuple_len(size_t pad_len)
{
    return heap_pad_data_off(pad_len) + pad_len;
}

/*
 * Write the tuple for row at dst (heap_tuple_len(row->pad_len) bytes), as the
 * tuple at line pointer offnum of block blkno.  Returns its length.
 */
size_t heap_tuple_form(void *dst, const HeapRow *row, uint32_t blkno, unsigned offnum);

/*
 * Read the tuple of len bytes at tup into row (row->pad points into tup).
 * Returns 0, or -1 if the tuple is not one of t's: wrong attribute count or
 * t_hoff, or a column that runs past len.  Never reads past tup + len.
 */
int heap_tuple_deform(const void *tup, size_t len, HeapRow *row);

#endif
