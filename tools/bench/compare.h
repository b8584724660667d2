/*
 * compare.h -- the comparison, the project's main job: every raw way of
 *              reading a table (the C readers and the external commands
 *              they mirror, fio among them), seqscan under read() and
 *              mmap() with and without verification, sync and io_uring,
 *              buffered and direct, and PostgreSQL 15 scanning the same
 *              bytes, cold then warm, interleaved round by round.
 *
 * Entry points: compare_open() sizes the table and lays out the rows;
 * compare_start_postgres() starts the PostgreSQL peer and checks that it
 * counts what seqscan counts; compare_run() runs every round;
 * compare_write_text(), compare_write_csv(), compare_write_json() and
 * compare_write_plot() report; compare_close() stops the peer and frees.
 * The compare program (tools/compare.c) drives them.
 * See also: rawio.c, extcmd.c, scanrun.c, pgpeer.c -- the readers.
 *
 * Each row is one way of reading the table.  For each cache state (cold,
 * then warm) and each round, every row runs once, in the same order, with
 * the cache prepared the same way right before it; a row's figures are
 * the median, min and max over the rounds, and its ratio is its median over
 * the median of "dd bs=1M" in the same cache state.  compare_claim_1998()
 * answers the 1998 experiment's "async I/O won't help a sequential scan"
 * from the cold figures.
 */
#ifndef HEAPSCAN_COMPARE_H
#define HEAPSCAN_COMPARE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "hserror.h"
#include "measure.h"

#define COMPARE_MAX_ROUNDS 1000

/* What a row runs. */
typedef enum CompareKind {
    COMPARE_RAW,      /* a C reader of rawio.c, in this process */
    COMPARE_COMMAND,  /* wc, wc -l or dd as a child process */
    COMPARE_SEQSCAN,  /* scan_run() */
    COMPARE_POSTGRES, /* PostgreSQL 15's SELECT * FROM t WHERE k = -1 */
    COMPARE_FIO,      /* fio reading the table (fiorun.h), when it is installed */
} CompareKind;

/* "c-reader", "command", "seqscan", "postgres", "fio" (the CSV's and JSON's kind),
 * in the enum's order, NULL after the last. */
extern const char *const compare_kind_names[];
const char *compare_kind_name(CompareKind kind);

/* What to compare. */
typedef struct CompareOptions {
    const char *co_path;   /* the table: a heap file (and its segments) */
    int co_rounds;         /* rounds, 1..COMPARE_MAX_ROUNDS */
    const char *co_bindir; /* PostgreSQL 15's programs, or NULL: no PostgreSQL rows */
} CompareOptions;

typedef struct Compare Compare;

/* Told before each run: the cache state, the round of rounds, the row. */
typedef void (*CompareProgress)(CacheMode cache, int round, int rounds, int row,
                                const char *name, void *arg);

/*
 * Size the table o->co_path and lay out its rows (the PostgreSQL rows when
 * o->co_bindir is set).  0 with *out set, or a negative code with *out NULL.
 */
int compare_open(Compare **out, const CompareOptions *o, HsError *err);

/*
 * Start the PostgreSQL peer on the table (nothing without co_bindir) and
 * check that its count(*) and sum(v) are seqscan's: HS_ECORRUPT if not.
 * The peer, once started, stays up until compare_close(), even on failure.
 */
int compare_start_postgres(Compare *c, HsError *err);

/* Whether a PostgreSQL peer was started (and so will be stopped). */
bool compare_has_postgres(const Compare *c);

/*
 * Every round of every row, cold then warm, calling progress (may be NULL)
 * before each run.  HS_EINTR as soon as *stop (may be NULL) is non-zero
 * between runs; HS_ECORRUPT when a command's count differs from its C
 * twin's; else 0 or the first run's error.
 */
int compare_run(Compare *c, const volatile sig_atomic_t *stop, CompareProgress progress,
                void *arg, HsError *err);

/*
 * One sentence answering "async I/O won't help a sequential scan" (1998)
 * from the cold medians on this machine: seqscan with io_uring against
 * sync, buffered (where the kernel's read-ahead already overlaps the disk)
 * and direct (where it does not), with dd bs=1M beside them.
 */
void compare_claim_1998(const Compare *c, char *buf, size_t len);

/* The table of figures, cold and warm, as text, and the sentence. */
void compare_write_text(const Compare *c, FILE *f);

/* The same figures written to the file path as CSV, or as JSON. */
int compare_write_csv(const Compare *c, const char *path, HsError *err);
int compare_write_json(const Compare *c, const char *path, HsError *err);

/* Cold and warm medians side by side, drawn by gnuplot into path (.png or .svg). */
int compare_write_plot(const Compare *c, const char *path, HsError *err);

/* Stop the PostgreSQL peer (its cluster removed) and free c; NULL is fine. */
void compare_close(Compare *c);

#endif
