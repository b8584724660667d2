/*
 * check_relfile.c -- segment files: write-then-rename, reading across
 *                    segments, and refusing files that are not relations.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
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
    return s;
}

int main(void)
{
    return tu_run_suite(relfile_suite());
}
