/*
 * testutil.h -- what the Check suites share: a temporary directory per
 *               test, running a tool as a child, and reading files.
 */
#ifndef HEAPSCAN_TESTUTIL_H
#define HEAPSCAN_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#include <check.h>

#include "bufmgr.h"

/* Run every test of s, print Check's summary, and return the exit status
 * (EXIT_SUCCESS when nothing failed).  Frees s. */
int tu_run_suite(Suite *s);

/* The per-test temporary directory (made by tu_setup, removed by tu_teardown). */
extern char tu_dir[];

void tu_setup(void);
void tu_teardown(void);

/* A path inside tu_dir (a static buffer of 8 rotating slots). */
const char *tu_path(const char *name);

/* The path of a tool: $NAME_ENV, or fail the test. */
const char *tu_tool(const char *env);

/* The path of program name in the directory of $env's tool (compare beside
 * seqscan), or fail the test (a static buffer). */
const char *tu_tool_beside(const char *env, const char *name);

/* --help exits 0 printing text that starts with usage (after "Usage: "),
 * --version exits 0 printing "name (heapscan) ..." (fails the test if not). */
void tu_assert_help_and_version(const char *tool, const char *name, const char *usage);

/* The exit status that makes Meson show a test as SKIP. */
#define TU_SKIP 77

/* What a test may need that a machine may lack. */
typedef enum TuNeed {
    TU_NEED_PG,    /* PostgreSQL 15: HEAPSCAN_REQUIRE_PG=1 (CI) makes it a must */
    TU_NEED_OTHER, /* anything else (a tmpfs mount, O_DIRECT, ...) */
} TuNeed;

/*
 * Unless have: say why on stdout ("SKIP: ...") and exit TU_SKIP, so Meson
 * shows the test as skipped, never as passed; for TU_NEED_PG with
 * HEAPSCAN_REQUIRE_PG=1, exit EXIT_FAILURE instead (tests/pglib.sh's
 * skip_or_fail).  Call it from main() before the suite runs, never inside a
 * test (which Check runs in a child whose exit status it judges).
 */
void tu_require(bool have, TuNeed need, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

typedef struct TuRun {
    int status;       /* exit status, or 128 + signal */
    struct rusage ru; /* the child's rusage, from wait4 */
    char out[65536];  /* what it wrote to stdout (truncated) */
    char err[65536];  /* what it wrote to stderr (truncated) */
} TuRun;

/*
 * Run argv (argv[0] is the program's path) with stdout and stderr captured.
 * fsize_limit > 0 sets RLIMIT_FSIZE in the child.  Returns a static TuRun.
 */
TuRun *tu_run(char *const argv[], long long fsize_limit);

/* Variadic convenience: tu_runl(limit, prog, arg..., NULL). */
TuRun *tu_runl(long long fsize_limit, const char *prog, ...);

/*
 * Peak RSS of a child below limit KiB.  Under Address- or ThreadSanitizer the shadow
 * memory alone exceeds any such limit, so there the check says so and
 * passes only on the child having run at all.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ASSERT_RSS_BELOW(run, limit_kib) ck_assert_int_gt((run)->ru.ru_maxrss, 0)
#else
#define ASSERT_RSS_BELOW(run, limit_kib)                                               \
    ck_assert_msg((run)->ru.ru_maxrss < (limit_kib), "peak RSS %ld KiB, limit %d KiB", \
                  (run)->ru.ru_maxrss, (limit_kib))
#endif

/*
 * Start argv (output to /dev/null), wait until its temporary file
 * "FILE.tmp-PID" (FILE = path, PID = the child's) holds at least 1 MiB, send
 * sig, and return the child's exit status, or 256 + the signal if it died
 * of one (so a tool that handles the signal and exits 128 + it is told
 * apart from one that was killed).
 * Fails the test if the file never grows that far.
 */
int tu_interrupt_writer(char *const argv[], const char *path, int sig);

/* The path of test fixture name in tests/data/ ($HEAPSCAN_TEST_DATA, which
 * tests/meson.build sets), or fail the test (a static buffer). */
const char *tu_fixture(const char *name);

/* Read a whole file (malloc'd); *len gets its size.  NULL if it cannot. */
unsigned char *tu_read_file(const char *path, size_t *len);

/* Names in dir other than . and .., one per line, sorted (static buffer). */
const char *tu_list_dir(const char *dir);

/* Size of a file, or -1. */
long long tu_file_size(const char *path);

/* n pages into buf holding blocks first .. first + n - 1: each page is 0xab
 * but for its first 8 bytes, its block number. */
void tu_fill_pages(unsigned char *buf, uint64_t first, uint32_t n);

/* Write (commit) the relation path of pages such pages, seg_blocks a
 * segment, replacing one that is there if replace. */
void tu_write_rel(const char *path, uint32_t seg_blocks, uint64_t pages, bool replace);

/* A table made by mkheap in tu_dir ($MKHEAP): rows rows of pad bytes, the
 * fillfactor and seed given, seg_blocks pages a segment (0: the default),
 * PD_ALL_VISIBLE on every page if all_visible.  Its path. */
const char *tu_make_heap(const char *name, uint64_t rows, unsigned pad, unsigned ff,
                         uint64_t seed, uint32_t seg_blocks, bool all_visible);

/* bufmgr_open() with o, with its invariants checked at every call, or fail. */
BufMgr *tu_open_bm(const char *path, const BufMgrOptions *o);

/* Every page of bm through a read stream, each released at once: the pages
 * handed out.  Fails the test on an error or a pin left behind. */
uint64_t tu_stream_all(BufMgr *bm);

/* The next number of a xorshift64 sequence in *state (never seed it 0):
 * repeatable pseudo-random choices for tests. */
uint64_t tu_xorshift(uint64_t *state);

/* len bytes of tu_xorshift() words from *state, the last one cut short. */
void tu_fill_random(void *buf, size_t len, uint64_t *state);

#endif
