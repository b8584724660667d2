/*
 * heapwrite.c -- a generated table written by two builders and a flusher
 *                (see heapwrite.h).
 *
 * Entry point: heapwrite.  write_pages() is the loop: while the main thread
 * appends one batch, the helper builds the next into the other buffer, and
 * the main thread joins it as soon as its write is done; every FLUSH_MIB the
 * flusher is asked to fdatasync what was appended.  Both threads block every
 * signal: the caller's thread takes them and says so through *stop.
 */
#include "heapwrite.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "relfile.h"

/*
 * Building pages is most of mkheap's CPU time (a checksum and 75 generated
 * rows a page), and the write() of a batch is most of the rest (the copy
 * into the page cache).  Every page is a pure function of its block number,
 * so the helper builds the next batch while the main thread writes this
 * one, and both take pages of it from one counter once the write is done:
 * each builds what it has time for, whatever a write costs on this file
 * system (on the default table, 0.45-0.6 ms a MiB against ~1 ms a MiB of
 * building).  The same bytes as building them one by one.
 */
typedef struct Batch {
    const HeapGenSpec *spec; /* the rows */
    uint64_t rows;           /* rows in the whole table */
    unsigned per_page;       /* rows on every page but maybe the last */
    uint64_t first_blk;      /* the batch being built: its first block, */
    uint32_t n;              /* ... pages, */
    unsigned char *buf;      /* ... and where they go */
    _Atomic uint32_t next;   /* the next page of it nobody has taken */
    bool quit;               /* the helper is to return */
    sem_t go;                /* posted: a batch to build (or quit) */
    sem_t done;              /* posted by the helper: it takes no more pages of
                                the batch, and the ones it took are built */
} Batch;

#define CLAIM_PAGES 2 /* pages taken from the counter at a time */

/* Build pages of b until none is left to take. */
static void build_share(Batch *b)
{
    for (;;) {
        uint32_t i = atomic_fetch_add(&b->next, CLAIM_PAGES);
        if (i >= b->n)
            return;
        uint32_t n = b->n - i < CLAIM_PAGES ? b->n - i : CLAIM_PAGES;
        for (uint32_t j = i; j < i + n; j++) {
            uint64_t blk = b->first_blk + j, first_id = blk * b->per_page + 1;
            uint64_t left = b->rows - (first_id - 1);
            unsigned on_page = left < b->per_page ? (unsigned)left : b->per_page;
            if (heapgen_page(b->spec, (uint32_t)blk, (int32_t)first_id, on_page,
                             b->buf + (size_t)j * BLCKSZ) < 0)
                abort(); /* heapgen_tuples_per_page() said they fit: cannot happen */
        }
    }
}

static void *helper_main(void *arg)
{
    Batch *b = arg;
    for (;;) {
        while (sem_wait(&b->go) < 0 && errno == EINTR)
            ;
        if (b->quit)
            return NULL;
        build_share(b);
        sem_post(&b->done);
    }
}

/*
 * The final fsync must push everything written down to stable storage; on
 * a virtual disk that is the host writing it out, ~0.45 ms a MiB here, and
 * only an fdatasync makes it happen (sync_file_range() just hands pages to
 * the device, which keeps them in the host's cache).  So a flusher thread
 * fdatasyncs the file every FLUSH_MIB while the pages go on being built,
 * and the final fsync finds little left to do (measured on the default
 * table: 1.13-1.21x of dd conv=fsync at 8 MiB, 1.29x at 32 MiB, 1.4x with
 * sync_file_range() alone).
 */
#define FLUSH_MIB   8   /* MiB written between two fdatasyncs */
#define BATCH_PAGES 128 /* 1 MiB built and written per call */

typedef struct Flusher {
    sem_t go;          /* posted: fdatasync fd (or quit) */
    _Atomic bool busy; /* an fdatasync is asked for or running */
    _Atomic bool quit; /* the flusher is to return */
    int fd;            /* the segment to flush (open until commit or abort) */
} Flusher;

static void *flusher_main(void *arg)
{
    Flusher *f = arg;
    for (;;) {
        while (sem_wait(&f->go) < 0 && errno == EINTR)
            ;
        if (atomic_load(&f->quit))
            return NULL;
        (void)fdatasync(f->fd); /* errors surface in the final fsync */
        atomic_store(&f->busy, false);
    }
}

/* Ask for an fdatasync of fd unless one is still running. */
static void flusher_kick(Flusher *f, int fd)
{
    if (atomic_load(&f->busy))
        return;
    atomic_store(&f->busy, true);
    f->fd = fd;
    sem_post(&f->go);
}

/* Start fn(arg) on a thread that blocks every signal: they are the main thread's. */
static bool start_thread(pthread_t *t, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    bool ok = pthread_create(t, NULL, fn, arg) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return ok;
}

/* The threads of one write: either may be missing (then the caller's thread
 * builds every page, or nothing is flushed early). */
typedef struct Workers {
    Batch wk_batch;       /* the helper's share of each batch */
    pthread_t wk_helper;  /* the helper */
    bool wk_have_helper;  /* ... started */
    Flusher wk_flusher;   /* the flusher's request */
    pthread_t wk_flush;   /* the flusher */
    bool wk_have_flusher; /* ... started */
} Workers;

static void workers_start(Workers *wk, const HeapWriteSpec *w, unsigned per_page)
{
    wk->wk_batch =
        (Batch){.spec = &w->hw_gen, .rows = w->hw_rows, .per_page = per_page};
    wk->wk_have_helper = sem_init(&wk->wk_batch.go, 0, 0) == 0 &&
                         sem_init(&wk->wk_batch.done, 0, 0) == 0 &&
                         start_thread(&wk->wk_helper, helper_main, &wk->wk_batch);
    wk->wk_flusher = (Flusher){.busy = false, .quit = false, .fd = -1};
    wk->wk_have_flusher = sem_init(&wk->wk_flusher.go, 0, 0) == 0 &&
                          start_thread(&wk->wk_flush, flusher_main, &wk->wk_flusher);
}

/* Stop both threads; before commit or abort close the flusher's file. */
static void workers_stop(Workers *wk)
{
    if (wk->wk_have_helper) {
        wk->wk_batch.quit = true;
        sem_post(&wk->wk_batch.go);
        pthread_join(wk->wk_helper, NULL);
    }
    if (wk->wk_have_flusher) {
        atomic_store(&wk->wk_flusher.quit, true);
        sem_post(&wk->wk_flusher.go);
        pthread_join(wk->wk_flush, NULL);
    }
}

/* Start building blocks blk .. blk + n - 1 into buf: the helper begins. */
static void batch_start(Workers *wk, uint64_t blk, uint32_t n, unsigned char *buf)
{
    Batch *b = &wk->wk_batch;
    b->first_blk = blk;
    b->n = n;
    b->buf = buf;
    atomic_store(&b->next, 0);
    if (wk->wk_have_helper)
        sem_post(&b->go);
}

/* Build what is left of the batch started, and wait for the helper's pages. */
static void batch_finish(Workers *wk)
{
    build_share(&wk->wk_batch);
    if (wk->wk_have_helper)
        while (sem_wait(&wk->wk_batch.done) < 0 && errno == EINTR)
            ;
}

/* Ask for an fdatasync of what was appended, every FLUSH_MIB. */
static void maybe_flush(Workers *wk, RelFile *rf, uint64_t *since_flush, uint32_t n)
{
    int fd;
    uint64_t off;
    *since_flush += n;
    if (*since_flush * BLCKSZ < (uint64_t)FLUSH_MIB << 20)
        return;
    if (wk->wk_have_flusher && relfile_block_fd(rf, rf->rf_nblocks - 1, &fd, &off) == 0)
        flusher_kick(&wk->wk_flusher, fd);
    *since_flush = 0;
}

/*
 * Every page of the table, appended batch by batch: batch k + 1 is started
 * (the helper building it into the other buffer) before batch k is
 * written.  0, an error, or HS_EINTR.
 */
static int write_pages(const HeapWriteSpec *w, RelFile *rf, Workers *wk,
                       unsigned char *buf[2], const volatile sig_atomic_t *stop,
                       HeapWriteProgress progress, void *arg, HsError *err)
{
    uint64_t since_flush = 0;
    uint32_t n = w->hw_pages < BATCH_PAGES ? (uint32_t)w->hw_pages : BATCH_PAGES;
    if (n == 0)
        return 0;
    batch_start(wk, 0, n, buf[0]);
    batch_finish(wk);
    for (uint64_t blk = 0; blk < w->hw_pages;) {
        uint64_t next = blk + n, left = w->hw_pages - next;
        uint32_t next_n = left < BATCH_PAGES ? (uint32_t)left : BATCH_PAGES;
        unsigned char *page = wk->wk_batch.buf;
        if (next_n > 0)
            batch_start(wk, next, next_n, page == buf[0] ? buf[1] : buf[0]);
        int rc = relfile_append(rf, page, n, err);
        if (next_n > 0)
            batch_finish(wk); /* even after an error: the helper must be idle */
        if (rc < 0)
            return rc;
        maybe_flush(wk, rf, &since_flush, n);
        if (progress != NULL)
            progress(next, arg);
        if (stop != NULL && *stop)
            return hs_error_set(err, HS_EINTR, w->hw_path, HS_NO_BLOCK, "interrupted");
        blk = next;
        n = next_n;
    }
    return 0;
}

int heapwrite(const HeapWriteSpec *w, const volatile sig_atomic_t *stop,
              HeapWriteProgress progress, void *arg, char *note, size_t notelen,
              HsError *err)
{
    RelFile rf;
    Workers wk;
    int rc = heapgen_check(&w->hw_gen, err);
    if (notelen > 0)
        note[0] = '\0';
    if (rc == 0) {
        rc = relfile_create(&rf, w->hw_path, w->hw_seg_blocks, w->hw_replace, err);
        snprintf(note, notelen, "%s", rf.rf_note);
    }
    if (rc < 0)
        return rc;
    unsigned char *buf[2] = {aligned_alloc(4096, (size_t)2 * BATCH_PAGES * BLCKSZ)};
    if (buf[0] == NULL) {
        relfile_abort(&rf);
        return hs_error_set(err, -ENOMEM, w->hw_path, HS_NO_BLOCK, "out of memory");
    }
    buf[1] = buf[0] + (size_t)BATCH_PAGES * BLCKSZ;
    workers_start(&wk, w, heapgen_tuples_per_page(&w->hw_gen));
    if (progress != NULL)
        progress(0, arg);
    rc = stop != NULL && *stop
             ? hs_error_set(err, HS_EINTR, w->hw_path, HS_NO_BLOCK, "interrupted")
             : write_pages(w, &rf, &wk, buf, stop, progress, arg, err);
    workers_stop(&wk);
    free(buf[0]);
    if (rc == 0)
        return relfile_commit(&rf, err);
    relfile_abort(&rf);
    return rc;
}
