/*
 * check_pgpeer.c -- PostgreSQL 15 as a benchmark peer: it answers from the
 *                   very table it was given, its queries are timed, and it
 *                   leaves no server and no directory behind, also when
 *                   starting it fails.
 *
 * Without PostgreSQL 15 the binary says so and exits 77 (Meson shows
 * SKIP), unless HEAPSCAN_REQUIRE_PG=1 makes that a failure.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "heapgen.h"
#include "pgpeer.h"
#include "testutil.h"

static const char *mkheap;
static char bindir[PATH_MAX];
static PgPeer *peer; /* the running peer, stopped even when a test fails */

static void stop_peer(void)
{
    pgpeer_stop(peer);
    peer = NULL;
}

static void setup(void)
{
    tu_setup();
    mkheap = tu_tool("MKHEAP");
    atexit(stop_peer); /* a failed assertion exits the test's process */
}

static void teardown(void)
{
    stop_peer();
    tu_teardown();
}

static const char *describe(const HsError *err)
{
    static char buf[PATH_MAX + 512];
    return hs_error_format(err, buf, sizeof(buf));
}

/* ---- processes ---------------------------------------------------------- */

/* A process that exists and is not a zombie (which only its parent can reap). */
static bool running(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    const char *state = strrchr(buf, ')'); /* "pid (comm) S ppid ..." */
    return state != NULL && state[1] == ' ' && state[2] != 'Z';
}

/* Wait up to 5 s for pid to be gone; true if it went. */
static bool goes_away(pid_t pid)
{
    for (int i = 0; i < 500 && running(pid); i++)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    return !running(pid);
}

/* The postmaster's pid from the peer's data/postmaster.pid. */
static pid_t postmaster_of(const char *dir)
{
    char path[PATH_MAX];
    long pid = 0;
    ck_assert_int_lt(snprintf(path, sizeof(path), "%s/data/postmaster.pid", dir),
                     (int)sizeof(path));
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    ck_assert_int_eq(fscanf(f, "%ld", &pid), 1);
    fclose(f);
    return (pid_t)pid;
}

/* Live processes whose parent is ppid (at most max of them, in pids). */
static int children_of(pid_t ppid, pid_t *pids, int max)
{
    DIR *d = opendir("/proc");
    int n = 0;
    ck_assert(d != NULL);
    for (struct dirent *e; (e = readdir(d)) != NULL && n < max;) {
        char path[300], buf[512];
        long pid = atol(e->d_name), parent = 0;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        FILE *f = pid > 0 ? fopen(path, "r") : NULL;
        char *close_paren = f && fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
        if (close_paren != NULL && sscanf(close_paren, ") %*c %ld", &parent) == 1 &&
            parent == (long)ppid)
            pids[n++] = (pid_t)pid;
        if (f != NULL)
            fclose(f);
    }
    closedir(d);
    return n;
}

/* The pid of a live process whose command line contains s, or 0. */
static pid_t process_mentioning(const char *s)
{
    DIR *d = opendir("/proc");
    pid_t found = 0;
    ck_assert(d != NULL);
    for (struct dirent *e; (e = readdir(d)) != NULL && found == 0;) {
        char path[300], buf[8192];
        long pid = atol(e->d_name);
        snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
        int fd = pid > 0 ? open(path, O_RDONLY) : -1;
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        if (fd >= 0)
            close(fd);
        for (ssize_t i = 0; i < n; i++)
            buf[i] = buf[i] == '\0' ? ' ' : buf[i];
        if (n > 0 && (buf[n] = '\0', strstr(buf, s) != NULL) && running((pid_t)pid))
            found = (pid_t)pid;
    }
    closedir(d);
    return found;
}

/* ---- a peer answers from our table -------------------------------------- */

static const struct {
    const char *pad; /* mkheap --pad */
    uint32_t pad_len;
} shapes[] = {{"59", 59}, {"200", 200}};

/* The query timed serially and with two workers; every figure sane. */
static void time_queries(PgPeer *p, const char *label)
{
    HsError err;
    double wall[2];
    int launched[2];
    for (int i = 0; i < 2; i++) {
        uint64_t rows = 99;
        int rc = pgpeer_time_query(p, 2 * i, &wall[i], &rows, &launched[i], &err);
        ck_assert_msg(rc == 0, "pgpeer_time_query(%d): %s", 2 * i, describe(&err));
        ck_assert_double_gt(wall[i], 0);
        ck_assert_uint_eq(rows, 0);
        ck_assert_int_ge(launched[i], 0);
        ck_assert_int_le(launched[i], 2 * i);
        ck_assert_int_eq(pgpeer_time_query(p, 2 * i, &wall[i], &rows, NULL, &err), 0);
    }
    printf("check_pgpeer: %s: serial %.3f ms, 2 workers %.3f ms (%d launched)\n", label,
           wall[0] * 1e3, wall[1] * 1e3, launched[1]);
}

START_TEST(peer_answers_from_our_table)
{
    const char *t = tu_path("t.heap");
    TuRun *r = tu_runl(0, mkheap, "-q", "--rows", "20000", "--pad", shapes[_i].pad,
                       "--seed", "3", t, NULL);
    ck_assert_msg(r->status == 0, "mkheap: %s", r->err);
    HsError err;
    int rc = pgpeer_start(&peer, bindir, t, &err);
    ck_assert_msg(rc == 0, "pgpeer_start: %s", describe(&err));
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", pgpeer_dir(peer));
    struct stat st;
    ck_assert(stat(dir, &st) == 0 && S_ISDIR(st.st_mode));
    pid_t pm = postmaster_of(dir), kids[64];
    int nkids = children_of(pm, kids, 64);
    ck_assert(running(pm));
    ck_assert_int_gt(nkids, 0);

    uint64_t count;
    int64_t sum;
    HeapGenStats want;
    HeapGenSpec spec = {
        .hg_seed = 3, .hg_pad_len = shapes[_i].pad_len, .hg_fillfactor = 100};
    heapgen_stats(&spec, 20000, &want);
    rc = pgpeer_count_sum(peer, &count, &sum, &err);
    ck_assert_msg(rc == 0, "pgpeer_count_sum: %s", describe(&err));
    ck_assert_uint_eq(count, want.hs_rows);
    ck_assert_int_eq(sum, want.hs_sum_v);

    ck_assert_msg(pgpeer_evict(peer, &err) == 0, "evict: %s", describe(&err));
    time_queries(peer, shapes[_i].pad_len == 59 ? "pad 59, cold" : "pad 200, cold");
    ck_assert_msg(pgpeer_warm(peer, &err) == 0, "warm: %s", describe(&err));
    time_queries(peer, shapes[_i].pad_len == 59 ? "pad 59, warm" : "pad 200, warm");

    stop_peer();
    ck_assert_int_eq(stat(dir, &st), -1);
    ck_assert_int_eq(errno, ENOENT);
    ck_assert_msg(goes_away(pm), "postmaster %ld still runs", (long)pm);
    for (int i = 0; i < nkids; i++)
        ck_assert_msg(goes_away(kids[i]), "server process %ld still runs",
                      (long)kids[i]);
    ck_assert_int_eq(process_mentioning(dir), 0);
}
END_TEST

/* ---- failing to start leaves nothing ------------------------------------ */

/* Make the peer's directory go into tu_dir, where the server user can reach it. */
static void cluster_in_tu_dir(void)
{
    ck_assert_int_eq(chmod(tu_dir, 0711), 0);
    ck_assert_int_eq(setenv("TMPDIR", tu_dir, 1), 0);
}

START_TEST(missing_table_leaves_nothing)
{
    cluster_in_tu_dir();
    HsError err;
    int rc = pgpeer_start(&peer, bindir, tu_path("missing.heap"), &err);
    ck_assert_int_eq(rc, -ENOENT);
    ck_assert_ptr_null(peer);
    ck_assert_int_eq(err.code, -ENOENT);
    ck_assert_ptr_nonnull(strstr(err.file, "missing.heap"));
    ck_assert_str_eq(tu_list_dir(tu_dir), "");
    ck_assert_int_eq(process_mentioning(tu_dir), 0);
}
END_TEST

/*
 * psql fails with the server up (after initdb and pg_ctl start): the error
 * quotes psql's last line, and the server is stopped and the directory gone.
 */
START_TEST(failure_with_the_server_up_leaves_nothing)
{
    cluster_in_tu_dir();
    const char *bin = tu_path("bin"), *t = tu_path("t.heap");
    ck_assert_int_eq(mkdir(bin, 0755), 0);
    static const char *const real[] = {"initdb", "pg_ctl", "postgres"};
    char from[PATH_MAX], to[PATH_MAX];
    for (int i = 0; i < 3; i++) {
        ck_assert_int_lt(snprintf(from, sizeof(from), "%s/%s", bindir, real[i]),
                         (int)sizeof(from));
        ck_assert_int_lt(snprintf(to, sizeof(to), "%s/%s", bin, real[i]),
                         (int)sizeof(to));
        ck_assert_int_eq(symlink(from, to), 0);
    }
    snprintf(to, sizeof(to), "%s/psql", bin);
    FILE *f = fopen(to, "w");
    ck_assert_ptr_nonnull(f);
    fputs("#!/bin/sh\necho 'psql: error: simulated failure' >&2\nexit 2\n", f);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(chmod(to, 0755), 0);
    TuRun *r = tu_runl(0, mkheap, "-q", "--rows", "100", t, NULL);
    ck_assert_msg(r->status == 0, "mkheap: %s", r->err);

    HsError err;
    int rc = pgpeer_start(&peer, bin, t, &err);
    ck_assert_int_lt(rc, 0);
    ck_assert_ptr_null(peer);
    ck_assert_msg(strstr(err.msg, "failed: psql: error: simulated failure") != NULL,
                  "%s", describe(&err));
    ck_assert_str_eq(tu_list_dir(tu_dir), "bin\nt.heap\n");
    ck_assert_int_eq(process_mentioning(tu_dir), 0);
}
END_TEST

int main(void)
{
    tu_require(pgpeer_find(bindir, sizeof(bindir)) == 0, TU_NEED_PG,
               "no PostgreSQL 15 server binaries (set PG_BINDIR, or apt-get install "
               "postgresql-15)");
    Suite *s = suite_create("pgpeer");
    TCase *tc = tcase_create("peer");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, peer_answers_from_our_table, 0,
                        sizeof(shapes) / sizeof(shapes[0]));
    tcase_add_test(tc, missing_table_leaves_nothing);
    tcase_add_test(tc, failure_with_the_server_up_leaves_nothing);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
