/*
 * qual.h -- the one kind of WHERE clause heapscan evaluates:
 *           "COL OP INTEGER", COL one of id, k, v and OP one of
 *           = != <> < <= > >=.
 */
#ifndef HEAPSCAN_QUAL_H
#define HEAPSCAN_QUAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "heap.h"

typedef enum QualCol { QUAL_ID, QUAL_K, QUAL_V } QualCol;
typedef enum QualOp { QUAL_EQ, QUAL_NE, QUAL_LT, QUAL_LE, QUAL_GT, QUAL_GE } QualOp;

typedef struct Qual {
    QualCol q_col;
    QualOp q_op;
    int64_t q_value;
} Qual;

/* The 1998 experiment's qual, which no row satisfies: k = -1. */
#define QUAL_DEFAULT ((Qual){.q_col = QUAL_K, .q_op = QUAL_EQ, .q_value = -1})

/*
 * Parse text like "k >= 500000" (spaces optional).  Returns 0, or -1 with a
 * one-line reason in why.
 */
int qual_parse(const char *text, Qual *q, char *why, size_t whylen);

/* Format q back as "k = -1". */
const char *qual_format(const Qual *q, char *buf, size_t len);

/*
 * A qual compiled for the tuple loop: every operator is "x in [lo, hi]" or
 * its negation, and (x - lo) <= (hi - lo) in unsigned arithmetic tests both
 * bounds with one compare and no branch.
 */
typedef struct QualRange {
    unsigned qr_off;  /* the column's offset in a tuple of t */
    bool qr_wide;     /* an int8 column (else int4) */
    bool qr_negate;   /* the qual is "x not in [lo, hi]"; a qual no value passes
                         (x < INT64_MIN, x > INT64_MAX) is "not in the whole range" */
    uint64_t qr_lo;   /* lower bound, as unsigned */
    uint64_t qr_span; /* hi - lo, as unsigned */
} QualRange;

/* Compile q into a range test. */
QualRange qual_compile(const Qual *q);

/* Does the tuple of t at tup (at least 40 bytes long, no column null) pass? */
static inline bool qual_range_test(const QualRange *qr, const unsigned char *tup)
{
    int64_t x;
    if (qr->qr_wide) {
        memcpy(&x, tup + qr->qr_off, 8);
    } else {
        int32_t x32;
        memcpy(&x32, tup + qr->qr_off, 4);
        x = x32;
    }
    bool in = (uint64_t)x - qr->qr_lo <= qr->qr_span;
    return in != qr->qr_negate;
}

/* Evaluate q on a value of its column (the plain way: tests use it as the
 * oracle for qual_range_test()). */
static inline bool qual_test(const Qual *q, int64_t x)
{
    switch (q->q_op) {
    case QUAL_EQ:
        return x == q->q_value;
    case QUAL_NE:
        return x != q->q_value;
    case QUAL_LT:
        return x < q->q_value;
    case QUAL_LE:
        return x <= q->q_value;
    case QUAL_GT:
        return x > q->q_value;
    case QUAL_GE:
        return x >= q->q_value;
    }
    return false;
}

/* Does row pass q?  A null in q's column passes nothing, as in SQL. */
static inline bool qual_row_test(const Qual *q, const HeapRow *row)
{
    static const uint8_t null_bit[] = {
        [QUAL_ID] = HEAP_NULL_ID, [QUAL_K] = HEAP_NULL_K, [QUAL_V] = HEAP_NULL_V};
    if (row->nulls & null_bit[q->q_col])
        return false;
    int64_t x = q->q_col == QUAL_ID ? row->id : q->q_col == QUAL_K ? row->k : row->v;
    return qual_test(q, x);
}

#endif
