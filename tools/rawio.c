/*
 * rawio.c -- read() and mmap() loops over a file (see rawio.h).
 */
#include "rawio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "relfile.h"

/* Open segment seg of path: fd >= 0, -1 when there is no such segment. */
static int open_segment(const char *path, uint32_t seg, char *name, size_t len,
                        HsError *err)
{
    if (relfile_segment_name(path, seg, name, len) < 0)
        return hs_error_set(err, -ENAMETOOLONG, path, HS_NO_BLOCK, "name too long");
    int fd = open(name, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && (errno != ENOENT || seg == 0))
        return hs_error_set(err, -errno, name, HS_NO_BLOCK, "open: %s",
                            strerror(errno));
    return fd < 0 ? INT32_MIN : fd;
}

int raw_read(const char *path, size_t block, bool crc, RawResult *r, HsError *err)
{
    memset(r, 0, sizeof(*r));
    unsigned char *buf = aligned_alloc(4096, (block + 4095) / 4096 * 4096);
    if (buf == NULL)
        return hs_error_set(err, -ENOMEM, path, HS_NO_BLOCK, "out of memory");
    uLong c = crc32(0L, Z_NULL, 0);
    int rc = 0;
    for (uint32_t seg = 0; rc == 0; seg++) {
        char name[PATH_MAX];
        int fd = open_segment(path, seg, name, sizeof(name), err);
        if (fd == INT32_MIN)
            break;
        if (fd < 0) {
            rc = fd;
            break;
        }
        for (;;) {
            ssize_t got = read(fd, buf, block);
            r->rr_calls++;
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0) {
                rc = hs_error_set(err, -errno, name, HS_NO_BLOCK, "read: %s",
                                  strerror(errno));
                break;
            }
            if (got == 0)
                break;
            if (crc)
                c = crc32(c, buf, (uInt)got);
            else
                r->rr_sum += buf[0];
            r->rr_bytes += (uint64_t)got;
        }
        close(fd);
    }
    r->rr_crc = (uint32_t)c;
    free(buf);
    return rc;
}

/* Look at len mapped bytes: crc32 them, or load a word per cache line. */
static void touch(const unsigned char *p, size_t len, bool crc, uLong *c, uint64_t *sum)
{
    if (crc) {
        *c = crc32_z(*c, p, len);
        return;
    }
    uint64_t s = 0;
    for (size_t off = 0; off + 8 <= len; off += 64) {
        uint64_t w;
        memcpy(&w, p + off, 8);
        s += w;
    }
    *sum += s;
}

int raw_mmap(const char *path, size_t chunk, bool crc, RawResult *r, HsError *err)
{
    memset(r, 0, sizeof(*r));
    uLong c = crc32(0L, Z_NULL, 0);
    for (uint32_t seg = 0;; seg++) {
        char name[PATH_MAX];
        struct stat st;
        int fd = open_segment(path, seg, name, sizeof(name), err);
        if (fd == INT32_MIN)
            break;
        if (fd < 0)
            return fd;
        if (fstat(fd, &st) < 0) {
            close(fd);
            return hs_error_set(err, -errno, name, HS_NO_BLOCK, "fstat: %s",
                                strerror(errno));
        }
        size_t size = (size_t)st.st_size, step = chunk ? chunk : size;
        for (size_t off = 0; off < size; off += step) {
            size_t len = size - off < step ? size - off : step;
            void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)off);
            r->rr_calls++;
            if (p == MAP_FAILED) {
                int e = errno;
                close(fd);
                return hs_error_set(err, -e, name, HS_NO_BLOCK, "mmap: %s",
                                    strerror(e));
            }
            touch(p, len, crc, &c, &r->rr_sum);
            munmap(p, len);
            r->rr_bytes += len;
        }
        close(fd);
    }
    r->rr_crc = (uint32_t)c;
    return 0;
}
