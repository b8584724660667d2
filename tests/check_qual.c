/*
 * check_qual.c -- "COL OP INTEGER": parsing, printing, the compiled range
 *                 test against the plain one at the edges of int4 and
 *                 int8, and NULLs, which pass nothing.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "qual.h"
#include "testutil.h"

START_TEST(qual_parsing)
{
    Qual q;
    char why[128], buf[64];
    const char *ok[][2] = {
        {"k = -1", "k = -1"},
        {"k=-1", "k = -1"},
        {" id<=1000 ", "id <= 1000"},
        {"v <> 5", "v != 5"},
        {"v != 5", "v != 5"},
        {"k >= 500000", "k >= 500000"},
        {"k > 3", "k > 3"},
        {"k < 3", "k < 3"},
        {"v = 9223372036854775807", "v = 9223372036854775807"},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        ck_assert_msg(qual_parse(ok[i][0], &q, why, sizeof(why)) == 0, "%s: %s",
                      ok[i][0], why);
        ck_assert_str_eq(qual_format(&q, buf, sizeof(buf)), ok[i][1]);
    }
    const char *bad[] = {"",        "pad = 1", "k",
                         "k ==",    "k = ",    "k = 1x",
                         "k = 1 2", "k ~ 1",   "k = 99999999999999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ck_assert_msg(qual_parse(bad[i], &q, why, sizeof(why)) == -1, "'%s' parsed",
                      bad[i]);
    ck_assert(qual_parse("k = 5", &q, why, sizeof(why)) == 0 && qual_test(&q, 5) &&
              !qual_test(&q, 4));
}
END_TEST

START_TEST(compiled_qual_agrees_with_the_plain_one)
{
    /* every operator and column at the edges of int4 and int8 */
    const int64_t consts[] = {
        INT64_MIN, INT64_MIN + 1,          INT32_MIN,     -2,       -1, 0, 1, 2,
        INT32_MAX, (int64_t)INT32_MAX + 1, INT64_MAX - 1, INT64_MAX};
    const int64_t vals[] = {INT64_MIN, INT32_MIN,           -2,       -1, 0, 1, 2,
                            INT32_MAX, (int64_t)UINT32_MAX, INT64_MAX};
    _Alignas(8) unsigned char tup[64] = {0};
    int n = 0;
    for (int col = QUAL_ID; col <= QUAL_V; col++)
        for (int op = QUAL_EQ; op <= QUAL_GE; op++)
            for (size_t c = 0; c < sizeof(consts) / sizeof(consts[0]); c++) {
                Qual q = {
                    .q_col = (QualCol)col, .q_op = (QualOp)op, .q_value = consts[c]};
                QualRange qr = qual_compile(&q);
                for (size_t v = 0; v < sizeof(vals) / sizeof(vals[0]); v++) {
                    int64_t x = vals[v];
                    if (col != QUAL_V && (x < INT32_MIN || x > INT32_MAX))
                        continue; /* an int4 column cannot hold it */
                    if (col == QUAL_V) {
                        memcpy(tup + HEAP_TUPLE_HOFF + 8, &x, 8);
                    } else {
                        int32_t x32 = (int32_t)x;
                        memcpy(tup + HEAP_TUPLE_HOFF + (col == QUAL_K ? 4 : 0), &x32,
                               4);
                    }
                    ck_assert_msg(qual_range_test(&qr, tup) == qual_test(&q, x),
                                  "col %d op %d const %lld value %lld", col, op,
                                  (long long)consts[c], (long long)x);
                    n++;
                }
            }
    ck_assert_int_gt(n, 1000);
}
END_TEST

START_TEST(a_null_passes_nothing)
{
    Qual q;
    char why[64];
    const char *texts[] = {"k = 0", "k != 0", "k >= -2147483648", "v < 1", "id <> 5"};
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        ck_assert_int_eq(qual_parse(texts[i], &q, why, sizeof(why)), 0);
        HeapRow row = {.nulls = HEAP_NULL_ID | HEAP_NULL_K | HEAP_NULL_V};
        ck_assert_msg(!qual_row_test(&q, &row), "%s passed a NULL", texts[i]);
        row.nulls = HEAP_NULL_PAD; /* a NULL elsewhere does not matter */
        row.id = 7;
        ck_assert(qual_row_test(&q, &row) == qual_test(&q, q.q_col == QUAL_ID ? 7 : 0));
    }
}
END_TEST

static Suite *qual_suite(void)
{
    Suite *s = suite_create("qual");
    TCase *tc = tcase_create("qual");
    tcase_add_checked_fixture(tc, tu_setup, tu_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, qual_parsing);
    tcase_add_test(tc, compiled_qual_agrees_with_the_plain_one);
    tcase_add_test(tc, a_null_passes_nothing);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(qual_suite());
}
