/*
 * pageio.c -- the I/O methods' switch (see pageio.h and pageio_int.h): a
 *             method is a table of functions chosen at open; every call
 *             goes through it.
 */
#include "pageio.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "pageio_clock.h"
#include "pageio_int.h"

const char *const pageio_method_names[] = {[PAGEIO_SYNC] = "sync",
                                           [PAGEIO_WORKER] = "worker",
                                           [PAGEIO_URING] = "io_uring",
                                           [PAGEIO_URING + 1] = NULL};

const char *pageio_method_name(PageIOMethod m)
{
    return pageio_method_names[m];
}

static const PageIOMethods *const methods[] = {
    [PAGEIO_SYNC] = &pageio_sync_methods,
    [PAGEIO_WORKER] = &pageio_worker_methods,
    [PAGEIO_URING] = &pageio_uring_methods,
};

int pageio_open(PageIO **out, RelFile *rf, const PageIOConfig *cfg, HsError *err)
{
    PageIO *io = calloc(1, sizeof(*io));
    *out = NULL;
    if (io == NULL)
        return hs_error_set(err, -ENOMEM, rf->rf_path, HS_NO_BLOCK, "out of memory");
    io->io_rel = rf;
    io->io_latency_us = cfg->pc_latency_us;
    io->io_method = cfg->pc_method;
    io->io_methods = methods[cfg->pc_method];
    int rc = io->io_methods->pm_open(io, cfg, err);
    if (rc == -EAGAIN) { /* no thread to be had: read in line */
        io->io_method = PAGEIO_SYNC;
        io->io_methods = &pageio_sync_methods;
        rc = 0;
    }
    if (rc < 0) {
        free(io);
        return rc;
    }
    *out = io;
    return 0;
}

PageIOMethod pageio_method(const PageIO *io)
{
    return io->io_method;
}

unsigned pageio_max_in_flight(const PageIO *io)
{
    return io->io_methods->pm_max_in_flight(io);
}

void pageio_submit(PageIO *io, PageIORequest *r)
{
    assert(!r->pr_submitted && r->pr_n >= 1 && r->pr_n <= PAGEIO_MAX_PAGES);
    r->pr_submitted = true;
    r->pr_rc = 0;
    r->pr_late_ns = 0;
    r->pr_deadline = pageio_deadline(io->io_latency_us);
    io->io_methods->pm_submit(io, r);
}

/* r's result, with its error copied into err on failure. */
static int result(const PageIORequest *r, HsError *err)
{
    if (r->pr_rc < 0 && err != NULL)
        *err = r->pr_err;
    return r->pr_rc;
}

int pageio_wait(PageIO *io, PageIORequest *r, HsError *err)
{
    assert(r->pr_submitted);
    io->io_methods->pm_wait(io, r);
    r->pr_submitted = false;
    return result(r, err);
}

int pageio_read(PageIO *io, PageIORequest *r, HsError *err)
{
    assert(!r->pr_submitted && r->pr_n >= 1 && r->pr_n <= PAGEIO_MAX_PAGES);
    r->pr_deadline = pageio_deadline(io->io_latency_us);
    pageio_read_in_line(io, r);
    return result(r, err);
}

void pageio_close(PageIO *io)
{
    if (io == NULL)
        return;
    io->io_methods->pm_close(io);
    free(io);
}
