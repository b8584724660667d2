/*
 * heap.h -- the heap tuple format of the table t (id int4, k int4, v int8,
 *           pad text), byte-compatible with PostgreSQL 15, and the
 *           visibility of a tuple once every transaction has ended.
 *
 * Entry points: heap_tuple_len() and heap_tuple_form() build a tuple;
 * heap_tuple_check() reads one back, checking it is a row of t in any form
 * PostgreSQL writes (heap_tuple_deform() is the same without the reason);
 * heap_tuple_visibility() decides whether a tuple is visible.
 * See also: page.h -- the page the tuples live on; pgxact.h -- a stopped
 * cluster's transaction status, which visibility may need.
 *
 * A tuple is a 23-byte header padded to t_hoff = 24, then the columns:
 *
 *   off  0  t_xmin      inserting transaction (mkheap: 2, FrozenTransactionId)
 *   off  4  t_xmax      deleting or locking transaction (0)
 *   off  8  t_cid       command id (0)
 *   off 12  t_ctid      (block hi, block lo, offset): the tuple's own address,
 *                       or its newer version's
 *   off 18  t_infomask2 number of attributes (4) and HOT flags
 *   off 20  t_infomask  HEAP_* bits (mkheap: 0x0B02 = XMIN_FROZEN |
 *                       XMAX_INVALID | HASVARWIDTH)
 *   off 22  t_hoff      24
 *   off 23  t_bits      the null bitmap, when HEAP_HASNULL: bit i set means
 *                       column i + 1 is not null (one byte for 4 columns, so
 *                       t_hoff is still MAXALIGN(23 + 1) = 24)
 *   off 24  id   int4   (4-aligned)
 *   off 28  k    int4
 *   off 32  v    int8   (8-aligned: 32 is)
 *   off 40  pad  text: a varlena.  Up to 126 bytes a 1-byte header
 *                ((n + 1) << 1) | 1 and no alignment; longer a 4-byte header
 *                (n + 4) << 2 aligned to 4; PostgreSQL may also store it
 *                compressed inline (4-byte header with low bits 10) or as a
 *                TOAST pointer (header byte 0x01, tag 18, 16 bytes).
 *
 * A null column takes no space and the next one is aligned from where the
 * last present one ended, so with nulls the offsets above move.  mkheap
 * writes no nulls and frozen tuples: a real server never needs to set hint
 * bits on them, and VACUUM and amcheck accept them as they are.
 */
#ifndef HEAPSCAN_HEAP_H
#define HEAPSCAN_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hserror.h"
#include "page.h"
#include "pgxact.h"

/* t_infomask bits, as PostgreSQL's htup_details.h */
#define HEAP_HASNULL          0x0001 /* a null bitmap follows the header */
#define HEAP_HASVARWIDTH      0x0002 /* a varlena column is not null */
#define HEAP_HASEXTERNAL      0x0004 /* a varlena column is a TOAST pointer */
#define HEAP_HASOID_OLD       0x0008 /* an OID column (before PostgreSQL 12) */
#define HEAP_XMAX_KEYSHR_LOCK 0x0010 /* xmax holds a FOR KEY SHARE lock */
#define HEAP_COMBOCID         0x0020 /* t_cid is a combo cid */
#define HEAP_XMAX_EXCL_LOCK   0x0040 /* xmax holds an exclusive lock */
#define HEAP_XMAX_LOCK_ONLY   0x0080 /* xmax only locked the tuple */
#define HEAP_XMIN_COMMITTED   0x0100 /* hint: t_xmin committed */
#define HEAP_XMIN_INVALID     0x0200 /* hint: t_xmin aborted */
#define HEAP_XMIN_FROZEN      (HEAP_XMIN_COMMITTED | HEAP_XMIN_INVALID)
#define HEAP_XMAX_COMMITTED   0x0400 /* hint: t_xmax committed */
#define HEAP_XMAX_INVALID     0x0800 /* hint: t_xmax invalid or aborted */
#define HEAP_XMAX_IS_MULTI    0x1000 /* t_xmax is a MultiXactId */
#define HEAP_UPDATED          0x2000 /* this is the new version of an updated row */
#define HEAP_MOVED_OFF        0x4000 /* moved away by VACUUM FULL before 9.0 */
#define HEAP_MOVED_IN         0x8000 /* moved here by VACUUM FULL before 9.0 */
#define HEAP_LOCK_MASK        (HEAP_XMAX_KEYSHR_LOCK | HEAP_XMAX_EXCL_LOCK)
#define HEAP_NATTS_MASK       0x07FF /* t_infomask2: number of attributes */

#define HEAP_NATTS      4
#define HEAP_TUPLE_HOFF 24 /* MAXALIGN(23), and MAXALIGN(23 + 1) with a null bitmap */
#define HEAP_DATA_PAD_OFF                                                              \
    16 /* pad's varlena header, from t_hoff, when nothing is null */

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

/* HeapTupleHeaderData: the 23 bytes before the null bitmap. */
typedef struct __attribute__((packed)) HeapTupleHeaderData {
    uint32_t t_xmin;       /* inserting transaction (2: frozen) */
    uint32_t t_xmax;       /* deleting or locking transaction, or MultiXact (0: none) */
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

/* HeapRow.nulls: a bit per column that is null. */
#define HEAP_NULL_ID  0x1
#define HEAP_NULL_K   0x2
#define HEAP_NULL_V   0x4
#define HEAP_NULL_PAD 0x8

/* How pad is stored. */
typedef enum HeapPadForm {
    HEAP_PAD_PLAIN,      /* inline and uncompressed: pad/pad_len are the text */
    HEAP_PAD_COMPRESSED, /* inline, compressed (pglz or lz4): pad is the raw datum */
    HEAP_PAD_EXTERNAL,   /* a TOAST pointer: pad is its 16 bytes */
} HeapPadForm;

/* One row of t.  A null column reads as 0 and has its bit in nulls. */
typedef struct HeapRow {
    int32_t id;
    int32_t k;
    int64_t v;
    const char *pad;  /* pad_len bytes, not NUL-terminated (pointing into the tuple) */
    uint32_t pad_len; /* bytes after the varlena header */
    uint8_t nulls;    /* HEAP_NULL_* bits (heap_tuple_form() writes them as nulls) */
    uint8_t pad_form; /* HeapPadForm */
} HeapRow;

/* Offset of pad's bytes from the start of the tuple, for a pad of pad_len
 * (and no nulls). */
static inline size_t heap_pad_data_off(size_t pad_len)
{
    return HEAP_TUPLE_HOFF + HEAP_DATA_PAD_OFF +
           (pad_len <= HEAP_SHORT_VARLENA_MAX ? 1 : 4);
}

/* Unpadded length of the tuple holding a pad of pad_len bytes (lp_len), no nulls. */
static inline size_t heap_tuple_len(size_t pad_len)
{
    return heap_pad_data_off(pad_len) + pad_len;
}

/*
 * Write the tuple for row at dst (at most heap_tuple_len(row->pad_len)
 * bytes), as the tuple at line pointer offnum of block blkno: frozen,
 * columns in row->nulls written as nulls, pad inline and uncompressed.
 * Returns its length.
 */
size_t heap_tuple_form(void *dst, const HeapRow *row, uint32_t blkno, unsigned offnum);

/*
 * Read the tuple of len bytes at tup into row (row->pad points into tup),
 * checking that it is a row of t as PostgreSQL writes one: 4 attributes, no
 * OID, t_hoff 24, the null bitmap (if any) and HEAP_HASVARWIDTH /
 * HEAP_HASEXTERNAL agreeing with the columns, each present column at its
 * aligned offset, pad a well-formed varlena of any on-disk form, and the
 * last present column ending exactly at len.  Returns 0, or -1 with a
 * one-line reason in why (which may be NULL).  Never reads past tup + len.
 */
int heap_tuple_check(const void *tup, size_t len, HeapRow *row, char *why,
                     size_t whylen);

/* heap_tuple_check() without the reason. */
int heap_tuple_deform(const void *tup, size_t len, HeapRow *row);

/*
 * The common case, decided from the header alone: a tuple with xmin
 * committed (or frozen), no deleter, no nulls and pad present inline.  True
 * means heap_tuple_visibility() would say visible and only pad's header
 * is left to check; false means ask the full functions.  One load and one
 * compare: t_infomask2, t_infomask and t_hoff sit in bytes 18-22, read as
 * the word at byte 16 shifted right by 16 (t_infomask2 in bits 0-15,
 * t_infomask 16-31, t_hoff 32-39).  On a PD_ALL_VISIBLE page the hint bits
 * do not matter.  A loop computes the mask and the value once per page.
 */
#define HEAP_PLAIN_VIS ((uint64_t)(HEAP_XMIN_COMMITTED | HEAP_XMAX_INVALID) << 16)
#define HEAP_PLAIN_MASK                                                                \
    ((uint64_t)HEAP_NATTS_MASK |                                                       \
     (uint64_t)(HEAP_HASNULL | HEAP_HASVARWIDTH | HEAP_HASEXTERNAL | HEAP_HASOID_OLD)  \
         << 16 |                                                                       \
     (uint64_t)0xff << 32)
#define HEAP_PLAIN_WANT                                                                \
    ((uint64_t)HEAP_NATTS | (uint64_t)HEAP_HASVARWIDTH << 16 |                         \
     (uint64_t)HEAP_TUPLE_HOFF << 32)

static inline uint64_t heap_plain_mask(bool all_visible)
{
    return HEAP_PLAIN_MASK | (all_visible ? 0 : HEAP_PLAIN_VIS);
}
static inline uint64_t heap_plain_want(bool all_visible)
{
    return HEAP_PLAIN_WANT | (all_visible ? 0 : HEAP_PLAIN_VIS);
}
static inline bool heap_tuple_matches(const void *tup, uint64_t mask, uint64_t want)
{
    uint64_t w;
    memcpy(&w, (const unsigned char *)tup + 16, 8);
    return (w >> 16 & mask) == want;
}
static inline bool heap_tuple_is_plain(const void *tup, bool all_visible)
{
    return heap_tuple_matches(tup, heap_plain_mask(all_visible),
                              heap_plain_want(all_visible));
}

/*
 * Visibility to a snapshot taken once every transaction has ended, as
 * PostgreSQL's HeapTupleSatisfiesMVCC() decides it then: visible when xmin
 * committed and no committed transaction deleted or updated the tuple (an
 * xmax that only locked it does not count).  What decides it, in order:
 * hint bits (HEAP_XMIN_COMMITTED, HEAP_XMIN_INVALID, HEAP_XMAX_INVALID,
 * HEAP_XMAX_COMMITTED), the special xids 0 (never committed), 1 and 2
 * (committed), a lock-only xmax (HEAP_XMAX_LOCK_ONLY, or an exclusive lock
 * bit alone on a plain xid, as before 9.3), and then, when px is not NULL,
 * the cluster's pg_xact and pg_multixact.  Returns 1 visible, 0 not, or
 * HS_EREFUSED when nothing available decides it (err->msg names the xid
 * and what would decide it), or another negative code from pgxact.
 */
int heap_tuple_visibility(const HeapTupleHeaderData *h, PgXact *px, HsError *err);

#endif
