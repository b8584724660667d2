/*
 * check_cli_rawread.c -- the rawread command line: each reader's report
 *                        agrees with the command it mirrors, its JSON, and
 *                        its errors and exit statuses.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "extcmd.h"
#include "testutil.h"

static const char *rawread;

static void setup(void)
{
    tu_setup();
    rawread = tu_tool("RAWREAD");
}

/* 123457 bytes of random text: mostly letters, some blanks and newlines. */
static const char *text_file(void)
{
    static char buf[123457];
    uint64_t x = 0x9E3779B97F4A7C15ull * 5;
    for (size_t i = 0; i < sizeof(buf); i++) {
        unsigned char b = (unsigned char)tu_xorshift(&x);
        buf[i] = b % 7 == 0 ? " \n\t"[b % 3] : (char)('a' + b % 26);
    }
    const char *p = tu_path("f");
    int fd = open(p, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
    close(fd);
    return p;
}

START_TEST(wc_agrees_with_wc)
{
    const char *f = text_file();
    TuRun *r = tu_runl(0, rawread, "--method", "wc", "--cache", "asis", f, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    char out[256], *argv[] = {"wc", (char *)f, NULL};
    Measure m;
    HsError err;
    ck_assert_int_eq(extcmd_run(argv, &m, out, sizeof(out), NULL, 0, &err), 0);
    unsigned long long l, w, b, l2, w2, b2;
    ck_assert_int_eq(sscanf(out, "%llu %llu %llu", &l, &w, &b), 3);
    ck_assert_int_eq(sscanf(r->out, "%llu %llu %llu", &l2, &w2, &b2), 3);
    ck_assert(l == l2 && w == w2 && b == b2);
    ck_assert_ptr_nonnull(strstr(r->out, "wall "));
}
END_TEST

START_TEST(json_report)
{
    const char *f = text_file();
    TuRun *r = tu_runl(0, rawread, "-m", "read", "-b", "8k", "--json", "--repeat", "2",
                       f, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_ptr_nonnull(
        strstr(r->out, "\"records_full\": 15, \"records_partial\": 1"));
    ck_assert_ptr_nonnull(strstr(r->out, "\"bytes\": 123457"));
    ck_assert_ptr_nonnull(strstr(r->out, "\"method\": \"read\", \"block\": 8192, "));
    ck_assert_str_eq(strchr(r->out, '\n'), "\n"); /* one line */
}
END_TEST

/* A file name with a quote and a backslash is escaped in the JSON. */
START_TEST(json_escapes_the_file_name)
{
    const char *f = text_file(), *odd = tu_path("a \"quoted\" \\name");
    ck_assert_int_eq(rename(f, odd), 0);
    TuRun *r = tu_runl(0, rawread, "-m", "lines", "--json", odd, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_ptr_nonnull(strstr(r->out, "a \\\"quoted\\\" \\\\name\", \"method\""));
}
END_TEST

static const struct {
    const char *a[4];
    int status;
    const char *says;
} bad[] = {
    {{"-m", "wc", "MISSING"}, 1, "No such file or directory"},
    {{"-m", "grep", "F"},
     2,
     "--method: 'grep' is not one of wc, lines, read, mmap, direct"},
    {{"-m", "direct", "-b", "1000"},
     2,
     "O_DIRECT needs a block that is a multiple of 4096"},
    {{"-m", "read", "-b", "whole"}, 2, "--block whole is for --method mmap"},
    {{"-m", "read", "-b", "2G"}, 2, "--block: '2G' is not a size from 1 byte to 1G"},
    {{"--cache", "hot", "-m", "wc"},
     2,
     "--cache: 'hot' is not one of asis, cold, warm"},
    {{"-m", "wc", "--repeat", "0"}, 2, "--repeat: '0' is not a count in 1..1000"},
    {{"F"}, 2, "--method is required"},
    {{"-m", "wc"}, 2, "no FILE given"},
    {{"--bogus"}, 2, "Try 'rawread --help'"},
};

START_TEST(errors_and_exit_statuses)
{
    const char *f = text_file();
    char *av[8] = {(char *)rawread};
    int n = 1;
    for (int j = 0; j < 4 && bad[_i].a[j]; j++)
        av[n++] = strcmp(bad[_i].a[j], "F") == 0         ? (char *)f
                  : strcmp(bad[_i].a[j], "MISSING") == 0 ? (char *)tu_path("missing")
                                                         : (char *)bad[_i].a[j];
    if (_i >= 2 && _i <= 6)
        av[n++] = (char *)f;
    av[n] = NULL;
    TuRun *r = tu_run(av, 0);
    ck_assert_msg(r->status == bad[_i].status, "case %d: %d %s", _i, r->status, r->err);
    ck_assert_msg(strstr(r->err, bad[_i].says) != NULL, "case %d: %s", _i, r->err);
    ck_assert_ptr_nonnull(strstr(r->err, "rawread: "));
}
END_TEST

START_TEST(help_and_version)
{
    tu_assert_help_and_version(rawread, "rawread",
                               "rawread --method wc|lines|read|mmap|direct");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli_rawread");
    TCase *tc = tcase_create("rawread");
    tcase_add_checked_fixture(tc, setup, tu_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, wc_agrees_with_wc);
    tcase_add_test(tc, json_report);
    tcase_add_test(tc, json_escapes_the_file_name);
    tcase_add_loop_test(tc, errors_and_exit_statuses, 0, sizeof(bad) / sizeof(bad[0]));
    tcase_add_test(tc, help_and_version);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
