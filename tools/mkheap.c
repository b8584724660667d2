/*
 * mkheap -- write a heap table of t (id int4, k int4, v int8, pad text) in
 *           PostgreSQL 15's page format, with the project's page checksums.
 *
 * The table is built into temporary files beside FILE, fsynced, and renamed
 * into place only when complete: on any failure or signal nothing is left.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "heapgen.h"
#include "measure.h"
#include "relfile.h"

#define DEFAULT_SIZE (UINT64_C(177) << 20) /* the 1998 seed's 177 MB table */
#define BATCH_PAGES  128                   /* 1 MiB written per call */

static void usage(void)
{
    printf(
        "Usage: %s [options] FILE\n"
        "Write a heap table of t (id int4, k int4, v int8, pad text) in PostgreSQL "
        "15's\n"
        "page format, frozen tuples, 8 KiB pages with a zlib checksum mixed with the\n"
        "block number. Rows: id 1..N, k in [0, 1000000), v in [0, 2^32), printable "
        "pad,\n"
        "all derived from the seed: the same options give the same bytes anywhere.\n"
        "\n"
        "  -s, --size SIZE         table size in bytes, a whole number of 8 KiB "
        "pages;\n"
        "                          suffixes k, M, G, T (also KiB, MiB, ...: powers of\n"
        "                          1024) (default 177MiB = 22656 pages)\n"
        "  -r, --rows N            write N rows instead (the last page may be "
        "partial)\n"
        "  -p, --pad N             bytes of text per row (default %d: 100-byte "
        "tuples,\n"
        "                          75 a page); above 126 the text takes a 4-byte "
        "header\n"
        "  -f, --fillfactor PCT    fill pages to PCT percent, 10-100 (default 100)\n"
        "      --seed N            seed of every value (default %d)\n"
        "      --all-visible       set PD_ALL_VISIBLE on every page\n"
        "      --force             replace FILE if it exists\n"
        "      --segment-size SIZE pages per segment file as a size (default 1GiB, as\n"
        "                          PostgreSQL; smaller only for tests)\n"
        "  -q, --quiet             no progress bar and no summary line\n"
        "  -h, --help              show this help and exit\n"
        "  -V, --version           show the version and exit\n"
        "\n"
        "Tables over 1 GiB are split into FILE, FILE.1, FILE.2, ... as PostgreSQL "
        "does.\n"
        "Exit status: 0 written, 1 I/O or system error, 2 usage error, 4 FILE exists\n"
        "(without --force), 128+N killed by signal N (nothing is left behind).\n",
        cli_progname, HEAPGEN_DEFAULT_PAD, HEAPGEN_DEFAULT_SEED);
}

typedef struct Options {
    HeapGenSpec spec;
    uint64_t size;       /* bytes, when rows == 0 */
    uint64_t rows;       /* rows asked for, or 0 */
    uint64_t seg_blocks; /* pages per segment */
    bool force, quiet;
    const char *path;
} Options;

static void parse_args(int argc, char **argv, Options *o)
{
    enum { OPT_SEED = 256, OPT_ALL_VISIBLE, OPT_FORCE, OPT_SEGMENT_SIZE };
    static const struct option longopts[] = {
        {"size", required_argument, NULL, 's'},
        {"rows", required_argument, NULL, 'r'},
        {"pad", required_argument, NULL, 'p'},
        {"fillfactor", required_argument, NULL, 'f'},
        {"seed", required_argument, NULL, OPT_SEED},
        {"all-visible", no_argument, NULL, OPT_ALL_VISIBLE},
        {"force", no_argument, NULL, OPT_FORCE},
        {"segment-size", required_argument, NULL, OPT_SEGMENT_SIZE},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    bool have_size = false;
    uint64_t v;
    int c;

    *o = (Options){
        .spec = {.hg_seed = HEAPGEN_DEFAULT_SEED,
                 .hg_pad_len = HEAPGEN_DEFAULT_PAD,
                 .hg_fillfactor = 100},
        .size = DEFAULT_SIZE,
        .seg_blocks = RELFILE_SEG_BLOCKS,
    };
    while ((c = getopt_long(argc, argv, "s:r:p:f:qhV", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (cli_parse_size(optarg, &o->size) < 0 || o->size == 0)
                cli_usage_error("--size: '%s' is not a size (e.g. 177MiB, 64M, 8192)",
                                optarg);
            if (o->size % BLCKSZ != 0)
                cli_usage_error("--size: %llu bytes is not a whole number of %d-byte "
                                "pages (%llu or %llu would be)",
                                (unsigned long long)o->size, BLCKSZ,
                                (unsigned long long)(o->size / BLCKSZ * BLCKSZ),
                                (unsigned long long)((o->size / BLCKSZ + 1) * BLCKSZ));
            have_size = true;
            break;
        case 'r':
            if (cli_parse_u64(optarg, 1, HEAPGEN_MAX_ROWS, &o->rows) < 0)
                cli_usage_error("--rows: '%s' is not a row count in 1..%d", optarg,
                                HEAPGEN_MAX_ROWS);
            break;
        case 'p':
            if (cli_parse_u64(optarg, 0, HEAP_PAD_MAX, &v) < 0)
                cli_usage_error("--pad: '%s' is not in 0..%d (a row must fit a page)",
                                optarg, HEAP_PAD_MAX);
            o->spec.hg_pad_len = (uint32_t)v;
            break;
        case 'f':
            if (cli_parse_u64(optarg, 10, 100, &v) < 0)
                cli_usage_error("--fillfactor: '%s' is not a percentage in 10..100",
                                optarg);
            o->spec.hg_fillfactor = (unsigned)v;
            break;
        case OPT_SEED:
            if (cli_parse_u64(optarg, 0, UINT64_MAX, &o->spec.hg_seed) < 0)
                cli_usage_error("--seed: '%s' is not a whole number", optarg);
            break;
        case OPT_ALL_VISIBLE:
            o->spec.hg_all_visible = true;
            break;
        case OPT_FORCE:
            o->force = true;
            break;
        case OPT_SEGMENT_SIZE:
            if (cli_parse_size(optarg, &v) < 0 || v == 0 || v % BLCKSZ != 0 ||
                v / BLCKSZ > RELFILE_SEG_BLOCKS)
                cli_usage_error("--segment-size: '%s' is not a whole number of pages "
                                "up to 1GiB",
                                optarg);
            o->seg_blocks = v / BLCKSZ;
            break;
        case 'q':
            o->quiet = true;
            break;
        case 'h':
            usage();
            exit(EXIT_OK);
        case 'V':
            cli_version();
        default:
            cli_bad_option();
        }
    }
    if (have_size && o->rows != 0)
        cli_usage_error("--size and --rows exclude each other");
    o->path = cli_one_operand(argc, argv, "FILE");
}

/*
 * Building pages is most of mkheap's CPU time (a checksum and 75 generated
 * rows a page), and every page is a pure function of its block number, so
 * two threads each build half of every batch: the same bytes, in half the
 * time.  The helper blocks every signal; the main thread handles them.
 */
typedef struct Batch {
    const HeapGenSpec *spec;
    uint64_t rows;      /* rows in the whole table */
    unsigned per_page;  /* rows on every page but maybe the last */
    uint64_t first_blk; /* the helper's share: first block, */
    uint32_t n;         /* ... pages, */
    unsigned char *buf; /* ... and where they go */
    bool quit;
    sem_t go, done;
} Batch;

/* Build pages first_blk .. first_blk + n - 1 into buf. */
static void build_pages(const HeapGenSpec *spec, uint64_t rows, unsigned per_page,
                        uint64_t first_blk, uint32_t n, unsigned char *buf)
{
    for (uint32_t i = 0; i < n; i++) {
        uint64_t blk = first_blk + i, first_id = blk * per_page + 1;
        uint64_t left = rows - (first_id - 1);
        unsigned on_page = left < per_page ? (unsigned)left : per_page;
        if (heapgen_page(spec, (uint32_t)blk, (int32_t)first_id, on_page,
                         buf + (size_t)i * BLCKSZ) < 0)
            abort(); /* heapgen_tuples_per_page() said they fit: cannot happen */
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
        build_pages(b->spec, b->rows, b->per_page, b->first_blk, b->n, b->buf);
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
#define FLUSH_MIB 8

typedef struct Flusher {
    sem_t go;
    _Atomic bool busy; /* an fdatasync is asked for or running */
    _Atomic bool quit;
    int fd; /* the segment to flush (open until commit or abort) */
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

static void install_signals(void)
{
    CliSignals saved; /* never restored: the table is ours until exit */
    cli_catch_stop_signals(&saved);
    /* Past RLIMIT_FSIZE, write() must fail with EFBIG instead of killing us. */
    signal(SIGXFSZ, SIG_IGN);
}

int main(int argc, char **argv)
{
    Options o;
    HsError err;
    RelFile rf;

    cli_init("mkheap");
    parse_args(argc, argv, &o);
    hs_error_clear(&err);

    unsigned per_page = heapgen_tuples_per_page(&o.spec);
    uint64_t rows = o.rows, pages;
    if (rows != 0) {
        pages = (rows + per_page - 1) / per_page;
    } else {
        pages = o.size / BLCKSZ;
        rows = pages * per_page;
        if (rows > HEAPGEN_MAX_ROWS)
            cli_usage_error("--size: %llu pages of %u rows is more than %d rows (id is "
                            "an int4)",
                            (unsigned long long)pages, per_page, HEAPGEN_MAX_ROWS);
    }

    if ((pages + o.seg_blocks - 1) / o.seg_blocks > RELFILE_MAX_SEGS)
        cli_usage_error("%llu pages make more than %d segment files of %llu pages",
                        (unsigned long long)pages, RELFILE_MAX_SEGS,
                        (unsigned long long)o.seg_blocks);

    install_signals();
    int rc = relfile_create(&rf, o.path, (uint32_t)o.seg_blocks, o.force, &err);
    if (rc < 0)
        return cli_report(&err);

    unsigned char *buf = aligned_alloc(4096, (size_t)BATCH_PAGES * BLCKSZ);
    if (buf == NULL)
        cli_die(EXIT_ERROR, "out of memory");

    Batch helper = {.spec = &o.spec, .rows = rows, .per_page = per_page};
    pthread_t helper_thread;
    bool have_helper = false;
    if (sem_init(&helper.go, 0, 0) == 0 && sem_init(&helper.done, 0, 0) == 0)
        have_helper = start_thread(&helper_thread, helper_main, &helper);

    Flusher flusher = {.busy = false, .quit = false, .fd = -1};
    pthread_t flusher_thread;
    bool have_flusher = false;
    if (sem_init(&flusher.go, 0, 0) == 0)
        have_flusher = start_thread(&flusher_thread, flusher_main, &flusher);

    CliProgress prog;
    cli_progress_start(&prog, o.quiet, pages, BLCKSZ, "pages");
    double t0 = measure_now();
    uint64_t since_writeback = 0;
    for (uint64_t blk = 0; blk < pages && rc == 0 && !cli_stop_signal;) {
        uint32_t n = pages - blk < BATCH_PAGES ? (uint32_t)(pages - blk) : BATCH_PAGES;
        uint32_t mine = have_helper ? n / 2 : n;
        if (mine < n) {
            helper.first_blk = blk + mine;
            helper.n = n - mine;
            helper.buf = buf + (size_t)mine * BLCKSZ;
            sem_post(&helper.go);
        }
        build_pages(&o.spec, rows, per_page, blk, mine, buf);
        if (mine < n)
            while (sem_wait(&helper.done) < 0 && errno == EINTR)
                ;
        rc = relfile_append(&rf, buf, n, &err);
        blk += n;
        since_writeback += n;
        if (since_writeback * BLCKSZ >= (uint64_t)FLUSH_MIB << 20 && rc == 0) {
            int fd;
            uint64_t off;
            if (have_flusher &&
                relfile_block_fd(&rf, rf.rf_nblocks - 1, &fd, &off) == 0)
                flusher_kick(&flusher, fd);
            since_writeback = 0;
        }
        cli_progress_update(&prog, blk);
    }
    if (have_helper) {
        helper.quit = true;
        sem_post(&helper.go);
        pthread_join(helper_thread, NULL);
    }
    if (have_flusher) { /* before commit or abort close its file */
        atomic_store(&flusher.quit, true);
        sem_post(&flusher.go);
        pthread_join(flusher_thread, NULL);
    }
    free(buf);
    bool committed = false;
    if (rc == 0 && !cli_stop_signal) {
        rc = relfile_commit(&rf, &err);
        committed = rc == 0;
    } else {
        relfile_abort(&rf);
    }
    cli_progress_end(&prog);

    /* a signal that came after the commit is too late: the table stands */
    if (cli_stop_signal && !committed && rc == 0) {
        fprintf(stderr, "%s: %s: interrupted by SIG%s; nothing was written\n",
                cli_progname, o.path, sigabbrev_np(cli_stop_signal));
        return 128 + cli_stop_signal;
    }
    if (rc < 0) {
        int status = cli_report(&err);
        if (cli_stop_signal)
            return 128 + cli_stop_signal;
        return status;
    }

    double secs = measure_now() - t0;
    if (!o.quiet) {
        uint64_t bytes = pages * BLCKSZ;
        uint64_t segs = pages == 0 ? 1 : (pages + o.seg_blocks - 1) / o.seg_blocks;
        printf(
            "%s: %llu rows, %llu page%s (%u rows a page), %llu bytes, %llu segment%s, "
            "%.3f s, %.1f MB/s\n",
            o.path, (unsigned long long)rows, (unsigned long long)pages,
            pages == 1 ? "" : "s", per_page, (unsigned long long)bytes,
            (unsigned long long)segs, segs == 1 ? "" : "s", secs,
            secs > 0 ? (double)bytes / 1e6 / secs : 0.0);
    }
    return EXIT_OK;
}
