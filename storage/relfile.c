/*
 * relfile.c -- segment files: open, read, and the write-then-rename protocol
 *              (see relfile.h).
 */
#include "relfile.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

int relfile_segment_name(const char *path, uint32_t seg, char *buf, size_t len)
{
    int n = seg == 0 ? snprintf(buf, len, "%s", path)
                     : snprintf(buf, len, "%s.%u", path, (unsigned)seg);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int tagged_name(const RelFile *rf, uint32_t seg, const char *kind, char *buf,
                       size_t len)
{
    char final[PATH_MAX];
    int rc = relfile_segment_name(rf->rf_path, seg, final, sizeof(final));
    if (rc < 0)
        return rc;
    size_t a = strlen(final), k = strlen(kind), t = strlen(rf->rf_tmp_tag);
    if (a + 1 + k + t >= len)
        return -ENAMETOOLONG;
    memcpy(buf, final, a);
    buf[a] = '.';
    memcpy(buf + a + 1, kind, k);
    memcpy(buf + a + 1 + k, rf->rf_tmp_tag, t + 1); /* "FINAL.KIND-PID" */
    return 0;
}

/* Where segment seg is written before the commit renames it into place. */
static int temp_name(const RelFile *rf, uint32_t seg, char *buf, size_t len)
{
    return tagged_name(rf, seg, "tmp", buf, len);
}

/* A second name for the segment a replacing commit is about to overwrite. */
static int backup_name(const RelFile *rf, uint32_t seg, char *buf, size_t len)
{
    return tagged_name(rf, seg, "old", buf, len);
}

static int add_fd(RelFile *rf, int fd)
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

static int init(RelFile *rf, const char *path, uint32_t seg_blocks, HsError *err)
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

int relfile_open(RelFile *rf, const char *path, uint32_t seg_blocks, HsError *err)
{
    int rc = init(rf, path, seg_blocks, err);
    if (rc < 0)
        return rc;

    const uint64_t seg_bytes = (uint64_t)seg_blocks * BLCKSZ;
    for (uint32_t seg = 0;; seg++) {
        char name[PATH_MAX];
        struct stat st;
        if ((rc = relfile_segment_name(path, seg, name, sizeof(name))) < 0)
            goto fail_errno;
        int fd = open(name, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            if (errno == ENOENT && seg > 0)
                break; /* the relation ends at the first missing segment */
            rc = -errno;
            goto fail_errno;
        }
        if (fstat(fd, &st) < 0 || (rc = add_fd(rf, fd)) < 0) {
            rc = rc < 0 ? rc : -errno;
            close(fd);
            goto fail_errno;
        }
        if (!S_ISREG(st.st_mode)) {
            rc =
                hs_error_set(err, HS_ENOTHEAP, name, HS_NO_BLOCK, "not a regular file");
            goto fail;
        }
        uint64_t size = (uint64_t)st.st_size;
        if (size % BLCKSZ != 0) {
            rc = hs_error_set(
                err, HS_ENOTHEAP, name, HS_NO_BLOCK,
                "size %llu is not a multiple of %d bytes "
                "(a partial page at block %llu)",
                (unsigned long long)size, BLCKSZ,
                (unsigned long long)(seg * (uint64_t)seg_blocks + size / BLCKSZ));
            goto fail;
        }
        if (size > seg_bytes) {
            rc = hs_error_set(err, HS_ENOTHEAP, name, HS_NO_BLOCK,
                              "segment holds %llu bytes, more than the segment "
                              "size %llu",
                              (unsigned long long)size, (unsigned long long)seg_bytes);
            goto fail;
        }
        rf->rf_nblocks += size / BLCKSZ;
        if (size < seg_bytes) {
            /* a partial segment must be the last one: say so if it is not */
            char next[PATH_MAX];
            if (relfile_segment_name(path, seg + 1, next, sizeof(next)) == 0 &&
                access(next, F_OK) == 0) {
                rc =
                    hs_error_set(err, HS_ENOTHEAP, name, HS_NO_BLOCK,
                                 "segment is not full (%llu of %u pages) but %s "
                                 "follows it",
                                 (unsigned long long)(size / BLCKSZ), seg_blocks, next);
                goto fail;
            }
            break;
        }
    }
    return 0;

fail_errno:
    hs_error_set(err, rc, path, HS_NO_BLOCK, "%s", strerror(-rc));
fail:
    relfile_close(rf);
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

int relfile_create(RelFile *rf, const char *path, uint32_t seg_blocks, bool replace,
                   HsError *err)
{
    int rc = init(rf, path, seg_blocks, err);
    if (rc < 0)
        return rc;
    if (!replace && access(path, F_OK) == 0)
        return hs_error_set(err, HS_EEXIST, path, HS_NO_BLOCK,
                            "exists; use --force to replace it");
    rf->rf_writing = true;
    rf->rf_replace = replace;
    snprintf(rf->rf_tmp_tag, sizeof(rf->rf_tmp_tag), "-%ld", (long)getpid());
    return 0;
}

/* Open the temporary file of the next segment. */
static int open_next_segment(RelFile *rf, HsError *err)
{
    char name[PATH_MAX];
    int rc = temp_name(rf, rf->rf_nsegs, name, sizeof(name));
    if (rc < 0)
        return hs_error_set(err, rc, rf->rf_path, HS_NO_BLOCK, "%s", strerror(-rc));
    int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return hs_error_set(err, -errno, name, HS_NO_BLOCK, "create: %s",
                            strerror(errno));
    if ((rc = add_fd(rf, fd)) < 0) {
        close(fd);
        unlink(name);
        return hs_error_set(err, rc, name, HS_NO_BLOCK, "%s", strerror(-rc));
    }
    return 0;
}

int relfile_append(RelFile *rf, const void *buf, uint32_t n, HsError *err)
{
    const char *src = buf;
    while (n > 0) {
        uint32_t in_seg = (uint32_t)(rf->rf_nblocks % rf->rf_seg_blocks);
        if (in_seg == 0 && rf->rf_nblocks / rf->rf_seg_blocks == rf->rf_nsegs) {
            int rc = open_next_segment(rf, err);
            if (rc < 0)
                return rc;
        }
        uint32_t chunk = rf->rf_seg_blocks - in_seg;
        if (chunk > n)
            chunk = n;
        int fd = rf->rf_fds[rf->rf_nsegs - 1];
        size_t want = (size_t)chunk * BLCKSZ, done = 0;
        while (done < want) {
            ssize_t put = pwrite(fd, src + done, want - done,
                                 (off_t)((uint64_t)in_seg * BLCKSZ + done));
            if (put < 0 && errno == EINTR)
                continue;
            if (put <= 0) {
                int e = put < 0 ? errno : ENOSPC;
                char name[PATH_MAX];
                temp_name(rf, rf->rf_nsegs - 1, name, sizeof(name));
                return hs_error_set(err, -e, name,
                                    (int64_t)(rf->rf_nblocks + done / BLCKSZ),
                                    "write: %s", strerror(e));
            }
            done += (size_t)put;
        }
        src += want;
        rf->rf_nblocks += chunk;
        n -= chunk;
    }
    return 0;
}

static int fsync_dir_of(const char *path)
{
    char copy[PATH_MAX];
    snprintf(copy, sizeof(copy), "%s", path);
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

/* Remove the second names keep_old_segments() made. */
static void drop_old_segments(RelFile *rf, const bool *kept)
{
    for (uint32_t s = 0; s < rf->rf_nsegs; s++) {
        char old[PATH_MAX];
        if (kept[s] && backup_name(rf, s, old, sizeof(old)) == 0)
            unlink(old);
    }
}

/*
 * Give each existing segment that a replacing commit will overwrite a second
 * name (a hard link), recording in kept[] which ones had an old segment.  Any
 * failure but "no such segment" is an error before anything is renamed: an
 * old segment that cannot be kept is not replaced.
 */
static int keep_old_segments(RelFile *rf, bool *kept, HsError *err)
{
    for (uint32_t s = 0; s < rf->rf_nsegs; s++) {
        char final[PATH_MAX], old[PATH_MAX];
        relfile_segment_name(rf->rf_path, s, final, sizeof(final));
        backup_name(rf, s, old, sizeof(old));
        if (link(final, old) == 0) {
            kept[s] = true;
        } else if (errno != ENOENT) {
            int rc = hs_error_set(err, -errno, old, HS_NO_BLOCK,
                                  "cannot keep the old segment while replacing it: "
                                  "link: %s",
                                  strerror(errno));
            drop_old_segments(rf, kept);
            return rc;
        }
    }
    return 0;
}

/*
 * A rename failed with segments from..nsegs-1 already in place: put back the
 * old segments they replaced and remove those that replaced nothing, so the
 * directory is as it was.  An old segment that cannot be put back is named
 * in the error: its second name is then its only one.
 */
static void undo_commit(RelFile *rf, uint32_t from, bool *kept, HsError *err)
{
    for (uint32_t u = from; u < rf->rf_nsegs; u++) {
        char final[PATH_MAX], old[PATH_MAX];
        relfile_segment_name(rf->rf_path, u, final, sizeof(final));
        backup_name(rf, u, old, sizeof(old));
        if (!kept[u]) {
            unlink(final);
        } else if (rename(old, final) == 0) {
            kept[u] = false;
        } else {
            size_t n = strlen(err->msg);
            snprintf(err->msg + n, sizeof(err->msg) - n, "; the old %s is left as %s",
                     final, old);
            kept[u] = false; /* the only copy: not to be dropped */
        }
    }
    drop_old_segments(rf, kept);
}

int relfile_commit(RelFile *rf, HsError *err)
{
    char tmp[PATH_MAX], final[PATH_MAX];
    bool *kept = NULL;
    int rc = 0;

    if (rf->rf_nsegs == 0 && (rc = open_next_segment(rf, err)) < 0)
        goto fail; /* an empty relation is still one (empty) file */

    for (uint32_t s = 0; s < rf->rf_nsegs; s++) {
        if (fsync(rf->rf_fds[s]) < 0) {
            temp_name(rf, s, tmp, sizeof(tmp));
            rc = hs_error_set(err, -errno, tmp, HS_NO_BLOCK, "fsync: %s",
                              strerror(errno));
            goto fail;
        }
    }
    /*
     * When replacing, each old segment keeps a second name until the whole
     * new relation is in place, so a rename that fails half-way puts the old
     * relation back as it was instead of leaving it half old, half new.
     */
    if ((kept = calloc(rf->rf_nsegs, sizeof(bool))) == NULL) {
        rc = hs_error_set(err, -ENOMEM, rf->rf_path, HS_NO_BLOCK, "out of memory");
        goto fail;
    }
    if (rf->rf_replace && (rc = keep_old_segments(rf, kept, err)) < 0)
        goto fail;
    /* The first segment last: until it is in place, there is no new relation. */
    for (uint32_t s = rf->rf_nsegs; s-- > 0;) {
        temp_name(rf, s, tmp, sizeof(tmp));
        relfile_segment_name(rf->rf_path, s, final, sizeof(final));
        unsigned flags = rf->rf_replace ? 0 : RENAME_NOREPLACE;
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, flags) < 0) {
            int e = errno;
            rc = e == EEXIST ? hs_error_set(err, HS_EEXIST, final, HS_NO_BLOCK,
                                            "exists; use --force to replace it")
                             : hs_error_set(err, -e, final, HS_NO_BLOCK, "rename: %s",
                                            strerror(e));
            undo_commit(rf, s + 1, kept, err);
            goto fail;
        }
    }
    rf->rf_writing = false;
    drop_old_segments(rf, kept);
    free(kept);
    /* An old relation may have had more segments than the new one. */
    if (rf->rf_replace) {
        for (uint32_t s = rf->rf_nsegs; s < UINT32_MAX; s++) {
            relfile_segment_name(rf->rf_path, s, final, sizeof(final));
            if (unlink(final) < 0)
                break;
        }
    }
    if ((rc = fsync_dir_of(rf->rf_path)) < 0)
        hs_error_set(err, rc, rf->rf_path, HS_NO_BLOCK, "fsync of directory: %s",
                     strerror(-rc));
    relfile_close(rf);
    return rc;

fail:
    free(kept);
    relfile_abort(rf);
    return rc;
}

void relfile_abort(RelFile *rf)
{
    if (rf->rf_writing) {
        for (uint32_t s = 0; s < rf->rf_nsegs; s++) {
            char tmp[PATH_MAX];
            if (temp_name(rf, s, tmp, sizeof(tmp)) == 0)
                unlink(tmp);
        }
        rf->rf_writing = false;
    }
    relfile_close(rf);
}
