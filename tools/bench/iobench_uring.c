/*
 * iobench_uring.c -- the read() vs mmap() benchmark's third contender:
 *                    seq-read and rnd-rw through io_uring, ic_depth
 *                    operations in flight (see iobench_run.h).
 *
 * Entry point: iob_uring_work(), called by iobench_run.c's run once the
 * file is open.  See also: storage/pageio_uring.c -- the scan's io_uring.
 *
 * Each operation in flight has a slot and a buffer of its own (page
 * aligned, as fio's).  Reads are counted as they complete, in any order:
 * the sum of their first words does not depend on it.  rnd-rw keeps its
 * invariant (every method leaves the same file, every read sees the
 * writes before it) by never putting two operations on one block in
 * flight: an operation on a block that is waits for it first.  A short
 * transfer is resubmitted for the rest; an error or an end of file fails
 * the run naming the block, after every operation in flight is back.
 */
#include "iobench_run.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#if HEAPSCAN_HAVE_URING

#include <liburing.h>

/* One operation in flight, or a free slot (us_busy false). */
typedef struct IobSlot {
    bool us_busy;          /* in flight */
    bool us_write;         /* a write (else a read) */
    uint64_t us_block;     /* its block number */
    uint64_t us_off;       /* its file offset */
    size_t us_len;         /* its bytes */
    size_t us_done;        /* bytes moved so far */
    unsigned char *us_buf; /* its buffer */
} IobSlot;

/* A run's ring and slots. */
typedef struct IobRing {
    const IobConfig *ir_cfg; /* what is run */
    int ir_fd;               /* the file */
    struct io_uring ir_ring; /* the ring */
    IobSlot *ir_slot;        /* ic_depth slots */
    unsigned ir_busy;        /* slots in flight */
    unsigned char *ir_wbase; /* the write buffer before its stamps */
    IobResult *ir_res;       /* the counts */
    int ir_rc;               /* the first failure, or 0 */
    HsError *ir_err;         /* and where it is told */
} IobRing;

/* Queue slot s's transfer (of what is left of it). */
static void queue_slot(IobRing *r, IobSlot *s)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ir_ring);
    if (sqe == NULL) { /* never: the ring has a place per slot */
        io_uring_submit(&r->ir_ring);
        sqe = io_uring_get_sqe(&r->ir_ring);
    }
    if (s->us_write)
        io_uring_prep_write(sqe, r->ir_fd, s->us_buf + s->us_done,
                            (unsigned)(s->us_len - s->us_done), s->us_off + s->us_done);
    else
        io_uring_prep_read(sqe, r->ir_fd, s->us_buf + s->us_done,
                           (unsigned)(s->us_len - s->us_done), s->us_off + s->us_done);
    io_uring_sqe_set_data(sqe, s);
}

/* Slot s's operation is done: count it, free the slot. */
static void count_done(IobRing *r, IobSlot *s)
{
    if (s->us_write) {
        r->ir_res->ir_writes++;
    } else {
        uint64_t w;
        memcpy(&w, s->us_buf, sizeof(w)); /* a block is at least 32 bytes */
        r->ir_res->ir_sum += w;
        r->ir_res->ir_reads++;
    }
    r->ir_res->ir_bytes += s->us_len;
    s->us_busy = false;
    r->ir_busy--;
}

/* One completion: done, resubmitted for the rest, or the run's failure. */
static void complete(IobRing *r, struct io_uring_cqe *cqe)
{
    IobSlot *s = io_uring_cqe_get_data(cqe);
    int res = cqe->res;
    io_uring_cqe_seen(&r->ir_ring, cqe);
    if (res == -EAGAIN || res == -EINTR ||
        (res > 0 && s->us_done + (size_t)res < s->us_len)) {
        s->us_done += res > 0 ? (size_t)res : 0;
        queue_slot(r, s);
        return;
    }
    if (res > 0) {
        count_done(r, s);
        return;
    }
    if (r->ir_rc == 0)
        r->ir_rc = hs_error_set(r->ir_err, res < 0 ? res : -EIO, r->ir_cfg->ic_path,
                                (int64_t)s->us_block, "%s (io_uring): %s",
                                s->us_write ? "write" : "read",
                                res < 0 ? strerror(-res) : "short transfer");
    s->us_busy = false;
    r->ir_busy--;
}

/* Submit what is queued and take at least one completion, then all that
 * are there. */
static void reap(IobRing *r)
{
    struct io_uring_cqe *cqe;
    int rc = io_uring_submit_and_wait(&r->ir_ring, 1);
    if (rc < 0 && rc != -EINTR && r->ir_rc == 0)
        r->ir_rc = hs_error_set(r->ir_err, rc, r->ir_cfg->ic_path, HS_NO_BLOCK,
                                "io_uring_enter: %s", strerror(-rc));
    while (io_uring_peek_cqe(&r->ir_ring, &cqe) == 0)
        complete(r, cqe);
}

/* Whether an operation on block b is in flight. */
static bool in_flight(const IobRing *r, uint64_t b)
{
    for (unsigned k = 0; k < r->ir_cfg->ic_depth; k++)
        if (r->ir_slot[k].us_busy && r->ir_slot[k].us_block == b)
            return true;
    return false;
}

/* Start operation i (0-based) on block b, len bytes; a write when write. */
static void start(IobRing *r, uint64_t i, uint64_t b, size_t len, bool write)
{
    while (r->ir_rc == 0 && (r->ir_busy == r->ir_cfg->ic_depth || in_flight(r, b)))
        reap(r);
    if (r->ir_rc != 0)
        return;
    IobSlot *s = r->ir_slot;
    while (s->us_busy)
        s++;
    *s = (IobSlot){.us_busy = true,
                   .us_write = write,
                   .us_block = b,
                   .us_off = b * r->ir_cfg->ic_block,
                   .us_len = len,
                   .us_buf = s->us_buf};
    if (write) {
        memcpy(s->us_buf, r->ir_wbase, len);
        iob_stamp_write(r->ir_cfg, s->us_buf, i);
    }
    r->ir_busy++;
    queue_slot(r, s);
}

/* The operations: every block in order, or rnd-rw's sequence (two draws an
 * operation, as rnd_rw() in iobench_run.c). */
static void run_ops(IobRing *r, uint64_t size)
{
    const IobConfig *cfg = r->ir_cfg;
    size_t bs = cfg->ic_block;
    if (cfg->ic_test == IOB_SEQ_READ) {
        for (uint64_t b = 0; b * bs < size && r->ir_rc == 0; b++)
            start(r, b, b, size - b * bs < bs ? (size_t)(size - b * bs) : bs, false);
    } else {
        uint64_t nblocks = size / bs, state = cfg->ic_seed;
        for (uint64_t i = 0; i < cfg->ic_ops && r->ir_rc == 0; i++) {
            uint64_t b = iob_next(&state) % nblocks;
            bool write = iob_next(&state) % 100 < cfg->ic_write_pct;
            start(r, i, b, bs, write);
        }
    }
    while (r->ir_busy > 0) /* the buffers stay until the kernel is done */
        reap(r);
}

/* The slots and their buffers (a slot's and the write base, page aligned). */
static int alloc_slots(IobRing *r, HsError *err)
{
    size_t len = (r->ir_cfg->ic_block + 4095) / 4096 * 4096;
    r->ir_slot = calloc(r->ir_cfg->ic_depth, sizeof(IobSlot));
    r->ir_wbase = aligned_alloc(4096, len);
    for (unsigned k = 0; r->ir_slot != NULL && k < r->ir_cfg->ic_depth; k++)
        if ((r->ir_slot[k].us_buf = aligned_alloc(4096, len)) == NULL)
            break;
    if (r->ir_slot == NULL || r->ir_wbase == NULL ||
        r->ir_slot[r->ir_cfg->ic_depth - 1].us_buf == NULL)
        return hs_error_set(err, -ENOMEM, r->ir_cfg->ic_path, HS_NO_BLOCK,
                            "out of memory");
    iob_fill_write_buffer(r->ir_cfg, r->ir_wbase);
    return 0;
}

static void free_slots(IobRing *r)
{
    for (unsigned k = 0; r->ir_slot != NULL && k < r->ir_cfg->ic_depth; k++)
        free(r->ir_slot[k].us_buf);
    free(r->ir_slot);
    free(r->ir_wbase);
}

int iob_uring_work(const IobConfig *cfg, int fd, uint64_t size, IobResult *res,
                   HsError *err)
{
    IobRing r = {.ir_cfg = cfg, .ir_fd = fd, .ir_res = res, .ir_err = err};
    int rc = alloc_slots(&r, err);
    if (rc == 0 && (rc = io_uring_queue_init(cfg->ic_depth, &r.ir_ring, 0)) < 0)
        rc = hs_error_set(err, rc, cfg->ic_path, HS_NO_BLOCK,
                          "io_uring is not available here (io_uring_setup: %s); use "
                          "--method read",
                          strerror(-rc));
    else if (rc == 0) {
        run_ops(&r, size);
        io_uring_queue_exit(&r.ir_ring);
        rc = r.ir_rc;
    }
    free_slots(&r);
    return rc;
}

#else /* no liburing at build time */

int iob_uring_work(const IobConfig *cfg, int fd, uint64_t size, IobResult *res,
                   HsError *err)
{
    (void)fd, (void)size, (void)res;
    return hs_error_set(err, -ENOSYS, cfg->ic_path, HS_NO_BLOCK,
                        "this heapscan was built without liburing (no io_uring); use "
                        "--method read");
}

#endif
