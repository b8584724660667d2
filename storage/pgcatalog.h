/*
 * pgcatalog.h -- a relation file of a stopped PostgreSQL 15 cluster: where
 *                it lives, and whether the cluster's catalog says it is a
 *                table of t's schema.
 *
 * Entry points:
 *   pgcatalog_locate()       -- RELFILE as pg_relation_filepath() prints it
 *                               (or any path to it) to the file, its
 *                               database, tablespace and file number
 *   pgcatalog_check_schema() -- find it in pg_class and its columns in
 *                               pg_attribute, and refuse anything but
 *                               t (id int4, k int4, v int8, pad text)
 * See also: pgxact.h -- the transaction status the catalog rows need;
 * heap.h -- the visibility rules applied to them.
 *
 * A table's own file cannot say which columns the table has: a table
 * (a int4, b int4, c int8, d text) is byte for byte like t, and a column
 * dropped and added again leaves the old values in rows written before.
 * The catalog can, and a cluster's catalog is itself heap files: pg_class
 * and pg_attribute, whose file numbers the database's pg_filenode.map
 * gives (they are "mapped" relations).  Their rows are read with the same
 * visibility as any table's, so what this sees is what a new session of
 * the server would see.  Only the fixed-width columns at the head of each
 * catalog row are read; they are NOT NULL, so their offsets never move.
 */
#ifndef HEAPSCAN_PGCATALOG_H
#define HEAPSCAN_PGCATALOG_H

#include <limits.h>
#include <stdint.h>

#include "hserror.h"
#include "page.h"
#include "pgxact.h"

typedef struct PgRelation {
    char pr_path[PATH_MAX]; /* the relation's first segment file */
    uint32_t pr_dboid;      /* the database whose directory holds it */
    uint32_t pr_spcoid;     /* its tablespace: 0 under base/, else pg_tblspc's */
    uint32_t pr_filenode;   /* its file number (the file's name) */
    uint32_t pr_oid;        /* pg_class.oid, once pgcatalog_check_schema() found it */
    char pr_name[64];       /* pg_class.relname, likewise */
} PgRelation;

/*
 * Find relfile in the cluster: relative to the data directory if it is a
 * relative path that exists there, else as given.  It must be the main fork
 * (a name of digits only: not a segment "N.1", nor "N_fsm", "N_vm",
 * "N_init") of a database directory of the cluster (base/DB/, or a
 * tablespace's PG_15_*\/DB/).  HS_EREFUSED with the reason otherwise.
 */
int pgcatalog_locate(const PgXact *px, const char *relfile, PgRelation *rel,
                     HsError *err);

/*
 * Find rel in its database's pg_class (by file number) and its columns in
 * pg_attribute, pages verified with checksum sum.  0 when it is a table
 * (or materialized view) of exactly t's columns, with rel->pr_oid and
 * pr_name filled; HS_EREFUSED naming what differs (another column list, a
 * dropped column, no such relation) otherwise.
 */
int pgcatalog_check_schema(PgXact *px, PgRelation *rel, PageChecksum sum, HsError *err);

#endif
