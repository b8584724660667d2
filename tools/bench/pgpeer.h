/*
 * pgpeer.h -- a live PostgreSQL 15 server as a benchmark peer: a private
 *             cluster whose table t is the very heap file heapscan scans.
 *
 * Entry points: pgpeer_find() locates the server binaries, pgpeer_start()
 * builds and starts the cluster with the table installed, pgpeer_count_sum()
 * asks it for count(*) and sum(v), pgpeer_evict() and pgpeer_warm() prepare
 * the page cache for its copy of the table, pgpeer_time_query() times
 * `SELECT * FROM t WHERE k = -1` serially or in parallel, pgpeer_dir() names
 * the cluster's directory and pgpeer_stop() stops the server and removes it.
 *
 * The cluster lives in a new directory under $TMPDIR (or /tmp): the server's
 * Unix socket (no TCP), its log (server.log) and the data directory (data/).
 * When the caller is root, every PostgreSQL program runs as $PG_COMPAT_USER
 * (default nobody), switched to by fork + setgroups/setgid/setuid before exec;
 * no program is ever run through a shell.  Children are always waited for.
 *
 * Like all library code this never prints and never exits: calls return 0 or
 * a negative code (-errno; -EIO when a PostgreSQL program fails, with its
 * last line of stderr in the message) and fill the HsError.
 */
#ifndef HEAPSCAN_PGPEER_H
#define HEAPSCAN_PGPEER_H

#include <stddef.h>
#include <stdint.h>

#include "hserror.h"

#define PGPEER_MAX_WORKERS 64 /* largest workers pgpeer_time_query() accepts */

typedef struct PgPeer PgPeer;

/*
 * Find PostgreSQL 15 server binaries (initdb, pg_ctl, postgres, psql):
 * $PG_BINDIR, else `pg_config --bindir` if that is version 15, else
 * /usr/lib/postgresql/15/bin.  The directory chosen must hold all four and
 * its postgres must say it is 15.  Returns 0 with bindir filled (an absolute
 * path), or -1 if none is found or it does not fit in len bytes.
 */
int pgpeer_find(char *bindir, size_t len);

/*
 * Start a private cluster with bindir's programs: initdb (trust, user
 * postgres, UTF8, locale C), fsync and autovacuum off, shared_buffers 16MB
 * (a large table is scanned through PostgreSQL's bulk-read ring), parallel
 * settings left at their defaults.  Creates
 * `CREATE TABLE t (id int4, k int4, v int8, pad text)`, stops the server,
 * copies the heap file table_path and its segments (table_path.1, ...) over
 * t's relation files, removes t's _fsm and _vm forks and starts the server
 * again.  Nothing is analyzed.  Returns 0 with *out set; or a negative code
 * with err filled, *out NULL and nothing left behind (no directory, no server).
 */
int pgpeer_start(PgPeer **out, const char *bindir, const char *table_path,
                 HsError *err);

/* SELECT count(*), sum(v) FROM t (the sum of an empty table is 0). */
int pgpeer_count_sum(PgPeer *p, uint64_t *count, int64_t *sum_v, HsError *err);

/*
 * Evict the cluster's copy of t (every segment) from the OS page cache.
 * PostgreSQL's shared buffers are not touched: a table of under 512 pages
 * (a quarter of shared_buffers) stays there after its first scan.
 */
int pgpeer_evict(PgPeer *p, HsError *err);

/* Read the cluster's copy of t (every segment) through, so it is cached. */
int pgpeer_warm(PgPeer *p, HsError *err);

/*
 * Time `SELECT * FROM t WHERE k = -1` in a new session with
 * max_parallel_workers_per_gather = workers (0 serial, 2 two workers; at
 * most PGPEER_MAX_WORKERS): *wall_s is psql's \timing of the query alone,
 * *rows the rows it returned (their text is discarded).  Not timed: psql's
 * start-up, the connection, and a `... LIMIT 0` of the same query run first
 * in the session, which loads the new backend's catalog caches (about 1 ms
 * of planning) without reading t.  (Each new backend still takes a minor
 * page fault per 4 KiB of shared buffers it touches first: ~4 ms for a
 * 267-page table held in shared buffers on the development VM.)
 * If plan_workers is not NULL it gets the workers PostgreSQL launched, from an
 * EXPLAIN (ANALYZE, FORMAT JSON) of the same query run once per peer and
 * workers value, after the timed query in the same session (so it never
 * changes what the timed query finds in the caches, but leaves them warm).
 */
int pgpeer_time_query(PgPeer *p, int workers, double *wall_s, uint64_t *rows,
                      int *plan_workers, HsError *err);

/* The cluster's directory (socket, server.log, data/); gone after pgpeer_stop(). */
const char *pgpeer_dir(const PgPeer *p);

/*
 * Stop the server (pg_ctl stop -m fast, then -m immediate, then SIGKILL to
 * its postmaster), remove the directory and free p.  Safe on NULL.
 */
void pgpeer_stop(PgPeer *p);

#endif
