/*
 * pageio.c -- preadv into frames and mmap windows (see pageio.h).
 */
#include "pageio.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

#define PAGEIO_MAX_IOV 1024 /* IOV_MAX on Linux; 8 MiB of pages per call */

int pageio_readv(RelFile *rf, uint64_t blkno, uint32_t n, void *const *frames,
                 uint32_t *calls, HsError *err)
{
    struct iovec iov[PAGEIO_MAX_IOV];
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
        if (chunk > PAGEIO_MAX_IOV)
            chunk = PAGEIO_MAX_IOV;
        for (uint32_t i = 0; i < chunk; i++)
            iov[i] = (struct iovec){frames[i], BLCKSZ};

        /* preadv until the whole chunk is in, resuming inside a page if need be */
        size_t want = (size_t)chunk * BLCKSZ, done = 0;
        int first = 0;
        while (done < want) {
            ssize_t got =
                preadv(fd, iov + first, (int)chunk - first, (off_t)(off + done));
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
            for (size_t skip = (size_t)got; skip > 0 && first < (int)chunk;) {
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

int pageio_map(RelFile *rf, uint64_t first, uint32_t want, PageIOAdvice adv,
               PageIOWindow *w, HsError *err)
{
    int fd;
    uint64_t off;
    uint64_t nblocks = relfile_nblocks(rf);
    if (first >= nblocks || relfile_block_fd(rf, first, &fd, &off) < 0)
        return hs_error_set(err, -EINVAL, rf->rf_path, (int64_t)first,
                            "map past the end of the relation (%llu pages)",
                            (unsigned long long)nblocks);
    uint64_t limit = rf->rf_seg_blocks - first % rf->rf_seg_blocks;
    if (limit > nblocks - first)
        limit = nblocks - first;
    uint32_t n = want < limit ? want : (uint32_t)limit;
    size_t len = (size_t)n * BLCKSZ;

    int flags = MAP_SHARED | (adv == PAGEIO_ADV_POPULATE ? MAP_POPULATE : 0);
    void *base = mmap(NULL, len, PROT_READ, flags, fd, (off_t)off);
    if (base == MAP_FAILED)
        return hs_error_set(err, -errno, rf->rf_path, (int64_t)first, "mmap: %s",
                            strerror(errno));
    static const int advice[] = {
        [PAGEIO_ADV_NORMAL] = MADV_NORMAL,
        [PAGEIO_ADV_SEQUENTIAL] = MADV_SEQUENTIAL,
        [PAGEIO_ADV_WILLNEED] = MADV_WILLNEED,
        [PAGEIO_ADV_POPULATE] = MADV_NORMAL,
    };
    if (adv != PAGEIO_ADV_NORMAL && adv != PAGEIO_ADV_POPULATE)
        (void)madvise(base, len, advice[adv]); /* advice only: failure is harmless */
    *w = (PageIOWindow){
        .pw_first = first, .pw_npages = n, .pw_base = base, .pw_len = len};
    return 0;
}

void pageio_unmap(PageIOWindow *w)
{
    if (w->pw_base != NULL)
        munmap(w->pw_base, w->pw_len);
    w->pw_base = NULL;
}
