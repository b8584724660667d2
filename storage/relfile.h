/*
 * relfile.h -- a relation's segment files, in the manner of PostgreSQL's md.c.
 *
 * A relation NAME is stored as NAME, NAME.1, NAME.2, ... each holding
 * seg_blocks pages (RELFILE_SEG_BLOCKS = 131072 pages = 1 GiB, as PostgreSQL
 * builds by default); every segment but the last is full.  Block numbers
 * are relation-wide: segment s holds blocks [s * seg_blocks, (s+1) * seg_blocks).
 *
 * Reading: relfile_open(), relfile_nblocks(), relfile_read() into one buffer,
 * relfile_readv() into scattered frames, relfile_close().
 * Writing a new relation without ever exposing a partial one:
 * relfile_create() writes every segment into a temporary file beside its
 * final name, relfile_append() adds pages at the end, relfile_commit()
 * fsyncs and renames them into place (the first segment last), and
 * relfile_abort() removes every temporary file.
 *
 * This module owns file descriptors only: it never prints, never exits and
 * never looks inside a page.  Calls return 0 or a negative code and fill the
 * HsError with the file and block.
 */
#ifndef HEAPSCAN_RELFILE_H
#define HEAPSCAN_RELFILE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "hserror.h"
#include "page.h"

#define RELFILE_SEG_BLOCKS                                                             \
    UINT32_C(131072)          /* 1 GiB / 8 KiB, PostgreSQL's RELSEG_SIZE */
#define RELFILE_MAX_SEGS 4096 /* 4 TiB at 1 GiB segments */

typedef struct RelFile {
    char rf_path[PATH_MAX]; /* the relation's name: its first segment's file */
    uint32_t rf_seg_blocks; /* pages per segment */
    uint32_t rf_nsegs;      /* segments open */
    int *rf_fds;            /* rf_nsegs descriptors, segment order */
    uint64_t rf_nblocks;    /* pages in the relation */
    bool rf_writing;        /* created by relfile_create(), not yet committed */
    bool rf_replace;        /* relfile_commit() may replace an existing relation */
    char rf_tmp_tag[32];    /* suffix of the temporary files while writing */
} RelFile;

/* The file name of segment seg of relation path ("path", "path.1", ...). */
int relfile_segment_name(const char *path, uint32_t seg, char *buf, size_t len);

/*
 * Open the relation path read-only with seg_blocks pages per segment.
 * Finds every segment; each but the last must be exactly seg_blocks pages
 * and every segment a whole number of pages (else HS_ENOTHEAP).
 */
int relfile_open(RelFile *rf, const char *path, uint32_t seg_blocks, HsError *err);

static inline uint64_t relfile_nblocks(const RelFile *rf)
{
    return rf->rf_nblocks;
}

/*
 * Read n pages starting at block blkno into buf (n * BLCKSZ bytes), crossing
 * segment boundaries as needed.  A short read is an error naming the block.
 */
int relfile_read(RelFile *rf, uint64_t blkno, uint32_t n, void *buf, HsError *err);

/*
 * Read blocks blkno .. blkno + n - 1 into frames[0 .. n-1] (each BLCKSZ
 * bytes, anywhere in memory), with one preadv() per segment the range
 * touches (at most 1024 pages a call); *calls gets the number of system
 * calls made.  A short read is an error naming the block.
 */
int relfile_readv(RelFile *rf, uint64_t blkno, uint32_t n, void *const *frames,
                  uint32_t *calls, HsError *err);

/* The descriptor and file offset holding block blkno (for mmap). */
int relfile_block_fd(const RelFile *rf, uint64_t blkno, int *fd, uint64_t *off);

/* Close every segment.  Safe on a zeroed or already closed RelFile. */
void relfile_close(RelFile *rf);

/*
 * Start writing a new relation path.  Without replace, fails with HS_EEXIST
 * when path exists.  Nothing appears under path until relfile_commit().
 */
int relfile_create(RelFile *rf, const char *path, uint32_t seg_blocks, bool replace,
                   HsError *err);

/* Append n pages from buf at the relation's end (opening new segments as needed). */
int relfile_append(RelFile *rf, const void *buf, uint32_t n, HsError *err);

/*
 * fsync every segment, rename each over its final name (the first segment
 * last, so a relation never appears half written), fsync the directory,
 * and, when replacing, remove segments of the old relation beyond the new
 * one's end.  On failure the temporary files are removed.
 */
int relfile_commit(RelFile *rf, HsError *err);

/* Abandon a relation being written: close and remove its temporary files.
 * Async-signal-unsafe; call it from the main flow, not from a handler. */
void relfile_abort(RelFile *rf);

#endif
