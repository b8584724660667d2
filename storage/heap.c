/*
 * heap.c -- forming, checking and deforming tuples of t, and deciding
 *           their visibility (see heap.h).
 */
#include "heap.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The columns of t in order: their null bit and alignment. */
static const struct {
    const char *name;
    uint8_t null_bit;
    uint8_t align;
} columns[HEAP_NATTS] = {
    {"id", HEAP_NULL_ID, 4},
    {"k", HEAP_NULL_K, 4},
    {"v", HEAP_NULL_V, 8},
    {"pad", HEAP_NULL_PAD, 4},
};

static size_t align_up(size_t off, size_t a)
{
    return (off + a - 1) & ~(a - 1);
}

size_t heap_tuple_form(void *dst, const HeapRow *row, uint32_t blkno, unsigned offnum)
{
    unsigned char *p = dst;
    uint16_t infomask = HEAP_XMIN_FROZEN | HEAP_XMAX_INVALID;
    if (row->nulls)
        infomask |= HEAP_HASNULL;
    if (!(row->nulls & HEAP_NULL_PAD))
        infomask |= HEAP_HASVARWIDTH;
    HeapTupleHeaderData h = {
        .t_xmin = FROZEN_TRANSACTION_ID,
        .t_xmax = 0,
        .t_cid = 0,
        .t_ctid_bi_hi = (uint16_t)(blkno >> 16),
        .t_ctid_bi_lo = (uint16_t)blkno,
        .t_ctid_posid = (uint16_t)offnum,
        .t_infomask2 = HEAP_NATTS,
        .t_infomask = infomask,
        .t_hoff = HEAP_TUPLE_HOFF,
    };
    memcpy(p, &h, sizeof(h));
    /* the null bitmap (a set bit is a present column), or padding up to t_hoff */
    p[sizeof(h)] = row->nulls ? (unsigned char)(~row->nulls & 0x0f) : 0;

    const void *val[3] = {&row->id, &row->k, &row->v};
    size_t off = HEAP_TUPLE_HOFF;
    for (int c = 0; c < 3; c++) {
        if (row->nulls & columns[c].null_bit)
            continue;
        size_t at = align_up(off, columns[c].align);
        memset(p + off, 0, at - off);
        memcpy(p + at, val[c], columns[c].align);
        off = at + columns[c].align;
    }
    if (row->nulls & HEAP_NULL_PAD)
        return off;

    uint32_t n = row->pad_len;
    if (n <= HEAP_SHORT_VARLENA_MAX) {
        p[off++] = (unsigned char)(((n + 1) << 1) | 1); /* no alignment */
    } else {
        size_t at = align_up(off, 4);
        memset(p + off, 0, at - off);
        uint32_t hdr = (n + 4) << 2;
        memcpy(p + at, &hdr, 4);
        off = at + 4;
    }
    memcpy(p + off, row->pad, n);
    return off + n;
}

/* Fill why (if any) and return -1. */
static int refuse(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse(char *why, size_t whylen, const char *fmt, ...)
{
    if (why != NULL && whylen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/*
 * pad's varlena at p + off in a tuple of len bytes: its form, where its
 * bytes start and how many there are, and *end just past it.  -1 (with
 * why) if the header is not one PostgreSQL writes on disk or the datum
 * runs past len.
 */
static int read_varlena(const unsigned char *p, size_t off, size_t len, HeapRow *row,
                        size_t *end, char *why, size_t whylen)
{
    if (off >= len)
        return refuse(why, whylen,
                      "pad's varlena header at byte %zu is past the "
                      "tuple's end (%zu bytes)",
                      off, len);
    unsigned char b = p[off];
    if (b == 0x01) { /* a TOAST pointer: tag byte, then the pointer */
        if (off + 2 > len || p[off + 1] != 18)
            return refuse(why, whylen,
                          "pad is an external datum of tag %d, not an "
                          "on-disk TOAST pointer (tag 18)",
                          off + 2 > len ? -1 : p[off + 1]);
        *end = off + 2 + 16;
        row->pad_form = HEAP_PAD_EXTERNAL;
        row->pad = (const char *)p + off + 2;
        row->pad_len = 16;
    } else if (b & 1) { /* 1-byte header: its length, header included */
        *end = off + (b >> 1);
        row->pad_form = HEAP_PAD_PLAIN;
        row->pad = (const char *)p + off + 1;
        row->pad_len = (uint32_t)((b >> 1) - 1);
    } else {
        size_t at = align_up(off, 4); /* a zero byte here is alignment padding */
        uint32_t hdr;
        if (at + 4 > len)
            return refuse(why, whylen,
                          "pad's 4-byte varlena header at byte %zu runs "
                          "past the tuple's end (%zu bytes)",
                          at, len);
        memcpy(&hdr, p + at, 4);
        uint32_t size = hdr >> 2;
        bool compressed = (hdr & 3) == 2;
        if ((hdr & 3) == 0 && size >= 4) {
            row->pad_form = HEAP_PAD_PLAIN;
        } else if (compressed && size >= 8 && at + 8 <= len) {
            uint32_t tcinfo; /* raw size (30 bits) and method (2 bits) */
            memcpy(&tcinfo, p + at + 4, 4);
            if (tcinfo >> 30 > 1) /* 0 pglz, 1 lz4 */
                return refuse(why, whylen, "pad is compressed with unknown method %u",
                              (unsigned)(tcinfo >> 30));
            row->pad_form = HEAP_PAD_COMPRESSED;
        } else {
            return refuse(why, whylen,
                          "pad's varlena header 0x%08x is not a form "
                          "PostgreSQL stores",
                          (unsigned)hdr);
        }
        *end = at + size;
        row->pad = (const char *)p + at + 4;
        row->pad_len = size - 4;
    }
    if (*end > len)
        return refuse(why, whylen,
                      "pad's varlena (%zu bytes from byte %zu) runs past "
                      "the tuple's end (%zu bytes)",
                      *end - off, off, len);
    return 0;
}

/* Check the header of a tuple of len bytes against t's: attributes, OID,
 * t_hoff, and which columns the null bitmap says are null (into *nulls). */
static int check_header(const unsigned char *p, size_t len, uint8_t *nulls, char *why,
                        size_t whylen)
{
    HeapTupleHeaderData h;
    if (len < sizeof(h))
        return refuse(why, whylen, "tuple of %zu bytes is shorter than a tuple header",
                      len);
    memcpy(&h, p, sizeof(h));
    unsigned natts = h.t_infomask2 & HEAP_NATTS_MASK;
    if (natts != HEAP_NATTS)
        return refuse(why, whylen,
                      "tuple has %u attributes, t has %d (id int4, k "
                      "int4, v int8, pad text)",
                      natts, HEAP_NATTS);
    if (h.t_infomask & HEAP_HASOID_OLD)
        return refuse(why, whylen, "tuple has an OID column (a table WITH OIDS)");
    if (h.t_hoff != HEAP_TUPLE_HOFF || len < HEAP_TUPLE_HOFF)
        return refuse(why, whylen, "t_hoff is %u, not %d", h.t_hoff, HEAP_TUPLE_HOFF);
    *nulls = (h.t_infomask & HEAP_HASNULL) ? (uint8_t)(~p[sizeof(h)] & 0x0f) : 0;
    bool varwidth = (h.t_infomask & HEAP_HASVARWIDTH) != 0;
    if (varwidth != !(*nulls & HEAP_NULL_PAD))
        return refuse(why, whylen, "HEAP_HASVARWIDTH is %s but pad is %s",
                      varwidth ? "set" : "clear", varwidth ? "null" : "present");
    return 0;
}

int heap_tuple_check(const void *tup, size_t len, HeapRow *row, char *why,
                     size_t whylen)
{
    const unsigned char *p = tup;
    memset(row, 0, sizeof(*row));
    if (check_header(p, len, &row->nulls, why, whylen) < 0)
        return -1;

    void *dst[3] = {&row->id, &row->k, &row->v};
    size_t off = HEAP_TUPLE_HOFF;
    for (int c = 0; c < 3; c++) {
        if (row->nulls & columns[c].null_bit)
            continue;
        off = align_up(off, columns[c].align);
        if (off + columns[c].align > len)
            return refuse(why, whylen,
                          "column %s at byte %zu runs past the tuple's "
                          "end (%zu bytes)",
                          columns[c].name, off, len);
        memcpy(dst[c], p + off, columns[c].align);
        off += columns[c].align;
    }
    bool external = false;
    if (!(row->nulls & HEAP_NULL_PAD)) {
        if (read_varlena(p, off, len, row, &off, why, whylen) < 0)
            return -1;
        external = row->pad_form == HEAP_PAD_EXTERNAL;
    }
    uint16_t infomask;
    memcpy(&infomask, p + offsetof(HeapTupleHeaderData, t_infomask), 2);
    if (external != ((infomask & HEAP_HASEXTERNAL) != 0))
        return refuse(why, whylen, "HEAP_HASEXTERNAL is %s but pad is %s",
                      external ? "clear" : "set",
                      external ? "a TOAST pointer" : "not one");
    if (off != len)
        return refuse(why, whylen,
                      "the columns end at byte %zu but the tuple has %zu "
                      "bytes",
                      off, len);
    return 0;
}

int heap_tuple_deform(const void *tup, size_t len, HeapRow *row)
{
    return heap_tuple_check(tup, len, row, NULL, 0);
}

/* ---- visibility ---------------------------------------------------------- */

enum { KNOWN_NO = 0, KNOWN_YES = 1, UNKNOWN = 2 };

/* Did xid commit?  KNOWN_YES / KNOWN_NO, or UNKNOWN when px is NULL and the
 * xid is a normal one; a negative code from pgxact. */
static int xid_committed(uint32_t xid, PgXact *px, HsError *err)
{
    if (xid == INVALID_TRANSACTION_ID)
        return KNOWN_NO;
    if (xid < FIRST_NORMAL_TRANSACTION_ID)
        return KNOWN_YES; /* bootstrap and frozen */
    if (px == NULL)
        return UNKNOWN;
    XactStatus st;
    int rc = pgxact_xid_status(px, xid, &st, err);
    return rc < 0 ? rc : st == XACT_COMMITTED ? KNOWN_YES : KNOWN_NO;
}

/* Did the inserting transaction commit? */
static int xmin_committed(const HeapTupleHeaderData *h, PgXact *px, HsError *err)
{
    uint16_t m = h->t_infomask;
    if (m & HEAP_XMIN_COMMITTED)
        return KNOWN_YES; /* committed, or frozen (both bits) */
    if (m & HEAP_XMIN_INVALID)
        return KNOWN_NO;
    if (m & (HEAP_MOVED_OFF | HEAP_MOVED_IN))
        return UNKNOWN; /* decided by the pre-9.0 VACUUM FULL's xid: not read here */
    return xid_committed(h->t_xmin, px, err);
}

/* Did a committed transaction delete or update the tuple?  (A lock is no
 * deletion.) */
static int deleted(const HeapTupleHeaderData *h, PgXact *px, HsError *err)
{
    uint16_t m = h->t_infomask;
    if (m & HEAP_XMAX_INVALID)
        return KNOWN_NO;
    if ((m & HEAP_XMAX_LOCK_ONLY) ||
        (m & (HEAP_XMAX_IS_MULTI | HEAP_LOCK_MASK)) == HEAP_XMAX_EXCL_LOCK)
        return KNOWN_NO; /* only locked (the second form: a 9.2 FOR UPDATE) */
    if (m & HEAP_XMAX_IS_MULTI) {
        if (px == NULL)
            return UNKNOWN;
        uint32_t updater;
        int rc = pgxact_multi_update_xid(px, h->t_xmax, &updater, err);
        if (rc < 0)
            return rc;
        return updater == 0 ? KNOWN_NO : xid_committed(updater, px, err);
    }
    if (m & HEAP_XMAX_COMMITTED)
        return KNOWN_YES;
    return xid_committed(h->t_xmax, px, err);
}

int heap_tuple_visibility(const HeapTupleHeaderData *h, PgXact *px, HsError *err)
{
    int ins = xmin_committed(h, px, err);
    if (ins < 0 || ins == KNOWN_NO)
        return ins; /* an error, or never inserted: invisible whatever xmax says */
    int del = deleted(h, px, err);
    if (del < 0)
        return del;
    if (del == KNOWN_YES)
        return 0; /* deleted by a committed transaction, whoever inserted it */
    const char *way_out = px ? "VACUUM FREEZE the table"
                             : "VACUUM FREEZE the table, or scan it with --pgdata";
    if (ins == UNKNOWN && (h->t_infomask & (HEAP_MOVED_OFF | HEAP_MOVED_IN)))
        return hs_error_set(err, HS_EREFUSED, NULL, HS_NO_BLOCK,
                            "xmin %u was moved by a VACUUM FULL before PostgreSQL 9.0 "
                            "and has no hint bits, so whether it is visible is "
                            "unknown: VACUUM FREEZE the table",
                            (unsigned)h->t_xmin);
    if (ins == UNKNOWN)
        return hs_error_set(err, HS_EREFUSED, NULL, HS_NO_BLOCK,
                            "xmin %u has no hint bits and is not frozen, so whether it "
                            "committed is unknown: %s",
                            (unsigned)h->t_xmin, way_out);
    if (del == UNKNOWN)
        return hs_error_set(err, HS_EREFUSED, NULL, HS_NO_BLOCK,
                            "xmax %s%u has no hint bits, so whether it deleted the "
                            "tuple is unknown: %s",
                            h->t_infomask & HEAP_XMAX_IS_MULTI ? "MultiXact " : "",
                            (unsigned)h->t_xmax, way_out);
    return 1;
}
