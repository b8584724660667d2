/*
 * page.c -- building, checksumming and verifying heap pages (see page.h).
 */
#include "page.h"

#include <stdio.h>
#include <string.h>
#include <zlib.h>

void page_init(void *page)
{
    memset(page, 0, BLCKSZ);
    PageHeaderData *ph = page;
    ph->pd_lower = SIZE_OF_PAGE_HEADER;
    ph->pd_upper = BLCKSZ;
    ph->pd_special = BLCKSZ;
    ph->pd_pagesize_version = PAGE_SIZE_VERSION;
}

size_t page_heap_free_space(const void *page)
{
    const PageHeaderData *ph = page;
    if (page_max_offset(page) >= MAX_HEAP_TUPLES_PER_PAGE)
        return 0;
    int space = (int)ph->pd_upper - (int)ph->pd_lower - (int)sizeof(ItemId);
    return space < 0 ? 0 : (size_t)space;
}

unsigned page_add_item(void *page, const void *item, size_t len, size_t reserve)
{
    PageHeaderData *ph = page;
    size_t need = MAXALIGN(len);
    size_t free_space = page_heap_free_space(page);
    unsigned nitems = page_max_offset(page);

    if (len == 0 || need > free_space)
        return 0;
    if (nitems > 0 && need + reserve > free_space)
        return 0;

    unsigned upper = ph->pd_upper - (unsigned)need;
    unsigned char *dst = (unsigned char *)page + upper;
    memcpy(dst, item, len);
    memset(dst + len, 0, need - len);
    page_linp(page)[nitems] = item_id_make(upper, LP_NORMAL, (unsigned)len);
    ph->pd_upper = (uint16_t)upper;
    ph->pd_lower = (uint16_t)(ph->pd_lower + sizeof(ItemId));
    return nitems + 1;
}

uint16_t page_checksum(const void *page, uint32_t blkno)
{
    static const unsigned char zero[2];
    const unsigned char *p = page;
    const size_t off = offsetof(PageHeaderData, pd_checksum);
    unsigned char le[4] = {(unsigned char)blkno, (unsigned char)(blkno >> 8),
                           (unsigned char)(blkno >> 16), (unsigned char)(blkno >> 24)};

    uLong c = crc32(0L, Z_NULL, 0);
    c = crc32(c, p, off);
    c = crc32(c, zero, sizeof(zero));
    c = crc32(c, p + off + 2, BLCKSZ - off - 2);
    c = crc32(c, le, sizeof(le));
    return (uint16_t)(c ^ (c >> 16));
}

void page_set_checksum(void *page, uint32_t blkno)
{
    ((PageHeaderData *)page)->pd_checksum = page_checksum(page, blkno);
}

bool page_is_zero(const void *page)
{
    const uint64_t *w = page;
    uint64_t any = 0;
    for (size_t i = 0; i < BLCKSZ / sizeof(uint64_t); i++)
        any |= w[i];
    return any == 0;
}

/* The header checks PostgreSQL's PageIsVerifiedExtended() makes, plus the
 * ones a heap page of ours must also pass. */
static bool header_is_sane(const PageHeaderData *ph)
{
    return (ph->pd_flags & ~PD_VALID_FLAG_BITS) == 0 &&
           ph->pd_pagesize_version == PAGE_SIZE_VERSION &&
           ph->pd_lower >= SIZE_OF_PAGE_HEADER && ph->pd_lower <= ph->pd_upper &&
           ph->pd_upper <= ph->pd_special && ph->pd_special == BLCKSZ &&
           (ph->pd_lower - SIZE_OF_PAGE_HEADER) % sizeof(ItemId) == 0 &&
           page_max_offset(ph) <= MAX_HEAP_TUPLES_PER_PAGE;
}

/* Is line pointer off (1-based) of a page with a sane header sound? */
static bool item_is_sane(const PageHeaderData *ph, unsigned off, unsigned nitems)
{
    ItemId id = page_linp_const(ph)[off - 1];
    unsigned lp_off = item_id_off(id), lp_len = item_id_len(id);

    switch (item_id_flags(id)) {
    case LP_UNUSED:
        return lp_len == 0;
    case LP_REDIRECT:
        return lp_len == 0 && lp_off >= 1 && lp_off <= nitems && lp_off != off;
    case LP_DEAD:
        if (lp_len == 0)
            return true;
        /* a dead item with storage must still be in bounds, as a normal one */
        __attribute__((fallthrough));
    case LP_NORMAL:
    default:
        /* 23 = the tuple header without padding, PostgreSQL's minimum */
        return lp_len >= 23 && lp_off % MAXIMUM_ALIGNOF == 0 &&
               lp_off >= ph->pd_upper && lp_off + lp_len <= ph->pd_special;
    }
}

PageFaultKind page_verify(const void *page, uint32_t blkno, bool check_sum,
                          PageFault *fault)
{
    const PageHeaderData *ph = page;
    PageFault f = {.kind = PAGE_OK};
    memcpy(&f.hdr, ph, sizeof(f.hdr));

    if (ph->pd_upper == 0 && page_is_zero(page))
        goto done; /* a new page: PostgreSQL accepts it, so do we */

    if (!header_is_sane(ph)) {
        f.kind = PAGE_BAD_HEADER;
        goto done;
    }
    unsigned nitems = page_max_offset(page);
    for (unsigned off = 1; off <= nitems; off++) {
        if (!item_is_sane(ph, off, nitems)) {
            f.kind = PAGE_BAD_ITEM;
            f.item = off;
            f.item_id = page_linp_const(ph)[off - 1];
            goto done;
        }
    }
    if (check_sum) {
        f.stored = ph->pd_checksum;
        f.computed = page_checksum(page, blkno);
        if (f.stored != f.computed)
            f.kind = PAGE_BAD_CHECKSUM;
    }
done:
    if (fault)
        *fault = f;
    return f.kind;
}

const char *page_fault_describe(const PageFault *f, char *buf, size_t len)
{
    const PageHeaderData *h = &f->hdr;
    switch (f->kind) {
    case PAGE_OK:
        snprintf(buf, len, "page is sound");
        break;
    case PAGE_BAD_HEADER:
        snprintf(buf, len,
                 "invalid page header (pd_flags 0x%04x, pd_lower %u, pd_upper %u, "
                 "pd_special %u, pd_pagesize_version 0x%04x)",
                 h->pd_flags, h->pd_lower, h->pd_upper, h->pd_special,
                 h->pd_pagesize_version);
        break;
    case PAGE_BAD_ITEM:
        snprintf(buf, len,
                 "line pointer %u out of bounds (lp_off %u, lp_flags %u, lp_len %u; "
                 "pd_upper %u, pd_special %u)",
                 f->item, item_id_off(f->item_id), item_id_flags(f->item_id),
                 item_id_len(f->item_id), h->pd_upper, h->pd_special);
        break;
    case PAGE_BAD_CHECKSUM:
        snprintf(buf, len, "checksum mismatch (stored 0x%04x, computed 0x%04x)",
                 f->stored, f->computed);
        break;
    }
    return buf;
}
