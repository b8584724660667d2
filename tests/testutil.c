/*
 * testutil.c -- shared test plumbing (see testutil.h).
 */
#include "testutil.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "readstream.h"
#include "relfile.h"

char tu_dir[256];

int tu_run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

void tu_setup(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tu_dir, sizeof(tu_dir), "%s/heapscan-test-XXXXXX", base ? base : "/tmp");
    ck_assert_msg(mkdtemp(tu_dir) != NULL, "mkdtemp: %s", strerror(errno));
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void tu_teardown(void)
{
    if (tu_dir[0])
        nftw(tu_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *tu_fixture(const char *name)
{
    static char path[PATH_MAX];
    const char *dir = getenv("HEAPSCAN_TEST_DATA");
    ck_assert_msg(dir != NULL && *dir,
                  "HEAPSCAN_TEST_DATA is not set (meson test sets it)");
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return path;
}

const char *tu_path(const char *name)
{
    static char slots[8][512];
    static int next;
    char *p = slots[next++ % 8];
    snprintf(p, sizeof(slots[0]), "%s/%s", tu_dir, name);
    return p;
}

const char *tu_tool(const char *env)
{
    const char *p = getenv(env);
    ck_assert_msg(p != NULL && *p, "environment variable %s is not set", env);
    return p;
}

const char *tu_tool_beside(const char *env, const char *name)
{
    static char path[PATH_MAX];
    const char *tool = tu_tool(env), *slash = strrchr(tool, '/');
    int dir = slash != NULL ? (int)(slash - tool) : 1;
    snprintf(path, sizeof(path), "%.*s/%s", dir, slash != NULL ? tool : ".", name);
    ck_assert_msg(access(path, X_OK) == 0, "no %s beside %s", name, tool);
    return path;
}

void tu_assert_help_and_version(const char *tool, const char *name, const char *usage)
{
    char want[256];
    TuRun *r = tu_runl(0, tool, "--help", NULL);
    ck_assert_msg(r->status == 0, "%s --help: status %d", name, r->status);
    snprintf(want, sizeof(want), "Usage: %s", usage);
    ck_assert_msg(strncmp(r->out, want, strlen(want)) == 0, "%s --help: %.80s", name,
                  r->out);
    r = tu_runl(0, tool, "--version", NULL);
    ck_assert_msg(r->status == 0, "%s --version: status %d", name, r->status);
    snprintf(want, sizeof(want), "%s (heapscan) ", name);
    ck_assert_msg(strncmp(r->out, want, strlen(want)) == 0, "%s --version: %.80s", name,
                  r->out);
}

void tu_require(bool have, TuNeed need, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    if (have)
        return;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    const char *req = getenv("HEAPSCAN_REQUIRE_PG");
    if (need == TU_NEED_PG && req != NULL && strcmp(req, "1") == 0) {
        printf("FAIL: %s (HEAPSCAN_REQUIRE_PG=1, so this is an error)\n", why);
        exit(EXIT_FAILURE);
    }
    printf("SKIP: %s\n", why);
    exit(TU_SKIP);
}

static void slurp(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    lseek(fd, 0, SEEK_SET);
    for (ssize_t got; n + 1 < cap && (got = read(fd, buf + n, cap - 1 - n)) > 0;)
        n += (size_t)got;
    buf[n] = '\0';
}

TuRun *tu_run(char *const argv[], long long fsize_limit)
{
    static TuRun r;
    FILE *out = tmpfile(), *err = tmpfile();
    ck_assert(out && err);
    memset(&r, 0, sizeof(r));

    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fileno(out), STDOUT_FILENO);
        dup2(fileno(err), STDERR_FILENO);
        if (fsize_limit > 0) {
            struct rlimit rl = {(rlim_t)fsize_limit, (rlim_t)fsize_limit};
            setrlimit(RLIMIT_FSIZE, &rl);
        }
        execv(argv[0], argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int st;
    ck_assert_int_eq(wait4(pid, &st, 0, &r.ru), pid);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    slurp(fileno(out), r.out, sizeof(r.out));
    slurp(fileno(err), r.err, sizeof(r.err));
    fclose(out);
    fclose(err);
    return &r;
}

TuRun *tu_runl(long long fsize_limit, const char *prog, ...)
{
    char *argv[64];
    int n = 0;
    va_list ap;
    argv[n++] = (char *)prog;
    va_start(ap, prog);
    for (char *a; (a = va_arg(ap, char *)) != NULL && n < 63;)
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    return tu_run(argv, fsize_limit);
}

int tu_interrupt_writer(char *const argv[], const char *path, int sig)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        execv(argv[0], argv);
        _exit(127);
    }
    char tmp[600];
    snprintf(tmp, sizeof(tmp), "%s.tmp-%ld", path, (long)pid);
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 10000 && tu_file_size(tmp) < (1 << 20); i++)
        nanosleep(&ms, NULL);
    bool started = tu_file_size(tmp) >= (1 << 20);
    kill(pid, sig); /* also when it never started: leave nothing running */
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(started, "%s never wrote 1 MiB of %s", argv[0], tmp);
    /* dying of the signal is not the same as exiting with 128 + it */
    return WIFEXITED(st) ? WEXITSTATUS(st) : 256 + WTERMSIG(st);
}

unsigned char *tu_read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    unsigned char *buf = malloc((size_t)st.st_size + 1);
    size_t n = 0;
    for (ssize_t got; buf && n < (size_t)st.st_size &&
                      (got = read(fd, buf + n, (size_t)st.st_size - n)) > 0;)
        n += (size_t)got;
    close(fd);
    *len = n;
    return buf;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

const char *tu_list_dir(const char *dir)
{
    static char buf[8192];
    char *names[256];
    int n = 0;
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "opendir %s: %s", dir, strerror(errno));
    for (struct dirent *e; (e = readdir(d)) != NULL && n < 256;)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof(names[0]), cmp_str);
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        strncat(buf, names[i], sizeof(buf) - strlen(buf) - 2);
        strcat(buf, "\n");
        free(names[i]);
    }
    return buf;
}

long long tu_file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) < 0 ? -1 : (long long)st.st_size;
}

uint64_t tu_xorshift(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

void tu_fill_random(void *buf, size_t len, uint64_t *state)
{
    unsigned char *p = buf;
    for (size_t i = 0; i < len; i += 8) {
        uint64_t r = tu_xorshift(state);
        memcpy(p + i, &r, len - i < 8 ? len - i : 8);
    }
}

void tu_fill_pages(unsigned char *buf, uint64_t first, uint32_t n)
{
    memset(buf, 0xab, (size_t)n * BLCKSZ);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t b = first + i;
        memcpy(buf + (size_t)i * BLCKSZ, &b, 8);
    }
}

void tu_write_rel(const char *path, uint32_t seg_blocks, uint64_t pages, bool replace)
{
    RelFile rf;
    HsError err;
    static unsigned char buf[7 * BLCKSZ];
    ck_assert_int_eq(relfile_create(&rf, path, seg_blocks, replace, &err), 0);
    for (uint64_t b = 0; b < pages;) {
        uint32_t n = pages - b < 7 ? (uint32_t)(pages - b) : 7;
        tu_fill_pages(buf, b, n);
        ck_assert_int_eq(relfile_append(&rf, buf, n, &err), 0);
        b += n;
    }
    ck_assert_msg(relfile_commit(&rf, &err) == 0, "%s", err.msg);
}

const char *tu_make_heap(const char *name, uint64_t rows, unsigned pad, unsigned ff,
                         uint64_t seed, uint32_t seg_blocks, bool all_visible)
{
    char nrows[32], npad[16], nff[16], nseed[32], nseg[32];
    snprintf(nrows, sizeof(nrows), "%llu", (unsigned long long)rows);
    snprintf(npad, sizeof(npad), "%u", pad);
    snprintf(nff, sizeof(nff), "%u", ff);
    snprintf(nseed, sizeof(nseed), "%llu", (unsigned long long)seed);
    snprintf(nseg, sizeof(nseg), "%llu",
             (unsigned long long)(seg_blocks ? seg_blocks : RELFILE_SEG_BLOCKS) *
                 BLCKSZ);
    const char *path = tu_path(name);
    TuRun *r = tu_runl(0, tu_tool("MKHEAP"), "-q", "--rows", nrows, "--pad", npad,
                       "--fillfactor", nff, "--seed", nseed, "--segment-size", nseg,
                       all_visible ? "--all-visible" : "--quiet", path, NULL);
    ck_assert_msg(r->status == 0, "mkheap: %s", r->err);
    return path;
}

BufMgr *tu_open_bm(const char *path, const BufMgrOptions *o)
{
    BufMgr *bm;
    HsError err;
    ck_assert_msg(bufmgr_open(&bm, path, o, &err) == 0, "%s", err.msg);
    bufmgr_set_checking(bm, true);
    return bm;
}

uint64_t tu_stream_all(BufMgr *bm)
{
    HsError err;
    ReadStream *rs = read_stream_begin(bm, NULL, 0, bufmgr_nblocks(bm), &err);
    ck_assert_msg(rs != NULL, "%s", err.msg);
    Buffer buf;
    const void *page;
    uint64_t blkno, n = 0;
    int rc;
    while ((rc = read_stream_next(rs, &buf, &page, &blkno, &err)) == 1) {
        ck_assert_uint_eq(blkno, n++);
        bufmgr_release(bm, buf);
    }
    ck_assert_msg(rc == 0, "%s", err.msg);
    read_stream_end(rs);
    ck_assert_uint_eq(bufmgr_pins_held(bm), 0);
    return n;
}
