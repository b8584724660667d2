/*
 * page.c -- building, checksumming and verifying heap pages (see page.h).
 */
#include "page.h"

#include <stdio.h>
#include <string.h>

#include "crc32.h"

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

uint32_t page_crc(const void *page, uint32_t blkno)
{
    static const unsigned char zero[2];
    const unsigned char *p = page;
    const size_t off = offsetof(PageHeaderData, pd_checksum);
    unsigned char le[4] = {(unsigned char)blkno, (unsigned char)(blkno >> 8),
                           (unsigned char)(blkno >> 16), (unsigned char)(blkno >> 24)};

    uint32_t c = crc32_update(0, p, off);
    c = crc32_update(c, zero, sizeof(zero));
    c = crc32_update(c, p + off + 2, BLCKSZ - off - 2);
    return crc32_update(c, le, sizeof(le));
}

uint16_t page_checksum(const void *page, uint32_t blkno)
{
    uint32_t c = page_crc(page, blkno);
    return (uint16_t)(c ^ (c >> 16));
}

/* PostgreSQL's per-lane starting values (checksum_impl.h's checksumBaseOffsets):
 * part of its algorithm, so they are facts to match, not choices. */
static const uint32_t pg_sum_base[32] = {
    0x5B1F36E9, 0xB8525960, 0x02AB50AA, 0x1DE66D2A, 0x79FF467A, 0x9BB9F8A3, 0x217E7CD2,
    0x83E13D2C, 0xF8D4474F, 0xE39EB970, 0x42C6AE16, 0x993216FA, 0x7B093B5D, 0x98DAFF3C,
    0xF718902A, 0x0B1C9CDB, 0xE58F764B, 0x187636BC, 0x5D7B3BB1, 0xE73DE7DE, 0x92BEC979,
    0xCCA6C0B2, 0x304A0979, 0x85AA43D4, 0x783125BB, 0x6CA8EAA2, 0xE407EAC6, 0x4B5CFC3E,
    0x9FBF8C76, 0x15CA20BE, 0xF2CA9FD3, 0x959BD756,
};

static inline uint32_t pg_sum_mix(uint32_t h, uint32_t w)
{
    uint32_t x = h ^ w;
    return x * 16777619u ^ (x >> 17);
}

uint16_t page_pg_checksum(const void *page, uint32_t blkno)
{
    enum { LANES = 32, ROWS = BLCKSZ / (4 * LANES) };
    uint32_t h[LANES];
    memcpy(h, pg_sum_base, sizeof(h));
    const unsigned char *p = page;
    for (unsigned r = 0; r < ROWS; r++) {
        uint32_t w[LANES];
        memcpy(w, p + (size_t)r * sizeof(w), sizeof(w));
        if (r == 0) /* pd_checksum, bytes 8-9, counts as zero: the low half of word 2 */
            w[offsetof(PageHeaderData, pd_checksum) / 4] &= 0xffff0000u;
        for (unsigned j = 0; j < LANES; j++)
            h[j] = pg_sum_mix(h[j], w[j]);
    }
    uint32_t c = 0;
    for (unsigned j = 0; j < LANES; j++)
        c ^= pg_sum_mix(pg_sum_mix(h[j], 0), 0);
    c ^= blkno;
    return (uint16_t)(c % 65535 + 1);
}

const char *const page_checksum_names[] = {
    [PAGE_CHECKSUM_HEAPSCAN] = "heapscan",
    [PAGE_CHECKSUM_POSTGRES] = "postgres",
    [PAGE_CHECKSUM_NONE] = "none",
    [PAGE_CHECKSUM_NONE + 1] = NULL,
};

const char *page_checksum_name(PageChecksum kind)
{
    return page_checksum_names[kind];
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

/* The checksum of kind (heapscan or postgres) of page as block blkno. */
static uint16_t checksum_of(PageChecksum kind, const void *page, uint32_t blkno)
{
    return kind == PAGE_CHECKSUM_POSTGRES ? page_pg_checksum(page, blkno)
                                          : page_checksum(page, blkno);
}

PageFaultKind page_verify(const void *page, uint32_t blkno, PageChecksum sum,
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
    if (sum == PAGE_CHECKSUM_HEAPSCAN) { /* the 32 bits kept as a fingerprint */
        f.crc = page_crc(page, blkno);
        f.computed = (uint16_t)(f.crc ^ (f.crc >> 16));
    } else if (sum != PAGE_CHECKSUM_NONE) {
        f.computed = checksum_of(sum, page, blkno);
    }
    if (sum != PAGE_CHECKSUM_NONE) {
        f.sum = sum;
        f.stored = ph->pd_checksum;
        if (f.stored != f.computed) {
            f.kind = PAGE_BAD_CHECKSUM;
            PageChecksum other = sum == PAGE_CHECKSUM_POSTGRES ? PAGE_CHECKSUM_HEAPSCAN
                                                               : PAGE_CHECKSUM_POSTGRES;
            f.other_matches = checksum_of(other, page, blkno) == f.stored;
        }
    }
done:
    if (fault)
        *fault = f;
    return f.kind;
}

/* What a checksum mismatch suggests about who wrote the page, or "". */
static const char *checksum_hint(const PageFault *f)
{
    bool has_lsn = f->hdr.pd_lsn_xlogid != 0 || f->hdr.pd_lsn_xrecoff != 0;
    if (f->other_matches && f->sum == PAGE_CHECKSUM_HEAPSCAN)
        return "; the stored value is PostgreSQL's data checksum of this page "
               "(--checksum postgres)";
    if (f->other_matches)
        return "; the stored value is heapscan's checksum of this page "
               "(--checksum heapscan)";
    if (f->sum == PAGE_CHECKSUM_HEAPSCAN && f->stored == 0 && has_lsn)
        return "; the page has an LSN and no checksum, as a PostgreSQL cluster "
               "without data checksums writes it (--checksum none)";
    return "";
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
        snprintf(buf, len, "checksum mismatch (stored 0x%04x, computed 0x%04x)%s",
                 f->stored, f->computed, checksum_hint(f));
        break;
    }
    return buf;
}
