/*
 * relfile.h -- a relation's segment files, in the manner of PostgreSQL's md.c.
 *
 * A relation NAME is stored as NAME, NAME.1, NAME.2, ... each holding
 * seg_blocks pages (RELFILE_SEG_BLOCKS = 131072 pages = 1 GiB, as PostgreSQL
 * builds by default); every segment but the last is full.  Block numbers
 * are relation-wide: segment s holds blocks [s * seg_blocks, (s+1) * seg_blocks).
 *
 * Reading (relfile.c): relfile_open(), relfile_nblocks(), relfile_read()
 * into one buffer, relfile_readv() into scattered frames, relfile_close().
 * Writing a new relation without ever exposing a partial one (relwrite.c):
 * relfile_create() writes every segment into a temporary file beside its
 * final name, relfile_append() adds pages at the end, relfile_commit()
 * fsyncs and renames them into place (the first segment last), and
 * relfile_abort() removes every temporary file.
 *
 * A relation is all of its segments or an error.  Opening one checks the
 * whole set in the directory before any page is read: NAME, NAME.1, ...
 * without a gap, every segment full but the last, nothing after a short
 * one.  A writer refuses to create over any segment of a relation.
 *
 * Readers see the old relation or the new one, never a mix.  A reader opens
 * every segment up front and reads from those descriptors.  Opening and
 * committing are serialised with flock() on the first segment: the reader
 * holds LOCK_SH while it opens the set, the committing writer LOCK_EX on
 * the first segment it replaces while it renames; each checks after it got
 * the lock that its descriptor is still the file at that path, and starts
 * again if a commit slipped in.  A replacing commit first gives each old
 * segment a second name (NAME.k.old-PID) and marks the start of its renames
 * (NAME.commit-PID), so a commit cut short, by an error or by a crash, can
 * put the old relation back: relfile_create() does so for writers that
 * died (relfile_recover()), and a reader refuses a relation a dead writer
 * left half replaced.
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
    char rf_note[256];      /* what relfile_create() cleaned up, for the tool to
                               say ("" if nothing) */
} RelFile;

/* The file name of segment seg of relation path ("path", "path.1", ...). */
int relfile_segment_name(const char *path, uint32_t seg, char *buf, size_t len);

/*
 * Open the relation path read-only with seg_blocks pages per segment: every
 * segment, under the first one's shared lock (see above).  HS_ENOTHEAP for
 * a set that is not a relation: a file that is not a regular one (a FIFO,
 * a device, a directory: refused before anything is read from it, and
 * opened without blocking), a segment not a whole number of pages, more
 * than seg_blocks, short but followed by another, or missing with a later
 * one present; HS_EREFUSED for a relation a dead writer left half replaced.
 */
int relfile_open(RelFile *rf, const char *path, uint32_t seg_blocks, HsError *err);

/*
 * Open file name with flags (O_RDONLY, O_RDWR, O_DIRECT, ...) only if it is
 * a regular file: opened without blocking (a FIFO would block in open()),
 * then refused with HS_ENOTHEAP "not a regular file (a FIFO)" before a
 * byte is read if it is a FIFO, device, directory or socket.  The
 * descriptor (O_NONBLOCK cleared again), or a negative code with err
 * filled; *size gets the file's size (may be NULL).
 */
int relfile_open_regular(const char *name, int flags, uint64_t *size, HsError *err);

/* What a directory holds of relation path, from one look at it. */
typedef struct RelFileDir {
    uint32_t rd_nsegs;   /* 1 + the highest segment number present (0: none) */
    uint32_t rd_present; /* how many of segments 0 .. rd_nsegs - 1 are present */
    uint32_t rd_gap;     /* the lowest missing segment below rd_nsegs, if any */
    long rd_torn_pid;    /* a writer, no longer running, that died between the
                            start of its renames (its NAME.commit-PID marker) and
                            its commit point (its NAME.tmp-PID is still there):
                            the relation may be half replaced; 0 if none */
} RelFileDir;

/* Look at the directory of path.  -errno if it cannot be read. */
int relfile_scan_dir(const char *path, RelFileDir *d, HsError *err);

/* Every file of the directory that belongs to relation path: fn gets the
 * name, the segment number and, for a writer's leftover ("NAME.k.tmp-PID",
 * "NAME.k.old-PID", "NAME.commit-PID"), its kind ('t', 'o' or 'c') and pid;
 * 0 and 0 for a segment.  fn returns 0 to go on. */
int relfile_each_file(const char *path,
                      int (*fn)(void *arg, const char *name, uint32_t seg, char kind,
                                long pid),
                      void *arg, HsError *err);

/* Is the process pid still running? (kill(pid, 0), so a pid of another
 * user counts as running: leftovers are only touched when surely dead.) */
bool relfile_pid_alive(long pid);

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

/*
 * Make every segment's reads bypass the page cache (O_DIRECT, set on the
 * open descriptors with fcntl).  Buffers and offsets must then be aligned
 * as the file system says: statx() STATX_DIOALIGN where the kernel tells
 * (Linux 6.1), else 4096 bytes is assumed; *mem_align gets the buffer
 * alignment (offsets and lengths here are whole pages, which every file
 * system's offset alignment divides).  A file system that refuses O_DIRECT
 * (ramfs; tmpfs before Linux 6.6) is an error naming the file and the
 * --direct option, never a silent fallback to the page cache.
 */
int relfile_set_direct(RelFile *rf, uint32_t *mem_align, HsError *err);

/* The descriptor and file offset holding block blkno (for mmap). */
int relfile_block_fd(const RelFile *rf, uint64_t blkno, int *fd, uint64_t *off);

/* Close every segment.  Safe on a zeroed or already closed RelFile. */
void relfile_close(RelFile *rf);

/*
 * Start writing a new relation path.  First the leftovers of writers that
 * died are cleaned up (relfile_recover(); rf_note says what was done).
 * Without replace, fails with HS_EEXIST when path or any segment of it
 * exists.  Nothing appears under path until relfile_commit().
 */
int relfile_create(RelFile *rf, const char *path, uint32_t seg_blocks, bool replace,
                   HsError *err);

/* Append n pages from buf at the relation's end (opening new segments as needed). */
int relfile_append(RelFile *rf, const void *buf, uint32_t n, HsError *err);

/*
 * fsync every segment and put the relation in place: under the old first
 * segment's exclusive lock, give every old segment a second name, rename
 * the new segments over the old ones, remove old segments beyond the new
 * end, and rename the first segment last (the commit point: until then
 * there is no new relation); fsync the directory; drop the second names.
 * On failure the old relation is put back and the temporary files removed.
 */
int relfile_commit(RelFile *rf, HsError *err);

/*
 * Clean up after writers of path that died (crashed, or were killed): a
 * commit cut short before its commit point gets the old relation put back
 * from its .old-PID names and the new segments it had renamed in removed;
 * one cut short after it keeps the new relation and loses the second
 * names; temporary files go.  Leftovers of a writer still running are left
 * alone.  note (may be NULL) gets one line saying what was done, or "".
 */
int relfile_recover(const char *path, char *note, size_t notelen, HsError *err);

/* Shared by relfile.c and relwrite.c: reset rf for relation path; add an
 * open segment's descriptor. */
int relfile_init(RelFile *rf, const char *path, uint32_t seg_blocks, HsError *err);
int relfile_add_fd(RelFile *rf, int fd);

/* Tests only: called at each step of relfile_commit() ("kept", "renamed",
 * "surplus", "committed", "dropped"), so a test can kill the writer there. */
extern void (*relfile_commit_hook)(const char *step);

/* Abandon a relation being written: close and remove its temporary files.
 * Async-signal-unsafe; call it from the main flow, not from a handler. */
void relfile_abort(RelFile *rf);

#endif
