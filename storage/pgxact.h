/*
 * pgxact.h -- what a stopped PostgreSQL 15 cluster knows about its
 *             transactions, read from its data directory, for
 *             `seqscan --pgdata`.
 *
 * Entry points:
 *   pgxact_open()        -- check DIR is a cleanly stopped PostgreSQL 15
 *                           cluster and read its pg_control
 *   pgxact_xid_status()  -- a transaction's status from DIR/pg_xact
 *   pgxact_multi_update_xid() -- the updating member of a MultiXact, from
 *                           DIR/pg_multixact
 *   pgxact_close()
 *   pgcontrol_open()     -- (pgcontrol.c) the checks and pg_control alone
 *   pg_crc32c()          -- (pgcontrol.c) PostgreSQL's CRC-32C, as pg_control
 *                           and the relation map files carry it
 * See also: heap.h -- the visibility rules that ask these questions.
 *
 * Transaction status lives in pg_xact: 2 bits per xid (00 in progress,
 * 01 committed, 10 aborted, 11 sub-committed), 4 xids a byte, so 32768 a
 * page of 8 KiB and 1,048,576 a segment of 32 pages; segment files are
 * named by their number as four upper-case hex digits (0000, 0001, ...;
 * "%04X", so pg_multixact/members, whose segments run to 14078, has some of
 * five).
 * In a cluster that was shut down cleanly no transaction is still running,
 * so "in progress" and "sub-committed" both mean the transaction never
 * committed (a crashed or aborted one, or a prepared one not yet
 * committed): only COMMITTED counts as committed.
 *
 * A MultiXact (a tuple's xmax when HEAP_XMAX_IS_MULTI) is a list of
 * members, each an xid with a MultiXactStatus: 0..3 row locks (ForKeyShare,
 * ForShare, ForNoKeyUpdate, ForUpdate), 4 NoKeyUpdate and 5 Update.  Its
 * entry in pg_multixact/offsets (a uint32 per multi, 2048 a page) says
 * where its members start in pg_multixact/members; they end where the next
 * multi's start, or at pg_control's nextMultiOffset for the newest multi.
 * Members are stored in groups of 4 (4 status bytes, then 4 xids: 20 bytes,
 * 409 groups or 1636 members a page).  Offset 0 is never handed out: after
 * the offsets wrap around, member slot 0 is left empty (xid 0) and skipped.
 * In pg_xact and both pg_multixact directories a segment holds 32 pages.
 *
 * Refusals, each with a one-line message naming the file: DIR is not a
 * PostgreSQL 15 cluster (PG_VERSION not "15", no global/pg_control, its
 * CRC-32C wrong, pg_control_version not 1300, another block or segment
 * size, another architecture's alignment or floats); the cluster is running
 * (postmaster.pid exists); it was not shut down cleanly (its WAL has not
 * been replayed, so the relation files are not what the server would
 * read); an xid outside [oldestXid, nextXid) or a multi outside
 * [oldestMulti, nextMulti) of pg_control (compared modulo 2^32, as
 * TransactionIdPrecedes() does); a pg_xact or pg_multixact segment that is
 * missing or too short to hold the page asked for.  A cleanly stopped
 * server has written every page up to nextXid's, so a short file is never
 * read as "not written yet".
 *
 * Pages read are cached (16 per directory, plus the last segment kept
 * open), so a scan reads a page of pg_xact once, not once per tuple.
 *
 * This module reads files and never prints.  Every call returns 0 or a
 * negative code (-errno, HS_EREFUSED for a cluster or xid it will not
 * decide, HS_ECORRUPT for pg_multixact contents that contradict themselves)
 * and fills the HsError.  pg_control is read at the offsets an x86-64
 * compiler gives PostgreSQL 15's ControlFileData (little-endian).
 */
#ifndef HEAPSCAN_PGXACT_H
#define HEAPSCAN_PGXACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hserror.h"

/* Special transaction ids, as PostgreSQL's transam.h. */
#define INVALID_TRANSACTION_ID      UINT32_C(0)
#define BOOTSTRAP_TRANSACTION_ID    UINT32_C(1)
#define FROZEN_TRANSACTION_ID       UINT32_C(2)
#define FIRST_NORMAL_TRANSACTION_ID UINT32_C(3)

/* A transaction's status in pg_xact (the 2-bit values on disk). */
typedef enum XactStatus {
    XACT_IN_PROGRESS = 0, /* never finished: in a stopped cluster, not committed */
    XACT_COMMITTED = 1,
    XACT_ABORTED = 2,
    XACT_SUB_COMMITTED = 3, /* a subtransaction whose parent never committed */
} XactStatus;

/* What pg_control says, of the fields heapscan uses. */
typedef struct PgControl {
    uint64_t pc_system_identifier; /* "Database system identifier" */
    uint32_t pc_version;           /* pg_control_version: 1300 for PostgreSQL 15 */
    uint32_t pc_catalog_version;   /* catalog_version_no, e.g. 202209061 */
    uint32_t pc_state;             /* DBState: 1 shut down, 2 shut down in recovery */
    uint64_t pc_next_full_xid;     /* checkPointCopy.nextXid (epoch << 32 | xid) */
    uint32_t pc_oldest_xid;        /* checkPointCopy.oldestXid */
    uint32_t pc_next_multi;        /* checkPointCopy.nextMulti */
    uint32_t pc_next_multi_offset; /* checkPointCopy.nextMultiOffset */
    uint32_t pc_oldest_multi;      /* checkPointCopy.oldestMulti */
    uint32_t pc_blcksz;            /* 8192 */
    uint32_t pc_relseg_size;       /* pages per segment, 131072 */
    uint32_t pc_data_checksum_version; /* 0: data checksums off, 1: on */
} PgControl;

typedef struct PgXact PgXact;

/*
 * Open the cluster in directory pgdata.  On success *out is the cluster,
 * whose pg_control has been read and checked; on failure *out is NULL and
 * err says why (HS_EREFUSED for "running", "not shut down cleanly", "not
 * PostgreSQL 15", a damaged pg_control; -errno for a file that cannot be
 * read, -ENOENT when PG_VERSION or global/pg_control is missing).
 */
int pgxact_open(PgXact **out, const char *pgdata, HsError *err);

/* The cluster's pg_control. */
const PgControl *pgxact_control(const PgXact *px);

/* The data directory, as given to pgxact_open(). */
const char *pgxact_dir(const PgXact *px);

/*
 * The status of transaction xid.  xid 0 is aborted, 1 and 2 committed
 * (as PostgreSQL's TransactionLogFetch() says of them); a normal xid is
 * looked up in pg_xact.  HS_EREFUSED for an xid outside [oldestXid,
 * nextXid), or a pg_xact segment that is missing or too short to hold it.
 * Only XACT_COMMITTED means the transaction committed.
 */
int pgxact_xid_status(PgXact *px, uint32_t xid, XactStatus *status, HsError *err);

/*
 * The member of MultiXact multi that updated or deleted the tuple (status
 * NoKeyUpdate or Update), or 0 in *xid when no member did (only locks).
 * HS_EREFUSED for multi 0 (invalid), a multi outside [oldestMulti,
 * nextMulti) or a pg_multixact segment that is missing or too short;
 * HS_ECORRUPT for offsets that cannot be (0, or past nextMultiOffset), an
 * empty member (xid 0) other than member slot 0, an unknown member status
 * or a second updater.  Whether the updater
 * committed is the caller's question (pgxact_xid_status()).
 */
int pgxact_multi_update_xid(PgXact *px, uint32_t multi, uint32_t *xid, HsError *err);

/* Close and free (NULL is fine). */
void pgxact_close(PgXact *px);

/*
 * CRC-32C (Castagnoli) of len bytes, as PostgreSQL's pg_crc32c computes it
 * (INIT_CRC32C, COMP_CRC32C, FIN_CRC32C): pg_control stores it over the
 * bytes before its crc field, pg_filenode.map over the bytes before its.
 * CRC-32C of "123456789" is 0xE3069283.
 */
uint32_t pg_crc32c(const void *buf, size_t len);

/*
 * pgcontrol.c: check that pgdata is a cleanly stopped PostgreSQL 15 cluster
 * (PG_VERSION, pg_control's version, CRC, block and segment size, no
 * postmaster.pid, state shut down) and read its pg_control into *pc;
 * control_path (PATH_MAX bytes) gets the control file's path.  The
 * refusals pgxact_open() lists.
 */
int pgcontrol_open(const char *pgdata, PgControl *pc, char *control_path, HsError *err);

#endif
