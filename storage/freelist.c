/*
 * freelist.c -- which frame of the pool a new page goes into: the clock
 *               sweep, and the bulk-read ring (see buf_internals.h).
 *
 * Entry point: freelist_victim(), with the pool's lock held when it is
 * shared.  See also: pool.c -- the frames and their descriptors.  As PostgreSQL's
 * freelist.c: victims by clock sweep over usage counts, and for a scan larger than a
 * quarter of the pool a small ring of frames recycled in turn (256 KiB, so it stays in
 * the L2 cache), so one scan does not push everything else out of the pool.
 */
#include "buf_internals.h"

/*
 * Clock sweep: advance the hand, decrementing usage counts of unpinned
 * frames, until an unpinned frame with usage 0 comes up.  If a whole turn
 * finds every frame pinned, fail rather than spin forever.
 */
static int32_t clock_sweep(BufPool *p)
{
    uint32_t pinned_in_a_row = 0;
    for (;;) {
        int32_t f = (int32_t)p->bp_hand;
        p->bp_hand = p->bp_hand + 1 == p->bp_nframes ? 0 : p->bp_hand + 1;
        BufDesc *d = &p->bp_desc[f];
        if (d->bd_pins > 0) {
            if (++pinned_in_a_row >= p->bp_nframes)
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
 * From the ring when there is one: its current slot's frame, if unpinned
 * and not used by anyone else since (usage at most 1), else a clock-sweep
 * frame that takes the slot over.  Without a ring, the clock sweep's.
 */
int32_t freelist_victim(BufMgr *bm, BufAccessStrategy *st)
{
    BufPool *p = &bm->bm_pool;
    int32_t f = -1;
    if (st->st_ring != NULL) {
        int32_t *slot = &st->st_ring[st->st_ring_pos];
        st->st_ring_pos = (st->st_ring_pos + 1) % st->st_ring_used;
        if (*slot >= 0 && p->bp_desc[*slot].bd_pins == 0 &&
            p->bp_desc[*slot].bd_usage <= 1)
            f = *slot;
        else if ((f = clock_sweep(p)) >= 0)
            *slot = f;
    } else {
        f = clock_sweep(p);
    }
    if (f < 0)
        return -1;
    if (p->bp_desc[f].bd_flags & BD_VALID)
        bm->bm_stats.bs_evictions++;
    pool_invalidate(bm, f);
    return f;
}
