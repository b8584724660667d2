/*
 * check_cli_refusals.c -- every tool against inputs that are not tables or
 *                         files to read, and against faults: FIFOs,
 *                         devices and directories refused at once and never
 *                         waited on; a gap or a stale segment in a set;
 *                         iobench under a file size limit; a replace racing
 *                         scans; a writer's leftovers cleaned up by the
 *                         next mkheap, which says so.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static const char *mkheap, *seqscan, *rawread, *iobench;

static void setup(void)
{
    tu_setup();
    mkheap = tu_tool("MKHEAP");
    seqscan = tu_tool("SEQSCAN");
    rawread = tu_tool("RAWREAD");
    iobench = tu_tool("IOBENCH");
}

/* The special files, and what the refusal says of each. */
static const char *special(int i, const char **kind)
{
    static const char *const kinds[] = {"(a FIFO)", "(a device)", "(a directory)"};
    *kind = kinds[i];
    if (i == 0) {
        const char *fifo = tu_path("fifo");
        ck_assert_int_eq(mkfifo(fifo, 0644), 0);
        return fifo;
    }
    return i == 1 ? "/dev/zero" : tu_dir;
}

/* Each tool refuses a FIFO, /dev/zero and a directory with exit 1 and says
 * what it is, in every cache mode: nothing blocks in open() or reads a
 * device that never ends (alarm() fails the test if one does). */
START_TEST(special_files_are_refused_at_once)
{
    const char *kind;
    const char *f = special(_i, &kind);
    alarm(60);
    const char *const caches[] = {"warm", "cold", "asis"};
    for (int c = 0; c < 3; c++) {
        TuRun *r = tu_runl(0, seqscan, "--cache", caches[c], f, NULL);
        ck_assert_msg(r->status == 1, "seqscan --cache %s: %d %s", caches[c], r->status,
                      r->err);
        ck_assert_msg(strstr(r->err, "not a regular file") && strstr(r->err, kind),
                      "%s", r->err);
    }
    const char *const methods[] = {"wc", "lines", "read", "mmap"};
    for (int m = 0; m < 4; m++) {
        TuRun *r = tu_runl(0, rawread, "--method", methods[m], f, NULL);
        ck_assert_msg(r->status == 1, "rawread %s: %d %s", methods[m], r->status,
                      r->err);
        ck_assert_ptr_nonnull(strstr(r->err, "not a regular file"));
    }
    TuRun *r = tu_runl(0, iobench, f, NULL);
    ck_assert_msg(r->status == 1, "iobench: %d %s", r->status, r->err);
    ck_assert_ptr_nonnull(strstr(r->err, "not a regular file"));
    alarm(0);
}
END_TEST

/* A middle segment missing is an error naming it, not a short table. */
START_TEST(a_missing_middle_segment_is_an_error)
{
    const char *t = tu_path("t");
    ck_assert_int_eq(
        tu_runl(0, mkheap, "-q", "--segment-size", "64k", "--rows", "3000", t, NULL)
            ->status,
        0);
    ck_assert_int_eq(unlink(tu_path("t.1")), 0);
    TuRun *r = tu_runl(0, seqscan, "--segment-size", "64k", t, NULL);
    ck_assert_int_eq(r->status, 1);
    ck_assert_msg(strstr(r->err, "t.1: missing, but") && strstr(r->err, "t.4 exists"),
                  "%s", r->err);
}
END_TEST

/* A segment of another table is refused (exit 4), never appended. */
START_TEST(a_stale_segment_is_refused)
{
    const char *t = tu_path("st");
    ck_assert_int_eq(tu_runl(0, mkheap, "-q", "--segment-size", "64k", "--rows", "1200",
                             "--seed", "5", t, NULL)
                         ->status,
                     0);
    ck_assert_int_eq(unlink(t), 0);
    TuRun *r = tu_runl(0, mkheap, "-q", "--segment-size", "64k", "--rows", "600",
                       "--seed", "6", t, NULL);
    ck_assert_int_eq(r->status, 4);
    ck_assert_msg(strstr(r->err, "st.1: exists (a segment of another table)"), "%s",
                  r->err);
    ck_assert_int_eq(tu_runl(0, mkheap, "-q", "--force", "--segment-size", "64k",
                             "--rows", "600", "--seed", "6", t, NULL)
                         ->status,
                     0);
    ck_assert_str_eq(tu_list_dir(tu_dir), "st\n");
}
END_TEST

/* iobench past RLIMIT_FSIZE: exit 1 with EFBIG, no SIGXFSZ death, nothing
 * left behind. */
START_TEST(iobench_under_a_file_size_limit)
{
    TuRun *r = tu_runl(1 << 20, iobench, "--file-size", "4M", tu_path("f.dat"), NULL);
    ck_assert_msg(r->status == 1, "status %d: %s", r->status, r->err);
    ck_assert_ptr_nonnull(strstr(r->err, "File too large"));
    ck_assert_str_eq(tu_list_dir(tu_dir), "");
}
END_TEST

/* sum(v) of a whole table, as seqscan reports it. */
static long long sum_of(const char *t, int *status)
{
    TuRun *r = tu_runl(0, seqscan, "--json", "--cache", "asis", "--segment-size", "64k",
                       "--where", "k >= 0", t, NULL);
    *status = r->status;
    const char *p = strstr(r->out, "\"sum_v\": ");
    return p ? strtoll(p + 9, NULL, 10) : -1;
}

/* One process replaces the table again and again with one of two tables
 * (seeds 1 and 2, 16 MiB in 64 KiB segments) while scans run: every scan
 * gives one table's sum, never a mix. */
START_TEST(scans_racing_a_replace_see_one_table)
{
    const char *t = tu_path("t");
    char *const mk[2][11] = {{(char *)mkheap, "-q", "--force", "--segment-size", "64k",
                              "--size", "16M", "--seed", "1", (char *)t, NULL},
                             {(char *)mkheap, "-q", "--force", "--segment-size", "64k",
                              "--size", "16M", "--seed", "2", (char *)t, NULL}};
    long long want[2];
    int status;
    for (int g = 1; g >= 0; g--) {
        ck_assert_int_eq(tu_run(mk[g], 0)->status, 0);
        want[g] = sum_of(t, &status);
        ck_assert_int_eq(status, 0);
    }
    ck_assert_int_ne(want[0], want[1]);
    pid_t child = fork();
    if (child == 0) {
        for (int i = 0;; i++)
            if (tu_run(mk[i % 2], 0)->status != 0)
                _exit(1);
    }
    int seen[2] = {0, 0};
    for (int i = 0; i < 150; i++) {
        long long s = sum_of(t, &status);
        ck_assert_msg(status == 0 && (s == want[0] || s == want[1]),
                      "scan %d: status %d, sum %lld, neither %lld nor %lld", i, status,
                      s, want[0], want[1]);
        seen[s == want[1]]++;
    }
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    ck_assert_msg(seen[0] && seen[1], "saw %d and %d", seen[0], seen[1]);
}
END_TEST

/* Leftovers of a writer that died mid-commit: a reader refuses the half
 * replaced table, the next mkheap puts things right and says what it did,
 * and nothing is left. */
START_TEST(mkheap_cleans_up_after_a_dead_writer)
{
    const char *t = tu_path("t");
    ck_assert_int_eq(tu_runl(0, mkheap, "-q", "--rows", "3000", t, NULL)->status, 0);
    /* as a writer (pid 999999, no such process) leaves them in step 3 */
    const char *names[] = {"t.commit-999999", "t.tmp-999999", "t.old-999999"};
    for (int i = 0; i < 3; i++)
        if (i < 2)
            fclose(fopen(tu_path(names[i]), "w"));
        else
            ck_assert_int_eq(link(t, tu_path(names[i])), 0);
    TuRun *r = tu_runl(0, seqscan, t, NULL);
    ck_assert_int_eq(r->status, 1);
    ck_assert_msg(strstr(r->err, "half replaced"), "%s", r->err);
    r = tu_runl(0, mkheap, "-q", "--force", "--rows", "1000", t, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_msg(strstr(r->err, "removed 3 files of a writer that died (pid 999999)"),
                  "%s", r->err);
    ck_assert_str_eq(tu_list_dir(tu_dir), "t\n");
    r = tu_runl(0, seqscan, "--json", t, NULL);
    ck_assert_int_eq(r->status, 0);
    ck_assert_ptr_nonnull(strstr(r->out, "\"rows_scanned\": 1000,"));
}
END_TEST

/* The two messages that were wrong: a pool under 1 MiB, and a size with
 * no whole number of pages above it. */
START_TEST(messages_say_the_right_sizes)
{
    const char *t = tu_path("t");
    ck_assert_int_eq(tu_runl(0, mkheap, "-q", "--rows", "3000", t, NULL)->status, 0);
    TuRun *r = tu_runl(0, seqscan, "--buffers", "512k", "--ring", "128k", t, NULL);
    ck_assert_int_eq(r->status, 0);
    ck_assert_msg(strstr(r->out, "read (pool 512 KiB,"), "%s", r->out);
    r = tu_runl(0, mkheap, "--size", "18446744073709551615", tu_path("u"), NULL);
    ck_assert_int_eq(r->status, 2);
    ck_assert_msg(strstr(r->err, "(18446744073709543424 would be)"), "%s", r->err);
}
END_TEST

static Suite *refusals_suite(void)
{
    Suite *s = suite_create("refusals");
    TCase *tc = tcase_create("refusals");
    tcase_add_checked_fixture(tc, setup, tu_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, special_files_are_refused_at_once, 0, 3);
    tcase_add_test(tc, a_missing_middle_segment_is_an_error);
    tcase_add_test(tc, a_stale_segment_is_refused);
    tcase_add_test(tc, iobench_under_a_file_size_limit);
    tcase_add_test(tc, scans_racing_a_replace_see_one_table);
    tcase_add_test(tc, mkheap_cleans_up_after_a_dead_writer);
    tcase_add_test(tc, messages_say_the_right_sizes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(refusals_suite());
}
