/*
 * qual.c -- parsing and printing "COL OP INTEGER" (see qual.h).
 */
#include "qual.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const col_names[] = {"id", "k", "v"};
static const char *const op_names[] = {"=", "!=", "<", "<=", ">", ">="};

static const char *skip_space(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return s;
}

int qual_parse(const char *text, Qual *q, char *why, size_t whylen)
{
    const char *s = skip_space(text);
    size_t n = 0;
    while (isalpha((unsigned char)s[n]) || s[n] == '_')
        n++;
    int col = -1;
    for (int i = 0; i < 3; i++)
        if (n == strlen(col_names[i]) && strncmp(s, col_names[i], n) == 0)
            col = i;
    if (col < 0) {
        snprintf(why, whylen, "'%.*s' is not a column (id, k or v)", (int)n, s);
        return -1;
    }
    s = skip_space(s + n);

    int op;
    if (strncmp(s, "<>", 2) == 0 || strncmp(s, "!=", 2) == 0)
        op = QUAL_NE, s += 2;
    else if (strncmp(s, "<=", 2) == 0)
        op = QUAL_LE, s += 2;
    else if (strncmp(s, ">=", 2) == 0)
        op = QUAL_GE, s += 2;
    else if (*s == '=')
        op = QUAL_EQ, s += 1;
    else if (*s == '<')
        op = QUAL_LT, s += 1;
    else if (*s == '>')
        op = QUAL_GT, s += 1;
    else {
        snprintf(why, whylen, "expected one of = != <> < <= > >= after '%s'",
                 col_names[col]);
        return -1;
    }
    s = skip_space(s);

    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || errno != 0) {
        snprintf(why, whylen, "'%s' is not a 64-bit integer", s);
        return -1;
    }
    if (*skip_space(end) != '\0') {
        snprintf(why, whylen, "unexpected '%s' after the number", skip_space(end));
        return -1;
    }
    *q = (Qual){.q_col = (QualCol)col, .q_op = (QualOp)op, .q_value = v};
    return 0;
}

const char *qual_format(const Qual *q, char *buf, size_t len)
{
    snprintf(buf, len, "%s %s %lld", col_names[q->q_col], op_names[q->q_op],
             (long long)q->q_value);
    return buf;
}

QualRange qual_compile(const Qual *q)
{
    static const unsigned col_off[] = {[QUAL_ID] = 0, [QUAL_K] = 4, [QUAL_V] = 8};
    QualRange qr = {.qr_off = HEAP_TUPLE_HOFF + col_off[q->q_col],
                    .qr_wide = q->q_col == QUAL_V};
    int64_t lo = INT64_MIN, hi = INT64_MAX, v = q->q_value;
    bool empty = false;
    switch (q->q_op) {
    case QUAL_EQ:
    case QUAL_NE:
        lo = hi = v;
        qr.qr_negate = q->q_op == QUAL_NE;
        break;
    case QUAL_LT:
        empty = v == INT64_MIN;
        hi = empty ? v : v - 1;
        break;
    case QUAL_LE:
        hi = v;
        break;
    case QUAL_GT:
        empty = v == INT64_MAX;
        lo = empty ? v : v + 1;
        break;
    case QUAL_GE:
        lo = v;
        break;
    }
    if (empty) { /* nothing passes: the complement of every value */
        lo = INT64_MIN, hi = INT64_MAX;
        qr.qr_negate = true;
    }
    qr.qr_lo = (uint64_t)lo;
    qr.qr_span = (uint64_t)hi - (uint64_t)lo;
    return qr;
}
