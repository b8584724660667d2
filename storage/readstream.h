/*
 * readstream.h -- the pages of a range of blocks, in block order, read
 *                 ahead of the caller (as PostgreSQL 17's read_stream.c).
 *
 * Entry points: read_stream_begin(), read_stream_next() (the next page,
 * pinned), read_stream_end().  Below it: the buffer manager's runs
 * (buf_internals.h) and the I/O method (pageio.h).  Above it: the SeqScan
 * node, which only ever asks for the next page.
 *
 * The stream owns the two decisions a scan's reads depend on:
 *   - I/O combining: a miss is read together with the blocks after it that
 *     the pool does not hold either, up to io-combine (a run), in one
 *     request;
 *   - look-ahead: with an I/O method that can have reads in flight, the
 *     next runs are started while the caller works on this one.  The I/O
 *     worker keeps at most one run's pages read and unused ahead of the
 *     caller besides the one in flight; io_uring keeps up to io-depth runs
 *     in flight, completed in any order, handed out in block order.  The
 *     frames must hold them: with a ring too small for two runs (io_uring:
 *     depth + 1), or a pool without a ring too small for three (depth + 2),
 *     the depth shrinks to what fits, down to no look-ahead -- it would
 *     evict its own pages before use (read_stream_depth()).
 * Pages started ahead stay pinned until handed out, so nothing evicts them;
 * a stream ended early waits for its reads in flight before it unpins
 * their frames, so no read lands in a frame that holds another page.
 */
#ifndef HEAPSCAN_READSTREAM_H
#define HEAPSCAN_READSTREAM_H

#include <stdint.h>

#include "bufmgr.h"

typedef struct ReadStream ReadStream;

/*
 * Start a stream of blocks [start, end) of bm's relation (end is clamped to
 * its size), its new pages going where strategy st says (NULL: bm's own;
 * each worker of a parallel scan brings its own).  bm keeps it on a list
 * until it is ended, so a scan cut short (a SIGBUS) leaks nothing once bm
 * is closed.  NULL with err filled when memory runs out.
 */
ReadStream *read_stream_begin(BufMgr *bm, BufAccessStrategy *st, uint64_t start,
                              uint64_t end, HsError *err);

/*
 * The next page: 1 with *buf (to bufmgr_release()), *page and *blkno
 * filled, 0 at the end, or a negative code with err naming the block.
 * HS_ECORRUPT (a page that failed verification) leaves the stream usable:
 * the next call goes on with the block after; any other error ends it.
 */
int read_stream_next(ReadStream *rs, Buffer *buf, const void **page, uint64_t *blkno,
                     HsError *err);

/* Reads a stream over bm through strategy st (NULL: bm's own) keeps in
 * flight ahead of its caller: 0 without look-ahead (sync, mmap, or frames
 * too few), up to 2 with the I/O worker, up to io-depth with io_uring. */
unsigned read_stream_depth(const BufMgr *bm, const BufAccessStrategy *st);

/* Wait for reads in flight, unpin the pages not handed out, and free the
 * stream (NULL is fine). */
void read_stream_end(ReadStream *rs);

#endif
