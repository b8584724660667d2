/*
 * check_rawio.c -- the C readers (tools/bench/rawio.c) count exactly what
 *                  wc and dd count on the same files, read every segment,
 *                  and name the byte a file shrank under a mapping.
 *
 * With the argument "direct" only the O_DIRECT reader runs, and the test
 * exits 77 (SKIP) where the temporary directory's file system refuses
 * O_DIRECT (tmpfs does).  The rawread command line: check_cli_rawread.c.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "extcmd.h"
#include "rawio.h"
#include "testutil.h"

static void setup(void)
{
    tu_setup();
}

static void write_file(const char *path, const void *data, size_t n)
{
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, data, n), (ssize_t)n);
    close(fd);
}

/* The files every reader is checked on. */
static const char *make_file(int which)
{
    static unsigned char buf[300000];
    const char *p = tu_path("f");
    size_t n = 0;
    uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(which + 1);
    switch (which) {
    case 0: /* empty */
        break;
    case 1:
        n = 5; /* no final newline */
        memcpy(buf, "hello", n);
        break;
    case 2:
        n = sizeof("a b\n\nc\td\v\fe\r\n ") - 1;
        memcpy(buf, "a b\n\nc\td\v\fe\r\n ", n);
        break;
    case 3: /* random bytes: NULs, control characters, high bytes */
    case 4: /* random text: mostly printable, some white space */
        n = which == 3 ? 300000 : 123457;
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            unsigned char b = (unsigned char)x;
            buf[i] = which == 3 ? b : (b % 7 == 0 ? " \n\t"[b % 3] : 'a' + b % 26);
        }
        break;
    case 5: /* exactly one 8 KiB page of control characters and text */
        n = 8192;
        for (size_t i = 0; i < n; i++)
            buf[i] = i % 3 == 0 ? 0x01 : i % 11 == 0 ? '\n' : 'x';
        break;
    }
    write_file(p, buf, n);
    return p;
}
#define NFILES 6

/* Run a command and return its stdout (and stderr in errout). */
static const char *cmd(char *const argv[], char *errout, size_t errlen)
{
    static char out[4096];
    Measure m;
    HsError err;
    int status = extcmd_run(argv, &m, out, sizeof(out), errout, errlen, &err);
    ck_assert_msg(status == 0, "%s: status %d: %s", argv[0], status,
                  errout ? errout : "");
    return out;
}

START_TEST(wc_counts_as_wc_does)
{
    const char *f = make_file(_i);
    RawResult r;
    HsError err;
    ck_assert_int_eq(raw_wc(f, &r, &err), 0);
    char *argv[] = {"wc", (char *)f, NULL};
    unsigned long long l, w, b;
    ck_assert_int_eq(sscanf(cmd(argv, NULL, 0), "%llu %llu %llu", &l, &w, &b), 3);
    ck_assert_uint_eq(r.rr_lines, l);
    ck_assert_uint_eq(r.rr_words, w);
    ck_assert_uint_eq(r.rr_bytes, b);

    ck_assert_int_eq(raw_lines(f, &r, &err), 0);
    char *argv_l[] = {"wc", "-l", (char *)f, NULL};
    ck_assert_int_eq(sscanf(cmd(argv_l, NULL, 0), "%llu", &l), 1);
    ck_assert_uint_eq(r.rr_lines, l);
}
END_TEST

START_TEST(read_counts_as_dd_does)
{
    const char *f = make_file(_i);
    const size_t bs[] = {512, 8192, 256 << 10, 1 << 20};
    for (int i = 0; i < 4; i++) {
        RawResult r;
        HsError err;
        ck_assert_int_eq(raw_read(f, bs[i], false, &r, &err), 0);
        char arg_if[600], arg_bs[32], errout[1024], want[64];
        snprintf(arg_if, sizeof(arg_if), "if=%s", f);
        snprintf(arg_bs, sizeof(arg_bs), "bs=%zu", bs[i]);
        char *argv[] = {"dd", arg_if, "of=/dev/null", arg_bs, NULL};
        cmd(argv, errout, sizeof(errout));
        snprintf(want, sizeof(want), "%llu+%llu records in\n",
                 (unsigned long long)r.rr_full, (unsigned long long)r.rr_partial);
        ck_assert_msg(strncmp(errout, want, strlen(want)) == 0, "dd: %s; we: %s",
                      errout, want);
        snprintf(want, sizeof(want), "%llu bytes", (unsigned long long)r.rr_bytes);
        ck_assert_msg(strstr(errout, want) != NULL, "dd: %s; we: %s", errout, want);
    }
}
END_TEST

/* The sum of a file's bytes as RAW_TOUCH_BYTE adds them: 8-byte words, then
 * the tail byte by byte. */
static uint64_t byte_sum(const char *f)
{
    size_t len, off = 0;
    unsigned char *data = tu_read_file(f, &len);
    uint64_t sum = 0;
    for (; off + 8 <= len; off += 8) {
        uint64_t w;
        memcpy(&w, data + off, 8);
        sum += w;
    }
    for (; off < len; off++)
        sum += data[off];
    free(data);
    return sum;
}

START_TEST(mmap_reads_every_byte)
{
    const char *f = make_file(_i);
    long long size = tu_file_size(f);
    uint64_t want_sum = byte_sum(f);
    const size_t chunks[] = {8 << 10, 8 << 20, 32 << 20, 0};
    for (int i = 0; i < 4; i++) {
        RawResult r;
        HsError err;
        ck_assert_int_eq(raw_mmap(f, chunks[i], RAW_TOUCH_BYTE, &r, &err), 0);
        ck_assert_uint_eq(r.rr_bytes, (uint64_t)size);
        if (chunks[i] == (8 << 10))
            ck_assert_uint_eq(r.rr_calls, ((uint64_t)size + 8191) / 8192);
        /* a chunk boundary never falls inside a word: sums agree when the file
         * is read as one chunk or in 8 KiB ones */
        ck_assert_uint_eq(r.rr_sum, want_sum);
    }
}
END_TEST

START_TEST(direct_reads_every_byte)
{
    const char *f = make_file(_i);
    RawResult r;
    HsError err;
    int rc = raw_direct(f, 1 << 20, &r, &err);
    ck_assert_msg(rc == 0, "%s", err.msg);
    ck_assert_uint_eq(r.rr_bytes, (uint64_t)tu_file_size(f));
    /* a block O_DIRECT cannot use is refused before any I/O */
    ck_assert_int_eq(raw_direct(f, 1000, &r, &err), HS_EUSAGE);
    ck_assert_str_eq(err.msg, "O_DIRECT needs a block that is a multiple of 4096");
}
END_TEST

/* raw_run() is each reader by its method, and the names are the enums'. */
START_TEST(raw_run_picks_the_reader)
{
    const char *f = make_file(4);
    RawResult a, b;
    HsError err;
    ck_assert_int_eq(raw_run(RAW_WC, f, 0, &a, &err), 0);
    ck_assert_int_eq(raw_wc(f, &b, &err), 0);
    ck_assert(a.rr_lines == b.rr_lines && a.rr_words == b.rr_words);
    ck_assert_int_eq(raw_run(RAW_LINES, f, 0, &a, &err), 0);
    ck_assert_uint_eq(a.rr_lines, b.rr_lines);
    ck_assert_int_eq(raw_run(RAW_READ, f, 512, &a, &err), 0);
    ck_assert_uint_eq(a.rr_calls, (tu_file_size(f) + 511) / 512);
    ck_assert_int_eq(raw_run(RAW_MMAP, f, 0, &a, &err), 0);
    ck_assert_uint_eq(a.rr_sum, byte_sum(f));
    ck_assert_str_eq(raw_method_name(RAW_DIRECT), "direct");
    ck_assert_str_eq(raw_method_names[RAW_LINES], "lines");
    ck_assert_ptr_null(raw_method_names[RAW_DIRECT + 1]);
    ck_assert_str_eq(raw_touch_name(RAW_TOUCH_CRC), "crc");
    ck_assert_ptr_null(raw_touch_names[RAW_TOUCH_CRC + 1]);
}
END_TEST

START_TEST(segments_are_read_too)
{
    write_file(tu_path("rel"), "aa\n", 3);
    write_file(tu_path("rel.1"), "b c\n", 4);
    RawResult r;
    HsError err;
    ck_assert_int_eq(raw_wc(tu_path("rel"), &r, &err), 0);
    ck_assert_uint_eq(r.rr_lines, 2);
    ck_assert_uint_eq(r.rr_words, 3);
    ck_assert_uint_eq(r.rr_bytes, 7);
    ck_assert_int_eq(raw_read(tu_path("rel"), 512, false, &r, &err), 0);
    ck_assert_uint_eq(r.rr_partial, 2);
    ck_assert_int_eq(raw_read(tu_path("missing"), 512, false, &r, &err), -ENOENT);
    ck_assert_str_eq(err.file, tu_path("missing"));
}
END_TEST

/* raw_load() brings every segment's bytes, in order, and nothing else. */
START_TEST(load_brings_every_segment)
{
    static unsigned char big[3 << 20];
    uint64_t x = 42;
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (unsigned char)tu_xorshift(&x);
    write_file(tu_path("rel"), (const char *)big, sizeof(big) - 5);
    write_file(tu_path("rel.1"), (const char *)big + sizeof(big) - 5, 5);
    unsigned char *buf = NULL;
    size_t len = 0;
    HsError err;
    ck_assert_int_eq(raw_load(tu_path("rel"), &buf, &len, &err), 0);
    ck_assert_uint_eq(len, sizeof(big));
    ck_assert_int_eq(memcmp(buf, big, sizeof(big)), 0);
    free(buf);
    ck_assert_int_eq(raw_load(tu_path("missing"), &buf, &len, &err), -ENOENT);
    ck_assert_str_eq(err.file, tu_path("missing"));
}
END_TEST

/* A file of 4 pages of 0x5a bytes; returns its path. */
static const char *four_pages(void)
{
    static unsigned char page[4 * 8192];
    memset(page, 0x5a, sizeof(page));
    const char *f = tu_path("shrinks");
    write_file(f, (const char *)page, sizeof(page));
    return f;
}

static void shrink_to_one_page_and_a_bit(const char *segment, void *arg)
{
    (void)arg;
    ck_assert_int_eq(truncate(segment, 8192 + 100), 0);
}

START_TEST(mmap_reader_names_the_byte_a_file_shrank_under)
{
    const size_t chunks[] = {8 << 10, 0};
    const RawTouch how[] = {RAW_TOUCH_LINE, RAW_TOUCH_BYTE, RAW_TOUCH_CRC};
    for (int c = 0; c < 2; c++) {
        for (int h = 0; h < 3; h++) {
            const char *f = four_pages();
            RawResult r;
            HsError err;
            int rc = raw_mmap_hooked(f, chunks[c], how[h], shrink_to_one_page_and_a_bit,
                                     NULL, &r, &err);
            ck_assert_int_eq(rc, -EFAULT);
            ck_assert_str_eq(err.file, f);
            /* a byte of the first memory page wholly past the new end (which
             * one depends on the order the touch loads in) */
            unsigned long long mp = (unsigned long long)sysconf(_SC_PAGESIZE);
            unsigned long long first = (8192 + 100 + mp - 1) / mp * mp;
            unsigned long long at;
            char rest[64];
            ck_assert_int_eq(
                sscanf(err.msg, "SIGBUS at byte %llu: %63[^\n]", &at, rest), 2);
            ck_assert_str_eq(rest, "the file shrank under the mapping");
            ck_assert_uint_ge(at, first);
            ck_assert_uint_lt(at, first + mp);
        }
    }
}
END_TEST

/* Whether files in the temporary directory can be opened with O_DIRECT.
 * Outside any test, so without Check's assertions. */
static bool have_o_direct(void)
{
    const char *base = getenv("TMPDIR");
    char probe[512];
    snprintf(probe, sizeof(probe), "%s/heapscan-probe-XXXXXX", base ? base : "/tmp");
    int fd = mkstemp(probe);
    if (fd < 0)
        return false;
    close(fd);
    fd = open(probe, O_RDONLY | O_DIRECT);
    if (fd >= 0)
        close(fd);
    unlink(probe);
    return fd >= 0;
}

int main(int argc, char **argv)
{
    bool direct = argc > 1 && strcmp(argv[1], "direct") == 0;
    Suite *s = suite_create(direct ? "rawio-direct" : "rawio");
    TCase *tc = tcase_create(direct ? "direct" : "rawio");
    tcase_add_checked_fixture(tc, setup, tu_teardown);
    tcase_set_timeout(tc, 60);
    if (direct) {
        tu_require(have_o_direct(), TU_NEED_OTHER,
                   "O_DIRECT is refused by the file system of $TMPDIR (%s)",
                   getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        tcase_add_loop_test(tc, direct_reads_every_byte, 0, NFILES);
    } else {
        tcase_add_loop_test(tc, wc_counts_as_wc_does, 0, NFILES);
        tcase_add_loop_test(tc, read_counts_as_dd_does, 0, NFILES);
        tcase_add_loop_test(tc, mmap_reads_every_byte, 0, NFILES);
        tcase_add_test(tc, segments_are_read_too);
        tcase_add_test(tc, load_brings_every_segment);
        tcase_add_test(tc, mmap_reader_names_the_byte_a_file_shrank_under);
        tcase_add_test(tc, raw_run_picks_the_reader);
    }
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
