/*
 * check_cli_seqscan.c -- the seqscan command line: its report, its JSON, its
 *                        errors and exit statuses, and its memory.  Option
 *                        values out of range are the buffer manager's to
 *                        refuse: the messages below are its own.
 */
#include <check.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapgen.h"
#include "testutil.h"

static const char *mkheap, *seqscan;

static void setup(void)
{
    tu_setup();
    mkheap = tu_tool("MKHEAP");
    seqscan = tu_tool("SEQSCAN");
}

static const char *table(const char *name, const char *rows)
{
    const char *p = tu_path(name);
    TuRun *r = tu_runl(0, mkheap, "-q", "--rows", rows, p, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    return p;
}

/* The number after "key": in a JSON text (a flat search is enough here). */
static long long json_int(const char *json, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\": ", key);
    const char *p = strstr(json, pat);
    ck_assert_msg(p != NULL, "no %s in %s", key, json);
    return strtoll(p + strlen(pat), NULL, 10);
}

static double json_num(const char *json, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\": ", key);
    const char *p = strstr(json, pat);
    ck_assert_msg(p != NULL, "no %s in %s", key, json);
    return strtod(p + strlen(pat), NULL);
}

START_TEST(json_has_every_figure)
{
    const char *t = table("t", "20000");
    TuRun *r = tu_runl(0, seqscan, "--json", "--where", "k >= 500000", t, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    HeapGenSpec spec = {.hg_seed = 1, .hg_pad_len = 59, .hg_fillfactor = 100};
    char pad[HEAP_PAD_MAX];
    long long rows = 0, sum = 0;
    for (int id = 1; id <= 20000; id++) {
        HeapRow row;
        heapgen_row(&spec, id, &row, pad);
        if (row.k >= 500000)
            rows++, sum += row.v;
    }
    ck_assert_int_eq(json_int(r->out, "pages"), 267);
    ck_assert_int_eq(json_int(r->out, "rows_scanned"), 20000);
    ck_assert_int_eq(json_int(r->out, "rows_returned"), rows);
    ck_assert_int_eq(json_int(r->out, "sum_v"), sum);
    ck_assert_int_eq(json_int(r->out, "checksum_failures"), 0);
    ck_assert_ptr_nonnull(strstr(r->out, "\"table\": \""));
    ck_assert_ptr_nonnull(strstr(r->out, "\"access\": \"read\""));
    double wall = json_num(r->out, "wall_s");
    ck_assert(wall > 0);
    ck_assert(json_num(r->out, "user_s") >= 0 && json_num(r->out, "sys_s") >= 0);
    ck_assert(json_int(r->out, "minflt") >= 0 && json_int(r->out, "majflt") >= 0);
    /* MB/s and rows/s are the size and rows over the wall time */
    double mbs = json_num(r->out, "mb_per_s");
    ck_assert_msg(mbs > 0.99 * 267 * 8192 / 1e6 / wall - 0.1 &&
                      mbs < 1.01 * 267 * 8192 / 1e6 / wall + 0.1,
                  "mb_per_s %f for wall %f", mbs, wall);
    double rps = json_num(r->out, "rows_per_s");
    ck_assert(rps > 0.99 * 20000 / wall - 1 && rps < 1.01 * 20000 / wall + 1);
    double res = json_num(r->out, "resident_before");
    ck_assert(res >= 0.99 && res <= 1.0); /* --cache warm is the default */
    ck_assert_int_eq(json_int(r->out, "reads"), 267);
    ck_assert_int_eq(json_int(r->out, "pages_verified"), 267);
    ck_assert_ptr_null(strstr(r->out, "\"runs\""));
    /* auto: reads in line, verifying or not; a worker only when asked for */
    ck_assert_int_eq(json_int(r->out, "io_workers"), 0);
    ck_assert_int_eq(json_int(r->out, "latency_waits"), 0);
    r = tu_runl(0, seqscan, "--json", "--no-verify", t, NULL);
    ck_assert_int_eq(json_int(r->out, "io_workers"), 0);
    r = tu_runl(0, seqscan, "--json", "--no-verify", "--io-workers", "1", t, NULL);
    ck_assert_int_eq(json_int(r->out, "io_workers"), 1);
    ck_assert_ptr_nonnull(strchr(r->out, '}'));
}
END_TEST

#if HEAPSCAN_HAVE_URING
/* --io-method, --io-depth, --direct and --io-latency: the same answer and
 * counters under every method; the JSON and the text say how it read. */
START_TEST(io_methods_give_one_answer)
{
    const char *t = table("t", "20000");
    static const char *const m[][6] = {
        {"--io-method", "sync"},
        {"--io-method", "worker"},
        {"--io-method", "io_uring"},
        {"--io-method", "io_uring", "--io-depth", "1", "--io-latency", "50"},
        {"--io-workers", "1", "--io-method", "worker", "--io-latency", "50"},
    };
    static const char *const names[] = {"sync", "worker", "io_uring", "io_uring",
                                        "worker"};
    for (int i = 0; i < 5; i++) {
        TuRun *r =
            tu_runl(0, seqscan, "--json", "--where", "k >= 500000", m[i][0], m[i][1],
                    m[i][2] ? m[i][2] : "--repeat", m[i][3] ? m[i][3] : "1",
                    m[i][4] ? m[i][4] : "--repeat", m[i][5] ? m[i][5] : "1", t, NULL);
        ck_assert_msg(r->status == 0, "%s", r->err);
        char want[64];
        snprintf(want, sizeof(want), "\"io_method\": \"%s\"", names[i]);
        ck_assert_msg(strstr(r->out, want) != NULL, "no %s in %s", want, r->out);
        ck_assert_int_eq(json_int(r->out, "rows_returned"), 10074);
        ck_assert_int_eq(json_int(r->out, "reads"), 267);
        ck_assert_int_eq(json_int(r->out, "read_calls"), 17);
        ck_assert_int_eq(json_int(r->out, "io_depth"), i == 0             ? 0
                                                       : i == 1 || i == 4 ? 2
                                                       : i == 2           ? 16
                                                                          : 1);
        ck_assert_int_eq(json_int(r->out, "io_latency_us"), i >= 3 ? 50 : 0);
    }
    TuRun *r =
        tu_runl(0, seqscan, "--io-method", "io_uring", "--io-latency", "10", t, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_msg(strstr(r->out, "io-combine 128 KiB, io_uring depth 16, io-latency 10 "
                                 "us (simulated))") != NULL,
                  "%s", r->out);
    r = tu_runl(0, seqscan, "--io-method", "io_uring", "--strategy", "ring", t, NULL);
    ck_assert_msg(strstr(r->out, "io_uring depth 16, ring 2304 KiB)") != NULL, "%s",
                  r->out);
}
END_TEST
#endif

/* A table whose name holds a quote and a backslash is named in valid JSON. */
START_TEST(json_escapes_the_table_name)
{
    const char *t = table("t \"quoted\" \\name", "100");
    TuRun *r = tu_runl(0, seqscan, "--json", t, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_ptr_nonnull(strstr(r->out, "t \\\"quoted\\\" \\\\name\", \"access\": "));
}
END_TEST

START_TEST(repeat_reports_every_run)
{
    const char *t = table("t", "3000");
    TuRun *r = tu_runl(0, seqscan, "--json", "--repeat", "3", "--access", "mmap",
                       "--cache", "cold", t, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    const char *runs = strstr(r->out, "\"runs\": [");
    ck_assert_ptr_nonnull(runs);
    int n = 0;
    for (const char *p = runs; (p = strstr(p, "\"wall_s\"")) != NULL; p++)
        n++;
    ck_assert_int_eq(n, 3);
    ck_assert_ptr_nonnull(strstr(r->out, "\"access\": \"mmap\""));

    r = tu_runl(0, seqscan, "--repeat", "2", t, NULL);
    ck_assert_int_eq(r->status, 0);
    ck_assert_ptr_nonnull(strstr(r->out, "run 1 "));
    ck_assert_ptr_nonnull(strstr(r->out, "run 2 "));
    ck_assert_ptr_nonnull(strstr(r->out, "wall (median)"));
}
END_TEST

START_TEST(text_report)
{
    const char *t = table("t", "3000");
    TuRun *r = tu_runl(0, seqscan, t, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    const char *lines[] = {
        "rows scanned       3000\n",
        "rows returned      0\n",
        "sum of v           NULL\n",
        "checksum failures  0\n",
        "query              WHERE k = -1; verify on (heapscan checksum)\n",
        "cache              warm (resident before: 100.0%)\n",
        "wall ",
        "user ",
        "sys ",
        "faults ",
        "MB/s ",
        "rows/s ",
        "buffers            hits 0, reads 40, "};
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
        ck_assert_msg(strstr(r->out, lines[i]) != NULL, "no '%s' in\n%s", lines[i],
                      r->out);
}
END_TEST

START_TEST(corrupt_page_exits_3_naming_the_block)
{
    const char *t = table("t", "3000");
    int fd = open(t, O_RDWR);
    unsigned char c;
    ck_assert_int_eq(pread(fd, &c, 1, 17 * BLCKSZ + 6000), 1);
    c ^= 1;
    ck_assert_int_eq(pwrite(fd, &c, 1, 17 * BLCKSZ + 6000), 1);
    close(fd);
    const char *access[] = {"read", "mmap"};
    for (int i = 0; i < 2; i++) {
        TuRun *r = tu_runl(0, seqscan, "--access", access[i], t, NULL);
        ck_assert_int_eq(r->status, 3);
        char want[700];
        snprintf(want, sizeof(want),
                 "seqscan: %s: block 17: checksum mismatch (stored 0x", t);
        ck_assert_msg(strncmp(r->err, want, strlen(want)) == 0, "%s", r->err);
        ck_assert_ptr_nonnull(strstr(r->err, ", computed 0x"));
        ck_assert_str_eq(strchr(r->err, '\n'), "\n"); /* one line */

        r = tu_runl(0, seqscan, "--access", access[i], "--ignore-checksum-failure",
                    "--json", t, NULL);
        ck_assert_int_eq(r->status, 0);
        ck_assert_ptr_nonnull(strstr(r->err, "seqscan: warning: "));
        ck_assert_ptr_nonnull(strstr(r->err, "block 17: checksum mismatch"));
        ck_assert_ptr_nonnull(strstr(r->err, "page skipped"));
        ck_assert_int_eq(json_int(r->out, "checksum_failures"), 1);
        ck_assert_int_eq(json_int(r->out, "rows_scanned"), 3000 - 75);

        r = tu_runl(0, seqscan, "--access", access[i], "--no-verify", "--json", t,
                    NULL);
        ck_assert_int_eq(r->status, 0); /* the flip is in pad text: nothing notices */
        ck_assert_int_eq(json_int(r->out, "rows_scanned"), 3000);
        ck_assert_int_eq(json_int(r->out, "pages_verified"), 0);
    }
}
END_TEST

static const struct {
    const char *args[6];
    int status;
    const char *says;
} cases[] = {
    {{"MISSING"}, 1, "No such file or directory"},
    {{"EMPTY"}, 1, "empty file: not a heap table"},
    {{"ODD"}, 1, "is not a multiple of 8192 bytes"},
    {{"TEXT"}, 1, "block 0: not a heap table"},
    {{"--access", "disk", "T"}, 2, "--access: 'disk' is not one of read, mmap"},
    {{"--where", "pad = 1", "T"}, 2, "--where: 'pad' is not a column"},
    {{"--where", "k == 1", "T"}, 2, "--where"},
    {{"--buffers", "1000", "T"}, 2, "the pool must be a whole number of pages"},
    {{"--buffers", "abc", "T"}, 2, "--buffers: 'abc' is not a size"},
    {{"--buffers", "64k", "T"},
     2,
     "the pool must be a whole number of pages, at least 16"},
    {{"--io-combine", "2M", "T"},
     2,
     "io-combine must be a whole number of pages up to 1 MiB"},
    {{"--io-combine", "1000", "T"},
     2,
     "io-combine must be a whole number of pages up to 1 MiB"},
    {{"--io-combine", "12x", "T"}, 2, "--io-combine: '12x' is not a size"},
    {{"--ring", "4k", "T"}, 2, "the ring must be a whole number of pages"},
    {{"--mmap-chunk", "12345", "T"},
     2,
     "the mmap chunk must be a whole number of pages"},
    {{"--mmap-chunk", "0", "T"},
     2,
     "--mmap-chunk: '0' is not a window size (or whole)"},
    {{"--madvise", "never", "T"}, 2, "--madvise"},
    {{"--cache", "hot", "T"}, 2, "--cache"},
    {{"--repeat", "0", "T"}, 2, "--repeat"},
    {{"--strategy", "lru", "T"}, 2, "--strategy"},
    {{"--io-workers", "2", "T"}, 2, "io-workers must be 0, 1 or auto"},
    {{"--io-workers", "one", "T"}, 2, "--io-workers: 'one' is not a number or auto"},
    {{"--segment-size", "2G", "T"}, 2, "--segment-size: at most 1GiB"},
    {{"--checksum", "crc", "T"},
     2,
     "--checksum: 'crc' is not one of heapscan, postgres, none"},
    {{"--pgdata", "T"}, 2, "no RELFILE given"},
    {{"--workers", "0", "T"}, 2, "--workers: '0' is not a count in 1..64 or auto"},
    {{"--workers", "65", "T"}, 2, "--workers"},
    {{"--buffers", "9T", "--strategy", "normal", "T"}, 2, "at most 8 TiB"},
    {{"--io-method", "aio", "T"},
     2,
     "--io-method: 'aio' is not one of sync, worker, io_uring"},
    {{"--io-method", "sync", "--io-workers", "1", "T"},
     2,
     "io-workers contradicts io-method"},
    {{"--io-method", "worker", "--io-workers", "0", "T"},
     2,
     "io-workers contradicts io-method"},
    {{"--io-depth", "0", "T"}, 2, "io-depth must be 1 to 256"},
    {{"--io-workers", "1", "--workers", "2", "T"},
     2,
     "an I/O worker is for a serial scan"},
    {{"--io-method", "worker", "--workers", "2", "T"},
     2,
     "an I/O worker is for a serial scan"},
    {{"--io-depth", "257", "T"}, 2, "io-depth must be 1 to 256"},
    {{"--io-depth", "x", "T"}, 2, "--io-depth: 'x' is not a number"},
    {{"--io-latency", "1000001", "T"}, 2, "io-latency must be at most 1000000 us"},
    {{"--access", "mmap", "--direct", "T"}, 2, "need read access"},
    {{"--access", "mmap", "--io-method", "io_uring", "T"}, 2, "need read access"},
    {{NULL}, 2, "no TABLE given"},
    {{"T", "T"}, 2, "more than one TABLE"},
};

/* --workers: the same answer as one thread, under both access methods, the
 * per-worker pages adding up to the table, and a damaged page still exit 3
 * naming its block (or skipped with --ignore-checksum-failure). */
START_TEST(workers_give_one_threads_answer)
{
    const char *t = table("t", "20000"); /* 267 pages */
    const char *access[] = {"read", "mmap"};
    for (int a = 0; a < 2; a++) {
        TuRun *r = tu_runl(0, seqscan, "--json", "--access", access[a], "--where",
                           "k >= 500000", t, NULL);
        ck_assert_msg(r->status == 0, "%s", r->err);
        long long rows = json_int(r->out, "rows_returned"),
                  sum = json_int(r->out, "sum_v");
        ck_assert_int_eq(json_int(r->out, "workers"), 1);
        const char *counts[] = {"2", "3", "auto"};
        for (int k = 0; k < 3; k++) {
            r = tu_runl(0, seqscan, "--json", "--access", access[a], "--workers",
                        counts[k], "--where", "k >= 500000", t, NULL);
            ck_assert_msg(r->status == 0, "%s", r->err);
            ck_assert_int_eq(json_int(r->out, "rows_returned"), rows);
            ck_assert_int_eq(json_int(r->out, "sum_v"), sum);
            ck_assert_int_eq(json_int(r->out, "rows_scanned"), 20000);
            long long n = json_int(r->out, "workers"), pages = 0;
            ck_assert_int_ge(n, 1);
            const char *p = strstr(r->out, "\"worker\": [");
            for (int i = 0; i < n; i++) {
                ck_assert_ptr_nonnull(p = strstr(p, "\"pages\": "));
                pages += strtoll(p + 9, NULL, 10);
                p++;
            }
            ck_assert_int_eq(pages, 267);
        }
    }
    int fd = open(t, O_RDWR);
    unsigned char c = 0x42;
    ck_assert_int_eq(pwrite(fd, &c, 1, 200 * BLCKSZ + 6000), 1);
    close(fd);
    TuRun *r = tu_runl(0, seqscan, "--workers", "2", t, NULL);
    ck_assert_int_eq(r->status, 3);
    ck_assert_ptr_nonnull(strstr(r->err, "block 200: checksum mismatch"));
    r = tu_runl(0, seqscan, "--workers", "3", "--json", "--ignore-checksum-failure", t,
                NULL);
    ck_assert_int_eq(r->status, 0);
    ck_assert_int_eq(json_int(r->out, "rows_scanned"), 20000 - 75);
}
END_TEST

START_TEST(checksum_kinds_and_what_a_mismatch_says)
{
    const char *t = table("t", "2000");
    /* heapscan's checksum verifies; PostgreSQL's does not match it, and the
     * message says whose checksum the page holds */
    TuRun *r = tu_runl(0, seqscan, "--json", t, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_ptr_nonnull(strstr(r->out, "\"checksum\": \"heapscan\""));
    r = tu_runl(0, seqscan, "--checksum", "postgres", t, NULL);
    ck_assert_int_eq(r->status, 3);
    ck_assert_ptr_nonnull(strstr(r->err, "block 0: checksum mismatch"));
    ck_assert_ptr_nonnull(strstr(r->err, "heapscan's checksum of this page"));
    /* none checks headers and line pointers only, and counts every page */
    r = tu_runl(0, seqscan, "--json", "--checksum", "none", t, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_ptr_nonnull(strstr(r->out, "\"checksum\": \"none\""));
    ck_assert_int_eq(json_int(r->out, "pages_verified"), json_int(r->out, "pages"));
}
END_TEST

START_TEST(sum_is_null_when_no_row_matches)
{
    const char *t = table("t", "2000");
    TuRun *r = tu_runl(0, seqscan, "--json", t, NULL); /* k = -1: nothing */
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_ptr_nonnull(strstr(r->out, "\"rows_returned\": 0, \"sum_v\": null"));
    r = tu_runl(0, seqscan, t, NULL);
    ck_assert_ptr_nonnull(strstr(r->out, "sum of v           NULL\n"));
    r = tu_runl(0, seqscan, "--json", "--where", "id = 1", t, NULL);
    ck_assert_int_eq(json_int(r->out, "rows_returned"), 1);
    ck_assert_int_ge(json_int(r->out, "sum_v"), 0);
}
END_TEST

/*
 * A table of hand-made rows: page b holds rows[b][0..n[b]-1], frozen, each
 * page checksummed.  mutate (may be NULL) may change a tuple after it was
 * formed (block, item, the tuple) before the checksum is set.
 */
static const char *
hand_table(const char *name, int npages, const HeapRow *rows, int per_page,
           void (*mutate)(unsigned b, unsigned item, unsigned char *t))
{
    const char *path = tu_path(name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    for (int b = 0; b < npages; b++) {
        _Alignas(8) unsigned char page[BLCKSZ], tup[MAX_HEAP_TUPLE_SIZE];
        page_init(page);
        for (int i = 0; i < per_page; i++) {
            size_t len = heap_tuple_form(tup, &rows[b * per_page + i], (uint32_t)b,
                                         (unsigned)i + 1);
            if (mutate)
                mutate((unsigned)b, (unsigned)i + 1, tup);
            ck_assert_uint_eq(page_add_item(page, tup, len, 0), (unsigned)i + 1);
        }
        page_set_checksum(page, (uint32_t)b);
        ck_assert_uint_eq(fwrite(page, BLCKSZ, 1, f), 1);
    }
    fclose(f);
    return path;
}

START_TEST(sum_is_exact_past_int8)
{
    /* PostgreSQL's sum(int8) is numeric: 9e18 + 9e18 - 5 = 17999999999999999995 */
    const HeapRow rows[] = {{.id = 1, .k = 1, .v = 9000000000000000000},
                            {.id = 2, .k = 2, .v = 9000000000000000000},
                            {.id = 3, .k = 3, .v = -5},
                            {.id = 4, .k = 4, .nulls = HEAP_NULL_V},
                            {.id = 5, .nulls = HEAP_NULL_K, .v = 7}};
    const char *t = hand_table("big", 1, rows, 5, NULL);
    TuRun *r = tu_runl(0, seqscan, "--json", "--where", "k >= 0", t, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    /* a NULL v counts, is not summed; a NULL k never passes k >= 0 */
    ck_assert_ptr_nonnull(strstr(r->out, "\"rows_scanned\": 5, \"rows_returned\": 4, "
                                         "\"sum_v\": 17999999999999999995,"));
    r = tu_runl(0, seqscan, "--where", "id >= 3", t, NULL);
    ck_assert_ptr_nonnull(strstr(r->out, "sum of v           2\n"));
    r = tu_runl(0, seqscan, "--json", "--where", "id = 4", t, NULL);
    ck_assert_ptr_nonnull(strstr(r->out, "\"rows_returned\": 1, \"sum_v\": null,"));
}
END_TEST

/* Block 1, item 2 loses its hint bits; item 3 of block 2 has 5 attributes. */
static void unhint_or_widen(unsigned b, unsigned item, unsigned char *t)
{
    HeapTupleHeaderData h;
    memcpy(&h, t, sizeof(h));
    if (b == 1 && item == 2) {
        h.t_xmin = 4321;
        h.t_infomask &= (uint16_t)~HEAP_XMIN_FROZEN;
    } else if (b == 2 && item == 3) {
        h.t_infomask2 = 5;
    }
    memcpy(t, &h, sizeof(h));
}

START_TEST(undecided_tuples_and_other_schemas_are_refused)
{
    HeapRow rows[12];
    for (int i = 0; i < 12; i++)
        rows[i] = (HeapRow){.id = i + 1, .k = i, .v = i, .pad = "abc", .pad_len = 3};
    const char *t = hand_table("refuse", 3, rows, 4, unhint_or_widen);
    /* whatever the qual, under both access methods, verified or not */
    const char *const args[][4] = {{"--where", "k = -1", "--access", "read"},
                                   {"--where", "k >= 0", "--access", "mmap"},
                                   {"--where", "id = 1", "--no-verify", "--json"}};
    for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++) {
        TuRun *r = tu_runl(0, seqscan, args[i][0], args[i][1], args[i][2], args[i][3],
                           t, NULL);
        ck_assert_int_eq(r->status, 1);
        ck_assert_msg(strstr(r->err, "refuse: block 1: item 2: xmin 4321 has no hint "
                                     "bits") != NULL,
                      "%s", r->err);
        ck_assert_ptr_nonnull(strstr(r->err, "VACUUM FREEZE the table, or scan it "
                                             "with --pgdata"));
        ck_assert_str_eq(r->out, "");
    }
    /* --ignore-checksum-failure skips damage, not what it cannot decide */
    TuRun *r = tu_runl(0, seqscan, "--ignore-checksum-failure", t, NULL);
    ck_assert_int_eq(r->status, 1);
    /* with block 1 decided, block 2's 5-attribute tuple is refused */
    t = hand_table("wide", 3, rows, 4, NULL);
    int fd = open(t, O_RDWR);
    unsigned char page[BLCKSZ];
    ck_assert_int_eq(pread(fd, page, BLCKSZ, 2 * BLCKSZ), BLCKSZ);
    unhint_or_widen(2, 3, page + item_id_off(page_item_id(page, 3)));
    page_set_checksum(page, 2);
    ck_assert_int_eq(pwrite(fd, page, BLCKSZ, 2 * BLCKSZ), BLCKSZ);
    close(fd);
    r = tu_runl(0, seqscan, "--where", "k = -1", t, NULL);
    ck_assert_int_eq(r->status, 1);
    ck_assert_msg(strstr(r->err,
                         "wide: block 2: item 3: not a row of t (id int4, k "
                         "int4, v int8, pad text): tuple has 5 attributes") != NULL,
                  "%s", r->err);
}
END_TEST

START_TEST(errors_and_exit_statuses)
{
    table("T", "100");
    close(open(tu_path("EMPTY"), O_CREAT | O_WRONLY, 0644));
    int fd = open(tu_path("ODD"), O_CREAT | O_WRONLY, 0644);
    ck_assert_int_eq(ftruncate(fd, BLCKSZ + 10), 0);
    close(fd);
    fd = open(tu_path("TEXT"), O_CREAT | O_WRONLY, 0644);
    for (int i = 0; i < BLCKSZ / 8; i++)
        ck_assert_int_eq(write(fd, "abcdefg\n", 8), 8);
    close(fd);

    char *argv[8];
    int n = 0;
    argv[n++] = (char *)seqscan;
    for (int i = 0; cases[_i].args[i]; i++) {
        const char *a = cases[_i].args[i];
        if (strcmp(a, "T") == 0 || strcmp(a, "MISSING") == 0 ||
            strcmp(a, "EMPTY") == 0 || strcmp(a, "ODD") == 0 || strcmp(a, "TEXT") == 0)
            a = tu_path(a);
        argv[n++] = (char *)a;
    }
    argv[n] = NULL;
    TuRun *r = tu_run(argv, 0);
    ck_assert_msg(r->status == cases[_i].status, "case %d: status %d: %s", _i,
                  r->status, r->err);
    ck_assert_msg(strstr(r->err, cases[_i].says) != NULL, "case %d: '%s' lacks '%s'",
                  _i, r->err, cases[_i].says);
    ck_assert_ptr_nonnull(strstr(r->err, "seqscan: "));
}
END_TEST

START_TEST(help_and_version)
{
    tu_assert_help_and_version(seqscan, "seqscan", "seqscan [options] TABLE");
    TuRun *r = tu_runl(0, seqscan, "--help", NULL);
    ck_assert_ptr_nonnull(strstr(r->out, "--compare [TABLE]"));
}
END_TEST

START_TEST(read_memory_stays_under_the_pool)
{
    /* a 64 MiB table, a 16 MiB pool used whole: RSS < pool + 16 MiB */
    const char *t = tu_path("big");
    ck_assert_int_eq(tu_runl(0, mkheap, "-q", "--size", "64M", t, NULL)->status, 0);
    TuRun *r = tu_runl(0, seqscan, "--buffers", "16M", "--strategy", "normal", t, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ASSERT_RSS_BELOW(r, 32 * 1024);
    ck_assert_ptr_nonnull(strstr(r->out, "evictions "));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli_seqscan");
    TCase *tc = tcase_create("tool");
    tcase_add_checked_fixture(tc, setup, tu_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, json_has_every_figure);
    tcase_add_test(tc, json_escapes_the_table_name);
    tcase_add_test(tc, repeat_reports_every_run);
    tcase_add_test(tc, checksum_kinds_and_what_a_mismatch_says);
    tcase_add_test(tc, workers_give_one_threads_answer);
    tcase_add_test(tc, sum_is_null_when_no_row_matches);
    tcase_add_test(tc, sum_is_exact_past_int8);
    tcase_add_test(tc, undecided_tuples_and_other_schemas_are_refused);
    tcase_add_test(tc, text_report);
#if HEAPSCAN_HAVE_URING
    tcase_add_test(tc, io_methods_give_one_answer);
#endif
    tcase_add_test(tc, corrupt_page_exits_3_naming_the_block);
    tcase_add_loop_test(tc, errors_and_exit_statuses, 0,
                        sizeof(cases) / sizeof(cases[0]));
    tcase_add_test(tc, read_memory_stays_under_the_pool);
    tcase_add_test(tc, help_and_version);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
