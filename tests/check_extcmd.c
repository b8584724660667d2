/*
 * check_extcmd.c -- external commands (tools/bench/extcmd.c): their exit
 *                   status, output and timing, a command that is not there,
 *                   finding a program beside this one, and mkheap's failure.
 *                   (It making a table: check_cli_compare.c "slow".)
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extcmd.h"
#include "testutil.h"

static void setup(void)
{
    tu_setup();
}

START_TEST(status_and_output)
{
    char out[64], errout[64];
    Measure m;
    HsError err;
    char *ok[] = {"sh", "-c", "echo out; echo err >&2; exit 3", NULL};
    ck_assert_int_eq(extcmd_run(ok, &m, out, sizeof(out), errout, sizeof(errout), &err),
                     3);
    ck_assert_str_eq(out, "out\n");
    ck_assert_str_eq(errout, "err\n");
    ck_assert(m.m_wall_s > 0);
    /* the output is cut to the buffer, NUL-terminated */
    char *lots[] = {"sh", "-c", "yes | head -c 1000", NULL};
    ck_assert_int_eq(extcmd_run(lots, &m, out, 8, NULL, 0, &err), 0);
    ck_assert_uint_eq(strlen(out), 7);
    /* the locale is C, stdin is empty */
    char *env[] = {"sh", "-c", "echo $LC_ALL; cat", NULL};
    ck_assert_int_eq(extcmd_run(env, &m, out, sizeof(out), NULL, 0, &err), 0);
    ck_assert_str_eq(out, "C\n");
    /* killed by a signal: 128 + it */
    char *killed[] = {"sh", "-c", "kill -TERM $$", NULL};
    ck_assert_int_eq(extcmd_run(killed, &m, NULL, 0, NULL, 0, &err), 128 + 15);
}
END_TEST

START_TEST(a_missing_command_is_an_error)
{
    Measure m;
    HsError err;
    char *argv[] = {"heapscan-no-such-command", NULL};
    ck_assert_int_eq(extcmd_run(argv, &m, NULL, 0, NULL, 0, &err), -ENOENT);
    ck_assert_str_eq(err.msg, "cannot run heapscan-no-such-command");
}
END_TEST

START_TEST(siblings_and_mkheap)
{
    char path[4096];
    /* this test's program is not beside the tools: the bare name comes back */
    ck_assert_int_eq(extcmd_sibling("heapscan-no-such-tool", path, sizeof(path)), -1);
    ck_assert_str_eq(path, "heapscan-no-such-tool");
    ck_assert_int_eq(extcmd_sibling("check_extcmd", path, sizeof(path)), 0);
    ck_assert_ptr_nonnull(strstr(path, "/check_extcmd"));
    /* mkheap is found on PATH when it is not beside this program */
    const char *mkheap = tu_tool("MKHEAP");
    char dir[4096];
    snprintf(dir, sizeof(dir), "%.*s:%s", (int)(strrchr(mkheap, '/') - mkheap), mkheap,
             getenv("PATH"));
    setenv("PATH", dir, 1);
    char out[256];
    HsError err;
    /* its failure quotes the first line it wrote to stderr */
    ck_assert_int_eq(extcmd_mkheap(tu_path("no/t.heap"), true, out, sizeof(out), &err),
                     -EIO);
    ck_assert_msg(strncmp(err.msg, "mkheap failed (status 1): mkheap: ", 34) == 0, "%s",
                  err.msg);
    ck_assert_ptr_nonnull(strstr(err.msg, "No such file or directory"));
    ck_assert_str_eq(err.file, tu_path("no/t.heap"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("extcmd");
    TCase *tc = tcase_create("extcmd");
    tcase_add_checked_fixture(tc, setup, tu_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, status_and_output);
    tcase_add_test(tc, a_missing_command_is_an_error);
    tcase_add_test(tc, siblings_and_mkheap);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
