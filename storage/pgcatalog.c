/*
 * pgcatalog.c -- locating a relation file in a stopped cluster and
 *                checking its columns in pg_class and pg_attribute
 *                (see pgcatalog.h).
 */
#include "pgcatalog.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heap.h"
#include "relfile.h"

/* Catalog OIDs and type OIDs, as PostgreSQL's pg_class.h and pg_type.dat. */
#define PG_CLASS_OID     1259
#define PG_ATTRIBUTE_OID 1249
#define INT4OID          23
#define INT8OID          20
#define TEXTOID          25
#define MAX_COLUMNS      1600 /* PostgreSQL's MaxHeapAttributeNumber */

/* pg_filenode.map: magic, count, 62 (oid, file number) pairs, CRC-32C, pad. */
#define RELMAP_MAGIC    0x592717
#define RELMAP_MAX      62
#define RELMAP_FILESIZE 512

/* Offsets from t_hoff of the fixed-width, NOT NULL columns read here
 * (PostgreSQL 15's pg_class.h and pg_attribute.h, checked with
 * pageinspect against a real cluster). */
enum {
    CLASS_OID = 0,            /* oid */
    CLASS_RELNAME = 4,        /* name (64 bytes, NUL-padded) */
    CLASS_RELFILENODE = 88,   /* oid */
    CLASS_RELTABLESPACE = 92, /* oid */
    CLASS_RELKIND = 115,      /* char */
    CLASS_RELNATTS = 116,     /* int2 */
    CLASS_FIXED_END = 118,
    ATT_RELID = 0,       /* oid */
    ATT_NAME = 4,        /* name */
    ATT_TYPID = 68,      /* oid */
    ATT_NUM = 78,        /* int2 */
    ATT_ISDROPPED = 101, /* bool */
    ATT_FIXED_END = 102,
};
#define NAMEDATALEN 64

static bool all_digits(const char *s)
{
    if (*s == '\0')
        return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return false;
    return true;
}

static uint32_t rd32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Is the file name that of a main fork's first segment?  HS_EREFUSED if not. */
static int check_file_name(const char *path, const char *base, HsError *err)
{
    if (all_digits(base))
        return 0;
    const char *dot = strchr(base, '.'), *us = strchr(base, '_');
    if (dot && all_digits(dot + 1))
        return hs_error_set(err, HS_EREFUSED, path, HS_NO_BLOCK,
                            "segment %s of a relation: give its first segment (the "
                            "name without \".%s\")",
                            dot + 1, dot + 1);
    if (us)
        return hs_error_set(err, HS_EREFUSED, path, HS_NO_BLOCK,
                            "the %s fork of a relation, not its main fork (the name "
                            "without \"%s\")",
                            us + 1, us);
    return hs_error_set(err, HS_EREFUSED, path, HS_NO_BLOCK,
                        "not a relation file name (digits, as pg_relation_filepath() "
                        "prints)");
}

/* realpath() of dir/name, or "" when it does not resolve. */
static void resolve(const char *dir, const char *name, char *out)
{
    char joined[PATH_MAX];
    if (snprintf(joined, sizeof(joined), "%s/%s", dir, name) >= (int)sizeof(joined) ||
        realpath(joined, out) == NULL)
        out[0] = '\0';
}

/* The tablespace OID whose pg_tblspc link resolves to spcdir, or 0. */
static uint32_t tablespace_of(const char *pgdata, const char *spcdir)
{
    char tbl[PATH_MAX];
    resolve(pgdata, "pg_tblspc", tbl);
    DIR *d = tbl[0] ? opendir(tbl) : NULL;
    uint32_t found = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char target[PATH_MAX];
        if (!all_digits(e->d_name))
            continue;
        resolve(tbl, e->d_name, target);
        if (target[0] && strcmp(target, spcdir) == 0)
            found = (uint32_t)strtoul(e->d_name, NULL, 10);
    }
    if (d)
        closedir(d);
    return found;
}

/* Split path at its last '/': *dir keeps the head (in place), the tail is
 * returned.  "" when there is no '/'. */
static char *split_last(char *path)
{
    char *slash = strrchr(path, '/');
    if (slash == NULL)
        return path + strlen(path);
    *slash = '\0';
    return slash + 1;
}

int pgcatalog_locate(const PgXact *px, const char *relfile, PgRelation *rel,
                     HsError *err)
{
    const char *pgdata = pgxact_dir(px);
    char real[PATH_MAX], dir[PATH_MAX], base[PATH_MAX];
    memset(rel, 0, sizeof(*rel));
    real[0] = '\0';
    if (relfile[0] != '/')
        resolve(pgdata, relfile, real); /* as pg_relation_filepath() prints it */
    if (real[0] == '\0' && realpath(relfile, real) == NULL)
        return hs_error_set(err, -errno, relfile, HS_NO_BLOCK,
                            "%s (looked for it in %s and as given)", strerror(errno),
                            pgdata);
    snprintf(rel->pr_path, sizeof(rel->pr_path), "%s", real);
    memcpy(dir, real, sizeof(dir));
    const char *file = split_last(dir);
    if (check_file_name(real, file, err) < 0)
        return HS_EREFUSED;
    rel->pr_filenode = (uint32_t)strtoul(file, NULL, 10);
    const char *db = split_last(dir); /* dir: the database directory's parent */
    if (!all_digits(db))
        goto not_ours;
    rel->pr_dboid = (uint32_t)strtoul(db, NULL, 10);
    resolve(pgdata, "base", base);
    if (strcmp(dir, base) != 0) { /* a tablespace: SPCDIR/PG_15_CATVERSION/DB */
        const char *ver = split_last(dir);
        if (strncmp(ver, "PG_15_", 6) != 0 ||
            (rel->pr_spcoid = tablespace_of(pgdata, dir)) == 0)
            goto not_ours;
    }
    return 0;
not_ours:
    return hs_error_set(err, HS_EREFUSED, real, HS_NO_BLOCK,
                        "not a relation file of a database of the cluster %s "
                        "(base/DB/FILE, or a tablespace's PG_15_*/DB/FILE)",
                        pgdata);
}

/* ---- reading catalog rows ------------------------------------------------ */

/* Told of each visible row of a catalog: its data (after t_hoff) and length.
 * Returns 0 to go on, or a negative code to stop with. */
typedef int (*CatalogRowFn)(void *arg, const unsigned char *data, size_t len);

/* One page of a catalog: verify it, then hand each visible row to fn. */
static int catalog_page(PgXact *px, const char *path, uint64_t blkno,
                        const unsigned char *page, PageChecksum sum, CatalogRowFn fn,
                        void *arg, HsError *err)
{
    PageFault f;
    char msg[200];
    if (page_verify(page, (uint32_t)blkno, sum, &f) != PAGE_OK)
        return hs_error_set(err, HS_ECORRUPT, path, (int64_t)blkno, "%s",
                            page_fault_describe(&f, msg, sizeof(msg)));
    bool all_visible = (page_header(page)->pd_flags & PD_ALL_VISIBLE) != 0;
    for (unsigned i = 1; i <= page_max_offset(page); i++) {
        ItemId id = page_item_id(page, i);
        if (item_id_flags(id) != LP_NORMAL)
            continue; /* page_verify() kept normal items inside the page */
        const unsigned char *t = page + item_id_off(id);
        HeapTupleHeaderData h;
        memcpy(&h, t, sizeof(h));
        int vis = all_visible ? 1 : heap_tuple_visibility(&h, px, err);
        if (vis < 0) {
            char why[sizeof(err->msg)];
            snprintf(why, sizeof(why), "%s", err->msg);
            return hs_error_set(err, vis, path, (int64_t)blkno,
                                "item %u of the catalog: %s", i, why);
        }
        if (vis == 0)
            continue;
        if (h.t_hoff > item_id_len(id))
            return hs_error_set(err, HS_ECORRUPT, path, (int64_t)blkno,
                                "item %u of the catalog: t_hoff %u past its end", i,
                                h.t_hoff);
        int rc = fn(arg, t + h.t_hoff, item_id_len(id) - h.t_hoff);
        if (rc < 0)
            return hs_error_set(err, rc, path, (int64_t)blkno,
                                "item %u of the catalog is too short for its columns",
                                i);
    }
    return 0;
}

/* Hand every visible row of the catalog file at path to fn. */
static int scan_catalog(PgXact *px, const char *path, PageChecksum sum, CatalogRowFn fn,
                        void *arg, HsError *err)
{
    RelFile rf;
    int rc = relfile_open(&rf, path, RELFILE_SEG_BLOCKS, err);
    if (rc < 0)
        return rc;
    _Alignas(8) unsigned char page[BLCKSZ];
    for (uint64_t b = 0; rc == 0 && b < relfile_nblocks(&rf); b++)
        if ((rc = relfile_read(&rf, b, 1, page, err)) == 0)
            rc = catalog_page(px, path, b, page, sum, fn, arg, err);
    relfile_close(&rf);
    return rc;
}

/* The file of mapped catalog oid in the database directory dbdir, from its
 * pg_filenode.map, into path. */
static int mapped_catalog(const char *dbdir, uint32_t oid, char *path, size_t len,
                          HsError *err)
{
    char map[PATH_MAX];
    unsigned char buf[RELMAP_FILESIZE];
    snprintf(map, sizeof(map), "%s/pg_filenode.map", dbdir);
    int fd = open(map, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return hs_error_set(err, -errno, map, HS_NO_BLOCK, "%s", strerror(errno));
    ssize_t n = read(fd, buf, sizeof(buf));
    close(fd);
    uint32_t count = n == RELMAP_FILESIZE ? rd32(buf + 4) : 0;
    if (n != RELMAP_FILESIZE || rd32(buf) != RELMAP_MAGIC || count > RELMAP_MAX ||
        pg_crc32c(buf, 8 + 8 * RELMAP_MAX) != rd32(buf + 8 + 8 * RELMAP_MAX))
        return hs_error_set(err, HS_EREFUSED, map, HS_NO_BLOCK,
                            "not a PostgreSQL 15 relation map (size, magic or CRC)");
    for (uint32_t i = 0; i < count; i++)
        if (rd32(buf + 8 + 8 * i) == oid) {
            snprintf(path, len, "%s/%u", dbdir, rd32(buf + 12 + 8 * i));
            return 0;
        }
    return hs_error_set(err, HS_EREFUSED, map, HS_NO_BLOCK,
                        "catalog %u is not in the relation map", oid);
}

/* ---- pg_class and pg_attribute ------------------------------------------ */

/* What the pg_class scan looks for, and found. */
typedef struct ClassMatch {
    uint32_t cm_filenode, cm_spcoid; /* the relation's file number and tablespace */
    unsigned cm_found;               /* visible rows that match */
    uint32_t cm_oid;                 /* the last one's oid, name, kind and columns */
    char cm_name[NAMEDATALEN];
    char cm_kind;
    int16_t cm_natts;
} ClassMatch;

static int match_class(void *arg, const unsigned char *d, size_t len)
{
    ClassMatch *m = arg;
    if (len < CLASS_FIXED_END)
        return HS_ECORRUPT;
    uint32_t spc = rd32(d + CLASS_RELTABLESPACE);
    /* 0 is the database's default tablespace; a file under base/ may also be
     * in pg_default (1663) named explicitly */
    bool spc_ok = spc == 0 || spc == (m->cm_spcoid ? m->cm_spcoid : 1663);
    if (rd32(d + CLASS_RELFILENODE) != m->cm_filenode || !spc_ok)
        return 0;
    m->cm_found++;
    m->cm_oid = rd32(d + CLASS_OID);
    memcpy(m->cm_name, d + CLASS_RELNAME, NAMEDATALEN);
    m->cm_name[NAMEDATALEN - 1] = '\0';
    m->cm_kind = (char)d[CLASS_RELKIND];
    memcpy(&m->cm_natts, d + CLASS_RELNATTS, 2);
    return 0;
}

/* One column of the relation, as pg_attribute has it. */
typedef struct Column {
    bool co_seen;
    bool co_dropped;
    uint32_t co_type;
    char co_name[NAMEDATALEN];
} Column;

typedef struct ColumnList {
    uint32_t cl_relid;
    int cl_max; /* highest attnum seen */
    Column cl_col[MAX_COLUMNS + 1];
} ColumnList;

static int collect_column(void *arg, const unsigned char *d, size_t len)
{
    ColumnList *cl = arg;
    if (len < ATT_FIXED_END)
        return HS_ECORRUPT;
    int16_t num;
    memcpy(&num, d + ATT_NUM, 2);
    if (rd32(d + ATT_RELID) != cl->cl_relid || num <= 0 || num > MAX_COLUMNS)
        return 0;
    Column *c = &cl->cl_col[num];
    c->co_seen = true;
    c->co_dropped = d[ATT_ISDROPPED] != 0;
    c->co_type = rd32(d + ATT_TYPID);
    memcpy(c->co_name, d + ATT_NAME, NAMEDATALEN);
    c->co_name[NAMEDATALEN - 1] = '\0';
    if (num > cl->cl_max)
        cl->cl_max = num;
    return 0;
}

static const char *type_name(uint32_t oid, char *buf, size_t len)
{
    static const struct {
        uint32_t oid;
        const char *name;
    } types[] = {{16, "bool"},          {17, "bytea"},    {20, "int8"},
                 {21, "int2"},          {23, "int4"},     {25, "text"},
                 {700, "float4"},       {701, "float8"},  {1042, "bpchar"},
                 {1043, "varchar"},     {1082, "date"},   {1114, "timestamp"},
                 {1184, "timestamptz"}, {1700, "numeric"}};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (types[i].oid == oid)
            return types[i].name;
    snprintf(buf, len, "type %u", oid);
    return buf;
}

/* "(a int8, b text)" for the message, dropped columns said so. */
static void describe_columns(const ColumnList *cl, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "(");
    for (int a = 1; a <= cl->cl_max && n < len; a++) {
        const Column *c = &cl->cl_col[a];
        char tb[32];
        n += (size_t)snprintf(
            buf + n, len - n, "%s%s%s%s", a > 1 ? ", " : "",
            !c->co_seen     ? "?"
            : c->co_dropped ? "a dropped column"
                            : c->co_name,
            c->co_seen && !c->co_dropped ? " " : "",
            c->co_seen && !c->co_dropped ? type_name(c->co_type, tb, sizeof(tb)) : "");
    }
    if (n < len)
        snprintf(buf + n, len - n, ")");
}

/* Are the columns exactly t's? */
static bool columns_are_t(const ColumnList *cl)
{
    static const struct {
        const char *name;
        uint32_t type;
    } t[HEAP_NATTS] = {
        {"id", INT4OID}, {"k", INT4OID}, {"v", INT8OID}, {"pad", TEXTOID}};
    if (cl->cl_max != HEAP_NATTS)
        return false;
    for (int a = 1; a <= HEAP_NATTS; a++) {
        const Column *c = &cl->cl_col[a];
        if (!c->co_seen || c->co_dropped || c->co_type != t[a - 1].type ||
            strcmp(c->co_name, t[a - 1].name) != 0)
            return false;
    }
    return true;
}

static const char *kind_name(char kind)
{
    switch (kind) {
    case 'r':
        return "table";
    case 'm':
        return "materialized view";
    case 'i':
        return "index";
    case 'S':
        return "sequence";
    case 't':
        return "TOAST table";
    default:
        return "relation without heap rows";
    }
}

/* The directory holding the database's catalogs: base/DB, or the
 * relation's own directory when the database lives in a tablespace. */
static void catalog_dir(const PgXact *px, const PgRelation *rel, char *dir, size_t len)
{
    char map[PATH_MAX + 32];
    snprintf(dir, len, "%s/base/%u", pgxact_dir(px), rel->pr_dboid);
    snprintf(map, sizeof(map), "%s/pg_filenode.map", dir);
    if (access(map, F_OK) != 0) {
        snprintf(dir, len, "%s", rel->pr_path);
        split_last(dir);
    }
}

int pgcatalog_check_schema(PgXact *px, PgRelation *rel, PageChecksum sum, HsError *err)
{
    char dir[PATH_MAX], cls[PATH_MAX + 16], att[PATH_MAX + 16], cols[600];
    int rc;
    catalog_dir(px, rel, dir, sizeof(dir));
    if ((rc = mapped_catalog(dir, PG_CLASS_OID, cls, sizeof(cls), err)) < 0 ||
        (rc = mapped_catalog(dir, PG_ATTRIBUTE_OID, att, sizeof(att), err)) < 0)
        return rc;
    ClassMatch m = {.cm_filenode = rel->pr_filenode, .cm_spcoid = rel->pr_spcoid};
    if ((rc = scan_catalog(px, cls, sum, match_class, &m, err)) < 0)
        return rc;
    if (m.cm_found != 1)
        return hs_error_set(err, HS_EREFUSED, rel->pr_path, HS_NO_BLOCK,
                            m.cm_found == 0
                                ? "no relation in pg_class of database %u has file "
                                  "number %u (a catalog, or the old file of a dropped "
                                  "or rewritten table)"
                                : "several relations in pg_class of database %u have "
                                  "file number %u",
                            rel->pr_dboid, rel->pr_filenode);
    if (m.cm_kind != 'r' && m.cm_kind != 'm')
        return hs_error_set(err, HS_EREFUSED, rel->pr_path, HS_NO_BLOCK,
                            "\"%s\" is a %s, not a table", m.cm_name,
                            kind_name(m.cm_kind));
    ColumnList *cl = calloc(1, sizeof(*cl));
    if (cl == NULL)
        return hs_error_set(err, -ENOMEM, att, HS_NO_BLOCK, "out of memory");
    cl->cl_relid = m.cm_oid;
    if ((rc = scan_catalog(px, att, sum, collect_column, cl, err)) == 0 &&
        (!columns_are_t(cl) || m.cm_natts != HEAP_NATTS)) {
        describe_columns(cl, cols, sizeof(cols));
        rc = hs_error_set(err, HS_EREFUSED, rel->pr_path, HS_NO_BLOCK,
                          "table \"%s\" has columns %s, not t's (id int4, k int4, "
                          "v int8, pad text)",
                          m.cm_name, cols);
    }
    free(cl);
    if (rc == 0) {
        rel->pr_oid = m.cm_oid;
        snprintf(rel->pr_name, sizeof(rel->pr_name), "%s", m.cm_name);
    }
    return rc;
}
