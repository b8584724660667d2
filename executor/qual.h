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

typedef enum QualCol { QUAL_ID, QUAL_K, QUAL_V } QualCol;
typedef enum QualOp { QUAL_EQ, QUAL_NE, QUAL_LT, QUAL_LE, QUAL_GT, QUAL_GE } QualOp;

typedef struct Qual {
    QualCol q_col;
    QualOp q_op;
    int64_t q_value;
} Qual;

/* The seed's qual, which no row satisfies: k = -1. */
#define QUAL_DEFAULT ((Qual){.q_col = QUAL_K, .q_op = QUAL_EQ, .q_value = -1})

/*
 * Parse text like "k >= 500000" (spaces optional).  Returns 0, or -1 with a
 * one-line reason in why.
 */
int qual_parse(const char *text, Qual *q, char *why, size_t whylen);

/* Format q back as "k = -1". */
const char *qual_format(const Qual *q, char *buf, size_t len);

/* Evaluate q on a value of its column. */
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

#endif
