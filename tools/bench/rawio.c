/*
 * rawio.c -- wc, read(), mmap() and O_DIRECT loops over a file (see rawio.h).
 *
 * Entry points: raw_wc, raw_lines, raw_read, raw_mmap, raw_mmap_hooked,
 * raw_direct, raw_run, raw_touch_name, raw_method_name.
 * See also: busguard.c -- the SIGBUS of a file that shrinks under raw_mmap().
 */
#include "rawio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "busguard.h"
#include "crc32.h"
#include "measure.h"
#include "relfile.h"

#define NO_SEGMENT INT32_MIN

const char *const raw_touch_names[] = {"line", "byte", "crc", NULL};
const char *const raw_method_names[] = {"wc", "lines", "read", "mmap", "direct", NULL};

const char *raw_touch_name(RawTouch touch)
{
    return raw_touch_names[touch];
}

const char *raw_method_name(RawMethod method)
{
    return raw_method_names[method];
}

/* Open segment seg of path: an fd, NO_SEGMENT past the last, or -errno. */
static int open_segment(const char *path, uint32_t seg, int flags, char *name,
                        size_t len, HsError *err)
{
    if (relfile_segment_name(path, seg, name, len) < 0)
        return hs_error_set(err, -ENAMETOOLONG, path, HS_NO_BLOCK, "name too long");
    HsError e;
    int fd = relfile_open_regular(name, O_RDONLY | flags, NULL, &e);
    if (fd == -ENOENT && seg > 0)
        return NO_SEGMENT;
    if (fd < 0 && err)
        *err = e;
    return fd;
}

/* What a read loop does with each buffer it reads. */
typedef void (*Consume)(const unsigned char *buf, size_t n, RawResult *r, void *state);

/*
 * read() every segment of path into buf (block bytes) and hand each read
 * to fn.  Counts bytes, calls, full and partial reads.
 */
static int read_loop(const char *path, int flags, unsigned char *buf, size_t block,
                     Consume fn, void *state, RawResult *r, HsError *err)
{
    for (uint32_t seg = 0;; seg++) {
        char name[PATH_MAX];
        int fd = open_segment(path, seg, flags, name, sizeof(name), err);
        if (fd == NO_SEGMENT)
            return 0;
        if (fd < 0)
            return fd;
        for (;;) {
            ssize_t got = read(fd, buf, block);
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0) {
                int e = errno;
                close(fd);
                return hs_error_set(err, -e, name, HS_NO_BLOCK, "read: %s",
                                    strerror(e));
            }
            if (got == 0)
                break;
            r->rr_calls++;
            r->rr_bytes += (uint64_t)got;
            if ((size_t)got == block)
                r->rr_full++;
            else
                r->rr_partial++;
            fn(buf, (size_t)got, r, state);
        }
        close(fd);
    }
}

static int with_buffer(const char *path, int flags, size_t block, Consume fn,
                       void *state, RawResult *r, HsError *err)
{
    memset(r, 0, sizeof(*r));
    unsigned char *buf = aligned_alloc(4096, (block + 4095) / 4096 * 4096);
    if (buf == NULL)
        return hs_error_set(err, -ENOMEM, path, HS_NO_BLOCK, "out of memory");
    int rc = read_loop(path, flags, buf, block, fn, state, r, err);
    free(buf);
    return rc;
}

/* ---- wc ------------------------------------------------------------------ */

enum { WC_OTHER = 0, WC_SPACE = 1, WC_PRINT = 2 };

typedef struct WcState {
    unsigned char cls[256]; /* WC_* of each byte in the C locale */
    int in_word;
} WcState;

static void wc_consume(const unsigned char *buf, size_t n, RawResult *r, void *state)
{
    WcState *w = state;
    uint64_t lines = 0, words = 0;
    int in_word = w->in_word;
    for (size_t i = 0; i < n; i++) {
        unsigned c = w->cls[buf[i]];
        lines += buf[i] == '\n';
        words += c == WC_PRINT && !in_word;
        in_word = c == WC_PRINT ? 1 : c == WC_SPACE ? 0 : in_word;
    }
    w->in_word = in_word;
    r->rr_lines += lines;
    r->rr_words += words;
}

int raw_wc(const char *path, RawResult *r, HsError *err)
{
    WcState w = {.in_word = 0};
    for (int c = 0; c < 256; c++) /* the C locale's isspace and isprint */
        w.cls[c] = (c == ' ' || (c >= '\t' && c <= '\r')) ? WC_SPACE
                   : (c >= 0x20 && c < 0x7f)              ? WC_PRINT
                                                          : WC_OTHER;
    return with_buffer(path, 0, 128 << 10, wc_consume, &w, r, err);
}

static void lines_consume(const unsigned char *buf, size_t n, RawResult *r, void *state)
{
    (void)state;
    const unsigned char *p = buf, *end = buf + n;
    while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        r->rr_lines++;
        p++;
    }
}

int raw_lines(const char *path, RawResult *r, HsError *err)
{
    return with_buffer(path, 0, 128 << 10, lines_consume, NULL, r, err);
}

/* ---- read, O_DIRECT ------------------------------------------------------ */

typedef struct SumState {
    bool crc;
    uint32_t c;
} SumState;

static void sum_consume(const unsigned char *buf, size_t n, RawResult *r, void *state)
{
    SumState *s = state;
    if (s->crc)
        s->c = crc32_update(s->c, buf, n);
    else
        r->rr_sum += buf[0] + buf[n - 1];
}

int raw_read(const char *path, size_t block, bool crc, RawResult *r, HsError *err)
{
    SumState s = {crc, 0};
    int rc = with_buffer(path, 0, block, sum_consume, &s, r, err);
    r->rr_crc = (uint32_t)s.c;
    return rc;
}

/* raw_load(): copy what each read() brought into the whole buffer. */
typedef struct LoadState {
    unsigned char *dst;
    size_t len, at;
} LoadState;

static void load_consume(const unsigned char *buf, size_t n, RawResult *r, void *state)
{
    (void)r;
    LoadState *l = state;
    size_t take = n < l->len - l->at ? n : l->len - l->at; /* it grew: keep the start */
    memcpy(l->dst + l->at, buf, take);
    l->at += take;
}

int raw_load(const char *path, unsigned char **buf, size_t *len, HsError *err)
{
    uint64_t bytes;
    RawResult r;
    int rc = file_total_bytes(path, &bytes, err);
    if (rc < 0)
        return rc;
    LoadState l = {.dst = malloc(bytes ? (size_t)bytes : 1), .len = (size_t)bytes};
    if (l.dst == NULL)
        return hs_error_set(err, -ENOMEM, path, HS_NO_BLOCK,
                            "out of memory for %llu bytes", (unsigned long long)bytes);
    if ((rc = with_buffer(path, 0, 1 << 20, load_consume, &l, &r, err)) == 0 &&
        l.at < l.len)
        rc = hs_error_set(err, -EIO, path, HS_NO_BLOCK,
                          "shrank while it was read: %zu of %zu bytes", l.at, l.len);
    if (rc < 0) {
        free(l.dst);
        return rc;
    }
    *buf = l.dst;
    *len = l.len;
    return 0;
}

int raw_direct(const char *path, size_t block, RawResult *r, HsError *err)
{
    SumState s = {false, 0};
    if (block % 4096 != 0)
        return hs_error_set(err, HS_EUSAGE, path, HS_NO_BLOCK,
                            "O_DIRECT needs a block that is a multiple of 4096");
    return with_buffer(path, O_DIRECT, block, sum_consume, &s, r, err);
}

/* ---- mmap ------------------------------------------------------------------ */

static void touch(const unsigned char *p, size_t len, RawTouch how, uint32_t *c,
                  uint64_t *sum)
{
    uint64_t s = 0, w;
    size_t off = 0;
    switch (how) {
    case RAW_TOUCH_CRC:
        *c = crc32_update(*c, p, len);
        return;
    case RAW_TOUCH_LINE:
        for (; off + 8 <= len; off += 64) {
            memcpy(&w, p + off, 8);
            s += w;
        }
        break;
    case RAW_TOUCH_BYTE:
        for (; off + 8 <= len; off += 8) {
            memcpy(&w, p + off, 8);
            s += w;
        }
        for (; off < len; off++)
            s += p[off];
        break;
    }
    *sum += s;
}

/* One segment being mapped chunk by chunk; outlives a SIGBUS in the walk. */
typedef struct MapWalk {
    const char *mw_name;
    int mw_fd;
    size_t mw_size, mw_step;
    RawTouch mw_how;
    void (*mw_after_map)(const char *segment, void *arg);
    void *mw_arg;
    size_t mw_off;       /* the chunk mapped now */
    unsigned char *mw_p; /* its mapping, or NULL */
    size_t mw_len;
    uint32_t mw_crc;
    RawResult *mw_r;
} MapWalk;

static int map_walk(void *arg, HsError *err)
{
    MapWalk *w = arg;
    for (w->mw_off = 0; w->mw_off < w->mw_size; w->mw_off += w->mw_step) {
        size_t len =
            w->mw_size - w->mw_off < w->mw_step ? w->mw_size - w->mw_off : w->mw_step;
        void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, w->mw_fd, (off_t)w->mw_off);
        if (p == MAP_FAILED)
            return hs_error_set(err, -errno, w->mw_name, HS_NO_BLOCK, "mmap: %s",
                                strerror(errno));
        w->mw_len = len;
        w->mw_p = p;
        atomic_signal_fence(memory_order_seq_cst); /* map_locate() sees them */
        w->mw_r->rr_calls++;
        if (w->mw_after_map)
            w->mw_after_map(w->mw_name, w->mw_arg);
        touch(w->mw_p, len, w->mw_how, &w->mw_crc, &w->mw_r->rr_sum);
        munmap(w->mw_p, len);
        w->mw_p = NULL;
        w->mw_r->rr_bytes += len;
    }
    return 0;
}

static bool map_locate(const void *arg, const void *addr, uint64_t *where)
{
    const MapWalk *w = arg;
    const unsigned char *a = addr;
    if (w->mw_p == NULL || a < w->mw_p || a >= w->mw_p + w->mw_len)
        return false;
    *where = w->mw_off + (uint64_t)(a - w->mw_p);
    return true;
}

int raw_mmap_hooked(const char *path, size_t chunk, RawTouch how,
                    void (*after_map)(const char *segment, void *arg), void *arg,
                    RawResult *r, HsError *err)
{
    memset(r, 0, sizeof(*r));
    uint32_t c = 0;
    for (uint32_t seg = 0;; seg++) {
        char name[PATH_MAX];
        struct stat st;
        int fd = open_segment(path, seg, 0, name, sizeof(name), err);
        if (fd == NO_SEGMENT)
            break;
        if (fd < 0)
            return fd;
        if (fstat(fd, &st) < 0) {
            int e = errno;
            close(fd);
            return hs_error_set(err, -e, name, HS_NO_BLOCK, "fstat: %s", strerror(e));
        }
        MapWalk w = {.mw_name = name,
                     .mw_fd = fd,
                     .mw_size = (size_t)st.st_size,
                     .mw_step = chunk ? chunk : (size_t)st.st_size,
                     .mw_how = how,
                     .mw_after_map = after_map,
                     .mw_arg = arg,
                     .mw_crc = c,
                     .mw_r = r};
        BusGuard guard = {.bg_work = map_walk,
                          .bg_locate = map_locate,
                          .bg_arg = &w,
                          .bg_file = name,
                          .bg_unit = BUSGUARD_BYTE};
        int rc = busguard_run(&guard, err);
        if (w.mw_p != NULL)
            munmap(w.mw_p, w.mw_len);
        close(fd);
        if (rc < 0)
            return rc;
        c = w.mw_crc;
    }
    r->rr_crc = (uint32_t)c;
    return 0;
}

int raw_mmap(const char *path, size_t chunk, RawTouch how, RawResult *r, HsError *err)
{
    return raw_mmap_hooked(path, chunk, how, NULL, NULL, r, err);
}

int raw_run(RawMethod method, const char *path, size_t block, RawResult *r,
            HsError *err)
{
    switch (method) {
    case RAW_WC:
        return raw_wc(path, r, err);
    case RAW_LINES:
        return raw_lines(path, r, err);
    case RAW_READ:
        return raw_read(path, block, false, r, err);
    case RAW_MMAP:
        return raw_mmap(path, block, RAW_TOUCH_BYTE, r, err);
    case RAW_DIRECT:
        return raw_direct(path, block, r, err);
    }
    return hs_error_set(err, HS_EUSAGE, path, HS_NO_BLOCK, "no reader %d", (int)method);
}
