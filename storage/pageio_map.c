/*
 * pageio_map.c -- mmap() windows of a segment (see pageio.h): the mmap
 *                 access method's only system calls; its I/O is the page
 *                 faults of whoever touches the pages.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "pageio.h"

const char *const pageio_advice_names[] = {[PAGEIO_ADV_NORMAL] = "normal",
                                           [PAGEIO_ADV_SEQUENTIAL] = "sequential",
                                           [PAGEIO_ADV_WILLNEED] = "willneed",
                                           [PAGEIO_ADV_POPULATE] = "populate",
                                           [PAGEIO_ADV_POPULATE + 1] = NULL};

const char *pageio_advice_name(PageIOAdvice a)
{
    return pageio_advice_names[a];
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
