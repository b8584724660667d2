/*
 * check_relfile.c -- segment files: write-then-rename, reading across
 *                    segments, refusing sets that are not relations and
 *                    files that are not regular, readers never seeing half
 *                    of a replace, and recovery from a writer killed at
 *                    each step of its commit.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pageio.h"
#include "relfile.h"
#include "testutil.h"

/* A relation of numbered pages (testutil.h). */
static void write_rel(const char *path, uint32_t seg_blocks, uint64_t pages,
                      bool replace)
{
    tu_write_rel(path, seg_blocks, pages, replace);
}

START_TEST(segments_are_split_and_read_back)
{
    const char *path = tu_path("r");
    write_rel(path, 8, 20, false);
    ck_assert_str_eq(tu_list_dir(tu_dir), "r\nr.1\nr.2\n");
    ck_assert_int_eq(tu_file_size(tu_path("r")), 8 * BLCKSZ);
    ck_assert_int_eq(tu_file_size(tu_path("r.1")), 8 * BLCKSZ);
    ck_assert_int_eq(tu_file_size(tu_path("r.2")), 4 * BLCKSZ);

    RelFile rf;
    HsError err;
    static unsigned char buf[20 * BLCKSZ];
    ck_assert_int_eq(relfile_open(&rf, path, 8, &err), 0);
    ck_assert_uint_eq(relfile_nblocks(&rf), 20);
    ck_assert_uint_eq(rf.rf_nsegs, 3);
    /* one read that crosses both segment boundaries */
    ck_assert_int_eq(relfile_read(&rf, 5, 12, buf, &err), 0);
    for (uint64_t i = 0; i < 12; i++) {
        uint64_t b;
        memcpy(&b, buf + i * BLCKSZ, 8);
        ck_assert_uint_eq(b, 5 + i);
    }
    /* past the end is an error naming the block */
    ck_assert_int_lt(relfile_read(&rf, 19, 2, buf, &err), 0);
    ck_assert_int_eq(err.block, 19);
    relfile_close(&rf);
}
END_TEST

START_TEST(exact_multiple_of_segment_has_no_empty_tail)
{
    write_rel(tu_path("r"), 4, 8, false);
    ck_assert_str_eq(tu_list_dir(tu_dir), "r\nr.1\n");
    RelFile rf;
    HsError err;
    ck_assert_int_eq(relfile_open(&rf, tu_path("r"), 4, &err), 0);
    ck_assert_uint_eq(relfile_nblocks(&rf), 8);
    relfile_close(&rf);
}
END_TEST

START_TEST(abort_leaves_nothing)
{
    RelFile rf;
    HsError err;
    static unsigned char buf[10 * BLCKSZ];
    tu_fill_pages(buf, 0, 10);
    ck_assert_int_eq(relfile_create(&rf, tu_path("r"), 4, false, &err), 0);
    ck_assert_int_eq(relfile_append(&rf, buf, 10, &err), 0);
    /* while writing, only temporary names exist */
    ck_assert_int_eq(access(tu_path("r"), F_OK), -1);
    ck_assert_ptr_nonnull(strstr(tu_list_dir(tu_dir), ".tmp-"));
    relfile_abort(&rf);
    ck_assert_str_eq(tu_list_dir(tu_dir), "");
}
END_TEST

START_TEST(replace_removes_stale_segments)
{
    write_rel(tu_path("r"), 4, 12, false);
    ck_assert_str_eq(tu_list_dir(tu_dir), "r\nr.1\nr.2\n");
    RelFile rf;
    HsError err;
    ck_assert_int_eq(relfile_create(&rf, tu_path("r"), 4, false, &err), HS_EEXIST);
    write_rel(tu_path("r"), 4, 5, true);
    ck_assert_str_eq(tu_list_dir(tu_dir), "r\nr.1\n");
}
END_TEST

static void write_bytes(const char *path, size_t n)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (size_t i = 0; i < n; i++)
        fputc(0, f);
    fclose(f);
}

/*
 * Fault injection: check_relfile is linked with -Wl,--wrap for these, so
 * relfile.c's calls come here first.  Zero means "do not interfere".
 */
ssize_t __real_preadv64(int fd, const struct iovec *iov, int n, off_t off);
ssize_t __wrap_preadv64(int fd, const struct iovec *iov, int n, off_t off);
int __real_renameat2(int odir, const char *from, int ndir, const char *to,
                     unsigned flags);
int __wrap_renameat2(int odir, const char *from, int ndir, const char *to,
                     unsigned flags);
int __real_link(const char *from, const char *to);
int __wrap_link(const char *from, const char *to);

static size_t preadv_cap;        /* a preadv returns at most this many bytes */
static int rename_fails_at;      /* the Nth renameat2 fails with EIO */
static int link_fails_at, nlink; /* the Nth link fails with EPERM */
static int nrename;

ssize_t __wrap_preadv64(int fd, const struct iovec *iov, int n, off_t off)
{
    if (preadv_cap == 0)
        return __real_preadv64(fd, iov, n, off);
    struct iovec cut[64];
    size_t left = preadv_cap;
    int m = 0;
    for (; m < n && m < 64 && left > 0; m++) {
        cut[m] = iov[m];
        if (cut[m].iov_len > left)
            cut[m].iov_len = left;
        left -= cut[m].iov_len;
    }
    return __real_preadv64(fd, cut, m, off);
}

int __wrap_renameat2(int odir, const char *from, int ndir, const char *to,
                     unsigned flags)
{
    if (++nrename == rename_fails_at) {
        errno = EIO;
        return -1;
    }
    return __real_renameat2(odir, from, ndir, to, flags);
}

int __wrap_link(const char *from, const char *to)
{
    if (++nlink == link_fails_at) {
        errno = EPERM;
        return -1;
    }
    return __real_link(from, to);
}

/* Segment files of path hold blocks first, first+1, ... from tu_fill_pages(). */
static void assert_blocks(const char *seg, uint64_t first, uint32_t n)
{
    size_t len;
    unsigned char *data = tu_read_file(seg, &len);
    ck_assert_ptr_nonnull(data);
    ck_assert_uint_eq(len, (size_t)n * BLCKSZ);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t b;
        memcpy(&b, data + (size_t)i * BLCKSZ, 8);
        ck_assert_uint_eq(b, first + i);
    }
    free(data);
}

/* Replace r (blocks 0-7, two a segment) with blocks 100-105; *err is the
 * commit's error. */
static int replace_with_six(const char *path, HsError *err)
{
    RelFile rf;
    static unsigned char buf[6 * BLCKSZ];
    tu_fill_pages(buf, 100, 6);
    nrename = nlink = 0; /* the counts start here */
    ck_assert_int_eq(relfile_create(&rf, path, 2, true, err), 0);
    ck_assert_int_eq(relfile_append(&rf, buf, 6, err), 0);
    return relfile_commit(&rf, err);
}

/* The renames go r.2, r.1, r: the second failing, r.2 was already replaced
 * and must come back; r.3, which the new table lacks, is untouched. */
START_TEST(a_replace_that_fails_half_way_puts_the_old_relation_back)
{
    const char *path = tu_path("r");
    write_rel(path, 2, 8, false);
    HsError err;
    rename_fails_at = 2;
    ck_assert_int_lt(replace_with_six(path, &err), 0);
    ck_assert_str_eq(err.file, tu_path("r.1"));
    ck_assert_str_eq(err.msg, "rename: Input/output error");
    ck_assert_str_eq(tu_list_dir(tu_dir), "r\nr.1\nr.2\nr.3\n");
    assert_blocks(tu_path("r"), 0, 2);
    assert_blocks(tu_path("r.1"), 2, 2);
    assert_blocks(tu_path("r.2"), 4, 2);
    assert_blocks(tu_path("r.3"), 6, 2);

    /* and when nothing fails: the new table, r.3 gone, no second names */
    rename_fails_at = 0;
    ck_assert_msg(replace_with_six(path, &err) == 0, "%s", err.msg);
    ck_assert_str_eq(tu_list_dir(tu_dir), "r\nr.1\nr.2\n");
    assert_blocks(tu_path("r.2"), 104, 2);
}
END_TEST

/* An old segment that cannot be given a second name is not replaced:
 * the commit fails before any rename. */
START_TEST(a_segment_that_cannot_be_kept_is_not_replaced)
{
    const char *path = tu_path("r");
    write_rel(path, 2, 8, false);
    HsError err;
    link_fails_at = 2; /* r.1 */
    ck_assert_int_lt(replace_with_six(path, &err), 0);
    ck_assert_uint_eq(nrename, 0);
    ck_assert_ptr_nonnull(strstr(err.file, "/r.1.old-"));
    ck_assert_str_eq(err.msg, "cannot keep the old segment while replacing it: link: "
                              "Operation not permitted");
    ck_assert_str_eq(tu_list_dir(tu_dir), "r\nr.1\nr.2\nr.3\n");
    assert_blocks(tu_path("r"), 0, 2);
    assert_blocks(tu_path("r.1"), 2, 2);
}
END_TEST

/*
 * Frames in any order, some following each other in memory (those share an
 * iovec), each get their own block: _i 0, whole reads (one call a segment);
 * _i 1, preadv returning at most 5000 bytes, so reads resume mid-iovec.
 */
START_TEST(readv_fills_scattered_frames)
{
    const char *path = tu_path("r");
    write_rel(path, 8, 20, false);
    RelFile rf;
    HsError err;
    static unsigned char buf[10 * BLCKSZ];
    const int slot[10] = {3, 4, 5, 0, 1, 9, 8, 2, 6, 7};
    void *frames[10];
    for (int i = 0; i < 10; i++)
        frames[i] = buf + (size_t)slot[i] * BLCKSZ;
    memset(buf, 0, sizeof(buf));
    ck_assert_int_eq(relfile_open(&rf, path, 8, &err), 0);
    uint32_t calls;
    preadv_cap = _i ? 5000 : 0;
    ck_assert_int_eq(relfile_readv(&rf, 4, 10, frames, &calls, &err), 0);
    /* blocks 4-7 in r, 8-13 in r.1 */
    ck_assert_uint_eq(calls, _i ? 7 + 10 : 2);
    for (int i = 0; i < 10; i++) {
        uint64_t b;
        memcpy(&b, frames[i], 8);
        ck_assert_uint_eq(b, 4 + (uint64_t)i);
        ck_assert_uint_eq(((unsigned char *)frames[i])[BLCKSZ - 1], 0xab);
    }
    relfile_close(&rf);
}
END_TEST

START_TEST(not_a_relation)
{
    RelFile rf;
    HsError err;

    ck_assert_int_eq(relfile_open(&rf, tu_path("missing"), 8, &err), -ENOENT);
    ck_assert_str_eq(err.file, tu_path("missing"));

    ck_assert_int_eq(relfile_open(&rf, tu_dir, 8, &err), HS_ENOTHEAP);
    ck_assert_ptr_nonnull(strstr(err.msg, "not a regular file"));

    write_bytes(tu_path("odd"), BLCKSZ + 100);
    ck_assert_int_eq(relfile_open(&rf, tu_path("odd"), 8, &err), HS_ENOTHEAP);
    ck_assert_ptr_nonnull(strstr(err.msg, "not a multiple of 8192"));
    ck_assert_ptr_nonnull(strstr(err.msg, "block 1"));

    /* a short segment followed by another one */
    write_bytes(tu_path("gap"), 2 * BLCKSZ);
    write_bytes(tu_path("gap.1"), 2 * BLCKSZ);
    ck_assert_int_eq(relfile_open(&rf, tu_path("gap"), 4, &err), HS_ENOTHEAP);
    ck_assert_ptr_nonnull(strstr(err.msg, "not full"));

    /* an empty file is an empty relation: the scan decides what that means */
    write_bytes(tu_path("empty"), 0);
    ck_assert_int_eq(relfile_open(&rf, tu_path("empty"), 8, &err), 0);
    ck_assert_uint_eq(relfile_nblocks(&rf), 0);
    relfile_close(&rf);
}
END_TEST

/* ---- segment sets ------------------------------------------------------- */

/* A relation of pages stamped (block, generation), seg_blocks a segment. */
static void write_gen(const char *path, uint32_t seg_blocks, uint32_t pages,
                      uint32_t gen, bool replace)
{
    RelFile rf;
    HsError err;
    static unsigned char page[BLCKSZ];
    ck_assert_msg(relfile_create(&rf, path, seg_blocks, replace, &err) == 0, "%s",
                  err.msg);
    for (uint32_t b = 0; b < pages; b++) {
        memset(page, (int)gen, BLCKSZ);
        memcpy(page, &b, 4);
        memcpy(page + 4, &gen, 4);
        ck_assert_int_eq(relfile_append(&rf, page, 1, &err), 0);
    }
    ck_assert_msg(relfile_commit(&rf, &err) == 0, "%s", err.msg);
}

/* Read all of path: its page count, and the one generation every page has
 * (-1 if they differ: a torn read). */
static int read_gen(const char *path, uint32_t seg_blocks, uint64_t *pages,
                    HsError *err)
{
    RelFile rf;
    int rc = relfile_open(&rf, path, seg_blocks, err);
    if (rc < 0)
        return rc;
    static unsigned char page[BLCKSZ];
    int gen = -2;
    *pages = relfile_nblocks(&rf);
    for (uint64_t b = 0; b < *pages && gen != -1; b++) {
        uint32_t blk, g;
        ck_assert_int_eq(relfile_read(&rf, b, 1, page, err), 0);
        memcpy(&blk, page, 4);
        memcpy(&g, page + 4, 4);
        ck_assert_uint_eq(blk, b);
        gen = gen == -2 || gen == (int)g ? (int)g : -1;
    }
    relfile_close(&rf);
    return gen;
}

START_TEST(a_gap_in_the_set_is_an_error)
{
    const char *path = tu_path("r");
    write_gen(path, 8, 40, 1, false); /* 5 segments */
    ck_assert_int_eq(unlink(tu_path("r.1")), 0);
    RelFile rf;
    HsError err;
    ck_assert_int_eq(relfile_open(&rf, path, 8, &err), HS_ENOTHEAP);
    ck_assert_str_eq(err.file, tu_path("r.1"));
    ck_assert_msg(strstr(err.msg, "missing, but") && strstr(err.msg, "r.4 exists"),
                  "%s", err.msg);
}
END_TEST

/* A segment left by another table is not quietly appended: a writer
 * refuses it without --force, and with it removes it. */
START_TEST(a_stale_segment_is_refused_then_replaced)
{
    const char *path = tu_path("st");
    write_gen(path, 8, 16, 5, false); /* st, st.1: both full */
    ck_assert_int_eq(unlink(path), 0);
    RelFile rf;
    HsError err;
    ck_assert_int_eq(relfile_create(&rf, path, 8, false, &err), HS_EEXIST);
    ck_assert_str_eq(err.file, tu_path("st.1"));
    ck_assert_ptr_nonnull(strstr(err.msg, "a segment of another table"));
    write_gen(path, 8, 8, 6, true); /* one full segment: st.1 must go */
    uint64_t pages;
    ck_assert_int_eq(read_gen(path, 8, &pages, &err), 6);
    ck_assert_uint_eq(pages, 8);
    ck_assert_str_eq(tu_list_dir(tu_dir), "st\n");
}
END_TEST

/* FIFOs, devices and directories are refused before anything is read, and
 * opening a FIFO does not block. */
START_TEST(only_regular_files)
{
    RelFile rf;
    HsError err;
    ck_assert_int_eq(mkfifo(tu_path("fifo"), 0644), 0);
    alarm(10); /* a blocking open would hang the test */
    ck_assert_int_eq(relfile_open(&rf, tu_path("fifo"), 8, &err), HS_ENOTHEAP);
    ck_assert_ptr_nonnull(strstr(err.msg, "not a regular file (a FIFO)"));
    ck_assert_int_eq(relfile_open(&rf, "/dev/zero", 8, &err), HS_ENOTHEAP);
    ck_assert_ptr_nonnull(strstr(err.msg, "(a device)"));
    ck_assert_int_eq(relfile_open(&rf, tu_dir, 8, &err), HS_ENOTHEAP);
    ck_assert_ptr_nonnull(strstr(err.msg, "(a directory)"));
    alarm(0);
}
END_TEST

/* One process replaces the relation again and again, alternately with
 * generation 1 (3 segments) and 2 (5 segments), while this one reads it:
 * every read is all of one generation and of its size, never a mix. */
START_TEST(readers_never_see_half_a_replace)
{
    const char *path = tu_path("t");
    write_gen(path, 4, 10, 1, false);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        for (uint32_t i = 0;; i++)
            write_gen(path, 4, i % 2 ? 10 : 18, i % 2 ? 1 : 2, true);
    }
    int seen[3] = {0, 0, 0};
    for (int i = 0; i < 1500; i++) {
        HsError err;
        uint64_t pages;
        int gen = read_gen(path, 4, &pages, &err);
        ck_assert_msg(gen == 1 || gen == 2, "read %d: generation %d (%s)", i, gen,
                      gen < 0 ? err.msg : "pages of two tables");
        ck_assert_uint_eq(pages, gen == 1 ? 10 : 18);
        seen[gen]++;
    }
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    ck_assert_msg(seen[1] > 0 && seen[2] > 0, "saw %d and %d", seen[1], seen[2]);
}
END_TEST

/* ---- a writer killed at each step of its commit ---------------------------- */

static const char *kill_at; /* the step the child dies at */
static int kill_after;      /* ... after this many earlier calls of it */

static void kill_hook(const char *stepname)
{
    if (strcmp(stepname, kill_at) == 0 && kill_after-- == 0)
        raise(SIGKILL);
}

static const struct {
    const char *step;
    int after;
} steps[] = {{"kept", 0},    {"renamed", 0},   {"renamed", 1},
             {"surplus", 0}, {"committed", 0}, {"dropped", 0}};
#define NSTEPS (int)(sizeof(steps) / sizeof(steps[0]))

/*
 * _i picks the step and the shape: a creation, a replace of 3 segments by
 * 2, or of 2 by 4 (segments of 4 pages).  Killed there, the relation is the
 * old one or the new one, or (between the renames and the commit point) a
 * reader refuses it; the next writer's recovery leaves the old one whole
 * (before the commit point) or the new one (after), and no leftovers.
 */
START_TEST(a_writer_killed_at_each_step_leaves_one_table)
{
    static const struct {
        uint32_t old_pages, new_pages;
    } shapes[] = {{0, 10}, {12, 6}, {6, 14}};
    int st = _i % NSTEPS, sh = _i / NSTEPS;
    const char *path = tu_path("k");
    uint32_t oldp = shapes[sh].old_pages, newp = shapes[sh].new_pages;
    if (oldp)
        write_gen(path, 4, oldp, 1, false);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        kill_at = steps[st].step, kill_after = steps[st].after;
        relfile_commit_hook = kill_hook;
        write_gen(path, 4, newp, 2, oldp > 0);
        _exit(0); /* the step never came (fewer renames): committed */
    }
    int status;
    waitpid(child, &status, 0);
    bool killed = WIFSIGNALED(status);
    bool past = !killed || strcmp(steps[st].step, "committed") == 0 ||
                strcmp(steps[st].step, "dropped") == 0;
    HsError err;
    uint64_t pages;
    int gen = read_gen(path, 4, &pages, &err);
    if (past)
        ck_assert_msg(gen == 2 && pages == newp, "step %s: gen %d (%s)", steps[st].step,
                      gen, gen < 0 ? err.msg : "");
    else if (gen == HS_EREFUSED)
        ck_assert_ptr_nonnull(strstr(err.msg, "half replaced"));
    else if (oldp)
        ck_assert_msg(gen == 1 && pages == oldp, "step %s: gen %d", steps[st].step,
                      gen);
    char note[256];
    ck_assert_int_eq(relfile_recover(path, note, sizeof(note), &err), 0);
    ck_assert(!killed || !past || strstr(note, "removed") != NULL ||
              strcmp(steps[st].step, "dropped") == 0);
    gen = read_gen(path, 4, &pages, &err);
    if (past)
        ck_assert_msg(gen == 2 && pages == newp, "after recovery: %d", gen);
    else if (oldp)
        ck_assert_msg(gen == 1 && pages == oldp,
                      "step %s shape %d, after recovery: %d (%s)", steps[st].step, sh,
                      gen, gen < 0 ? err.msg : "");
    else
        ck_assert_int_eq(gen, -ENOENT); /* a creation that never committed */
    /* nothing left but the relation's own segments */
    const char *list = tu_list_dir(tu_dir);
    ck_assert_msg(strstr(list, "tmp-") == NULL && strstr(list, "old-") == NULL &&
                      strstr(list, "commit-") == NULL,
                  "left: %s", list);
}
END_TEST

static Suite *relfile_suite(void)
{
    Suite *s = suite_create("relfile");
    TCase *tc = tcase_create("relfile");
    tcase_add_checked_fixture(tc, tu_setup, tu_teardown);
    tcase_add_test(tc, segments_are_split_and_read_back);
    tcase_add_test(tc, exact_multiple_of_segment_has_no_empty_tail);
    tcase_add_test(tc, abort_leaves_nothing);
    tcase_add_test(tc, replace_removes_stale_segments);
    tcase_add_test(tc, a_replace_that_fails_half_way_puts_the_old_relation_back);
    tcase_add_test(tc, a_segment_that_cannot_be_kept_is_not_replaced);
    tcase_add_loop_test(tc, readv_fills_scattered_frames, 0, 2);
    tcase_add_test(tc, not_a_relation);
    suite_add_tcase(s, tc);
    tc = tcase_create("sets");
    tcase_add_checked_fixture(tc, tu_setup, tu_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_gap_in_the_set_is_an_error);
    tcase_add_test(tc, a_stale_segment_is_refused_then_replaced);
    tcase_add_test(tc, only_regular_files);
    tcase_add_test(tc, readers_never_see_half_a_replace);
    tcase_add_loop_test(tc, a_writer_killed_at_each_step_leaves_one_table, 0,
                        3 * NSTEPS);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run_suite(relfile_suite());
}
