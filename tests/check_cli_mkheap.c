/*
 * check_cli_mkheap.c -- the mkheap command line: what it writes, that it
 *                       writes the same bytes every time, that it never
 *                       leaves a partial table behind, and its exit
 *                       statuses.
 *
 * Arguments: "slow" runs the default 177 MiB table only; "tmpfs" only the
 * full file system case, and exits 77 (SKIP) where a tmpfs cannot be
 * mounted (not root, or no CAP_SYS_ADMIN).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "heapgen.h"
#include "relfile.h"
#include "testutil.h"

static const char *mkheap;

static void setup(void)
{
    tu_setup();
    mkheap = tu_tool("MKHEAP");
}

/*
 * Read a table back through relfile, verify every page at its block number,
 * deform every tuple, and check ids run 1..N in order; returns the aggregates.
 */
static void read_table(const char *path, uint32_t seg_blocks, HeapGenStats *st,
                       uint64_t *pages, uint16_t *flags_or)
{
    RelFile rf;
    HsError err;
    _Alignas(8) static unsigned char page[BLCKSZ];
    ck_assert_msg(relfile_open(&rf, path, seg_blocks, &err) == 0, "%s", err.msg);
    memset(st, 0, sizeof(*st));
    st->hs_min_k = INT32_MAX;
    *flags_or = 0;
    *pages = relfile_nblocks(&rf);
    for (uint64_t b = 0; b < *pages; b++) {
        PageFault f;
        char msg[256];
        ck_assert_int_eq(relfile_read(&rf, b, 1, page, &err), 0);
        ck_assert_msg(page_verify(page, (uint32_t)b, PAGE_CHECKSUM_HEAPSCAN, &f) ==
                          PAGE_OK,
                      "block %llu: %s", (unsigned long long)b,
                      page_fault_describe(&f, msg, sizeof(msg)));
        *flags_or |= page_header(page)->pd_flags;
        for (unsigned off = 1; off <= page_max_offset(page); off++) {
            ItemId id = page_item_id(page, off);
            HeapRow row;
            ck_assert_int_eq(
                heap_tuple_deform(page + item_id_off(id), item_id_len(id), &row), 0);
            ck_assert_int_eq(row.id, (int64_t)st->hs_rows + 1);
            const HeapTupleHeaderData *h = (const void *)(page + item_id_off(id));
            ck_assert_uint_eq((uint32_t)h->t_ctid_bi_hi << 16 | h->t_ctid_bi_lo, b);
            st->hs_rows++;
            st->hs_sum_v += row.v;
            st->hs_sum_len += row.pad_len;
            if (row.k < st->hs_min_k)
                st->hs_min_k = row.k;
            if (row.k > st->hs_max_k)
                st->hs_max_k = row.k;
        }
    }
    relfile_close(&rf);
}

/* The table at path holds exactly what the generator says rows 1..rows are. */
static void assert_table_holds(const char *path, uint32_t seg_blocks,
                               const HeapGenSpec *spec, uint64_t rows)
{
    HeapGenStats got, want;
    uint64_t pages;
    uint16_t flags;
    read_table(path, seg_blocks, &got, &pages, &flags);
    heapgen_stats(spec, rows, &want);
    ck_assert_uint_eq(got.hs_rows, want.hs_rows);
    ck_assert_int_eq(got.hs_sum_v, want.hs_sum_v);
    ck_assert_int_eq(got.hs_min_k, want.hs_min_k);
    ck_assert_int_eq(got.hs_max_k, want.hs_max_k);
    ck_assert_uint_eq(got.hs_sum_len, want.hs_sum_len);
    ck_assert_uint_eq(pages, (rows + heapgen_tuples_per_page(spec) - 1) /
                                 heapgen_tuples_per_page(spec));
    ck_assert_uint_eq(flags, spec->hg_all_visible ? PD_ALL_VISIBLE : 0);
}

static HeapGenSpec spec_of(uint64_t seed, uint32_t pad, unsigned ff, bool av)
{
    return (HeapGenSpec){
        .hg_seed = seed, .hg_pad_len = pad, .hg_fillfactor = ff, .hg_all_visible = av};
}

/* ---- what it writes -------------------------------------------------- */

START_TEST(two_runs_are_byte_identical)
{
    const char *a = tu_path("a"), *b = tu_path("b"), *c = tu_path("c");
    ck_assert_int_eq(
        tu_runl(0, mkheap, "-q", "--rows", "3000", "--seed", "5", a, NULL)->status, 0);
    ck_assert_int_eq(
        tu_runl(0, mkheap, "-q", "--rows", "3000", "--seed", "5", b, NULL)->status, 0);
    ck_assert_int_eq(
        tu_runl(0, mkheap, "-q", "--rows", "3000", "--seed", "6", c, NULL)->status, 0);
    size_t la, lb, lc;
    unsigned char *da = tu_read_file(a, &la), *db = tu_read_file(b, &lb),
                  *dc = tu_read_file(c, &lc);
    ck_assert_uint_eq(la, 40 * BLCKSZ); /* 3000 rows at 75 a page */
    ck_assert_uint_eq(la, lb);
    ck_assert_int_eq(memcmp(da, db, la), 0);
    ck_assert_uint_eq(la, lc);
    ck_assert_int_ne(memcmp(da, dc, la), 0); /* the seed does matter */
    free(da);
    free(db);
    free(dc);
}
END_TEST

/* pad, fillfactor and all-visible combinations, read back and checked */
static const struct {
    uint32_t pad;
    unsigned ff;
    bool av;
    uint64_t rows;
} shapes[] = {
    {59, 100, false, 1000},        {0, 100, false, 1000},  {200, 100, true, 777},
    {59, 50, false, 1234},         {126, 100, false, 300}, {127, 10, false, 300},
    {HEAP_PAD_MAX, 100, false, 3},
};

START_TEST(tables_hold_what_the_generator_says)
{
    char pad[16], ff[16], rows[24];
    snprintf(pad, sizeof(pad), "%u", shapes[_i].pad);
    snprintf(ff, sizeof(ff), "%u", shapes[_i].ff);
    snprintf(rows, sizeof(rows), "%llu", (unsigned long long)shapes[_i].rows);
    TuRun *r = shapes[_i].av
                   ? tu_runl(0, mkheap, "--pad", pad, "--fillfactor", ff, "--rows",
                             rows, "--seed", "9", "--all-visible", tu_path("t"), NULL)
                   : tu_runl(0, mkheap, "--pad", pad, "--fillfactor", ff, "--rows",
                             rows, "--seed", "9", tu_path("t"), NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    char want[64];
    snprintf(want, sizeof(want), ": %s rows, ", rows);
    ck_assert_msg(strstr(r->out, want) != NULL, "summary '%s' lacks '%s'", r->out,
                  want);
    HeapGenSpec s = spec_of(9, shapes[_i].pad, shapes[_i].ff, shapes[_i].av);
    assert_table_holds(tu_path("t"), RELFILE_SEG_BLOCKS, &s, shapes[_i].rows);
}
END_TEST

START_TEST(size_gives_whole_full_pages)
{
    TuRun *r = tu_runl(0, mkheap, "--size", "1MiB", tu_path("t"), NULL);
    ck_assert_int_eq(r->status, 0);
    ck_assert_int_eq(tu_file_size(tu_path("t")), 1 << 20);
    ck_assert_ptr_nonnull(strstr(r->out, ": 9600 rows, 128 pages (75 rows a page), "
                                         "1048576 bytes, 1 segment, "));
    HeapGenSpec s = spec_of(1, 59, 100, false);
    assert_table_holds(tu_path("t"), RELFILE_SEG_BLOCKS, &s, 9600);
}
END_TEST

START_TEST(table_over_a_segment_is_split)
{
    /* 8-page segments; 1500 rows at 75 a page = 20 pages = 8 + 8 + 4 */
    TuRun *r = tu_runl(0, mkheap, "--segment-size", "64k", "--rows", "1500", "--seed",
                       "3", tu_path("t"), NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_ptr_nonnull(strstr(r->out, "20 pages"));
    ck_assert_ptr_nonnull(strstr(r->out, "3 segments"));
    ck_assert_str_eq(tu_list_dir(tu_dir), "t\nt.1\nt.2\n");
    ck_assert_int_eq(tu_file_size(tu_path("t.1")), 8 * BLCKSZ);
    ck_assert_int_eq(tu_file_size(tu_path("t.2")), 4 * BLCKSZ);
    /* read_table verifies each page at its relation-wide block number */
    HeapGenSpec s = spec_of(3, 59, 100, false);
    assert_table_holds(tu_path("t"), 8, &s, 1500);
    /* ... and the same bytes as one file would hold at another block fail */
    size_t len;
    unsigned char *seg1 = tu_read_file(tu_path("t.1"), &len);
    ck_assert_int_eq(page_verify(seg1, 8, PAGE_CHECKSUM_HEAPSCAN, NULL), PAGE_OK);
    ck_assert_int_eq(page_verify(seg1, 0, PAGE_CHECKSUM_HEAPSCAN, NULL),
                     PAGE_BAD_CHECKSUM);
    free(seg1);
}
END_TEST

/* ---- never lose anything ---------------------------------------------- */

START_TEST(existing_table_is_not_touched)
{
    const char *t = tu_path("t");
    ck_assert_int_eq(tu_runl(0, mkheap, "-q", "--rows", "10", t, NULL)->status, 0);
    size_t l0, l1;
    unsigned char *before = tu_read_file(t, &l0);
    TuRun *r = tu_runl(0, mkheap, "--rows", "5000", t, NULL);
    ck_assert_int_eq(r->status, 4);
    ck_assert_ptr_nonnull(strstr(r->err, t));
    ck_assert_ptr_nonnull(strstr(r->err, "--force"));
    unsigned char *after = tu_read_file(t, &l1);
    ck_assert_uint_eq(l0, l1);
    ck_assert_int_eq(memcmp(before, after, l0), 0);
    ck_assert_str_eq(tu_list_dir(tu_dir), "t\n");
    free(after);
    /* --force replaces it, stale segments and all */
    ck_assert_int_eq(tu_runl(0, mkheap, "-q", "--force", "--segment-size", "8k",
                             "--rows", "300", t, NULL)
                         ->status,
                     0);
    ck_assert_str_eq(tu_list_dir(tu_dir), "t\nt.1\nt.2\nt.3\n");
    ck_assert_int_eq(
        tu_runl(0, mkheap, "-q", "--force", "--rows", "5000", t, NULL)->status, 0);
    ck_assert_str_eq(tu_list_dir(tu_dir), "t\n");
    ck_assert_int_eq(tu_file_size(t), 67 * BLCKSZ);
    free(before);
}
END_TEST

START_TEST(file_size_limit_leaves_nothing)
{
    /* RLIMIT_FSIZE of 100 KiB: the 13th page's write fails with EFBIG */
    TuRun *r = tu_runl(100 << 10, mkheap, "--size", "1M", tu_path("t"), NULL);
    ck_assert_int_eq(r->status, 1);
    ck_assert_msg(strstr(r->err, "File too large") != NULL, "%s", r->err);
    ck_assert_ptr_nonnull(strstr(r->err, "mkheap: "));
    ck_assert_ptr_nonnull(strstr(r->err, "block "));
    ck_assert_msg(strchr(r->err, '\n') == r->err + strlen(r->err) - 1, "one line: %s",
                  r->err);
    ck_assert_str_eq(tu_list_dir(tu_dir), "");
}
END_TEST

START_TEST(full_filesystem_leaves_nothing)
{
    const char *mnt = tu_path("mnt");
    ck_assert_int_eq(mkdir(mnt, 0755), 0);
    ck_assert_msg(mount("heapscan-test", mnt, "tmpfs", 0, "size=256k") == 0,
                  "mount tmpfs: %s", strerror(errno));
    char t[600];
    snprintf(t, sizeof(t), "%s/t", mnt);
    TuRun *r = tu_runl(0, mkheap, "--size", "1M", t, NULL);
    int status = r->status;
    static char err[sizeof(r->err)];
    memcpy(err, r->err, sizeof(err));
    const char *left = tu_list_dir(mnt);
    char left_copy[256];
    snprintf(left_copy, sizeof(left_copy), "%s", left);
    umount(mnt);
    ck_assert_int_eq(status, 1);
    ck_assert_msg(strstr(err, "No space left on device") != NULL, "%s", err);
    ck_assert_str_eq(left_copy, "");
}
END_TEST

/* Whether this process may mount a tmpfs (root, or CAP_SYS_ADMIN); why not.
 * Outside any test, so without Check's assertions. */
static bool can_mount_tmpfs(char *why, size_t len)
{
    const char *base = getenv("TMPDIR");
    char mnt[512];
    snprintf(mnt, sizeof(mnt), "%s/heapscan-probe-XXXXXX", base ? base : "/tmp");
    bool ok = mkdtemp(mnt) != NULL &&
              mount("heapscan-probe", mnt, "tmpfs", 0, "size=64k") == 0;
    snprintf(why, len, "%s", strerror(errno));
    if (ok)
        umount(mnt);
    rmdir(mnt);
    return ok;
}

/* Start a big table, wait until its temporary file grows, send sig. */
/* A 16 GiB table interrupted once it has begun leaves nothing and says so. */
static void interrupted_by(int sig)
{
    const char *t = tu_path("t");
    char *argv[] = {(char *)mkheap, "--size", "16G", (char *)t, NULL};
    ck_assert_int_eq(tu_interrupt_writer(argv, t, sig), 128 + sig);
    ck_assert_str_eq(tu_list_dir(tu_dir), "");
}

START_TEST(sigint_with_force_keeps_the_old_table)
{
    const char *t = tu_path("t");
    ck_assert_int_eq(tu_runl(0, mkheap, "-q", "--rows", "1000", t, NULL)->status, 0);
    size_t l0, l1;
    unsigned char *before = tu_read_file(t, &l0);
    char *argv[] = {(char *)mkheap, "--force", "--size", "16G", (char *)t, NULL};
    /* not 0: nothing was replaced */
    ck_assert_int_eq(tu_interrupt_writer(argv, t, SIGINT), 128 + SIGINT);
    unsigned char *after = tu_read_file(t, &l1);
    ck_assert_uint_eq(l0, l1);
    ck_assert_int_eq(memcmp(before, after, l0), 0);
    ck_assert_str_eq(tu_list_dir(tu_dir), "t\n");
    free(before);
    free(after);
}
END_TEST

START_TEST(too_many_segments_is_a_usage_error)
{
    TuRun *r =
        tu_runl(0, mkheap, "--segment-size", "8k", "--size", "64M", tu_path("t"), NULL);
    ck_assert_int_eq(r->status, 2);
    ck_assert_ptr_nonnull(strstr(r->err, "more than 4096 segment files"));
    ck_assert_str_eq(tu_list_dir(tu_dir), "");
}
END_TEST

START_TEST(sigint_leaves_nothing)
{
    interrupted_by(SIGINT);
}
END_TEST

START_TEST(sigterm_leaves_nothing)
{
    interrupted_by(SIGTERM);
}
END_TEST

/* ---- the command line ------------------------------------------------- */

static const struct {
    const char *args[6];
    int status;
    const char *says;
} cli_cases[] = {
    {{"--size", "abc", "T"}, 2, "--size: 'abc' is not a size"},
    {{"--size", "1000", "T"}, 2, "not a whole number of 8192-byte pages"},
    {{"--size", "0", "T"}, 2, "--size"},
    {{"--size", "16Q", "T"}, 2, "--size"},
    {{"--rows", "0", "T"}, 2, "--rows"},
    {{"--rows", "-5", "T"}, 2, "--rows"},
    {{"--rows", "2147483648", "T"}, 2, "--rows"},
    {{"--rows", "10", "--size", "8k", "T"}, 2, "exclude each other"},
    {{"--pad", "8117", "T"},
     2,
     "pad 8117 does not fit a page: a tuple holds at most 8116"},
    {{"--pad", "x", "T"}, 2, "--pad: 'x' is not a number"},
    {{"--fillfactor", "9", "T"}, 2, "fillfactor 9 is outside 10..100"},
    {{"--fillfactor", "101", "T"}, 2, "fillfactor 101 is outside 10..100"},
    {{"--fillfactor", "-1", "T"}, 2, "--fillfactor: '-1' is not a number"},
    {{"--seed", "x", "T"}, 2, "--seed"},
    {{"--bogus", "T"}, 2, "Try 'mkheap --help'"},
    {{NULL}, 2, "no FILE given"},
    {{"T", "U"}, 2, "more than one FILE"},
    {{"--size", "2T", "T"}, 2, "more than 2147483647 rows"},
    {{"--rows", "10", "NODIR/t"}, 1, "No such file or directory"},
};

START_TEST(exit_statuses)
{
    char *argv[8];
    int n = 0;
    argv[n++] = (char *)mkheap;
    for (int i = 0; cli_cases[_i].args[i]; i++) {
        const char *a = cli_cases[_i].args[i];
        if (strcmp(a, "T") == 0 || strcmp(a, "U") == 0 || strncmp(a, "NODIR", 5) == 0)
            a = tu_path(a);
        argv[n++] = (char *)a;
    }
    argv[n] = NULL;
    TuRun *r = tu_run(argv, 0);
    ck_assert_msg(r->status == cli_cases[_i].status, "case %d: status %d: %s", _i,
                  r->status, r->err);
    ck_assert_msg(strstr(r->err, cli_cases[_i].says) != NULL,
                  "case %d: '%s' lacks '%s'", _i, r->err, cli_cases[_i].says);
    ck_assert_str_eq(tu_list_dir(tu_dir), "");
}
END_TEST

START_TEST(help_and_version)
{
    tu_assert_help_and_version(mkheap, "mkheap", "mkheap [options] FILE");
}
END_TEST

START_TEST(memory_stays_small)
{
    TuRun *r = tu_runl(0, mkheap, "--size", "64M", tu_path("t"), NULL);
    ck_assert_int_eq(r->status, 0);
    ASSERT_RSS_BELOW(r, 16 * 1024);
}
END_TEST

/* ---- slow ------------------------------------------------------------- */

START_TEST(default_table_is_177_mib)
{
    TuRun *r = tu_runl(0, mkheap, tu_path("t.heap"), NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_int_eq(tu_file_size(tu_path("t.heap")), 185597952);
    ck_assert_ptr_nonnull(strstr(r->out,
                                 ": 1699200 rows, 22656 pages (75 rows a page), "
                                 "185597952 bytes, 1 segment, "));
    ASSERT_RSS_BELOW(r, 16 * 1024);
    HeapGenSpec s = spec_of(1, 59, 100, false);
    assert_table_holds(tu_path("t.heap"), RELFILE_SEG_BLOCKS, &s, 1699200);
}
END_TEST

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    Suite *s = suite_create(strcmp(mode, "slow") == 0    ? "mkheap-slow"
                            : strcmp(mode, "tmpfs") == 0 ? "mkheap-tmpfs"
                                                         : "cli_mkheap");
    TCase *tc;
    if (strcmp(mode, "slow") == 0) {
        tc = tcase_create("slow");
        tcase_add_checked_fixture(tc, setup, tu_teardown);
        tcase_set_timeout(tc, 300);
        tcase_add_test(tc, default_table_is_177_mib);
        suite_add_tcase(s, tc);
    } else if (strcmp(mode, "tmpfs") == 0) {
        char why[128];
        tu_require(can_mount_tmpfs(why, sizeof(why)), TU_NEED_OTHER,
                   "cannot mount a tmpfs (%s): the RLIMIT_FSIZE test covers the path",
                   why);
        tc = tcase_create("tmpfs");
        tcase_add_checked_fixture(tc, setup, tu_teardown);
        tcase_add_test(tc, full_filesystem_leaves_nothing);
        suite_add_tcase(s, tc);
    } else {
        tc = tcase_create("writes");
        tcase_add_checked_fixture(tc, setup, tu_teardown);
        tcase_add_test(tc, two_runs_are_byte_identical);
        tcase_add_loop_test(tc, tables_hold_what_the_generator_says, 0,
                            sizeof(shapes) / sizeof(shapes[0]));
        tcase_add_test(tc, size_gives_whole_full_pages);
        tcase_add_test(tc, table_over_a_segment_is_split);
        tcase_add_test(tc, memory_stays_small);
        suite_add_tcase(s, tc);

        tc = tcase_create("nothing-lost");
        tcase_add_checked_fixture(tc, setup, tu_teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, existing_table_is_not_touched);
        tcase_add_test(tc, file_size_limit_leaves_nothing);
        tcase_add_test(tc, sigint_leaves_nothing);
        tcase_add_test(tc, sigterm_leaves_nothing);
        tcase_add_test(tc, sigint_with_force_keeps_the_old_table);
        tcase_add_test(tc, too_many_segments_is_a_usage_error);
        suite_add_tcase(s, tc);

        tc = tcase_create("cli");
        tcase_add_checked_fixture(tc, setup, tu_teardown);
        tcase_add_loop_test(tc, exit_statuses, 0,
                            sizeof(cli_cases) / sizeof(cli_cases[0]));
        tcase_add_test(tc, help_and_version);
        suite_add_tcase(s, tc);
    }
    return tu_run_suite(s);
}
