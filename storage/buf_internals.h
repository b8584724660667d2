/*
 * buf_internals.h -- what the buffer manager's modules share, and nobody
 *                    else sees (as PostgreSQL's buf_internals.h).
 *
 *   bufmgr.c     -- the switch: options, opening, closing, the counters,
 *                   verification, and the calls that go through the
 *                   access method's table
 *   pool.c       -- the read access method: frames, their descriptors, the
 *                   hash from block to frame, pins, reads into frames
 *   freelist.c   -- the pool's replacement: clock sweep, bulk-read ring
 *   mapped.c     -- the mmap access method: pages in mapped windows
 *   readstream.c -- above them all: the sequential scan's look-ahead
 *
 * A page is reached in three steps, whatever the access method: start
 * (pin the blocks that are there, claim frames for the ones that are not:
 * a BufRun of up to io-combine consecutive blocks), the I/O if the run needs
 * it (pageio.h), and accept (verify a page on its first use, count it, and
 * hand its pin to the caller, who releases it).
 */
#ifndef HEAPSCAN_BUF_INTERNALS_H
#define HEAPSCAN_BUF_INTERNALS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "bufmgr.h"
#include "pageio.h"
#include "relfile.h"

#define BM_MAX_USAGE                                                                   \
    5 /* a frame's usage count, at most (PostgreSQL's BM_MAX_USAGE_COUNT) */
#define BM_MAX_WINDOWS 4 /* mmap windows mapped at once */

/* BufDesc.bd_flags */
#define BD_VALID     0x01 /* holds bd_blkno's page */
#define BD_VERIFIED  0x02 /* passed page_verify() since it was read */
#define BD_EVER_USED 0x04 /* has held a page at some time */
#define BD_IN_FLIGHT 0x08 /* its page is being read (it is pinned meanwhile) */
#define BD_IO_ERROR                                                                    \
    0x10 /* its read failed: out of the hash, kept (with                               \
            bd_ioerr) only until the threads that waited for                           \
            the read have seen the error */

/* A failed read's error, shared by the frames of its run that threads
 * waited on; freed with the last. */
typedef struct BufIOError {
    HsError be_err;   /* what the reader got */
    uint32_t be_refs; /* frames pointing to it */
} BufIOError;

/* BufDesc: what the pool knows about one frame. */
typedef struct BufDesc {
    uint64_t bd_blkno;    /* the block held, if BD_VALID or BD_IN_FLIGHT */
    int32_t bd_next;      /* next frame in the same hash chain, or -1 */
    uint16_t bd_pins;     /* pins held (by callers, by reads ahead, and by
                             threads waiting for its read) */
    uint8_t bd_usage;     /* clock-sweep usage count, 0..BM_MAX_USAGE */
    uint8_t bd_flags;     /* BD_* */
    BufIOError *bd_ioerr; /* BD_IO_ERROR: the read's error */
} BufDesc;

/*
 * A run of consecutive blocks, each pinned in a buffer: either all there
 * already (br_io false: a hit, or an mmap window), or frames claimed for
 * blocks the pool did not have, to be read with one request (br_io true).
 */
typedef struct BufRun {
    uint64_t br_blkno;               /* the first block */
    uint32_t br_npages;              /* blocks in the run, 1..PAGEIO_MAX_PAGES */
    uint32_t br_next;                /* the next one to hand out (0..br_npages) */
    bool br_io;                      /* the pages must be read */
    bool br_async;                   /* read by another thread, or the kernel's
                                        (so not in this thread's CPU caches) */
    Buffer br_buf[PAGEIO_MAX_PAGES]; /* the buffer of each block */
    void *br_page[PAGEIO_MAX_PAGES]; /* and its 8192 bytes */
    PageIORequest br_req;            /* br_io: the read */
} BufRun;

/* What each access method does; bufmgr.c picks one table at open. */
typedef struct BufAccessMethods {
    int (*am_open)(BufMgr *bm, HsError *err);
    void (*am_close)(BufMgr *bm);
    /* Pin blkno and what follows it of the same kind (there, or to be read)
     * up to max blocks, before end; fill run.  New pages go where strategy
     * st says (its ring, or the whole pool; NULL: bm's own).  Nothing
     * pinned on failure. */
    int (*am_start)(BufMgr *bm, BufAccessStrategy *st, uint64_t blkno, uint32_t max,
                    uint64_t end, BufRun *run, HsError *err);
    /* The run's read is over (rc its result): its frames hold their pages,
     * or on failure are forgotten and unpinned. */
    void (*am_complete)(BufMgr *bm, BufRun *run, int rc);
    /* Hand out page i of run: verify it if new, bump its usage; on failure
     * it is unpinned and forgotten. */
    int (*am_accept)(BufMgr *bm, BufRun *run, uint32_t i, HsError *err);
    void (*am_release)(BufMgr *bm, Buffer buf);
    /* Whether pinned page blkno still holds what was verified (bufmgr.h). */
    int (*am_recheck)(BufMgr *bm, Buffer buf, const void *page, uint64_t blkno,
                      HsError *err);
    uint32_t (*am_frames)(const BufMgr *bm);
    uint32_t (*am_pins_held)(const BufMgr *bm);
    int (*am_block_of_address)(const BufMgr *bm, const void *addr, uint64_t *blkno);
    void (*am_check_state)(const BufMgr *bm);
} BufAccessMethods;

/* A mapped window and what has been looked at in it (mmap access). */
typedef struct MapSlot {
    PageIOWindow ms_win; /* the mapping (ms_win.pw_base NULL if free) */
    uint32_t ms_pins;    /* pins of pages in it */
    uint64_t ms_lru;     /* tick of the last pin, for choosing what to unmap */
    uint64_t *ms_seen;   /* a bit per page: verified (or touched) since mapped */
    uint32_t *ms_crc;    /* a page_crc() per page, as verified (verifying only) */
} MapSlot;

/* A scan's way into the pool: its own bulk-read ring, or the whole pool
 * (as PostgreSQL's BufferAccessStrategy).  Each worker of a parallel scan
 * has one, so their rings do not evict each other's pages. */
struct BufAccessStrategy {
    int32_t *st_ring;      /* ring slots (frame or -1), or NULL: the whole pool */
    uint32_t st_ring_size; /* slots in the ring */
    uint32_t st_ring_used; /* slots reused in turn, the first ones: all, or as
                              many as io_uring's reads in flight need now */
    uint32_t st_ring_pos;  /* the next slot to reuse (below st_ring_used) */
    PageIO *st_io;         /* a strategy of bufmgr_strategy_new() with the worker
                              or io_uring: the scan's own (each is one
                              thread's); NULL: the buffer manager's bm_io */
};

/* The read access method's frames and their replacement. */
typedef struct BufPool {
    uint32_t bp_nframes;       /* frames */
    unsigned char *bp_frames;  /* bp_nframes * BLCKSZ, anonymous mmap */
    BufDesc *bp_desc;          /* a descriptor per frame */
    int32_t *bp_buckets;       /* hash heads */
    uint32_t bp_bucket_mask;   /* buckets - 1 (a power of two, 2x the frames) */
    uint32_t bp_hand;          /* clock-sweep hand (freelist.c) */
    bool bp_use_ring;          /* scans take a ring (the strategy, or auto and a
                                  table over a quarter of the pool) */
    pthread_cond_t bp_io_done; /* shared: broadcast when a read completes */
    uint32_t bp_io_waiters;    /* shared: threads waiting on bp_io_done */
    BufAccessStrategy bp_own;  /* the strategy of calls that bring none */
} BufPool;

/* The mmap access method's windows. */
typedef struct BufMap {
    MapSlot mp_slots[BM_MAX_WINDOWS];
    uint32_t mp_window_pages; /* pages per window */
    uint64_t mp_tick;         /* pins so far, for LRU */
    uint32_t mp_windows_max;  /* most windows mapped at once */
} BufMap;

struct BufMgr {
    RelFile bm_rel;                /* the relation's files */
    BufMgrOptions bm_opt;          /* as opened */
    const BufAccessMethods *bm_am; /* read or mmap, chosen at open */
    BufStats bm_stats;             /* the counters */
    uint32_t bm_combine;           /* pages one read may bring in */
    PageIO *bm_io;                 /* read access: how runs are read (sync may
                                      be shared; the worker and io_uring are
                                      one thread's: see bufmgr_strategy_new) */
    PageIOConfig bm_iocfg;         /* and how it was opened (each parallel
                                      scan's io_uring is opened the same way) */
    bool bm_checking;              /* check the invariants at every call */
    bool bm_shared;                /* used by several threads: calls lock */
    pthread_mutex_t bm_mutex;      /* the lock, when shared */
    struct ReadStream *bm_streams; /* streams not ended (readstream.c): freed at
                                      close if a scan was cut short (a SIGBUS) */
    union {
        BufPool bm_pool; /* read access */
        BufMap bm_map;   /* mmap access */
    };
};

/* bufmgr.c: verify page blkno (counting is the caller's, under its lock);
 * on failure fill err with the block and what is wrong.  On success *crc
 * (if crc is not NULL) is page_crc() of the page, a fingerprint of what
 * was verified. */
int bufmgr_verify(const BufMgr *bm, const void *page, uint64_t blkno, uint32_t *crc,
                  HsError *err);

/* bufmgr.c: count one verification and its outcome (rc). */
void bufmgr_count_verify(BufMgr *bm, int rc);

/* The buffer manager's lock, taken only when it is shared. */
static inline void bufmgr_lock(BufMgr *bm)
{
    if (bm->bm_shared)
        pthread_mutex_lock(&bm->bm_mutex);
}
static inline void bufmgr_unlock(BufMgr *bm)
{
    if (bm->bm_shared)
        pthread_mutex_unlock(&bm->bm_mutex);
}

/* bufmgr.c: check the invariants when checking is on (bufmgr_set_checking). */
void bufmgr_check(const BufMgr *bm);

/* readstream.c: free the streams of bm not ended (at close). */
void read_stream_free_all(BufMgr *bm);

/* The access methods (pool.c, mapped.c). */
extern const BufAccessMethods bufmgr_pool_methods;
extern const BufAccessMethods bufmgr_map_methods;

/* freelist.c: a frame to read a new page into for strategy st, invalidated
 * (an eviction is counted if it held one); -1 when every frame is pinned. */
int32_t freelist_victim(BufMgr *bm, BufAccessStrategy *st);

/* pool.c: forget what unpinned frame f holds. */
void pool_invalidate(BufMgr *bm, int32_t f);

#endif
