/*
 * pageio_uring.c -- the io_uring I/O method (see pageio.h): up to depth
 *                   read requests in the kernel at once, completed in any
 *                   order, each waited for on its own.
 *
 * Entry points: the pageio_uring_methods table (pageio_int.h), called by
 * pageio.c's switch only; pageio_uring_available().  See also: relfile.c --
 * the segment files read (and relfile_readv(), whose splitting and errors
 * this mirrors).
 *
 * A request occupies a slot from submit to wait.  It is split at segment
 * boundaries into parts, one IORING_OP_READV each, with the frames that
 * follow each other in memory merged into one iovec (as relfile_readv()
 * does).  A part that comes back short is resubmitted for the rest (a
 * read counted again); a failure, an end of file or a cancellation fails
 * the request, naming the first block not read.  Completions of other
 * requests that arrive while one is waited for are recorded in their
 * slots.  A slot is not reused, and the ring is not torn down, until every
 * part of its request is back from the kernel: the kernel writes into the
 * caller's frames until then.  With every slot taken (more requests than
 * the depth), a request is read in line at its submit.
 *
 * The CQEs are taken with io_uring_wait_cqe_nr(), which always goes
 * through liburing's __io_uring_get_cqe(): tests wrap that one symbol to
 * inject short reads, EIO and cancellations (tests/check_pageio_uring.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pageio_clock.h"
#include "pageio_int.h"

#if HEAPSCAN_HAVE_URING

#include <assert.h>
#include <liburing.h>
#include <sys/uio.h>

/* One IORING_OP_READV: a segment's share of a request. */
typedef struct UringPart {
    struct UringSlot *up_slot; /* the request it belongs to */
    int up_fd;                 /* the segment file */
    uint64_t up_off;           /* the file offset of its next byte */
    uint64_t up_blkno;         /* the relation-wide block of its first byte */
    size_t up_done;            /* bytes read so far */
    struct iovec *up_iov;      /* the iovecs still to fill (in the slot's) */
    int up_niov;               /* how many */
    size_t up_left;            /* bytes still to read */
} UringPart;

/* A request in flight, or a free slot (us_req NULL). */
typedef struct UringSlot {
    PageIORequest *us_req;                 /* the request it carries */
    unsigned us_pending;                   /* parts not back from the kernel */
    uint64_t us_deadline;                  /* --io-latency: not done before (ns) */
    uint32_t us_calls;                     /* READV SQEs it took */
    int us_rc;                             /* 0 or its first failure */
    uint64_t us_err_block;                 /* the block that failure names */
    uint32_t us_nparts;                    /* parts */
    UringPart us_part[PAGEIO_MAX_PAGES];   /* one per segment touched */
    struct iovec us_iov[PAGEIO_MAX_PAGES]; /* the parts' iovecs */
} UringSlot;

typedef struct PageIOUring {
    struct io_uring u_ring; /* the ring */
    RelFile *u_rel;         /* the relation read */
    unsigned u_depth;       /* slots */
    unsigned u_nfree;       /* free slots, on u_free */
    unsigned *u_free;       /* a stack of free slot numbers */
    unsigned u_sqes;        /* SQEs in the kernel (submitted, CQE not taken) */
    int u_dead;             /* 0, or the error that made the ring unusable */
    UringSlot *u_slot;      /* u_depth slots */
} PageIOUring;

/* A request read in line (every slot was taken): no slot. */
#define NO_SLOT UINT_MAX

static unsigned uring_max_in_flight(const PageIO *io)
{
    const PageIOUring *u = io->io_state;
    return u->u_depth;
}

bool pageio_uring_available(void)
{
    struct io_uring ring;
    if (io_uring_queue_init(2, &ring, 0) < 0)
        return false;
    io_uring_queue_exit(&ring);
    return true;
}

/* ---- setting up ------------------------------------------------------------ */

/* An SQ of depth entries (the kernel rounds up to a power of two) and a CQ
 * of twice that: one READV a request unless it crosses a segment.  Parts
 * beyond that overflow into the kernel's list, which IORING_FEAT_NODROP
 * (Linux 5.5) guarantees is never dropped. */
static int ring_init(PageIOUring *u, HsError *err)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof(p));
    p.flags = IORING_SETUP_CQSIZE;
    p.cq_entries = 2 * (u->u_depth < 4 ? 4 : u->u_depth);
    int rc =
        io_uring_queue_init_params(u->u_depth < 4 ? 4 : u->u_depth, &u->u_ring, &p);
    if (rc < 0)
        return hs_error_set(err, rc, u->u_rel->rf_path, HS_NO_BLOCK,
                            "io_uring is not available here (io_uring_setup: %s: "
                            "seccomp, kernel.io_uring_disabled or a kernel before "
                            "5.6); use --io-method sync or worker",
                            strerror(-rc));
    if (!(p.features & IORING_FEAT_NODROP)) {
        io_uring_queue_exit(&u->u_ring);
        return hs_error_set(err, -ENOSYS, u->u_rel->rf_path, HS_NO_BLOCK,
                            "io_uring here may drop completions (no "
                            "IORING_FEAT_NODROP: a kernel before 5.5); use "
                            "--io-method sync or worker");
    }
    return 0;
}

static int uring_open(PageIO *io, const PageIOConfig *cfg, HsError *err)
{
    RelFile *rf = io->io_rel;
    unsigned depth = cfg->pc_depth;
    PageIOUring *u = calloc(1, sizeof(*u));
    if (u != NULL) {
        u->u_slot = calloc(depth, sizeof(UringSlot));
        u->u_free = calloc(depth, sizeof(unsigned));
    }
    if (u == NULL || u->u_slot == NULL || u->u_free == NULL) {
        if (u != NULL)
            free(u->u_slot), free(u->u_free);
        free(u);
        return hs_error_set(err, -ENOMEM, rf->rf_path, HS_NO_BLOCK, "out of memory");
    }
    u->u_rel = rf;
    u->u_depth = depth;
    for (unsigned i = 0; i < depth; i++)
        u->u_free[u->u_nfree++] = depth - 1 - i;
    int rc = ring_init(u, err);
    if (rc < 0) {
        free(u->u_slot);
        free(u->u_free);
        free(u);
        return rc;
    }
    io->io_state = u;
    return 0;
}

/* ---- submitting ------------------------------------------------------------ */

/* Queue part p's READV (for what is left of it). */
static void queue_part(PageIOUring *u, UringPart *p);

/* Take every completion already there, without waiting. */
static void take_ready(PageIOUring *u);

/*
 * Hand every queued SQE to the kernel.  A ring busy with completions not
 * yet taken (-EBUSY, -EAGAIN) takes one first; any other failure leaves
 * the ring unusable (u_dead): the requests then fail instead of hanging.
 */
static void take_one(PageIOUring *u, bool block);

static void flush(PageIOUring *u)
{
    while (u->u_dead == 0 && io_uring_sq_ready(&u->u_ring) > 0) {
        int n = io_uring_submit(&u->u_ring);
        if (n > 0)
            u->u_sqes += (unsigned)n;
        else if (n == -EINTR)
            continue;
        else if ((n == 0 || n == -EBUSY || n == -EAGAIN) && u->u_sqes > 0)
            take_one(u, true);
        else
            u->u_dead = n < 0 ? n : -EIO;
    }
}

static void queue_part(PageIOUring *u, UringPart *p)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&u->u_ring);
    if (sqe == NULL) { /* the SQ ring is full: make room */
        flush(u);
        sqe = io_uring_get_sqe(&u->u_ring);
    }
    if (sqe == NULL) { /* only a dead ring gets here */
        p->up_slot->us_pending--;
        return;
    }
    io_uring_prep_readv(sqe, p->up_fd, p->up_iov, (unsigned)p->up_niov, p->up_off);
    io_uring_sqe_set_data(sqe, p);
    p->up_slot->us_calls++;
}

/* Split r into parts, one per segment it touches, in slot s. */
static void split(PageIOUring *u, UringSlot *s, const PageIORequest *r)
{
    const RelFile *rf = u->u_rel;
    uint64_t blkno = r->pr_blkno;
    uint32_t i = 0, niov = 0;
    s->us_nparts = 0;
    while (i < r->pr_n) {
        UringPart *p = &s->us_part[s->us_nparts++];
        uint64_t off;
        relfile_block_fd(rf, blkno, &p->up_fd, &off);
        uint64_t in_seg = rf->rf_seg_blocks - blkno % rf->rf_seg_blocks;
        uint32_t n = r->pr_n - i < in_seg ? r->pr_n - i : (uint32_t)in_seg;
        *p = (UringPart){.up_slot = s,
                         .up_fd = p->up_fd,
                         .up_off = off,
                         .up_blkno = blkno,
                         .up_iov = &s->us_iov[niov],
                         .up_left = (size_t)n * BLCKSZ};
        for (uint32_t k = i; k < i + n; k++) {
            struct iovec *last = p->up_niov > 0 ? &p->up_iov[p->up_niov - 1] : NULL;
            if (last && (char *)last->iov_base + last->iov_len == r->pr_pages[k])
                last->iov_len += BLCKSZ;
            else
                p->up_iov[p->up_niov++] = (struct iovec){r->pr_pages[k], BLCKSZ};
        }
        niov += (uint32_t)p->up_niov;
        i += n;
        blkno += n;
    }
}

static void uring_submit(PageIO *io, PageIORequest *r)
{
    PageIOUring *u = io->io_state;
    uint64_t deadline = r->pr_deadline;
    if (u->u_nfree == 0) { /* every slot taken: read it now */
        r->pr_slot = NO_SLOT;
        pageio_read_in_line(io, r);
        return;
    }
    unsigned k = u->u_free[--u->u_nfree];
    UringSlot *s = &u->u_slot[k];
    r->pr_slot = k;
    s->us_req = r;
    s->us_deadline = deadline;
    s->us_calls = 0;
    s->us_rc = 0;
    if (r->pr_blkno + r->pr_n > relfile_nblocks(u->u_rel)) {
        s->us_rc = -EINVAL; /* as relfile_readv(): nothing is read */
        s->us_err_block = r->pr_blkno;
        s->us_pending = 0;
        return;
    }
    split(u, s, r);
    s->us_pending = s->us_nparts;
    for (uint32_t i = 0; i < s->us_nparts; i++)
        queue_part(u, &s->us_part[i]);
    flush(u);
    take_ready(u);
    /* the kernel copied it all in the submit, and no latency is simulated */
    r->pr_inline = s->us_pending == 0 && deadline == 0;
}

/* ---- completing ------------------------------------------------------------ */

/* Part p failed with rc (-errno, or 0: the file ended) at its next byte. */
static void part_failed(UringPart *p, int rc)
{
    UringSlot *s = p->up_slot;
    if (s->us_rc == 0) {
        s->us_rc = rc == 0 ? -ENODATA : rc;
        s->us_err_block = p->up_blkno + p->up_done / BLCKSZ;
    }
    s->us_pending--;
}

/* got bytes came in for part p: skip them in its iovecs; resubmit the rest. */
static void part_advance(PageIOUring *u, UringPart *p, size_t got)
{
    p->up_left -= got;
    p->up_off += got;
    p->up_done += got;
    while (got > 0) {
        if (got >= p->up_iov->iov_len) {
            got -= p->up_iov->iov_len;
            p->up_iov++;
            p->up_niov--;
        } else {
            p->up_iov->iov_base = (char *)p->up_iov->iov_base + got;
            p->up_iov->iov_len -= got;
            got = 0;
        }
    }
    if (p->up_left == 0)
        p->up_slot->us_pending--;
    else
        queue_part(u, p);
}

/* One completion: its part advanced, retried, done or failed. */
static void complete(PageIOUring *u, struct io_uring_cqe *cqe)
{
    UringPart *p = io_uring_cqe_get_data(cqe);
    int res = cqe->res;
    io_uring_cqe_seen(&u->u_ring, cqe);
    u->u_sqes--;
    if (res == -EAGAIN || res == -EINTR)
        queue_part(u, p);
    else if (res > 0 && (size_t)res <= p->up_left)
        part_advance(u, p, (size_t)res);
    else
        part_failed(p, res > 0 ? -EIO : res);
}

/* Take one completion (waiting for it if block), or none if there is none;
 * a wait that fails for good kills the ring. */
static void take_one(PageIOUring *u, bool block)
{
    struct io_uring_cqe *cqe = NULL;
    int rc;
    do
        rc = io_uring_wait_cqe_nr(&u->u_ring, &cqe, block ? 1 : 0);
    while (rc == -EINTR);
    if (rc == 0 && cqe != NULL)
        complete(u, cqe);
    else if (block && rc != -EAGAIN)
        u->u_dead = rc < 0 ? rc : -EIO;
}

static void take_ready(PageIOUring *u)
{
    while (u->u_sqes > 0 && io_uring_cq_ready(&u->u_ring) > 0)
        take_one(u, false);
}

/* The request of slot s failed: its error, naming the segment and block. */
static int slot_error(PageIOUring *u, const UringSlot *s, HsError *err)
{
    const RelFile *rf = u->u_rel;
    char name[PATH_MAX];
    if (s->us_rc == -EINVAL)
        return hs_error_set(err, -EINVAL, rf->rf_path, (int64_t)s->us_err_block,
                            "read past the end of the relation (%llu pages)",
                            (unsigned long long)relfile_nblocks(rf));
    relfile_segment_name(rf->rf_path, (uint32_t)(s->us_err_block / rf->rf_seg_blocks),
                         name, sizeof(name));
    if (s->us_rc == -ENODATA)
        return hs_error_set(err, -EIO, name, (int64_t)s->us_err_block,
                            "read: unexpected end of file (did it shrink?)");
    if (s->us_rc == -ECANCELED)
        return hs_error_set(err, -ECANCELED, name, (int64_t)s->us_err_block,
                            "read cancelled (io_uring): %s", strerror(ECANCELED));
    return hs_error_set(err, s->us_rc, name, (int64_t)s->us_err_block,
                        "read (io_uring): %s", strerror(-s->us_rc));
}

static void uring_wait(PageIO *io, PageIORequest *r)
{
    PageIOUring *u = io->io_state;
    if (r->pr_slot == NO_SLOT)
        return; /* read in line at its submit */
    UringSlot *s = &u->u_slot[r->pr_slot];
    assert(s->us_req == r);
    take_ready(u);
    r->pr_waited = s->us_pending > 0 || s->us_deadline > pageio_now_ns();
    while (s->us_pending > 0 && u->u_dead == 0) {
        flush(u); /* parts resubmitted after a short read */
        take_one(u, true);
        take_ready(u);
    }
    if (s->us_pending > 0 && s->us_rc == 0) { /* the ring died under it */
        s->us_rc = u->u_dead;
        s->us_err_block = r->pr_blkno;
    }
    r->pr_late_ns = pageio_sleep_until(s->us_deadline);
    r->pr_calls = s->us_calls;
    r->pr_rc = s->us_rc < 0 ? slot_error(u, s, &r->pr_err) : 0;
    s->us_req = NULL;
    u->u_free[u->u_nfree++] = r->pr_slot;
}

static void uring_close(PageIO *io)
{
    PageIOUring *u = io->io_state;
    if (u == NULL)
        return;
    while (u->u_sqes > 0 && u->u_dead == 0) /* the frames stay until it is done */
        take_one(u, true);
    io_uring_queue_exit(&u->u_ring);
    free(u->u_slot);
    free(u->u_free);
    free(u);
    io->io_state = NULL;
}

const PageIOMethods pageio_uring_methods = {
    .pm_open = uring_open,
    .pm_close = uring_close,
    .pm_max_in_flight = uring_max_in_flight,
    .pm_submit = uring_submit,
    .pm_wait = uring_wait,
};

#else /* no liburing at build time */

static int uring_open(PageIO *io, const PageIOConfig *cfg, HsError *err)
{
    (void)cfg;
    return hs_error_set(err, -ENOSYS, io->io_rel->rf_path, HS_NO_BLOCK,
                        "this heapscan was built without liburing (no io_uring); "
                        "use --io-method sync or worker");
}

bool pageio_uring_available(void)
{
    return false;
}

/* Never reached: the open fails. */
static void uring_close(PageIO *io)
{
    (void)io;
}

static unsigned uring_max_in_flight(const PageIO *io)
{
    (void)io;
    return 1;
}

static void uring_submit(PageIO *io, PageIORequest *r)
{
    pageio_read_in_line(io, r);
}

static void uring_wait(PageIO *io, PageIORequest *r)
{
    (void)io, (void)r;
}

const PageIOMethods pageio_uring_methods = {
    .pm_open = uring_open,
    .pm_close = uring_close,
    .pm_max_in_flight = uring_max_in_flight,
    .pm_submit = uring_submit,
    .pm_wait = uring_wait,
};

#endif
