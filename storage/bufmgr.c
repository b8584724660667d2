/*
 * bufmgr.c -- the buffer manager (see bufmgr.h).
 *
 * The two page access methods share verification and counters and differ
 * in where a page lives: read_*() functions keep frames, a hash and a clock
 * hand; mmap_*() functions keep a few mapped windows.  bufmgr_open() picks
 * one BufMethods table and every later call goes through it.
 */
#include "bufmgr.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "page.h"
#include "relfile.h"

#define BM_MAX_USAGE   5 /* as PostgreSQL's BM_MAX_USAGE_COUNT */
#define BM_MAX_WINDOWS 4 /* mmap windows kept mapped at once */

/* bd_flags */
#define BD_VALID      0x01 /* holds bd_blkno's page */
#define BD_VERIFIED   0x02 /* passed page_verify() since it was read */
#define BD_PREFETCHED 0x04 /* read ahead, not pinned yet: its first pin is no hit */
#define BD_EVER_USED  0x08 /* has held a page at some time */
#define BD_IN_FLIGHT  0x10 /* the I/O worker is reading it (pinned meanwhile) */

/* BufDesc: what the pool knows about one frame. */
typedef struct BufDesc {
    uint64_t bd_blkno; /* the block held, if BD_VALID */
    int32_t bd_next;   /* next frame in the same hash chain, or -1 */
    uint16_t bd_pins;  /* pins held by callers */
    uint8_t bd_usage;  /* clock-sweep usage count, 0..BM_MAX_USAGE */
    uint8_t bd_flags;  /* BD_* */
} BufDesc;

/* A mapped window and what has been looked at in it. */
typedef struct MapSlot {
    PageIOWindow ms_win; /* the mapping (ms_win.pw_base NULL if free) */
    uint32_t ms_pins;    /* pins of pages in it */
    uint64_t ms_lru;     /* tick of the last pin, for choosing what to unmap */
    uint64_t *ms_seen;   /* a bit per page: verified (or touched) since mapped */
} MapSlot;

typedef struct BufMethods {
    int (*read)(BufMgr *bm, uint64_t blkno, Buffer *buf, const void **page,
                HsError *err);
    void (*release)(BufMgr *bm, Buffer buf);
} BufMethods;

struct BufMgr {
    RelFile bm_rel;       /* the relation's files */
    BufMgrOptions bm_opt; /* as opened */
    const BufMethods *bm_methods;
    BufStats bm_stats;

    /* read access */
    uint32_t bm_nframes;      /* frames in the pool */
    unsigned char *bm_frames; /* bm_nframes * BLCKSZ, anonymous mmap */
    BufDesc *bm_desc;         /* a descriptor per frame */
    int32_t *bm_buckets;      /* hash heads, bm_nbuckets of them */
    uint32_t bm_bucket_mask;
    uint32_t bm_hand; /* clock-sweep hand */
    int32_t *bm_ring; /* ring slots (frame or -1), NULL if no ring */
    uint32_t bm_ring_size, bm_ring_pos;
    uint32_t bm_combine;                 /* pages one preadv may bring in */
    uint64_t bm_scan_start, bm_scan_end; /* the hinted sequential range */
    PageIOWorker *bm_worker;             /* reads ahead, or NULL */
    uint64_t bm_ahead_next;              /* the next block to read ahead */
    struct {
        uint32_t n;                                 /* pages */
        int32_t fr[BUFMGR_MAX_IO_COMBINE / BLCKSZ]; /* and their frames */
    } bm_flight[PAGEIO_QUEUE]; /* the worker's requests, oldest at bm_flight_head */
    uint32_t bm_flight_head, bm_nflights;

    /* mmap access */
    MapSlot bm_slots[BM_MAX_WINDOWS];
    uint32_t bm_window_pages; /* pages per window */
    uint64_t bm_tick;
    uint32_t bm_windows_max; /* most windows mapped at once */
};

/* ---- shared: verification ------------------------------------------- */

/* Verify page blkno; on failure count it and fill err. */
static int verify(BufMgr *bm, const void *page, uint64_t blkno, HsError *err)
{
    PageFault f;
    char msg[200];
    bm->bm_stats.bs_pages_verified++;
    if (page_verify(page, (uint32_t)blkno, bm->bm_opt.bo_checksum, &f) == PAGE_OK)
        return 0;
    bm->bm_stats.bs_verify_failures++;
    return hs_error_set(err, HS_ECORRUPT, bm->bm_rel.rf_path, (int64_t)blkno, "%s",
                        page_fault_describe(&f, msg, sizeof(msg)));
}

static int check_range(BufMgr *bm, uint64_t blkno, HsError *err)
{
    if (blkno < relfile_nblocks(&bm->bm_rel))
        return 0;
    return hs_error_set(err, -EINVAL, bm->bm_rel.rf_path, (int64_t)blkno,
                        "block beyond the end of the relation (%llu pages)",
                        (unsigned long long)relfile_nblocks(&bm->bm_rel));
}

/* ---- read access: hash ------------------------------------------------ */

static inline uint32_t bucket_of(const BufMgr *bm, uint64_t blkno)
{
    return (uint32_t)((blkno * UINT64_C(0x9E3779B97F4A7C15)) >> 32) &
           bm->bm_bucket_mask;
}

static int32_t hash_lookup(const BufMgr *bm, uint64_t blkno)
{
    for (int32_t f = bm->bm_buckets[bucket_of(bm, blkno)]; f >= 0;
         f = bm->bm_desc[f].bd_next)
        if (bm->bm_desc[f].bd_blkno == blkno)
            return f;
    return -1;
}

static void hash_insert(BufMgr *bm, int32_t f)
{
    uint32_t b = bucket_of(bm, bm->bm_desc[f].bd_blkno);
    bm->bm_desc[f].bd_next = bm->bm_buckets[b];
    bm->bm_buckets[b] = f;
}

static void hash_remove(BufMgr *bm, int32_t f)
{
    int32_t *link = &bm->bm_buckets[bucket_of(bm, bm->bm_desc[f].bd_blkno)];
    while (*link != f)
        link = &bm->bm_desc[*link].bd_next;
    *link = bm->bm_desc[f].bd_next;
}

/* Forget what frame f holds (it must be unpinned). */
static void invalidate(BufMgr *bm, int32_t f)
{
    if (bm->bm_desc[f].bd_flags & BD_VALID)
        hash_remove(bm, f);
    bm->bm_desc[f].bd_flags &= BD_EVER_USED;
    bm->bm_desc[f].bd_usage = 0;
}

/* ---- read access: choosing a victim ----------------------------------- */

/*
 * Clock sweep: advance the hand, decrementing usage counts of unpinned
 * frames, until an unpinned frame with usage 0 comes up.  If a whole turn
 * finds every frame pinned, fail rather than spin forever.
 */
static int32_t clock_sweep(BufMgr *bm)
{
    uint32_t pinned_in_a_row = 0;
    for (;;) {
        int32_t f = (int32_t)bm->bm_hand;
        bm->bm_hand = bm->bm_hand + 1 == bm->bm_nframes ? 0 : bm->bm_hand + 1;
        BufDesc *d = &bm->bm_desc[f];
        if (d->bd_pins > 0) {
            if (++pinned_in_a_row >= bm->bm_nframes)
                return -1;
            continue;
        }
        pinned_in_a_row = 0;
        if (d->bd_usage == 0)
            return f;
        d->bd_usage--;
    }
}

/*
 * A frame to read a new page into: from the ring when there is one (its
 * current slot, if unpinned and not used since; else a clock-sweep frame
 * that takes the slot over), else from the clock sweep.  The frame comes
 * back invalidated; an eviction is counted if it held a page.
 */
static int32_t get_victim(BufMgr *bm)
{
    int32_t f = -1;
    if (bm->bm_ring != NULL) {
        int32_t *slot = &bm->bm_ring[bm->bm_ring_pos];
        bm->bm_ring_pos = (bm->bm_ring_pos + 1) % bm->bm_ring_size;
        if (*slot >= 0 && bm->bm_desc[*slot].bd_pins == 0 &&
            bm->bm_desc[*slot].bd_usage <= 1)
            f = *slot;
        else if ((f = clock_sweep(bm)) >= 0)
            *slot = f;
    } else {
        f = clock_sweep(bm);
    }
    if (f < 0)
        return -1;
    if (bm->bm_desc[f].bd_flags & BD_VALID)
        bm->bm_stats.bs_evictions++;
    invalidate(bm, f);
    return f;
}

static unsigned char *frame_page(const BufMgr *bm, int32_t f)
{
    return bm->bm_frames + (size_t)f * BLCKSZ;
}

/*
 * Start loading every cache line of a page the scan will want next.  A
 * mapped page comes straight from the page cache in memory, and a page
 * kept in the pool may have left the CPU caches; the tuple loop alone keeps
 * only a few lines in flight (it waits on each line pointer's tuple in
 * turn), and prefetching the next page while this one is scanned hides
 * that.  A prefetch never faults, so this is only ever a hint.
 */
static inline void prefetch_page(const unsigned char *p)
{
    for (unsigned o = 0; o < BLCKSZ; o += 64)
        __builtin_prefetch(p + o);
}

/* ---- read access: the getter ------------------------------------------ */

/*
 * Claim frames for blocks start .. start + n - 1 of a read: up to the
 * io-combine limit, not past end, stopping at a block already in the pool.
 * The frames come back pinned (held while the read is in flight).
 */
static uint32_t claim_frames(BufMgr *bm, uint64_t start, uint64_t end, int32_t *fr,
                             void **pages)
{
    uint32_t n = 0;
    while (n < bm->bm_combine && start + n < end &&
           (n == 0 || hash_lookup(bm, start + n) < 0)) {
        int32_t f = get_victim(bm);
        if (f < 0)
            break;
        bm->bm_desc[f].bd_pins = 1;
        fr[n] = f;
        pages[n++] = frame_page(bm, f);
    }
    return n;
}

/* Enter claimed frames into the hash as holding start .. start + n - 1. */
static void enter_frames(BufMgr *bm, uint64_t start, uint32_t n, const int32_t *fr,
                         uint8_t flags)
{
    for (uint32_t i = 0; i < n; i++) {
        BufDesc *d = &bm->bm_desc[fr[i]];
        if (!(d->bd_flags & BD_EVER_USED))
            bm->bm_stats.bs_frames_used++;
        d->bd_blkno = start + i;
        d->bd_flags = BD_VALID | BD_EVER_USED | flags;
        hash_insert(bm, fr[i]);
    }
}

/*
 * A read of n frames is over: unpin them, and count it; on failure forget
 * what they were to hold.  Pages that arrived are marked prefetched, except
 * first_pinned (the caller's, pinned by read_read()).
 */
static void finish_frames(BufMgr *bm, uint32_t n, const int32_t *fr, int rc,
                          uint32_t calls, int32_t first_pinned)
{
    bm->bm_stats.bs_read_calls += calls;
    for (uint32_t i = 0; i < n; i++) {
        BufDesc *d = &bm->bm_desc[fr[i]];
        d->bd_pins = 0;
        if (rc < 0) {
            invalidate(bm, fr[i]);
            continue;
        }
        d->bd_flags &= (uint8_t)~BD_IN_FLIGHT;
        if (fr[i] != first_pinned)
            d->bd_flags |= BD_PREFETCHED;
    }
    if (rc == 0) {
        bm->bm_stats.bs_reads += n;
        bm->bm_stats.bs_bytes_read += (uint64_t)n * BLCKSZ;
    }
}

/*
 * Bring blkno in, and with it the following blocks of the hinted scan that
 * are not in the pool either, up to the io-combine limit, in one preadv.
 */
static int read_in(BufMgr *bm, uint64_t blkno, int32_t *frame, HsError *err)
{
    int32_t fr[BUFMGR_MAX_IO_COMBINE / BLCKSZ];
    void *pages[BUFMGR_MAX_IO_COMBINE / BLCKSZ];
    uint32_t calls = 0;
    bool in_scan = blkno >= bm->bm_scan_start && blkno < bm->bm_scan_end;

    uint32_t n =
        claim_frames(bm, blkno, in_scan ? bm->bm_scan_end : blkno + 1, fr, pages);
    if (n == 0)
        return hs_error_set(err, -ENOBUFS, bm->bm_rel.rf_path, (int64_t)blkno,
                            "no unpinned buffers available (%u frames)",
                            bm->bm_nframes);
    int rc = relfile_readv(&bm->bm_rel, blkno, n, pages, &calls, err);
    if (rc == 0)
        enter_frames(bm, blkno, n, fr, 0);
    finish_frames(bm, n, fr, rc, calls, fr[0]);
    if (rc < 0)
        return rc;
    if (in_scan)
        bm->bm_ahead_next = blkno + n;
    *frame = fr[0];
    return 0;
}

static int finish_flight(BufMgr *bm, HsError *err);

/* After a failed request: finish the rest, so no frame stays pinned by a
 * read nobody will wait for (their results do not matter now). */
static void drain_flights(BufMgr *bm)
{
    while (bm->bm_nflights > 0)
        finish_flight(bm, NULL);
}

/* Wait for the worker's oldest request and make its frames ordinary ones. */
static int finish_flight(BufMgr *bm, HsError *err)
{
    uint32_t calls = 0;
    int rc = pageio_worker_wait(bm->bm_worker, &calls, err);
    uint32_t h = bm->bm_flight_head;
    finish_frames(bm, bm->bm_flight[h].n, bm->bm_flight[h].fr, rc, calls, -1);
    bm->bm_flight_head = (h + 1) % PAGEIO_QUEUE;
    bm->bm_nflights--;
    return rc;
}

/*
 * Within a hinted scan, when less than a batch lies read ahead of blkno,
 * hand the next batch to the worker: then at most one batch ahead of blkno
 * is unused or in flight besides the new one, so with a ring of two batches
 * read-ahead never evicts pages it read itself before they are used.  That
 * batch may still be in flight: the new one is queued behind it.
 */
static void read_ahead(BufMgr *bm, uint64_t blkno)
{
    if (bm->bm_worker == NULL || bm->bm_nflights == PAGEIO_QUEUE ||
        blkno < bm->bm_scan_start || blkno >= bm->bm_scan_end)
        return;
    if (bm->bm_ring != NULL && bm->bm_ring_size < 2 * bm->bm_combine)
        return;
    /* a pool's clock sweep takes unused read-ahead pages first (their usage
     * count is 0): only with room for more than two batches do they wait */
    if (bm->bm_ring == NULL && bm->bm_nframes < 3 * bm->bm_combine)
        return;
    uint64_t start = bm->bm_ahead_next > blkno ? bm->bm_ahead_next : blkno + 1;
    if (start - blkno > bm->bm_combine)
        return; /* a batch is already ahead */
    while (start < bm->bm_scan_end && start <= blkno + 2 * bm->bm_combine &&
           hash_lookup(bm, start) >= 0)
        start++;
    if (start >= bm->bm_scan_end || hash_lookup(bm, start) >= 0)
        return;

    void *pages[BUFMGR_MAX_IO_COMBINE / BLCKSZ];
    uint32_t t = (bm->bm_flight_head + bm->bm_nflights) % PAGEIO_QUEUE;
    uint32_t n = claim_frames(bm, start, bm->bm_scan_end, bm->bm_flight[t].fr, pages);
    if (n == 0)
        return;
    enter_frames(bm, start, n, bm->bm_flight[t].fr, BD_IN_FLIGHT);
    bm->bm_flight[t].n = n;
    bm->bm_nflights++;
    bm->bm_ahead_next = start + n;
    pageio_worker_submit(bm->bm_worker, start, n, pages);
}

static int read_read(BufMgr *bm, uint64_t blkno, Buffer *buf, const void **page,
                     HsError *err)
{
    int rc;
    if ((rc = check_range(bm, blkno, err)) < 0)
        return rc;
    int32_t f = hash_lookup(bm, blkno);
    if (f >= 0 && (bm->bm_desc[f].bd_flags & BD_IN_FLIGHT)) {
        /* queue the next batch first, so the worker goes on without a pause */
        read_ahead(bm, blkno);
        while (bm->bm_desc[f].bd_flags & BD_IN_FLIGHT) {
            if ((rc = finish_flight(bm, err)) < 0) {
                drain_flights(bm);
                return rc;
            }
        }
    }
    if (f >= 0) {
        bool fresh = bm->bm_desc[f].bd_flags & BD_PREFETCHED;
        if (fresh)
            bm->bm_desc[f].bd_flags &= (uint8_t)~BD_PREFETCHED; /* counted as read */
        else
            bm->bm_stats.bs_hits++;
        /* a page kept in the pool may have left the CPU caches long ago, and
         * one the worker read is in the other core's; one this thread read
         * just now is still in its own */
        if ((!fresh || bm->bm_worker != NULL) && blkno + 1 < bm->bm_scan_end) {
            int32_t next = hash_lookup(bm, blkno + 1);
            if (next >= 0 && !(bm->bm_desc[next].bd_flags & BD_IN_FLIGHT))
                prefetch_page(frame_page(bm, next));
        }
    } else if ((rc = read_in(bm, blkno, &f, err)) < 0) {
        return rc;
    }
    BufDesc *d = &bm->bm_desc[f];
    if (bm->bm_opt.bo_verify && !(d->bd_flags & BD_VERIFIED)) {
        if ((rc = verify(bm, frame_page(bm, f), blkno, err)) < 0) {
            if (d->bd_pins == 0)
                invalidate(bm, f); /* not kept: asking again reads it again */
            return rc;
        }
        d->bd_flags |= BD_VERIFIED;
    }
    d->bd_pins++;
    /* a ring reuses a frame only if nobody else has used it: count to 1 at most */
    if (bm->bm_ring != NULL ? d->bd_usage == 0 : d->bd_usage < BM_MAX_USAGE)
        d->bd_usage++;
    *buf = f;
    *page = frame_page(bm, f);
    read_ahead(bm, blkno);
    return 0;
}

static void read_release(BufMgr *bm, Buffer buf)
{
    bm->bm_desc[buf].bd_pins--;
}

static const BufMethods read_methods = {read_read, read_release};

/* ---- mmap access ------------------------------------------------------- */

/* The window that holds blkno starts at a multiple of the window size
 * within blkno's segment. */
static uint64_t window_start(const BufMgr *bm, uint64_t blkno)
{
    uint64_t seg_first = blkno - blkno % bm->bm_rel.rf_seg_blocks;
    return seg_first + (blkno - seg_first) / bm->bm_window_pages * bm->bm_window_pages;
}

/* A slot for a new window: a free one, else the least recently used
 * unpinned one (unmapped first). -1 if every slot is pinned. */
static int free_slot(BufMgr *bm)
{
    int best = -1;
    for (int s = 0; s < BM_MAX_WINDOWS; s++) {
        MapSlot *ms = &bm->bm_slots[s];
        if (ms->ms_win.pw_base == NULL)
            return s;
        if (ms->ms_pins == 0 && (best < 0 || ms->ms_lru < bm->bm_slots[best].ms_lru))
            best = s;
    }
    if (best >= 0) {
        pageio_unmap(&bm->bm_slots[best].ms_win);
        bm->bm_stats.bs_evictions++;
    }
    return best;
}

static int mmap_read(BufMgr *bm, uint64_t blkno, Buffer *buf, const void **page,
                     HsError *err)
{
    int rc, s;
    if ((rc = check_range(bm, blkno, err)) < 0)
        return rc;
    for (s = 0; s < BM_MAX_WINDOWS; s++) {
        const PageIOWindow *w = &bm->bm_slots[s].ms_win;
        if (w->pw_base != NULL && blkno >= w->pw_first &&
            blkno < w->pw_first + w->pw_npages)
            break;
    }
    if (s == BM_MAX_WINDOWS) {
        if ((s = free_slot(bm)) < 0)
            return hs_error_set(err, -ENOBUFS, bm->bm_rel.rf_path, (int64_t)blkno,
                                "all %d mapped windows are pinned", BM_MAX_WINDOWS);
        MapSlot *ms = &bm->bm_slots[s];
        if ((rc = pageio_map(&bm->bm_rel, window_start(bm, blkno), bm->bm_window_pages,
                             bm->bm_opt.bo_advice, &ms->ms_win, err)) < 0)
            return rc;
        memset(ms->ms_seen, 0, ((size_t)bm->bm_window_pages + 63) / 64 * 8);
        bm->bm_stats.bs_read_calls++;
        bm->bm_stats.bs_bytes_read += ms->ms_win.pw_len;
        uint32_t mapped = 0;
        for (int i = 0; i < BM_MAX_WINDOWS; i++)
            mapped += bm->bm_slots[i].ms_win.pw_base != NULL;
        if (mapped > bm->bm_windows_max)
            bm->bm_stats.bs_frames_used = bm->bm_windows_max = mapped;
    }
    MapSlot *ms = &bm->bm_slots[s];
    uint64_t i = blkno - ms->ms_win.pw_first;
    const unsigned char *p = (const unsigned char *)ms->ms_win.pw_base + i * BLCKSZ;
    uint64_t bit = UINT64_C(1) << (i % 64);
    if (!(ms->ms_seen[i / 64] & bit)) {
        if (bm->bm_opt.bo_verify && (rc = verify(bm, p, blkno, err)) < 0)
            return rc; /* not marked seen: asking again verifies again */
        ms->ms_seen[i / 64] |= bit;
        bm->bm_stats.bs_reads++;
        if (i + 1 < ms->ms_win.pw_npages)
            prefetch_page(p + BLCKSZ);
    } else {
        bm->bm_stats.bs_hits++;
    }
    ms->ms_pins++;
    ms->ms_lru = ++bm->bm_tick;
    *buf = s;
    *page = p;
    return 0;
}

static void mmap_release(BufMgr *bm, Buffer buf)
{
    bm->bm_slots[buf].ms_pins--;
}

static const BufMethods mmap_methods = {mmap_read, mmap_release};

/* ---- opening and closing ----------------------------------------------- */

const char *const bufmgr_access_names[] = {
    [BUF_ACCESS_READ] = "read", [BUF_ACCESS_MMAP] = "mmap", [BUF_ACCESS_MMAP + 1] = NULL};

const char *bufmgr_access_name(BufAccess a)
{
    return bufmgr_access_names[a];
}

const char *const bufmgr_strategy_names[] = {[BUF_STRATEGY_AUTO] = "auto",
                                             [BUF_STRATEGY_NORMAL] = "normal",
                                             [BUF_STRATEGY_RING] = "ring",
                                             [BUF_STRATEGY_RING + 1] = NULL};

const char *bufmgr_strategy_name(BufStrategy s)
{
    return bufmgr_strategy_names[s];
}

void bufmgr_default_options(BufMgrOptions *o)
{
    *o = (BufMgrOptions){
        .bo_access = BUF_ACCESS_READ,
        .bo_pool_bytes = BUFMGR_DEFAULT_POOL,
        .bo_ring_bytes = BUFMGR_DEFAULT_RING,
        .bo_strategy = BUF_STRATEGY_AUTO,
        .bo_io_combine_bytes = BUFMGR_DEFAULT_IO_COMBINE,
        .bo_mmap_chunk_bytes = BUFMGR_DEFAULT_MMAP_CHUNK,
        .bo_advice = PAGEIO_ADV_NORMAL,
        .bo_verify = true,
        .bo_checksum = PAGE_CHECKSUM_HEAPSCAN,
        .bo_io_workers = BUFMGR_IO_WORKERS_AUTO,
        .bo_seg_blocks = RELFILE_SEG_BLOCKS,
    };
}

static int check_options(const BufMgrOptions *o, const char *path, HsError *err)
{
    const char *bad = NULL;
    if (o->bo_pool_bytes < 16 * BLCKSZ || o->bo_pool_bytes % BLCKSZ != 0 ||
        o->bo_pool_bytes / BLCKSZ > BUFMGR_MAX_FRAMES)
        bad = "the pool must be a whole number of pages, at least 16 and at most 8 TiB";
    else if (o->bo_ring_bytes < BLCKSZ || o->bo_ring_bytes % BLCKSZ != 0 ||
             o->bo_ring_bytes > o->bo_pool_bytes / 2)
        bad = "the ring must be a whole number of pages, at most half the pool";
    else if (o->bo_io_combine_bytes < BLCKSZ || o->bo_io_combine_bytes % BLCKSZ != 0 ||
             o->bo_io_combine_bytes > BUFMGR_MAX_IO_COMBINE)
        bad = "io-combine must be a whole number of pages up to 1 MiB";
    else if (o->bo_io_workers < BUFMGR_IO_WORKERS_AUTO || o->bo_io_workers > 1)
        bad = "io-workers must be 0, 1 or auto";
    else if ((unsigned)o->bo_checksum > PAGE_CHECKSUM_NONE)
        bad = "the checksum must be heapscan, postgres or none";
    else if (o->bo_mmap_chunk_bytes % BLCKSZ != 0)
        bad = "the mmap chunk must be a whole number of pages";
    else if (o->bo_access == BUF_ACCESS_READ &&
             o->bo_io_combine_bytes > o->bo_ring_bytes &&
             o->bo_strategy != BUF_STRATEGY_NORMAL)
        bad = "io-combine must not exceed the ring";
    if (bad)
        return hs_error_set(err, HS_EUSAGE, path, HS_NO_BLOCK, "%s", bad);
    return 0;
}

static int open_read(BufMgr *bm, HsError *err)
{
    const BufMgrOptions *o = &bm->bm_opt;
    bm->bm_nframes = (uint32_t)(o->bo_pool_bytes / BLCKSZ);
    bm->bm_combine = (uint32_t)(o->bo_io_combine_bytes / BLCKSZ);
    uint32_t nb = 1;
    while (nb < bm->bm_nframes * 2)
        nb <<= 1;
    bm->bm_bucket_mask = nb - 1;

    /* anonymous memory: frames cost RSS only once a page lands in them */
    bm->bm_frames = mmap(NULL, o->bo_pool_bytes, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    bm->bm_desc = calloc(bm->bm_nframes, sizeof(BufDesc));
    bm->bm_buckets = malloc((size_t)nb * sizeof(int32_t));
    if (bm->bm_frames == MAP_FAILED || !bm->bm_desc || !bm->bm_buckets) {
        if (bm->bm_frames == MAP_FAILED)
            bm->bm_frames = NULL;
        return hs_error_set(err, -ENOMEM, bm->bm_rel.rf_path, HS_NO_BLOCK,
                            "cannot allocate a pool of %zu bytes", o->bo_pool_bytes);
    }
    memset(bm->bm_buckets, 0xff, (size_t)nb * sizeof(int32_t));

    bool ring = o->bo_strategy == BUF_STRATEGY_RING ||
                (o->bo_strategy == BUF_STRATEGY_AUTO &&
                 relfile_nblocks(&bm->bm_rel) > bm->bm_nframes / 4);
    if (ring) {
        bm->bm_ring_size = (uint32_t)(o->bo_ring_bytes / BLCKSZ);
        bm->bm_ring = malloc(bm->bm_ring_size * sizeof(int32_t));
        if (!bm->bm_ring)
            return hs_error_set(err, -ENOMEM, bm->bm_rel.rf_path, HS_NO_BLOCK,
                                "out of memory");
        memset(bm->bm_ring, 0xff, bm->bm_ring_size * sizeof(int32_t));
    }
    /*
     * auto: a worker when pages are verified and this thread may run on a
     * second CPU.  Without verification the worker is no steady gain here:
     * the scan then mostly waits for the copy, and depending on where the
     * host puts the two vCPUs the pipeline ran from 0.91x to 1.80x of a
     * 1 MiB read() loop, against 1.22-1.44x reading in line (README).
     */
    cpu_set_t cpus;
    bool second_cpu =
        sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) > 1;
    if (o->bo_io_workers > 0 ||
        (o->bo_io_workers == BUFMGR_IO_WORKERS_AUTO && o->bo_verify && second_cpu))
        bm->bm_worker = pageio_worker_start(&bm->bm_rel); /* none: read in line */
    bm->bm_methods = &read_methods;
    return 0;
}

static int open_mmap(BufMgr *bm, HsError *err)
{
    size_t chunk = bm->bm_opt.bo_mmap_chunk_bytes;
    bm->bm_window_pages = chunk == 0 || chunk / BLCKSZ > bm->bm_rel.rf_seg_blocks
                              ? bm->bm_rel.rf_seg_blocks
                              : (uint32_t)(chunk / BLCKSZ);
    for (int s = 0; s < BM_MAX_WINDOWS; s++) {
        bm->bm_slots[s].ms_seen = calloc(((size_t)bm->bm_window_pages + 63) / 64, 8);
        if (!bm->bm_slots[s].ms_seen)
            return hs_error_set(err, -ENOMEM, bm->bm_rel.rf_path, HS_NO_BLOCK,
                                "out of memory");
    }
    bm->bm_methods = &mmap_methods;
    return 0;
}

/* Block 0 must at least look like a PostgreSQL page, or this is no heap table. */
static int check_heap_header(BufMgr *bm, HsError *err)
{
    _Alignas(8) unsigned char page[BLCKSZ];
    int rc = relfile_read(&bm->bm_rel, 0, 1, page, err);
    if (rc < 0)
        return rc;
    PageFault f;
    if (page_verify(page, 0, PAGE_CHECKSUM_NONE, &f) == PAGE_BAD_HEADER) {
        const PageHeaderData *h = page_header(page);
        if (h->pd_pagesize_version != PAGE_SIZE_VERSION)
            return hs_error_set(err, HS_ENOTHEAP, bm->bm_rel.rf_path, 0,
                                "not a heap table: no PostgreSQL page header "
                                "(pd_pagesize_version 0x%04x, expected 0x%04x)",
                                h->pd_pagesize_version, PAGE_SIZE_VERSION);
    }
    return 0;
}

int bufmgr_open(BufMgr **out, const char *path, const BufMgrOptions *o, HsError *err)
{
    int rc;
    *out = NULL;
    if ((rc = check_options(o, path, err)) < 0)
        return rc;
    BufMgr *bm = calloc(1, sizeof(*bm));
    if (bm == NULL)
        return hs_error_set(err, -ENOMEM, path, HS_NO_BLOCK, "out of memory");
    bm->bm_opt = *o;
    if ((rc = relfile_open(&bm->bm_rel, path, o->bo_seg_blocks, err)) < 0) {
        free(bm);
        return rc;
    }
    if (relfile_nblocks(&bm->bm_rel) == 0) {
        rc = hs_error_set(err, HS_ENOTHEAP, path, HS_NO_BLOCK,
                          "empty file: not a heap table (no pages)");
        goto fail;
    }
    if ((rc = check_heap_header(bm, err)) < 0)
        goto fail;
    rc = o->bo_access == BUF_ACCESS_MMAP ? open_mmap(bm, err) : open_read(bm, err);
    if (rc < 0)
        goto fail;
    *out = bm;
    return 0;
fail:
    bufmgr_close(bm);
    return rc;
}

void bufmgr_close(BufMgr *bm)
{
    if (bm == NULL)
        return;
    pageio_worker_stop(bm->bm_worker); /* before its frames go away */
    for (int s = 0; s < BM_MAX_WINDOWS; s++) {
        pageio_unmap(&bm->bm_slots[s].ms_win);
        free(bm->bm_slots[s].ms_seen);
    }
    if (bm->bm_frames)
        munmap(bm->bm_frames, bm->bm_opt.bo_pool_bytes);
    free(bm->bm_desc);
    free(bm->bm_buckets);
    free(bm->bm_ring);
    relfile_close(&bm->bm_rel);
    free(bm);
}

/* ---- the rest of the interface ---------------------------------------- */

int bufmgr_read(BufMgr *bm, uint64_t blkno, Buffer *buf, const void **page,
                HsError *err)
{
    return bm->bm_methods->read(bm, blkno, buf, page, err);
}

void bufmgr_release(BufMgr *bm, Buffer buf)
{
    bm->bm_methods->release(bm, buf);
}

void bufmgr_scan_hint(BufMgr *bm, uint64_t start, uint64_t end)
{
    bm->bm_scan_start = start;
    bm->bm_scan_end = end;
    bm->bm_ahead_next = start;
}

uint64_t bufmgr_nblocks(const BufMgr *bm)
{
    return relfile_nblocks(&bm->bm_rel);
}

bool bufmgr_uses_ring(const BufMgr *bm)
{
    return bm->bm_ring != NULL;
}

int bufmgr_io_workers(const BufMgr *bm)
{
    return bm->bm_worker != NULL;
}

uint32_t bufmgr_frames(const BufMgr *bm)
{
    return bm->bm_methods == &read_methods ? bm->bm_nframes : bm->bm_window_pages;
}

const BufStats *bufmgr_stats(const BufMgr *bm)
{
    return &bm->bm_stats;
}

const char *bufmgr_path(const BufMgr *bm)
{
    return bm->bm_rel.rf_path;
}

uint32_t bufmgr_pins_held(const BufMgr *bm)
{
    uint32_t pins = 0;
    if (bm->bm_methods == &read_methods)
        for (uint32_t f = 0; f < bm->bm_nframes; f++)
            pins += bm->bm_desc[f].bd_pins;
    else
        for (int s = 0; s < BM_MAX_WINDOWS; s++)
            pins += bm->bm_slots[s].ms_pins;
    return pins;
}

int bufmgr_block_of_address(const BufMgr *bm, const void *addr, uint64_t *blkno)
{
    const unsigned char *a = addr;
    for (int s = 0; s < BM_MAX_WINDOWS; s++) {
        const PageIOWindow *w = &bm->bm_slots[s].ms_win;
        const unsigned char *base = w->pw_base;
        if (base != NULL && a >= base && a < base + w->pw_len) {
            *blkno = w->pw_first + (uint64_t)(a - base) / BLCKSZ;
            return 0;
        }
    }
    return -1;
}
