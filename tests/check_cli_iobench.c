/*
 * check_cli_iobench.c -- the iobench command line on small files: every
 *                        test under both methods, blocks at the edges, both
 *                        methods leaving byte-identical files, the file it
 *                        makes, its JSON and CSV, rnd-page through the
 *                        buffer manager, the grid, and usage errors.  No
 *                        timing is checked: the machines are shared.  The
 *                        runs themselves: check_iobench_run.c.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "testutil.h"

static const char *iobench;

static void setup(void)
{
    tu_setup();
    iobench = tu_tool("IOBENCH");
}

/* The value after "key " (text) in out, as a number; fails if absent. */
static unsigned long long field(const char *out, const char *key)
{
    const char *p = strstr(out, key);
    ck_assert_msg(p != NULL, "'%s' not in: %s", key, out);
    return strtoull(p + strlen(key), NULL, 0);
}

/* crc32 of a whole file, as the test computes it. */
static unsigned long file_crc(const char *path)
{
    size_t len;
    unsigned char *data = tu_read_file(path, &len);
    ck_assert_ptr_nonnull(data);
    unsigned long c = crc32(crc32(0, Z_NULL, 0), data, (uInt)len);
    free(data);
    return c;
}

static const char *const tests[] = {"seq-read", "rnd-rw"};
static const char *const methods[] = {"read", "mmap"};

/* _i: test * 2 + method. */
START_TEST(each_test_each_method)
{
    const char *f = tu_path("f");
    const char *test = tests[_i / 2], *method = methods[_i % 2];
    TuRun *r = tu_runl(0, iobench, "--test", test, "--method", method, "--file-size",
                       "256K", "--ops", "1000", "--repeat", "2", f, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_int_eq(tu_file_size(f), 256 << 10);
    ck_assert_uint_eq(field(r->out, "ops "), _i / 2 ? 1000 : 256);
    /* "ops N (R reads, W writes)" */
    unsigned long long ops, reads, writes;
    ck_assert_int_eq(sscanf(strstr(r->out, "\nops ") + 1,
                            "ops %llu (%llu reads, %llu writes)", &ops, &reads,
                            &writes),
                     3);
    ck_assert_uint_eq(reads + writes, ops);
    if (_i / 2 == 0)
        ck_assert_uint_eq(writes, 0);
    else /* about half */
        ck_assert(writes > 300 && reads > 300);
    ck_assert_ptr_nonnull(strstr(r->out, "2 runs, cache stable, sync none"));
    ck_assert_ptr_nonnull(strstr(r->out, "wall best "));
    ck_assert_uint_eq(field(r->out, "crc32 "), file_crc(f));
}
END_TEST

/* 32-byte blocks, and a block as large as the file, both methods. */
START_TEST(blocks_at_the_edges)
{
    const char *f = tu_path("f"), *g = tu_path("g");
    for (int m = 0; m < 2; m++) {
        TuRun *r = tu_runl(0, iobench, "-m", methods[m], "-b", "32", "-s", "64K", "-r",
                           "1", f, NULL);
        ck_assert_msg(r->status == 0, "%s", r->err);
        ck_assert_uint_eq(field(r->out, "ops "), 2048);
        ck_assert_uint_eq(field(r->out, "writes), "), 65536);
        for (int t = 0; t < 2; t++) {
            r = tu_runl(0, iobench, "-t", tests[t], "-m", methods[m], "-b", "64K", "-s",
                        "64K", "-n", "10", "-r", "1", g, NULL);
            ck_assert_msg(r->status == 0, "%s", r->err);
            ck_assert_uint_eq(field(r->out, "ops "), t ? 10 : 1);
            ck_assert_uint_eq(field(r->out, "crc32 "), file_crc(g));
        }
    }
    /* a 1 MiB block, the largest */
    TuRun *r =
        tu_runl(0, iobench, "-b", "1M", "-s", "1M", "-r", "1", tu_path("h"), NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_uint_eq(field(r->out, "ops "), 1);
}
END_TEST

/* The same rnd-rw under read and under mmap leaves the same bytes, and so
 * does running it once more (the sequence is idempotent). */
START_TEST(both_methods_leave_identical_files)
{
    const char *a = tu_path("a"), *b = tu_path("b");
    unsigned long long crc[2];
    const char *f[2] = {a, b};
    unsigned long before = 0;
    for (int m = 0; m < 2; m++) {
        TuRun *r =
            tu_runl(0, iobench, "-t", "seq-read", "-s", "512K", "-r", "1", f[m], NULL);
        ck_assert_msg(r->status == 0, "%s", r->err);
        before = file_crc(f[m]);
        r = tu_runl(0, iobench, "-t", "rnd-rw", "-m", methods[m], "-s", "512K", "-b",
                    "4K", "-n", "3000", "--seed", "7", "-r", m ? "3" : "1", f[m], NULL);
        ck_assert_msg(r->status == 0, "%s", r->err);
        crc[m] = field(r->out, "crc32 ");
        ck_assert_uint_eq(crc[m], file_crc(f[m]));
    }
    ck_assert_uint_eq(crc[0], crc[1]);
    ck_assert_uint_ne(crc[0], before); /* something was written */
    size_t la, lb;
    unsigned char *da = tu_read_file(a, &la), *db = tu_read_file(b, &lb);
    ck_assert_uint_eq(la, lb);
    ck_assert_int_eq(memcmp(da, db, la), 0);
    free(da);
    free(db);

    /* another seed writes something else */
    TuRun *r = tu_runl(0, iobench, "-t", "rnd-rw", "-s", "512K", "-b", "4K", "-n",
                       "3000", "--seed", "8", "-r", "1", a, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_uint_ne(field(r->out, "crc32 "), crc[0]);
}
END_TEST

/* --sync end: the run succeeds and the bytes are those of --sync none. */
START_TEST(sync_end)
{
    unsigned long long crc[2][2];
    for (int m = 0; m < 2; m++)
        for (int s = 0; s < 2; s++) {
            const char *f = tu_path(s ? "synced" : "unsynced");
            unlink(f);
            TuRun *r =
                tu_runl(0, iobench, "-t", "rnd-rw", "-m", methods[m], "-s", "256K",
                        "--sync", s ? "end" : "none", "-r", "2", "-n", "500", f, NULL);
            ck_assert_msg(r->status == 0, "%s", r->err);
            ck_assert_ptr_nonnull(strstr(r->out, s ? "sync end" : "sync none"));
            crc[m][s] = field(r->out, "crc32 ");
        }
    ck_assert_uint_eq(crc[0][0], crc[0][1]);
    ck_assert_uint_eq(crc[0][0], crc[1][0]);
    ck_assert_uint_eq(crc[1][0], crc[1][1]);
}
END_TEST

/* The file is made at --file-size, dense and without zero bytes, the same
 * bytes every time; remade when its size differs; left alone when it fits. */
START_TEST(file_creation)
{
    const char *f = tu_path("f"), *g = tu_path("g");
    TuRun *r = tu_runl(0, iobench, "-s", "300K", "-r", "1", f, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    struct stat st;
    ck_assert_int_eq(stat(f, &st), 0);
    ck_assert_int_eq(st.st_size, 300 << 10);
    ck_assert_int_ge((long long)st.st_blocks * 512, 300 << 10); /* not sparse */
    size_t len;
    unsigned char *data = tu_read_file(f, &len);
    ck_assert_ptr_null(memchr(data, 0, len));
    free(data);
    ck_assert_str_eq(tu_list_dir(tu_dir), "f\n"); /* no temporary left */

    r = tu_runl(0, iobench, "-s", "300K", "-r", "1", g, NULL);
    ck_assert_uint_eq(file_crc(f), file_crc(g));

    int fd = open(g, O_WRONLY | O_TRUNC);
    ck_assert_int_eq(write(fd, "short", 5), 5);
    close(fd);
    r = tu_runl(0, iobench, "-s", "128K", "-r", "1", g, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_int_eq(tu_file_size(g), 128 << 10);

    /* a file of the right size is used as it is */
    static unsigned char mine[64 << 10];
    memset(mine, 'x', sizeof(mine));
    fd = open(g, O_WRONLY | O_TRUNC);
    ck_assert_int_eq(write(fd, mine, sizeof(mine)), (ssize_t)sizeof(mine));
    close(fd);
    r = tu_runl(0, iobench, "-s", "64K", "-r", "1", g, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_uint_eq(field(r->out, "crc32 "), crc32(0, mine, sizeof(mine)));

    /* not a regular file */
    r = tu_runl(0, iobench, "-s", "64K", tu_dir, NULL);
    ck_assert_int_eq(r->status, 1);
    ck_assert_ptr_nonnull(strstr(r->err, "not a regular file"));
}
END_TEST

/* A file name with a quote, a comma and a backslash: valid JSON, quoted CSV. */
START_TEST(file_names_are_escaped)
{
    const char *f = tu_path("a \"b\", \\c");
    TuRun *r = tu_runl(0, iobench, "--json", "-s", "64K", "-r", "1", f, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_ptr_nonnull(
        strstr(r->out, "/a \\\"b\\\", \\\\c\", \"file_bytes\": 65536"));
    r = tu_runl(0, iobench, "--csv", "-s", "64K", "-r", "1", f, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_ptr_nonnull(strstr(r->out, "/a \"\"b\"\", \\c\",65536,seq-read,"));
}
END_TEST

START_TEST(json_and_csv)
{
    const char *f = tu_path("f");
    TuRun *r = tu_runl(0, iobench, "--json", "-t", "rnd-rw", "-m", "mmap", "-s", "128K",
                       "-n", "100", "-w", "0", "-r", "3", f, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    const char *want[] = {
        "{\"file\": \"",         "\"file_bytes\": 131072", "\"test\": \"rnd-rw\"",
        "\"method\": \"mmap\"",  "\"block\": 1024",        "\"ops\": 100",
        "\"reads\": 100",        "\"writes\": 0",          "\"bytes\": 102400",
        "\"seed\": 1",           "\"write_pct\": 0",       "\"runs\": 3",
        "\"cache\": \"stable\"", "\"sync\": \"none\"",     "\"best_s\": ",
        "\"worst_s\": ",         "\"user_s\": ",           "\"sys_s\": ",
        "\"mb_per_s\": ",        "\"ops_per_s\": ",        "\"crc32\": \"0x",
        "\"buf_hits\": 0"};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        ck_assert_msg(strstr(r->out, want[i]) != NULL, "%s not in %s", want[i], r->out);
    char crc[16];
    snprintf(crc, sizeof(crc), "0x%08lx", file_crc(f));
    ck_assert_ptr_nonnull(strstr(r->out, crc));

    r = tu_runl(0, iobench, "--csv", "--cache", "cold", "-s", "128K", "-r", "1", f,
                NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_ptr_nonnull(strstr(r->out, "file,file_bytes,test,method,block,ops,"));
    const char *row = strchr(r->out, '\n') + 1;
    int commas = 0;
    for (const char *p = row; *p && *p != '\n'; p++)
        commas += *p == ',';
    ck_assert_int_eq(commas, 26);
    ck_assert_ptr_nonnull(strstr(row, ",131072,seq-read,read,1024,128,128,0,131072,"));
    ck_assert_ptr_nonnull(strstr(row, ",cold,none,"));
    ck_assert_ptr_nonnull(strstr(row, crc));
}
END_TEST

/* A small heap table: 100 rows a page at pad 59 is 75 rows, so 80 pages. */
static const char *make_table(void)
{
    const char *t = tu_path("t.heap");
    TuRun *r = tu_runl(0, tu_tool("MKHEAP"), "-q", "--rows", "6000", t, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    return t;
}

START_TEST(rnd_page_through_the_buffer_manager)
{
    const char *t = make_table();
    unsigned long before = file_crc(t);
    for (int m = 0; m < 2; m++) {
        TuRun *r = tu_runl(0, iobench, "-t", "rnd-page", "-m", methods[m], "-n", "2000",
                           "-r", "2", t, NULL);
        ck_assert_msg(r->status == 0, "%s", r->err);
        ck_assert_uint_eq(field(r->out, "ops "), 2000);
        unsigned long long hits = field(r->out, "buffer manager: "),
                           reads = field(r->out, "hits, ");
        ck_assert_uint_eq(hits + reads, 2000);
        ck_assert_uint_gt(hits, 0);
        if (m == 0) /* a pool of 20 pages for 80: most pins miss */
            ck_assert_uint_gt(reads, 1000);
        else /* every page is read once, then hit */
            ck_assert_uint_le(reads, 80);
        ck_assert_uint_eq(field(r->out, "reads in "), reads * (m == 0) + (m == 1));
        ck_assert_ptr_null(strstr(r->out, "crc32"));
    }
    ck_assert_uint_eq(file_crc(t), before);

    /* not a heap table */
    TuRun *r = tu_runl(0, iobench, "-s", "64K", "-r", "1", tu_path("f"), NULL);
    r = tu_runl(0, iobench, "-t", "rnd-page", tu_path("f"), NULL);
    ck_assert_int_eq(r->status, 1);
    r = tu_runl(0, iobench, "-t", "rnd-page", tu_path("missing"), NULL);
    ck_assert_int_eq(r->status, 1);
    ck_assert_ptr_nonnull(strstr(r->err, "No such file or directory"));
}
END_TEST

/* The grid on two small files: 12 rows a file, then 2 rnd-page rows. */
START_TEST(matrix)
{
    const char *t = make_table(), *base = tu_path("m");
    TuRun *r = tu_runl(0, iobench, "--matrix", "--file-size", "64K,128K", "-r", "1",
                       "-n", "300", "--heap", t, base, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    int lines = 0, rndrw = 0;
    char prev_crc[16] = "";
    for (char *line = r->out; *line; line = strchr(line, '\n') + 1) {
        char size[16], test[16], block[16], method[16], crc[16];
        lines++;
        if (sscanf(line, "%15s %15s %15s %15s %*f %*f %*f %*f %*f %*f %15s", size, test,
                   block, method, crc) == 5 &&
            strcmp(test, "rnd-rw") == 0) {
            if (strcmp(method, "mmap") == 0)
                ck_assert_str_eq(crc, prev_crc);
            snprintf(prev_crc, sizeof(prev_crc), "%s", crc);
            rndrw++;
        }
    }
    ck_assert_int_eq(lines, 1 + 2 * 12 + 2);
    ck_assert_int_eq(rndrw, 12);
    ck_assert_ptr_nonnull(strstr(r->out, "64K    seq-read  32B   mmap"));
    ck_assert_ptr_nonnull(strstr(r->out, "128K   rnd-rw    4K    read"));
    ck_assert_ptr_nonnull(strstr(r->out, "rnd-page  8K    mmap"));
    ck_assert_int_eq(tu_file_size(tu_path("m.64K")), 64 << 10);
    ck_assert_int_eq(tu_file_size(tu_path("m.128K")), 128 << 10);

    r = tu_runl(0, iobench, "--matrix", "--json", "-s", "64K", "-r", "1", "-n", "50",
                "--heap", t, base, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_int_eq(r->out[0], '[');
    int objects = 0;
    for (const char *p = r->out; (p = strstr(p, "{\"file\"")) != NULL; p++)
        objects++;
    ck_assert_int_eq(objects, 14);
}
END_TEST

START_TEST(usage_errors)
{
    const struct {
        const char *a[6];
        const char *says;
    } bad[] = {
        {{"-s", "64K", "-b", "128K"}, "--block 128K is larger than the file (64K)"},
        {{"--ops", "0"}, "--ops: '0' is not a count"},
        {{"--block", "1000"}, "is not a power of two from 32 B to 1M"},
        {{"--block", "16"}, "is not a power of two from 32 B to 1M"},
        {{"--block", "2M"}, "is not a power of two from 32 B to 1M"},
        {{"--test", "rnd-read"}, "--test: 'rnd-read' is not one of"},
        {{"--method", "direct"}, "--method: 'direct' is not one of read, mmap"},
        {{"--write-pct", "101"}, "--write-pct: '101'"},
        {{"--cache", "warm"}, "--cache: 'warm' is not one of stable, cold"},
        {{"--sync", "always"}, "--sync: 'always'"},
        {{"--repeat", "0"}, "--repeat: '0'"},
        {{"--file-size", "0"}, "--file-size: '0'"},
        {{"--file-size", "1M,2M"}, "a list is for --matrix"},
        {{"--json", "--csv"}, "choose one"},
        {{"--heap", "t"}, "--heap is for --matrix"},
        {{"--matrix", "--block", "4K"}, "--block is not for --matrix"},
        {{"-t", "rnd-page", "-b", "4K"}, "--block is not for --test rnd-page"},
        {{"-t", "rnd-page", "--sync", "end"}, "--sync is not for --test rnd-page"},
        {{"--io-depth", "4"}, "--io-depth is for --method io_uring"},
        {{"-m", "io_uring", "--io-depth", "0"}, "--io-depth: '0' is not a count"},
        {{"-m", "io_uring", "-t", "rnd-page"}, "--method io_uring is for seq-read"},
        {{"--matrix", "--io-depth", "4"}, "--io-depth is not for --matrix"},
        {{"--bogus"}, "--help"},
    };
    const char *f = tu_path("f");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *av[10] = {(char *)iobench};
        int n = 1;
        for (int j = 0; j < 6 && bad[i].a[j]; j++)
            av[n++] = (char *)bad[i].a[j];
        av[n++] = (char *)f;
        av[n] = NULL;
        TuRun *r = tu_run(av, 0);
        ck_assert_msg(r->status == 2, "case %zu: %d %s", i, r->status, r->err);
        ck_assert_msg(strstr(r->err, bad[i].says) != NULL, "case %zu: %s", i, r->err);
        ck_assert_int_eq(tu_file_size(f), -1); /* nothing was made */
    }
    TuRun *r = tu_runl(0, iobench, NULL);
    ck_assert_int_eq(r->status, 2);
    ck_assert_ptr_nonnull(strstr(r->err, "no FILE given"));
    tu_assert_help_and_version(iobench, "iobench", "iobench [options] FILE");
}
END_TEST

START_TEST(interrupted_creation_leaves_nothing)
{
    /* a 16 GiB file takes seconds to write: interrupt it once it has begun */
    const char *f = tu_path("f");
    char *argv[] = {(char *)iobench, "--file-size", "16G", "--repeat", "1",
                    (char *)f,       NULL};
    ck_assert_int_eq(tu_interrupt_writer(argv, f, SIGINT), 128 + SIGINT);
    ck_assert_str_eq(tu_list_dir(tu_dir), "");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli_iobench");
    TCase *tc = tcase_create("iobench");
    tcase_add_checked_fixture(tc, setup, tu_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, each_test_each_method, 0, 4);
    tcase_add_test(tc, blocks_at_the_edges);
    tcase_add_test(tc, both_methods_leave_identical_files);
    tcase_add_test(tc, sync_end);
    tcase_add_test(tc, file_creation);
    tcase_add_test(tc, json_and_csv);
    tcase_add_test(tc, file_names_are_escaped);
    tcase_add_test(tc, rnd_page_through_the_buffer_manager);
    tcase_add_test(tc, matrix);
    tcase_add_test(tc, usage_errors);
    tcase_add_test(tc, interrupted_creation_leaves_nothing);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
