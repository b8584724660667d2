/*
 * mapped.c -- the mmap access method: pages are pointers into windows of
 *             the segment files mapped read-only, no copy (see
 *             buf_internals.h).
 *
 * Entry point: the bufmgr_map_methods table.  See also: pageio.c --
 * pageio_map() and pageio_unmap().  As LMDB puts it, the OS demand pager
 * reads the data in; what is kept here is which windows are mapped, how
 * many pins each has (a window is never unmapped while a page in it is
 * pinned), and which of its pages have been verified since it was mapped.
 * A window starts at a multiple of the window size within its segment, so
 * a page is always in exactly one window position.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf_internals.h"

/* The first block of the window that holds blkno. */
static uint64_t window_start(const BufMgr *bm, uint64_t blkno)
{
    uint64_t seg_first = blkno - blkno % bm->bm_rel.rf_seg_blocks;
    uint32_t w = bm->bm_map.mp_window_pages;
    return seg_first + (blkno - seg_first) / w * w;
}

/* A slot for a new window: a free one, else the least recently used
 * unpinned one (unmapped first).  -1 if every slot is pinned. */
static int free_slot(BufMgr *bm)
{
    BufMap *m = &bm->bm_map;
    int best = -1;
    for (int s = 0; s < BM_MAX_WINDOWS; s++) {
        MapSlot *ms = &m->mp_slots[s];
        if (ms->ms_win.pw_base == NULL)
            return s;
        if (ms->ms_pins == 0 && (best < 0 || ms->ms_lru < m->mp_slots[best].ms_lru))
            best = s;
    }
    if (best >= 0) {
        pageio_unmap(&m->mp_slots[best].ms_win);
        bm->bm_stats.bs_evictions++;
    }
    return best;
}

/* Map the window holding blkno into a free slot; its slot, or an error. */
static int map_window(BufMgr *bm, uint64_t blkno, HsError *err)
{
    BufMap *m = &bm->bm_map;
    int s = free_slot(bm);
    if (s < 0)
        return hs_error_set(err, -ENOBUFS, bm->bm_rel.rf_path, (int64_t)blkno,
                            "all %d mapped windows are pinned", BM_MAX_WINDOWS);
    MapSlot *ms = &m->mp_slots[s];
    int rc = pageio_map(&bm->bm_rel, window_start(bm, blkno), m->mp_window_pages,
                        bm->bm_opt.bo_advice, &ms->ms_win, err);
    if (rc < 0)
        return rc;
    memset(ms->ms_seen, 0, ((size_t)m->mp_window_pages + 63) / 64 * 8);
    bm->bm_stats.bs_read_calls++;
    bm->bm_stats.bs_bytes_read += ms->ms_win.pw_len;
    uint32_t mapped = 0;
    for (int i = 0; i < BM_MAX_WINDOWS; i++)
        mapped += m->mp_slots[i].ms_win.pw_base != NULL;
    if (mapped > m->mp_windows_max)
        bm->bm_stats.bs_frames_used = m->mp_windows_max = mapped;
    return s;
}

/* The slot whose window holds blkno, or -1. */
static int find_window(const BufMap *m, uint64_t blkno)
{
    for (int s = 0; s < BM_MAX_WINDOWS; s++) {
        const PageIOWindow *w = &m->mp_slots[s].ms_win;
        if (w->pw_base != NULL && blkno >= w->pw_first &&
            blkno < w->pw_first + w->pw_npages)
            return s;
    }
    return -1;
}

/* A run of blkno and the pages after it in its window (up to max, before
 * end), all pinned: nothing to read, the pager does that. */
static int map_start(BufMgr *bm, BufAccessStrategy *st, uint64_t blkno, uint32_t max,
                     uint64_t end, BufRun *run, HsError *err)
{
    (void)st; /* windows are per buffer manager: nothing to share */
    BufMap *m = &bm->bm_map;
    int s = find_window(m, blkno);
    if (s < 0 && (s = map_window(bm, blkno, err)) < 0)
        return s;
    MapSlot *ms = &m->mp_slots[s];
    uint64_t win_end = ms->ms_win.pw_first + ms->ms_win.pw_npages;
    uint32_t n = 0;
    for (; n < max && blkno + n < end && blkno + n < win_end; n++) {
        run->br_buf[n] = s;
        run->br_page[n] = (unsigned char *)ms->ms_win.pw_base +
                          (blkno + n - ms->ms_win.pw_first) * BLCKSZ;
    }
    ms->ms_pins += n;
    ms->ms_lru = ++m->mp_tick;
    run->br_blkno = blkno;
    run->br_npages = n;
    run->br_next = 0;
    run->br_io = run->br_async = false;
    run->br_req.pr_submitted = false;
    return 0;
}

static void map_complete(BufMgr *bm, BufRun *run, int rc)
{
    (void)bm, (void)run, (void)rc; /* a mapped run is never read */
    assert(!run->br_io);
}

/* Verify a page on its first touch since its window was mapped. */
static int map_accept(BufMgr *bm, BufRun *run, uint32_t i, HsError *err)
{
    MapSlot *ms = &bm->bm_map.mp_slots[run->br_buf[i]];
    uint64_t blkno = run->br_blkno + i, at = blkno - ms->ms_win.pw_first;
    uint64_t bit = UINT64_C(1) << (at % 64);
    if (ms->ms_seen[at / 64] & bit) {
        bm->bm_stats.bs_hits++;
        return 0;
    }
    if (bm->bm_opt.bo_verify) {
        int rc = bufmgr_verify(bm, run->br_page[i], blkno, &ms->ms_crc[at], err);
        bufmgr_count_verify(bm, rc);
        if (rc < 0) {
            ms->ms_pins--; /* not marked seen: asking again verifies again */
            return rc;
        }
    }
    ms->ms_seen[at / 64] |= bit;
    bm->bm_stats.bs_reads++;
    return 0;
}

/* The page is the file's: see whether a writer changed it since it was
 * verified (bufmgr_recheck()). */
static int map_recheck(BufMgr *bm, Buffer buf, const void *page, uint64_t blkno,
                       HsError *err)
{
    const MapSlot *ms = &bm->bm_map.mp_slots[buf];
    if (!bm->bm_opt.bo_verify)
        return 0;
    uint32_t now = page_crc(page, (uint32_t)blkno),
             then = ms->ms_crc[blkno - ms->ms_win.pw_first];
    if (now == then)
        return 0;
    bm->bm_stats.bs_verify_failures++;
    return hs_error_set(err, HS_ECORRUPT, bm->bm_rel.rf_path, (int64_t)blkno,
                        "the page changed while it was scanned (CRC-32 %08x when "
                        "verified, %08x after): the file was written in place under "
                        "the mapping",
                        (unsigned)then, (unsigned)now);
}

static void map_release(BufMgr *bm, Buffer buf)
{
    assert(buf >= 0 && buf < BM_MAX_WINDOWS && bm->bm_map.mp_slots[buf].ms_pins > 0);
    bm->bm_map.mp_slots[buf].ms_pins--;
}

static int map_open(BufMgr *bm, HsError *err)
{
    BufMap *m = &bm->bm_map;
    size_t chunk = bm->bm_opt.bo_mmap_chunk_bytes;
    m->mp_window_pages = chunk == 0 || chunk / BLCKSZ > bm->bm_rel.rf_seg_blocks
                             ? bm->bm_rel.rf_seg_blocks
                             : (uint32_t)(chunk / BLCKSZ);
    for (int s = 0; s < BM_MAX_WINDOWS; s++) {
        m->mp_slots[s].ms_seen = calloc(((size_t)m->mp_window_pages + 63) / 64, 8);
        m->mp_slots[s].ms_crc = calloc(m->mp_window_pages, sizeof(uint32_t));
        if (!m->mp_slots[s].ms_seen || !m->mp_slots[s].ms_crc)
            return hs_error_set(err, -ENOMEM, bm->bm_rel.rf_path, HS_NO_BLOCK,
                                "out of memory");
    }
    return 0;
}

static void map_close(BufMgr *bm)
{
    for (int s = 0; s < BM_MAX_WINDOWS; s++) {
        pageio_unmap(&bm->bm_map.mp_slots[s].ms_win);
        free(bm->bm_map.mp_slots[s].ms_seen);
        free(bm->bm_map.mp_slots[s].ms_crc);
    }
}

static uint32_t map_frames(const BufMgr *bm)
{
    return bm->bm_map.mp_window_pages;
}

static uint32_t map_pins_held(const BufMgr *bm)
{
    uint32_t pins = 0;
    for (int s = 0; s < BM_MAX_WINDOWS; s++)
        pins += bm->bm_map.mp_slots[s].ms_pins;
    return pins;
}

/* Async-signal-safe: it only reads the window table. */
static int map_block_of_address(const BufMgr *bm, const void *addr, uint64_t *blkno)
{
    const unsigned char *a = addr;
    for (int s = 0; s < BM_MAX_WINDOWS; s++) {
        const PageIOWindow *w = &bm->bm_map.mp_slots[s].ms_win;
        const unsigned char *base = w->pw_base;
        if (base != NULL && a >= base && a < base + w->pw_len) {
            *blkno = w->pw_first + (uint64_t)(a - base) / BLCKSZ;
            return 0;
        }
    }
    return -1;
}

/* A pinned window is mapped; windows do not overlap. */
static void map_check(const BufMgr *bm)
{
    const BufMap *m = &bm->bm_map;
    for (int s = 0; s < BM_MAX_WINDOWS; s++) {
        const PageIOWindow *w = &m->mp_slots[s].ms_win;
        assert(w->pw_base != NULL || m->mp_slots[s].ms_pins == 0);
        for (int t = s + 1; w->pw_base != NULL && t < BM_MAX_WINDOWS; t++) {
            const PageIOWindow *o = &m->mp_slots[t].ms_win;
            assert(o->pw_base == NULL || o->pw_first + o->pw_npages <= w->pw_first ||
                   w->pw_first + w->pw_npages <= o->pw_first);
            (void)o;
        }
        (void)w;
    }
}

const BufAccessMethods bufmgr_map_methods = {
    .am_open = map_open,
    .am_close = map_close,
    .am_start = map_start,
    .am_complete = map_complete,
    .am_accept = map_accept,
    .am_release = map_release,
    .am_recheck = map_recheck,
    .am_frames = map_frames,
    .am_pins_held = map_pins_held,
    .am_block_of_address = map_block_of_address,
    .am_check_state = map_check,
};
