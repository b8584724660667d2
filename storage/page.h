/*
 * page.h -- the PostgreSQL 15 heap page layout, its line pointers, the
 *           project's zlib page checksum, and page verification.
 *
 * Entry points: page_init(), page_add_item() build a page; page_checksum()
 * and page_set_checksum() compute and store the checksum, page_pg_checksum()
 * computes PostgreSQL's; page_verify() is the pure yes/no test every page
 * read from a file goes through.
 * See also: heap.h -- what lives inside an item.
 *
 * This module is pure: bytes in, facts out.  No I/O, no allocation, no
 * printing, and page_verify() never reads outside the 8192 bytes it is given,
 * whatever they hold.
 *
 *   +----------------+---------------------------------------------+
 *   | PageHeaderData | linp1 linp2 linp3 ...                       |
 *   +-----------+----+---------------------------------------------+
 *   | ... linpN |                                                  |
 *   +-----------+--------------------------------------------------+
 *   |           ^ pd_lower                                         |
 *   |                                                              |
 *   |             v pd_upper                                       |
 *   +-------------+------------------------------------------------+
 *   |             | tupleN ...                                     |
 *   +-------------+------------------+-----------------------------+
 *   |       ... tuple3 tuple2 tuple1 | (no special space for heap) |
 *   +--------------------------------+-----------------------------+
 *                                    ^ pd_special = 8192
 *
 * Line pointers grow up from the header, tuples grow down from pd_special.
 * A page is full when nothing more fits between pd_lower and pd_upper.
 * All fields are little-endian (we only build on little-endian machines).
 */
#ifndef HEAPSCAN_PAGE_H
#define HEAPSCAN_PAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error                                                                                 \
    "heapscan writes PostgreSQL pages in the machine's byte order: little-endian only"
#endif

#define BLCKSZ          8192 /* page size; lp_off and lp_len are 15 bits, so <= 32 KiB */
#define MAXIMUM_ALIGNOF 8    /* alignment of int8 and of every tuple on x86-64 */
#define MAXALIGN(len)                                                                  \
    (((size_t)(len) + (MAXIMUM_ALIGNOF - 1)) & ~(size_t)(MAXIMUM_ALIGNOF - 1))
#define INTALIGN(len) (((size_t)(len) + 3) & ~(size_t)3)

#define PG_PAGE_LAYOUT_VERSION 4
#define PAGE_SIZE_VERSION      (BLCKSZ | PG_PAGE_LAYOUT_VERSION) /* 0x2004 */

/* pd_flags bits */
#define PD_HAS_FREE_LINES  0x0001 /* are there any unused line pointers? */
#define PD_PAGE_FULL       0x0002 /* not enough free space for a new tuple? */
#define PD_ALL_VISIBLE     0x0004 /* all tuples visible to everyone */
#define PD_VALID_FLAG_BITS 0x0007

/* lp_flags values */
#define LP_UNUSED   0 /* unused (lp_len must be 0) */
#define LP_NORMAL   1 /* used (lp_len must be > 0) */
#define LP_REDIRECT 2 /* HOT redirect (lp_len must be 0) */
#define LP_DEAD     3 /* dead, may or may not have storage */

/*
 * The most line pointers a heap page can hold: each tuple needs its header
 * (MAXALIGN(23) = 24 bytes) plus a line pointer, so
 * (8192 - 24) / (24 + 4) = 291, PostgreSQL's MaxHeapTuplesPerPage.
 */
#define MAX_HEAP_TUPLES_PER_PAGE 291

/*
 * ItemIdData: one 32-bit line pointer, packed exactly as PostgreSQL's
 * bit-fields are on a little-endian machine:
 *   bits 0-14 lp_off (offset of the tuple), 15-16 lp_flags, 17-31 lp_len.
 */
typedef uint32_t ItemId;

static inline ItemId item_id_make(unsigned off, unsigned flags, unsigned len)
{
    return (ItemId)(off & 0x7fff) | (ItemId)(flags & 3) << 15 |
           (ItemId)(len & 0x7fff) << 17;
}
static inline unsigned item_id_off(ItemId id)
{
    return id & 0x7fff;
}
static inline unsigned item_id_flags(ItemId id)
{
    return (id >> 15) & 3;
}
static inline unsigned item_id_len(ItemId id)
{
    return id >> 17;
}

/* PageHeaderData: the 24-byte header every PostgreSQL page starts with. */
typedef struct PageHeaderData {
    uint32_t pd_lsn_xlogid;       /* LSN of last change, high half (we write 0) */
    uint32_t pd_lsn_xrecoff;      /* LSN, low half (0: never ahead of the WAL) */
    uint16_t pd_checksum;         /* the zlib checksum, see page_checksum() */
    uint16_t pd_flags;            /* PD_* bits */
    uint16_t pd_lower;            /* offset to start of free space */
    uint16_t pd_upper;            /* offset to end of free space */
    uint16_t pd_special;          /* offset to start of special space (8192) */
    uint16_t pd_pagesize_version; /* BLCKSZ | layout version = 0x2004 */
    uint32_t pd_prune_xid;        /* oldest prunable XID (0, or the server prunes) */
    /* the line pointer array (ItemId) follows: see page_linp() */
} PageHeaderData;

#define SIZE_OF_PAGE_HEADER sizeof(PageHeaderData) /* 24 */

_Static_assert(sizeof(ItemId) == 4, "line pointers are 4 bytes");
_Static_assert(offsetof(PageHeaderData, pd_checksum) == 8, "pd_checksum at 8");
_Static_assert(offsetof(PageHeaderData, pd_flags) == 10, "pd_flags at 10");
_Static_assert(offsetof(PageHeaderData, pd_lower) == 12, "pd_lower at 12");
_Static_assert(offsetof(PageHeaderData, pd_upper) == 14, "pd_upper at 14");
_Static_assert(offsetof(PageHeaderData, pd_special) == 16, "pd_special at 16");
_Static_assert(offsetof(PageHeaderData, pd_pagesize_version) == 18, "version at 18");
_Static_assert(offsetof(PageHeaderData, pd_prune_xid) == 20, "pd_prune_xid at 20");
_Static_assert(sizeof(PageHeaderData) == 24, "header is 24 bytes");

static inline const PageHeaderData *page_header(const void *page)
{
    return (const PageHeaderData *)page;
}

/* The line pointer array, right after the header. */
static inline ItemId *page_linp(void *page)
{
    return (ItemId *)((unsigned char *)page + SIZE_OF_PAGE_HEADER);
}
static inline const ItemId *page_linp_const(const void *page)
{
    return (const ItemId *)((const unsigned char *)page + SIZE_OF_PAGE_HEADER);
}

/* Number of line pointers on a page whose header is sane. */
static inline unsigned page_max_offset(const void *page)
{
    const PageHeaderData *ph = page_header(page);
    return ph->pd_lower <= SIZE_OF_PAGE_HEADER
               ? 0
               : (unsigned)((ph->pd_lower - SIZE_OF_PAGE_HEADER) / sizeof(ItemId));
}

/* Line pointer number off (1-based, as PostgreSQL's OffsetNumber). */
static inline ItemId page_item_id(const void *page, unsigned off)
{
    return page_linp_const(page)[off - 1];
}

/* Make page an empty heap page: no items, pd_lower 24, pd_upper 8192. */
void page_init(void *page);

/*
 * Free space for one more heap tuple, as PostgreSQL's PageGetHeapFreeSpace():
 * pd_upper - pd_lower minus one line pointer, 0 when negative or when the
 * page already holds MAX_HEAP_TUPLES_PER_PAGE items.
 */
size_t page_heap_free_space(const void *page);

/*
 * Add an item of len bytes at the next line pointer.  It is placed at
 * pd_upper - MAXALIGN(len); padding up to the aligned size is zeroed.
 * On a page that already holds items the item goes in only while
 * MAXALIGN(len) + reserve <= page_heap_free_space() (reserve is the
 * fillfactor's share kept free); the first item of an empty page always
 * goes in if it fits at all.  Returns the new 1-based offset number, or 0
 * when the item does not fit.
 */
unsigned page_add_item(void *page, const void *item, size_t len, size_t reserve);

/*
 * The project's page checksum: crc32 (zlib) of the page with pd_checksum
 * taken as zero, continued over blkno as 4 little-endian bytes, and folded
 * to 16 bits as (crc ^ crc >> 16) & 0xffff.  blkno is the relation-wide
 * block number, so a page written to the wrong place fails.
 *
 * Why this fold and not PostgreSQL's (crc % 65535) + 1: a CRC changes by a
 * fixed pattern (the syndrome) for each flipped bit, whatever the page.  The
 * XOR fold is linear, so a flip goes unnoticed only if its syndrome folds to
 * zero, and for this 8196-byte message none of the 65,520 single-bit
 * syndromes does: every single-bit flip in a page is caught, on every page.
 * The modulo fold is not linear and misses about one single-bit flip per
 * page (bit 11567 of a generated page at block 0, for instance).
 */
uint16_t page_checksum(const void *page, uint32_t blkno);

/* The CRC-32 that page_checksum() folds to 16 bits (pd_checksum read as
 * zero, the block number appended): a 32-bit fingerprint of the page's
 * contents, for telling whether they changed. */
uint32_t page_crc(const void *page, uint32_t blkno);

/* Compute and store the checksum of page as block blkno. */
void page_set_checksum(void *page, uint32_t blkno);

/* True if all 8192 bytes are zero (a valid new page, as in PostgreSQL). */
bool page_is_zero(const void *page);

/*
 * PostgreSQL's data checksum (checksum_impl.h), as a cluster made with
 * `initdb -k` stores it: 32 interleaved FNV-1a-like hashes over the page
 * taken as 32-bit words with pd_checksum as zero, each word mixed in as
 * h = (h ^ w) * 16777619 ^ ((h ^ w) >> 17), two more rounds of zeros, the 32
 * hashes XORed together, blkno XORed in, and the result folded as
 * (c % 65535) + 1 (never zero).  blkno is relation-wide, as PostgreSQL's.
 * Not defined for a new page (pd_upper 0), which carries no checksum.
 */
uint16_t page_pg_checksum(const void *page, uint32_t blkno);

/* Which checksum pd_checksum holds, or none to check. */
typedef enum PageChecksum {
    PAGE_CHECKSUM_HEAPSCAN, /* page_checksum(): what mkheap writes */
    PAGE_CHECKSUM_POSTGRES, /* page_pg_checksum(): a cluster with data checksums */
    PAGE_CHECKSUM_NONE,     /* headers and line pointers only (a cluster without) */
} PageChecksum;

/* "heapscan", "postgres", "none", NULL: the names in the enum's order. */
extern const char *const page_checksum_names[];
const char *page_checksum_name(PageChecksum kind);

/* What page_verify() found. */
typedef enum PageFaultKind {
    PAGE_OK = 0,       /* sound (or all zero) */
    PAGE_BAD_HEADER,   /* pd_flags, pd_lower/upper/special or version impossible */
    PAGE_BAD_ITEM,     /* a line pointer points outside the tuple area */
    PAGE_BAD_CHECKSUM, /* the stored checksum is not the computed one */
} PageFaultKind;

typedef struct PageFault {
    PageFaultKind kind;
    unsigned item;      /* PAGE_BAD_ITEM: the 1-based line pointer number */
    ItemId item_id;     /* PAGE_BAD_ITEM: its raw value */
    PageChecksum sum;   /* PAGE_BAD_CHECKSUM: the checksum that was checked */
    uint16_t stored;    /* PAGE_BAD_CHECKSUM: pd_checksum as found */
    uint16_t computed;  /* PAGE_BAD_CHECKSUM: what it should be */
    bool other_matches; /* PAGE_BAD_CHECKSUM: the stored value is the other
                           algorithm's checksum of this page (a PostgreSQL page
                           checked as heapscan's, or the reverse) */
    PageHeaderData hdr; /* a copy of the header as found */
    uint32_t crc;       /* PAGE_OK with the heapscan checksum: page_crc(), a
                           by-product of checking it (else 0) */
} PageFault;

/*
 * Verify the 8192 bytes at page as block blkno: header sanity, every line
 * pointer inside [pd_upper, pd_special) with sane flags and length, and the
 * checksum of the given kind.  An all-zero page is sound.
 * Returns PAGE_OK or the first fault found; fault (may be NULL) says which.
 */
PageFaultKind page_verify(const void *page, uint32_t blkno, PageChecksum sum,
                          PageFault *fault);

/* One line saying what is wrong, e.g. "checksum mismatch (stored 0x1a2b, computed
 * 0x3c4d)". */
const char *page_fault_describe(const PageFault *fault, char *buf, size_t len);

#endif
