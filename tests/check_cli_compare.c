/*
 * check_cli_compare.c -- the compare command line (also run as "seqscan
 *                        --compare"): every row with sane figures in text,
 *                        CSV and JSON; the chart; usage errors; PostgreSQL's
 *                        rows, and its cluster gone afterwards, also after
 *                        an interrupt.
 *
 * Arguments: "slow" makes the default 177 MiB table; "pg" runs only the
 * cases with PostgreSQL 15, and exits 77 (SKIP) where it is not installed,
 * or fails if HEAPSCAN_REQUIRE_PG=1.
 */
#include <check.h>
#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pgpeer.h"
#include "testutil.h"

static const char *mkheap, *seqscan, *compare;

static const char *const readers[] = {
    "wc (C)",
    "wc -l (C)",
    "read 512 (C)",
    "read 8k (C)",
    "read 256k (C)",
    "read 1M (C)",
    "mmap 8k chunks (C)",
    "mmap 8M chunks (C)",
    "mmap 32M chunks (C)",
    "O_DIRECT 1M (C)",
    "wc",
    "wc -l",
    "dd bs=512",
    "dd bs=8k",
    "dd bs=256k",
    "dd bs=1M",
    "seqscan read",
    "seqscan read --no-verify",
    "seqscan mmap 8k",
    "seqscan mmap 8k --no-verify",
    "seqscan mmap 8M",
    "seqscan mmap 8M --no-verify",
    "seqscan mmap 32M",
    "seqscan mmap 32M --no-verify",
    "seqscan read 2 workers",
    "seqscan read 2 workers --no-verify",
    "seqscan mmap 8M 2 workers",
    "seqscan mmap 8M 2 workers --no-verify",
    "seqscan io_uring",
    "seqscan sync --no-verify",
    "seqscan io_uring --no-verify",
    "seqscan sync --direct --no-verify",
    "seqscan io_uring --direct --no-verify",
};
#define NREADERS (int)(sizeof(readers) / sizeof(readers[0]))

/* fio's rows, there when fio is installed (scripts/install-deps has it). */
static const char *const fio_readers[] = {
    "fio psync 128k",
    "fio io_uring 128k qd16",
    "fio psync 128k --direct",
    "fio io_uring 128k qd16 --direct",
};
#define NFIO (int)(sizeof(fio_readers) / sizeof(fio_readers[0]))

static bool have_fio(void)
{
    return system("command -v fio >/dev/null 2>&1") == 0;
}

/* Whether seqscan can read t with io_uring here (its rows are left out if not). */
static bool have_uring(const char *t)
{
    return tu_runl(0, seqscan, "--io-method", "io_uring", t, NULL)->status == 0;
}

/* Whether reader is one of the rows this machine has. */
static bool row_here(const char *reader, bool uring)
{
    return uring || strstr(reader, "io_uring") == NULL;
}

static void setup(void)
{
    tu_setup();
    mkheap = tu_tool("MKHEAP");
    seqscan = tu_tool("SEQSCAN");
    compare = tu_tool_beside("SEQSCAN", "compare");
    /* the PostgreSQL cluster goes here, where we can see it; its server user
     * (nobody, when we are root) must be able to reach it */
    setenv("TMPDIR", tu_dir, 1);
    ck_assert_int_eq(chmod(tu_dir, 0755), 0);
}

static const char *table(void)
{
    const char *t = tu_path("t.heap");
    ck_assert_int_eq(tu_runl(0, mkheap, "-q", "--rows", "20000", t, NULL)->status, 0);
    return t;
}

/* Every CSV data line: cache,reader,kind,rounds,median,min,max,user,sys,mbs,ratio */
static void check_csv(const char *path, long long bytes, int want_lines, bool pg)
{
    size_t len;
    char *csv = (char *)tu_read_file(path, &len);
    ck_assert_ptr_nonnull(csv);
    csv[len] = '\0';
    ck_assert_msg(strncmp(csv, "cache,reader,kind,rounds,median_s,", 34) == 0, "%s",
                  csv);
    int lines = 0, seen_dd = 0;
    for (char *line = strchr(csv, '\n') + 1; *line; line = strchr(line, '\n') + 1) {
        char cache[8], reader[64], kind[16];
        double med, lo, hi, mbs, ratio;
        int rounds;
        ck_assert_msg(sscanf(line, "%7[^,],%63[^,],%15[^,],%d,%lf,%lf,%lf,", cache,
                             reader, kind, &rounds, &med, &lo, &hi) == 7,
                      "bad line: %.80s", line);
        const char *tail = line;
        for (int commas = 0; commas < 9; tail++)
            commas += *tail == ',';
        ck_assert_int_eq(sscanf(tail, "%lf,%lf", &mbs, &ratio), 2);
        ck_assert(strcmp(cache, "cold") == 0 || strcmp(cache, "warm") == 0);
        /* fio's runtime is in whole ms: a small table may take 0 */
        bool fio = strcmp(kind, "fio") == 0;
        ck_assert_msg((med > 0 || fio) && (lo > 0 || fio) && lo <= med && med <= hi,
                      "%s: %f %f %f", reader, lo, med, hi);
        double want_mbs = med > 0 ? (double)bytes / 1e6 / med : 0;
        ck_assert_msg(mbs > want_mbs * 0.99 - 0.1 && mbs < want_mbs * 1.01 + 0.1,
                      "%s: %f MB/s for %f s", reader, mbs, med);
        ck_assert(ratio > 0 || (fio && med == 0));
        if (strcmp(reader, "dd bs=1M") == 0) {
            ck_assert_msg(ratio > 0.9999 && ratio < 1.0001, "dd's ratio to itself %f",
                          ratio);
            seen_dd++;
        }
        if (strcmp(kind, "postgres") == 0)
            ck_assert(pg);
        lines++;
    }
    ck_assert_int_eq(lines, want_lines);
    ck_assert_int_eq(seen_dd, 2);
    free(csv);
}

START_TEST(every_row_in_text_csv_and_json)
{
    const char *t = table();
    const char *csv = tu_path("c.csv"), *json = tu_path("c.json"),
               *png = tu_path("c.png");
    bool uring = have_uring(t); /* before: a run's output is in a static buffer */
    TuRun *r = tu_runl(0, compare, "--rounds", "1", "--no-postgres", "--csv", csv,
                       "--json", json, "--plot", png, t, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    int nrows = 0;
    for (int i = 0; i < NREADERS; i++) {
        char line[80];
        if (!row_here(readers[i], uring))
            continue;
        nrows++;
        snprintf(line, sizeof(line), "\n%-30s ", readers[i]);
        const char *first = strstr(r->out, line);
        ck_assert_msg(first != NULL, "no row '%s' in\n%s", readers[i], r->out);
        ck_assert_msg(strstr(first + 1, line) != NULL, "'%s' once only", readers[i]);
    }
    int nfio = 0;
    for (int i = 0; i < (have_fio() ? NFIO : 0); i++) {
        char line[80];
        if (!row_here(fio_readers[i], uring))
            continue;
        nfio++;
        snprintf(line, sizeof(line), "\n%-30s ", fio_readers[i]);
        ck_assert_msg(strstr(r->out, line) != NULL, "no row '%s' in\n%s",
                      fio_readers[i], r->out);
    }
    ck_assert_ptr_null(strstr(r->out, "PostgreSQL 15 serial"));
    ck_assert_ptr_nonnull(strstr(r->err, "cold round 1 of 1"));
    ck_assert_ptr_nonnull(strstr(r->err, "warm round 1 of 1"));
    /* the 1998 claim answered from the cold figures, in one sentence */
    ck_assert_ptr_nonnull(strstr(r->out, uring ? "\n1998's \"async I/O won't help a "
                                                 "sequential scan\", here, cold: "
                                               : "\" is not answered here: io_uring"));
    check_csv(csv, tu_file_size(t), 2 * (nrows + nfio), false);

    size_t len;
    char *j = (char *)tu_read_file(json, &len);
    j[len] = '\0';
    ck_assert_ptr_nonnull(strstr(j, "\"postgres\": null"));
    int n = 0;
    for (char *p = j; (p = strstr(p, "\"reader\": ")) != NULL; p++)
        n++;
    ck_assert_int_eq(n, 2 * (nrows + nfio));
    ck_assert_ptr_nonnull(strstr(j, "\"claim_1998\": \"1998's \\\"async"));
    ck_assert_ptr_nonnull(strstr(j, "\"runs_s\": ["));
    ck_assert_ptr_nonnull(strstr(j, "\"ratio_dd_1m\": 1.0000"));
    free(j);

    unsigned char *img = tu_read_file(png, &len);
    ck_assert_ptr_nonnull(img);
    ck_assert(len > 1000 && memcmp(img, "\x89PNG", 4) == 0);
    free(img);
}
END_TEST

START_TEST(no_gnuplot_is_a_clear_error)
{
    const char *t = table();
    /* a PATH with wc and dd but no gnuplot */
    const char *bin = tu_path("bin");
    ck_assert_int_eq(mkdir(bin, 0755), 0);
    const char *tools[] = {"wc", "dd"};
    for (int i = 0; i < 2; i++) {
        char src[64], dst[600];
        snprintf(src, sizeof(src), "/usr/bin/%s", tools[i]);
        snprintf(dst, sizeof(dst), "%s/%s", bin, tools[i]);
        ck_assert_int_eq(symlink(src, dst), 0);
    }
    char *old = strdup(getenv("PATH"));
    setenv("PATH", bin, 1);
    TuRun *r = tu_runl(0, compare, "--rounds", "1", "--no-postgres", "--csv",
                       tu_path("c.csv"), "--plot", tu_path("c.svg"), t, NULL);
    setenv("PATH", old, 1);
    free(old);
    ck_assert_int_eq(r->status, 1);
    ck_assert_msg(strstr(r->err, "gnuplot is not installed") != NULL, "%s", r->err);
    ck_assert_ptr_nonnull(strstr(r->out, "dd bs=1M")); /* the table was still printed */
    ck_assert_int_gt(tu_file_size(tu_path("c.csv")), 100);
    ck_assert_int_eq(tu_file_size(tu_path("c.svg")), -1);
}
END_TEST

START_TEST(usage_errors)
{
    const char *t = table();
    const struct {
        const char *a, *b;
        const char *says;
    } bad[] = {
        {"--rounds", "0", "--rounds"},
        {"--plot", "x.jpg", "must end in .png or .svg"},
        {"--bogus", NULL, "Try 'compare --help'"},
        {t, t, "one TABLE at most"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        TuRun *r = tu_runl(0, compare, "--no-postgres", bad[i].a, bad[i].b, NULL);
        ck_assert_msg(r->status == 2, "case %zu: %d %s", i, r->status, r->err);
        ck_assert_msg(strstr(r->err, bad[i].says) != NULL, "case %zu: %s", i, r->err);
    }
}
END_TEST

/* "seqscan --compare ARGS" runs compare ARGS, wherever --compare stands. */
START_TEST(seqscan_compare_is_an_alias)
{
    const char *t = table();
    bool uring = have_uring(t);
    TuRun *r =
        tu_runl(0, seqscan, "--rounds", "1", "--compare", "--no-postgres", t, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_ptr_nonnull(strstr(r->out, "heapscan comparison: "));
    for (int i = 0; i < NREADERS; i++)
        ck_assert_msg(!row_here(readers[i], uring) ||
                          strstr(r->out, readers[i]) != NULL,
                      "no row '%s'", readers[i]);
    r = tu_runl(0, seqscan, "--compare", "--help", NULL);
    ck_assert_int_eq(r->status, 0);
    ck_assert_ptr_nonnull(strstr(r->out, "Usage: compare [options] [TABLE]"));
    r = tu_runl(0, seqscan, "--compare", "--rounds", "0", NULL);
    ck_assert_int_eq(r->status, 2);
    ck_assert_ptr_nonnull(strstr(r->err, "--rounds: '0' is not a count in 1..1000"));
}
END_TEST

/* A table path with a quote and a backslash still gives valid JSON. */
START_TEST(json_escapes_the_table_path)
{
    const char *t = table(), *odd = tu_path("t \"quoted\" \\name.heap");
    ck_assert_int_eq(rename(t, odd), 0);
    const char *json = tu_path("c.json");
    TuRun *r = tu_runl(0, compare, "--rounds", "1", "--no-postgres", "--json", json,
                       odd, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    size_t len;
    char *j = (char *)tu_read_file(json, &len);
    ck_assert_ptr_nonnull(j);
    j[len] = '\0';
    char want[700];
    snprintf(want, sizeof(want), "{\"table\": \"%s/t \\\"quoted\\\" \\\\name.heap\", ",
             tu_dir);
    ck_assert_msg(strncmp(j, want, strlen(want)) == 0, "%.200s", j);
    /* every string closes where it should: quotes outside strings pair up */
    int quotes = 0;
    for (const char *p = j; *p; p++)
        if (*p == '\\')
            p++;
        else
            quotes += *p == '"';
    ck_assert_int_eq(quotes % 2, 0);
    free(j);
}
END_TEST

START_TEST(help_and_version)
{
    tu_assert_help_and_version(compare, "compare", "compare [options] [TABLE]");
}
END_TEST

/* ---- slow: PostgreSQL, the default table --------------------------------- */

/* Cluster directories in tu_dir (the TMPDIR the cluster is made in). */
static int dirs_in_tmpdir(void)
{
    DIR *d = opendir(tu_dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_type == DT_DIR && strncmp(e->d_name, "pgpeer-", 7) == 0)
            n++;
    closedir(d);
    return n;
}

/* The median (ms) of the row named name in the section of out from "\nwarm:" on
 * (warm) or before it (cold). */
static double median_of(const char *out, const char *name, bool warm)
{
    char line[64];
    snprintf(line, sizeof(line), "\n%-38s ", name);
    const char *w = strstr(out, "\nwarm: "), *p = strstr(warm ? w : out, line);
    ck_assert_msg(p != NULL && (warm || p < w), "no row %s", name);
    return strtod(p + strlen(line), NULL);
}

/* PostgreSQL's ratios over seqscan's are the quotients of the medians. */
static void check_pg_ratios(const char *out)
{
    static const char *const pairs[2][2] = {
        {"PostgreSQL 15 serial", "seqscan read"},
        {"PostgreSQL 15 2 workers", "seqscan read 2 workers"},
    };
    const char *at = strstr(out, "PostgreSQL 15's time over seqscan's");
    ck_assert_ptr_nonnull(at);
    for (int i = 0; i < 2; i++) {
        char want[96];
        snprintf(want, sizeof(want), "  %-24s / %-23s cold ", pairs[i][0], pairs[i][1]);
        const char *l = strstr(at, want);
        ck_assert_msg(l != NULL, "no ratio line for %s", pairs[i][0]);
        double cold = strtod(l + strlen(want), NULL);
        double warm = strtod(strstr(l, "warm ") + 5, NULL);
        for (int k = 0; k < 2; k++) {
            double q = median_of(out, pairs[i][0], k) / median_of(out, pairs[i][1], k);
            double got = k ? warm : cold; /* 2 decimals, from medians of 1 decimal */
            ck_assert_msg(got > q * 0.97 - 0.01 && got < q * 1.03 + 0.01,
                          "%s %s: %.2f, medians say %.3f", pairs[i][0],
                          k ? "warm" : "cold", got, q);
        }
    }
}

START_TEST(postgres_rows_and_no_cluster_left)
{
    const char *t = table();
    const char *csv = tu_path("c.csv");
    bool uring = have_uring(t);
    TuRun *r = tu_runl(0, compare, "--rounds", "1", "--csv", csv, t, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_ptr_nonnull(
        strstr(r->out, "PostgreSQL 15 scans the same bytes: count(*) 20000"));
    ck_assert_ptr_nonnull(strstr(r->out, "\nPostgreSQL 15 serial "));
    ck_assert_ptr_nonnull(strstr(r->out, "\nPostgreSQL 15 2 workers "));
    check_pg_ratios(r->out);
    int n = 2; /* PostgreSQL's */
    for (int i = 0; i < NREADERS; i++)
        n += row_here(readers[i], uring);
    for (int i = 0; i < (have_fio() ? NFIO : 0); i++)
        n += row_here(fio_readers[i], uring);
    check_csv(csv, tu_file_size(t), 2 * n, true);
    ck_assert_int_eq(dirs_in_tmpdir(), 0);
}
END_TEST

START_TEST(interrupted_run_leaves_no_cluster)
{
    const char *t = table();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        freopen(tu_path("stderr"), "w", stderr);
        execl(compare, compare, "--rounds", "100", t, (char *)NULL);
        _exit(127);
    }
    /* wait until the cluster exists and the timed rounds have begun */
    struct timespec ms = {0, 10000000};
    for (int i = 0; i < 3000 && dirs_in_tmpdir() == 0; i++)
        nanosleep(&ms, NULL);
    int clusters = dirs_in_tmpdir();
    struct timespec half = {0, 500000000};
    nanosleep(&half, NULL);
    kill(pid, SIGINT); /* also on the way to a failure: leave nothing running */
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    if (clusters != 1) {
        size_t len;
        char *e = (char *)tu_read_file(tu_path("stderr"), &len);
        ck_abort_msg("%d clusters in %s; compare said: %.*s", clusters, tu_dir,
                     (int)len, e);
    }
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 128 + SIGINT);
    ck_assert_int_eq(dirs_in_tmpdir(), 0);
}
END_TEST

START_TEST(missing_default_table_is_made)
{
    const char *t = tu_path("new.heap");
    TuRun *r = tu_runl(0, compare, "--rounds", "1", "--no-postgres", t, NULL);
    ck_assert_msg(r->status == 0, "%s", r->err);
    ck_assert_ptr_nonnull(
        strstr(r->err, "does not exist; making it with mkheap's defaults"));
    ck_assert_int_eq(tu_file_size(t), 185597952);
    ck_assert_ptr_nonnull(strstr(r->out, "185597952 bytes (22656 pages)"));
}
END_TEST

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    Suite *s = suite_create(strcmp(mode, "slow") == 0 ? "compare-slow"
                            : strcmp(mode, "pg") == 0 ? "compare-pg"
                                                      : "cli_compare");
    TCase *tc = tcase_create(*mode ? mode : "compare");
    tcase_add_checked_fixture(tc, setup, tu_teardown);
    tcase_set_timeout(tc, 300);
    if (strcmp(mode, "pg") == 0) {
        char bindir[PATH_MAX];
        tu_require(pgpeer_find(bindir, sizeof(bindir)) == 0, TU_NEED_PG,
                   "no PostgreSQL 15 server binaries (set PG_BINDIR, or apt-get "
                   "install postgresql-15)");
        tcase_add_test(tc, postgres_rows_and_no_cluster_left);
        tcase_add_test(tc, interrupted_run_leaves_no_cluster);
    } else if (strcmp(mode, "slow") == 0) {
        tcase_add_test(tc, missing_default_table_is_made);
    } else {
        tcase_add_test(tc, every_row_in_text_csv_and_json);
        tcase_add_test(tc, no_gnuplot_is_a_clear_error);
        tcase_add_test(tc, usage_errors);
        tcase_add_test(tc, seqscan_compare_is_an_alias);
        tcase_add_test(tc, json_escapes_the_table_path);
        tcase_add_test(tc, help_and_version);
    }
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
