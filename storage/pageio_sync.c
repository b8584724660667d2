/*
 * pageio_sync.c -- the sync I/O method: each request is read in the
 *                  caller's thread when it is submitted (see pageio.h).
 *                  Also the in-line read every method offers.
 */
#include "pageio_clock.h"
#include "pageio_int.h"

void pageio_read_in_line(PageIO *io, PageIORequest *r)
{
    r->pr_rc = relfile_readv(io->io_rel, r->pr_blkno, r->pr_n, r->pr_pages,
                             &r->pr_calls, &r->pr_err);
    r->pr_late_ns = pageio_sleep_until(r->pr_deadline);
    r->pr_inline = r->pr_deadline == 0;
    r->pr_waited = r->pr_deadline != 0;
}

static int sync_open(PageIO *io, const PageIOConfig *cfg, HsError *err)
{
    (void)io, (void)cfg, (void)err;
    return 0;
}

static void sync_close(PageIO *io)
{
    (void)io;
}

static unsigned sync_max_in_flight(const PageIO *io)
{
    (void)io;
    return 1;
}

static void sync_wait(PageIO *io, PageIORequest *r)
{
    (void)io, (void)r; /* its submit did it all */
}

const PageIOMethods pageio_sync_methods = {
    .pm_open = sync_open,
    .pm_close = sync_close,
    .pm_max_in_flight = sync_max_in_flight,
    .pm_submit = pageio_read_in_line,
    .pm_wait = sync_wait,
};
