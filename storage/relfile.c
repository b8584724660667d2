/*
 * relfile.c -- a relation's segment set: naming, what the directory holds,
 *              opening every segment under the first one's lock, and reads
 *              (see relfile.h).  Writing is relwrite.c.
 */
#include "relfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define RELFILE_OPEN_TRIES                                                             \
    100 /* commits slipping in between a reader's open                                 \
           and its lock before it gives up */

int relfile_segment_name(const char *path, uint32_t seg, char *buf, size_t len)
{
    int n = seg == 0 ? snprintf(buf, len, "%s", path)
                     : snprintf(buf, len, "%s.%u", path, (unsigned)seg);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* ---- what the directory holds ------------------------------------------- */

bool relfile_pid_alive(long pid)
{
    return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno != ESRCH);
}

/* Parse "DIGITS" at s into *v, up to end (NULL: the string's end); false if
 * it is not a whole number. */
static bool parse_number(const char *s, const char *end, unsigned long long *v)
{
    char *stop;
    if (s == end || *s < '0' || *s > '9')
        return false;
    errno = 0;
    *v = strtoull(s, &stop, 10);
    return errno == 0 && (end ? stop == end : *stop == '\0');
}

/*
 * Does directory entry name belong to the relation whose file name is
 * base?  "base" (segment 0), "base.K", "base[.K].tmp-PID", "base[.K].old-PID".
 */
static bool classify(const char *name, const char *base, uint32_t *seg, char *kind,
                     long *pid)
{
    size_t n = strlen(base);
    unsigned long long v = 0, p;
    if (strncmp(name, base, n) != 0 || (name[n] != '\0' && name[n] != '.'))
        return false;
    const char *rest = name[n] ? name + n + 1 : name + n;
    *seg = 0, *kind = 0, *pid = 0;
    if (*rest == '\0')
        return true;
    const char *dot = strchr(rest, '.');
    if (parse_number(rest, dot, &v) && v <= UINT32_MAX) { /* a segment number */
        *seg = (uint32_t)v;
        if (dot == NULL)
            return true;
        rest = dot + 1;
    } else if (dot != NULL) {
        return false;
    }
    static const struct {
        const char *tag;
        char kind;
    } tags[] = {{"tmp-", 't'}, {"old-", 'o'}, {"commit-", 'c'}};
    for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
        size_t t = strlen(tags[i].tag);
        if (strncmp(rest, tags[i].tag, t) == 0 && parse_number(rest + t, NULL, &p) &&
            p > 0 && p <= (unsigned long long)LONG_MAX &&
            (tags[i].kind != 'c' || *seg == 0)) {
            *kind = tags[i].kind;
            *pid = (long)p;
            return true;
        }
    }
    return false;
}

int relfile_each_file(const char *path,
                      int (*fn)(void *arg, const char *name, uint32_t seg, char kind,
                                long pid),
                      void *arg, HsError *err)
{
    char dcopy[PATH_MAX], bcopy[PATH_MAX];
    snprintf(dcopy, sizeof(dcopy), "%s", path);
    snprintf(bcopy, sizeof(bcopy), "%s", path);
    const char *dir = dirname(dcopy), *base = basename(bcopy);
    DIR *d = opendir(dir);
    if (d == NULL)
        return hs_error_set(err, -errno, dir, HS_NO_BLOCK, "opendir: %s",
                            strerror(errno));
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        uint32_t seg;
        char kind;
        long pid;
        if (classify(e->d_name, base, &seg, &kind, &pid))
            rc = fn(arg, e->d_name, seg, kind, pid);
    }
    closedir(d);
    return rc;
}

/* What relfile_scan_dir() gathers: the segments present, and per pid of a
 * leftover whether it kept old segments and whether its first is there. */
typedef struct DirScan {
    RelFileDir *ds_dir;
    uint64_t ds_seen[RELFILE_MAX_SEGS / 64]; /* a bit per segment present */
    long ds_commit[8], ds_first[8];          /* pids with a commit marker, with
                                                 their first segment's .tmp- */
    unsigned ds_ncommit, ds_nfirst;
} DirScan;

static int note_file(void *arg, const char *name, uint32_t seg, char kind, long pid)
{
    DirScan *s = arg;
    (void)name;
    if (kind == 0 && seg < RELFILE_MAX_SEGS) {
        s->ds_seen[seg / 64] |= UINT64_C(1) << (seg % 64);
        if (seg + 1 > s->ds_dir->rd_nsegs)
            s->ds_dir->rd_nsegs = seg + 1;
    } else if (kind == 'c' && s->ds_ncommit < 8) {
        s->ds_commit[s->ds_ncommit++] = pid;
    } else if (kind == 't' && seg == 0 && s->ds_nfirst < 8) {
        s->ds_first[s->ds_nfirst++] = pid;
    }
    return 0;
}

int relfile_scan_dir(const char *path, RelFileDir *d, HsError *err)
{
    DirScan *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return hs_error_set(err, -ENOMEM, path, HS_NO_BLOCK, "out of memory");
    memset(d, 0, sizeof(*d));
    s->ds_dir = d;
    int rc = relfile_each_file(path, note_file, s, err);
    for (uint32_t k = 0; k < d->rd_nsegs; k++) {
        if (s->ds_seen[k / 64] & (UINT64_C(1) << (k % 64)))
            d->rd_present++;
        else if (d->rd_present == k)
            d->rd_gap = k; /* the first missing one */
    }
    for (unsigned i = 0; i < s->ds_ncommit; i++)
        for (unsigned j = 0; j < s->ds_nfirst; j++)
            if (s->ds_commit[i] == s->ds_first[j] &&
                !relfile_pid_alive(s->ds_commit[i]))
                d->rd_torn_pid = s->ds_commit[i];
    free(s);
    return rc;
}

/* ---- opening ----------------------------------------------------------------- */

int relfile_add_fd(RelFile *rf, int fd)
{
    if (rf->rf_nsegs >= RELFILE_MAX_SEGS)
        return -EFBIG;
    int *fds = realloc(rf->rf_fds, (rf->rf_nsegs + 1) * sizeof(int));
    if (fds == NULL)
        return -ENOMEM;
    rf->rf_fds = fds;
    rf->rf_fds[rf->rf_nsegs++] = fd;
    return 0;
}

int relfile_init(RelFile *rf, const char *path, uint32_t seg_blocks, HsError *err)
{
    memset(rf, 0, sizeof(*rf));
    if (seg_blocks == 0)
        return hs_error_set(err, HS_EUSAGE, path, HS_NO_BLOCK,
                            "segment size must be at least one page");
    if (snprintf(rf->rf_path, sizeof(rf->rf_path), "%s", path) >=
        (int)sizeof(rf->rf_path))
        return hs_error_set(err, -ENAMETOOLONG, path, HS_NO_BLOCK, "%s",
                            strerror(ENAMETOOLONG));
    rf->rf_seg_blocks = seg_blocks;
    return 0;
}

/*
 * Open segment seg of rf (without blocking: a FIFO would block in open)
 * and check it is a regular file of a whole number of pages, at most a
 * segment.  Its descriptor is added to rf; *size gets its size.
 */
int relfile_open_regular(const char *name, int flags, uint64_t *size, HsError *err)
{
    struct stat st;
    int fd = open(name, flags | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return hs_error_set(err, -errno, name, HS_NO_BLOCK, "%s", strerror(errno));
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return hs_error_set(err, -e, name, HS_NO_BLOCK, "fstat: %s", strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return hs_error_set(err, HS_ENOTHEAP, name, HS_NO_BLOCK,
                            "not a regular file (%s)",
                            S_ISDIR(st.st_mode)    ? "a directory"
                            : S_ISFIFO(st.st_mode) ? "a FIFO"
                            : S_ISSOCK(st.st_mode) ? "a socket"
                                                   : "a device");
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    if (size)
        *size = (uint64_t)st.st_size;
    return fd;
}

static int open_segment(RelFile *rf, uint32_t seg, uint64_t *size, HsError *err)
{
    char name[PATH_MAX];
    int rc = relfile_segment_name(rf->rf_path, seg, name, sizeof(name));
    if (rc < 0)
        return hs_error_set(err, rc, rf->rf_path, HS_NO_BLOCK, "%s", strerror(-rc));
    int fd = relfile_open_regular(name, O_RDONLY, size, err);
    if (fd < 0)
        return fd;
    if ((rc = relfile_add_fd(rf, fd)) < 0) {
        close(fd);
        return hs_error_set(err, rc, name, HS_NO_BLOCK, "%s", strerror(-rc));
    }
    uint64_t seg_bytes = (uint64_t)rf->rf_seg_blocks * BLCKSZ;
    if (*size % BLCKSZ != 0)
        return hs_error_set(
            err, HS_ENOTHEAP, name, HS_NO_BLOCK,
            "size %llu is not a multiple of %d bytes "
            "(a partial page at block %llu)",
            (unsigned long long)*size, BLCKSZ,
            (unsigned long long)(seg * (uint64_t)rf->rf_seg_blocks + *size / BLCKSZ));
    if (*size > seg_bytes)
        return hs_error_set(err, HS_ENOTHEAP, name, HS_NO_BLOCK,
                            "segment holds %llu bytes, more than the segment size %llu",
                            (unsigned long long)*size, (unsigned long long)seg_bytes);
    return 0;
}

/* The directory's set must be a relation: no gap, no torn replace. */
static int check_set(const RelFile *rf, const RelFileDir *d, HsError *err)
{
    char name[PATH_MAX], next[PATH_MAX];
    if (d->rd_torn_pid != 0)
        return hs_error_set(err, HS_EREFUSED, rf->rf_path, HS_NO_BLOCK,
                            "half replaced: a writer (pid %ld) died while putting a "
                            "new table in its place; run mkheap on it again to put "
                            "the old one back",
                            d->rd_torn_pid);
    if (d->rd_present < d->rd_nsegs) {
        relfile_segment_name(rf->rf_path, d->rd_gap, name, sizeof(name));
        relfile_segment_name(rf->rf_path, d->rd_nsegs - 1, next, sizeof(next));
        return hs_error_set(err, HS_ENOTHEAP, name, HS_NO_BLOCK,
                            "missing, but %s exists: a gap in the segment set", next);
    }
    return 0;
}

/* Open segments 1 .. of rf, all the directory holds, checking that only the
 * last is short.  Segment 0 is open already, size0 its size. */
static int open_rest(RelFile *rf, uint64_t size0, uint32_t nsegs, HsError *err)
{
    uint64_t seg_bytes = (uint64_t)rf->rf_seg_blocks * BLCKSZ, size = size0;
    rf->rf_nblocks = size0 / BLCKSZ;
    for (uint32_t seg = 1; seg < nsegs; seg++) {
        if (size < seg_bytes) {
            char prev[PATH_MAX], name[PATH_MAX];
            relfile_segment_name(rf->rf_path, seg - 1, prev, sizeof(prev));
            relfile_segment_name(rf->rf_path, seg, name, sizeof(name));
            return hs_error_set(err, HS_ENOTHEAP, prev, HS_NO_BLOCK,
                                "segment is not full (%llu of %u pages) but %s follows "
                                "it",
                                (unsigned long long)(size / BLCKSZ), rf->rf_seg_blocks,
                                name);
        }
        int rc = open_segment(rf, seg, &size, err);
        if (rc < 0)
            return rc;
        rf->rf_nblocks += size / BLCKSZ;
    }
    return 0;
}

/*
 * One try at opening the set: segment 0, its shared lock, and a check that
 * it is still the file at its path (1: a commit replaced it meanwhile, try
 * again); then the directory's set, under the lock.
 */
static int open_set(RelFile *rf, HsError *err)
{
    uint64_t size0;
    struct stat now, mine;
    RelFileDir d;
    int rc = open_segment(rf, 0, &size0, err);
    if (rc < 0)
        return rc;
    int fd0 = rf->rf_fds[0];
    while (flock(fd0, LOCK_SH) < 0)
        if (errno != EINTR)
            return hs_error_set(err, -errno, rf->rf_path, HS_NO_BLOCK, "flock: %s",
                                strerror(errno));
    if (fstat(fd0, &mine) < 0 || stat(rf->rf_path, &now) < 0 ||
        mine.st_ino != now.st_ino || mine.st_dev != now.st_dev)
        return 1; /* replaced between our open and our lock */
    if ((rc = relfile_scan_dir(rf->rf_path, &d, err)) == 0 &&
        (rc = check_set(rf, &d, err)) == 0)
        rc = open_rest(rf, size0, d.rd_nsegs, err);
    flock(fd0, LOCK_UN); /* the descriptors stay: what they read cannot change */
    return rc;
}

int relfile_open(RelFile *rf, const char *path, uint32_t seg_blocks, HsError *err)
{
    int rc = relfile_init(rf, path, seg_blocks, err);
    for (int tries = 0; rc == 0; tries++) {
        if ((rc = open_set(rf, err)) == 0)
            return 0;
        relfile_close(rf);
        rf->rf_nblocks = 0;
        if (rc != 1)
            break;
        if (tries == RELFILE_OPEN_TRIES)
            return hs_error_set(err, -EAGAIN, path, HS_NO_BLOCK,
                                "replaced %d times while being opened", tries);
        rc = 0;
    }
    return rc;
}

int relfile_block_fd(const RelFile *rf, uint64_t blkno, int *fd, uint64_t *off)
{
    uint64_t seg = blkno / rf->rf_seg_blocks;
    if (seg >= rf->rf_nsegs)
        return -EINVAL;
    *fd = rf->rf_fds[seg];
    *off = (blkno % rf->rf_seg_blocks) * (uint64_t)BLCKSZ;
    return 0;
}

/* What O_DIRECT asks of buffers on fd's file system: *align, or 0 when the
 * file system says it cannot do direct I/O; 4096 when it does not say. */
static int dio_alignment(int fd, uint32_t *align)
{
    *align = 4096;
#ifdef STATX_DIOALIGN
    struct statx stx;
    if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) < 0)
        return errno == ENOSYS ? 0 : -errno;
    if (stx.stx_mask & STATX_DIOALIGN)
        *align = stx.stx_dio_offset_align == 0 ? 0 : stx.stx_dio_mem_align;
#else
    (void)fd;
#endif
    return 0;
}

int relfile_set_direct(RelFile *rf, uint32_t *mem_align, HsError *err)
{
    *mem_align = 0;
    for (uint32_t seg = 0; seg < rf->rf_nsegs; seg++) {
        char name[PATH_MAX];
        uint32_t align;
        int fd = rf->rf_fds[seg], flags = fcntl(fd, F_GETFL),
            rc = dio_alignment(fd, &align);
        relfile_segment_name(rf->rf_path, seg, name, sizeof(name));
        if (rc == 0 && align != 0 &&
            (flags < 0 || fcntl(fd, F_SETFL, flags | O_DIRECT) < 0))
            rc = -errno;
        if (rc == -EINVAL || (rc == 0 && align == 0))
            return hs_error_set(err, -EINVAL, name, HS_NO_BLOCK,
                                "the file system refuses O_DIRECT (--direct); read "
                                "through the page cache instead (without --direct)");
        if (rc < 0)
            return hs_error_set(err, rc, name, HS_NO_BLOCK, "O_DIRECT (--direct): %s",
                                strerror(-rc));
        if (align > *mem_align)
            *mem_align = align;
    }
    return 0;
}

#define RELFILE_MAX_IOV 1024 /* IOV_MAX on Linux: 8 MiB of pages per preadv */

int relfile_readv(RelFile *rf, uint64_t blkno, uint32_t n, void *const *frames,
                  uint32_t *calls, HsError *err)
{
    struct iovec iov[RELFILE_MAX_IOV];
    *calls = 0;
    if (blkno + n > relfile_nblocks(rf))
        return hs_error_set(err, -EINVAL, rf->rf_path, (int64_t)blkno,
                            "read past the end of the relation (%llu pages)",
                            (unsigned long long)relfile_nblocks(rf));
    while (n > 0) {
        int fd;
        uint64_t off;
        relfile_block_fd(rf, blkno, &fd, &off);
        uint64_t in_seg = rf->rf_seg_blocks - blkno % rf->rf_seg_blocks;
        uint32_t chunk = n;
        if (chunk > in_seg)
            chunk = (uint32_t)in_seg;
        if (chunk > RELFILE_MAX_IOV)
            chunk = RELFILE_MAX_IOV;
        /* frames that follow each other in memory make one iovec: the kernel
         * then copies in fewer, longer runs (a ring's frames usually do) */
        int niov = 0;
        for (uint32_t i = 0; i < chunk; i++) {
            if (niov > 0 && (char *)iov[niov - 1].iov_base + iov[niov - 1].iov_len ==
                                (char *)frames[i])
                iov[niov - 1].iov_len += BLCKSZ;
            else
                iov[niov++] = (struct iovec){frames[i], BLCKSZ};
        }

        /* preadv until the whole chunk is in, resuming inside a page if need be */
        size_t want = (size_t)chunk * BLCKSZ, done = 0;
        int first = 0;
        while (done < want) {
            ssize_t got = preadv(fd, iov + first, niov - first, (off_t)(off + done));
            (*calls)++;
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0) {
                int e = got < 0 ? errno : 0;
                char name[PATH_MAX];
                relfile_segment_name(rf->rf_path, (uint32_t)(blkno / rf->rf_seg_blocks),
                                     name, sizeof(name));
                return hs_error_set(err, e ? -e : -EIO, name,
                                    (int64_t)(blkno + done / BLCKSZ), "read: %s",
                                    e ? strerror(e)
                                      : "unexpected end of file (did it shrink?)");
            }
            done += (size_t)got;
            for (size_t skip = (size_t)got; skip > 0 && first < niov;) {
                if (skip >= iov[first].iov_len) {
                    skip -= iov[first].iov_len;
                    first++;
                } else {
                    iov[first].iov_base = (char *)iov[first].iov_base + skip;
                    iov[first].iov_len -= skip;
                    skip = 0;
                }
            }
        }
        frames += chunk;
        blkno += chunk;
        n -= chunk;
    }
    return 0;
}

int relfile_read(RelFile *rf, uint64_t blkno, uint32_t n, void *buf, HsError *err)
{
    void *pages[64];
    uint32_t calls;
    while (n > 0) {
        uint32_t chunk = n < 64 ? n : 64;
        for (uint32_t i = 0; i < chunk; i++)
            pages[i] = (char *)buf + (size_t)i * BLCKSZ;
        int rc = relfile_readv(rf, blkno, chunk, pages, &calls, err);
        if (rc < 0)
            return rc;
        buf = (char *)buf + (size_t)chunk * BLCKSZ;
        blkno += chunk;
        n -= chunk;
    }
    return 0;
}

void relfile_close(RelFile *rf)
{
    for (uint32_t i = 0; i < rf->rf_nsegs; i++)
        close(rf->rf_fds[i]);
    free(rf->rf_fds);
    rf->rf_fds = NULL;
    rf->rf_nsegs = 0;
}
