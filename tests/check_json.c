/*
 * check_json.c -- the JSON writer (tools/bench/json.c): the one-line layout
 *                 every tool has always printed, arrays with a line per
 *                 element, escaping, and each kind of value.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "testutil.h"

static char *text;   /* what the writer wrote, once closed */
static size_t len;   /* ... its length */
static FILE *out;    /* the stream it writes to */
static JsonWriter j; /* the writer under test */

static void setup(void)
{
    out = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(out);
    json_init(&j, out);
}

static void teardown(void)
{
    fclose(out);
    free(text);
    text = NULL;
}

/* Everything written so far. */
static const char *written(void)
{
    fflush(out);
    return text;
}

START_TEST(one_line_layout)
{
    json_begin_object(&j, NULL);
    json_string(&j, "table", "t.heap");
    json_uint(&j, "pages", 267);
    json_int(&j, "delta", -5);
    json_bool(&j, "verify", true);
    json_bool(&j, "quiet", false);
    json_null(&j, "pgdata");
    json_begin_object(&j, "buffers");
    json_uint(&j, "hits", 0);
    json_uint(&j, "reads", 40);
    json_end(&j);
    json_begin_array(&j, "runs");
    json_double(&j, NULL, 0.25, 6);
    json_double(&j, NULL, 1.5, 6);
    json_end(&j);
    json_begin_array(&j, "none");
    json_end(&j);
    json_end(&j);
    ck_assert_str_eq(written(),
                     "{\"table\": \"t.heap\", \"pages\": 267, \"delta\": -5, "
                     "\"verify\": true, \"quiet\": false, \"pgdata\": null, "
                     "\"buffers\": {\"hits\": 0, \"reads\": 40}, "
                     "\"runs\": [0.250000, 1.500000], \"none\": []}");
}
END_TEST

START_TEST(lines_arrays)
{
    /* the comparison's rows: each on a line, indented two */
    json_begin_object(&j, NULL);
    json_uint(&j, "rounds", 1);
    json_begin_array_lines(&j, "rows", 2);
    json_begin_object(&j, NULL);
    json_string(&j, "reader", "wc");
    json_end(&j);
    json_begin_object(&j, NULL);
    json_string(&j, "reader", "dd");
    json_end(&j);
    json_end(&j);
    json_end(&j);
    ck_assert_str_eq(written(), "{\"rounds\": 1, \"rows\": [\n"
                                "  {\"reader\": \"wc\"},\n"
                                "  {\"reader\": \"dd\"}\n"
                                "]}");
}
END_TEST

START_TEST(lines_array_at_the_top)
{
    /* iobench --matrix --json: one object a line, not indented */
    json_begin_array_lines(&j, NULL, 0);
    for (int i = 0; i < 3; i++) {
        json_begin_object(&j, NULL);
        json_int(&j, "i", i);
        json_end(&j);
    }
    json_end(&j);
    ck_assert_str_eq(written(), "[\n{\"i\": 0},\n{\"i\": 1},\n{\"i\": 2}\n]");
}
END_TEST

START_TEST(strings_are_escaped)
{
    json_begin_object(&j, NULL);
    json_string(&j, "path", "/tmp/a \"quoted\" \\ name\n\t\x01\x1f");
    json_string(&j, "key \"x\"", "caf\xc3\xa9 \x7f");
    json_string(&j, "none", NULL);
    json_end(&j);
    ck_assert_str_eq(
        written(),
        "{\"path\": \"/tmp/a \\\"quoted\\\" \\\\ name\\u000a\\u0009\\u0001"
        "\\u001f\", \"key \\\"x\\\"\": \"caf\xc3\xa9 \x7f\", \"none\": null}");
}
END_TEST

START_TEST(numbers)
{
    json_begin_array(&j, NULL);
    json_uint(&j, NULL, UINT64_MAX);
    json_int(&j, NULL, INT64_MIN);
    json_double(&j, NULL, 2.0 / 3.0, 4);
    json_double(&j, NULL, 12.5, 0); /* %.0f rounds half to even */
    json_double(&j, NULL, 1234.56, 1);
    json_double(&j, NULL, NAN, 6); /* JSON has no NaN or infinity */
    json_double(&j, NULL, INFINITY, 1);
    json_raw(&j, NULL, "17999999999999999995");
    json_end(&j);
    ck_assert_str_eq(written(), "[18446744073709551615, -9223372036854775808, 0.6667, "
                                "12, 1234.6, null, null, 17999999999999999995]");
}
END_TEST

START_TEST(flushes_between_elements)
{
    /* nothing of an element is held back: what is written is there to read */
    json_begin_array_lines(&j, NULL, 0);
    json_begin_object(&j, NULL);
    json_int(&j, "row", 1);
    json_end(&j);
    ck_assert_str_eq(written(), "[\n{\"row\": 1}");
    json_end(&j);
    ck_assert_str_eq(written(), "[\n{\"row\": 1}\n]");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("json");
    TCase *tc = tcase_create("writer");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, one_line_layout);
    tcase_add_test(tc, lines_arrays);
    tcase_add_test(tc, lines_array_at_the_top);
    tcase_add_test(tc, strings_are_escaped);
    tcase_add_test(tc, numbers);
    tcase_add_test(tc, flushes_between_elements);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
