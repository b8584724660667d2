/*
 * check_cli_scanbench.c -- the scanbench command line: every pair, with
 *                          medians inside their spread and each ratio the
 *                          quotient of its medians, in text and JSON; usage
 *                          errors and exit statuses.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32.h"
#include "testutil.h"

static const char *scanbench, *table;

static void setup(void)
{
    tu_setup();
    scanbench = tu_tool_beside("SEQSCAN", "scanbench");
    table = tu_make_heap("t.heap", 3000, 20, 100, 1, 0, false);
}

/* The pairs scanbench times, contender then baseline. */
static const char *const pairs[][2] = {
    {"seqscan read, no verify", "read() 1 MiB"},
    {"read() 128 KiB, no scan", "read() 1 MiB"},
    {"seqscan mmap 8M, no verify", "mmap whole, word per line"},
    {"seqscan read, verify", "read() 1 MiB + crc32"},
    {"seqscan mmap 8M, verify", "mmap whole + crc32"},
    {"crc32 pass, ISA-L", "crc32 pass, zlib"},
    {"seqscan read, verify", "seqscan read, no verify"},
    {"seqscan mmap, verify", "seqscan mmap, no verify"},
    {"read, verify, 2 workers", "read, verify, 1 worker"},
    {"read, verify, 2 workers", "  1 worker, no I/O worker"},
    {"mmap, verify, 2 workers", "mmap, verify, 1 worker"},
};
#define NPAIRS (int)(sizeof(pairs) / sizeof(pairs[0]))

/* A number after "key": in s, or fail. */
static double number_after(const char *s, const char *key)
{
    const char *p = strstr(s, key);
    ck_assert_msg(p != NULL, "no %s in %.200s", key, s);
    return strtod(p + strlen(key), NULL);
}

/* A runner's median, min and max in seconds, in order and positive. */
static double check_runner(const char *obj)
{
    double med = number_after(obj, "\"median_s\": ");
    double lo = number_after(obj, "\"min_s\": "), hi = number_after(obj, "\"max_s\": ");
    ck_assert(lo > 0 && lo <= med && med <= hi);
    return med;
}

START_TEST(json_has_every_pair_and_its_ratio)
{
    TuRun *r = tu_runl(0, scanbench, "--rounds", "3", "--json", table, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_ptr_nonnull(strstr(r->out, "\"rounds\": 3"));
    char want[64];
    snprintf(want, sizeof(want), "\"crc\": \"%s\"", crc32_impl());
    ck_assert_ptr_nonnull(strstr(r->out, want));
    const char *line = strstr(r->out, "\"pairs\": [\n");
    ck_assert_ptr_nonnull(line);
    int seen = 0;
    for (int i = 0; i < NPAIRS; i++) {
        if (strstr(pairs[i][0], "ISA-L") && crc32_update_isal == NULL)
            continue; /* a zlib-only build has no such pair */
        char c[96], b[96];
        bool fold = strstr(pairs[i][0], "ISA-L") && crc32_have_fold256();
        snprintf(c, sizeof(c), "{\"contender\": {\"name\": \"%s%s\"", pairs[i][0],
                 fold ? "+fold256" : "");
        snprintf(b, sizeof(b), "\"baseline\": {\"name\": \"%s\"", pairs[i][1]);
        line = strstr(line, c); /* the pairs come in this order */
        ck_assert_msg(line != NULL, "pair %d missing", i);
        const char *end = strchr(line, '\n'), *bl = strstr(line, b);
        ck_assert_msg(bl != NULL && bl < end, "pair %d: baseline", i);
        double cm = check_runner(line), bm = check_runner(bl);
        double ratio = number_after(bl, "\"ratio\": ");
        ck_assert_msg(ratio > cm / bm * 0.999 - 1e-4 && ratio < cm / bm * 1.001 + 1e-4,
                      "pair %d: ratio %f of %f / %f", i, ratio, cm, bm);
        const char *tgt = strstr(bl, "\"target_ratio\": ");
        if (tgt != NULL && tgt < end) {
            double t = number_after(bl, "\"target_ratio\": ");
            bool at_most = strstr(bl, "\"target\": \"<=\"") != NULL;
            bool reached = strstr(bl, "\"reached\": true") != NULL &&
                           strstr(bl, "\"reached\": true") < end;
            ck_assert_int_eq(reached, at_most ? ratio <= t : ratio >= t);
        }
        seen++;
        line = end;
    }
    ck_assert_int_eq(seen, crc32_update_isal ? NPAIRS : NPAIRS - 1);
}
END_TEST

START_TEST(text_table)
{
    TuRun *r = tu_runl(0, scanbench, "-r", "1", table, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_ptr_nonnull(strstr(r->out, "1 rounds interleaved, crc32 by "));
    ck_assert_ptr_nonnull(strstr(r->out, "contender "));
    int lines = 0;
    for (const char *p = r->out; (p = strchr(p, '\n')) != NULL; p++)
        lines++;
    ck_assert_int_eq(lines, 3 + (crc32_update_isal ? NPAIRS : NPAIRS - 1));
    ck_assert_ptr_nonnull(strstr(r->out, "<= 1.30 "));
    ck_assert_ptr_nonnull(strstr(r->err, "round 1 of 1"));
}
END_TEST

static const struct {
    const char *a[3];
    int status;
    const char *says;
} bad[] = {
    {{"--rounds", "0", "T"}, 2, "--rounds: '0' is not a count in 1..1000"},
    {{"--bogus", "T"}, 2, "Try 'scanbench --help'"},
    {{NULL}, 2, "no TABLE given"},
    {{"T", "T"}, 2, "one TABLE only"},
    {{"MISSING"}, 1, "No such file"},
};

START_TEST(errors_and_exit_statuses)
{
    char *av[5] = {(char *)scanbench};
    int n = 1;
    for (int j = 0; j < 3 && bad[_i].a[j]; j++)
        av[n++] = strcmp(bad[_i].a[j], "T") == 0         ? (char *)table
                  : strcmp(bad[_i].a[j], "MISSING") == 0 ? (char *)tu_path("missing")
                                                         : (char *)bad[_i].a[j];
    av[n] = NULL;
    TuRun *r = tu_run(av, 0);
    ck_assert_msg(r->status == bad[_i].status, "case %d: %d %s", _i, r->status, r->err);
    ck_assert_msg(strstr(r->err, bad[_i].says) != NULL, "case %d: %s", _i, r->err);
    ck_assert_ptr_nonnull(strstr(r->err, "scanbench: "));
}
END_TEST

START_TEST(help_and_version)
{
    tu_assert_help_and_version(scanbench, "scanbench", "scanbench [--rounds N]");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli_scanbench");
    TCase *tc = tcase_create("scanbench");
    tcase_add_checked_fixture(tc, setup, tu_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, json_has_every_pair_and_its_ratio);
    tcase_add_test(tc, text_table);
    tcase_add_loop_test(tc, errors_and_exit_statuses, 0, sizeof(bad) / sizeof(bad[0]));
    tcase_add_test(tc, help_and_version);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
