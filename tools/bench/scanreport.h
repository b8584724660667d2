/*
 * scanreport.h -- what seqscan prints about its runs of one scan: the text
 *                 report and the JSON object (one line, the keys scripts
 *                 and tests/regress.sh read).
 *
 * Entry points: scan_report_text() and scan_report_json().  The figures
 * come from scan_run() (scanrun.c) and their spread over the runs from
 * measure_summarize() (measure.c); the JSON from json.c.
 */
#ifndef HEAPSCAN_SCANREPORT_H
#define HEAPSCAN_SCANREPORT_H

#include <stdio.h>

#include "measure.h"
#include "pgcatalog.h"
#include "scanrun.h"

/* Everything a report says. */
typedef struct ScanReport {
    const char *rp_table;      /* the table (or RELFILE) as it was named */
    const ScanConfig *rp_cfg;  /* how it was scanned */
    const char *rp_pgdata;     /* --pgdata DIR, or NULL */
    const PgRelation *rp_rel;  /* with rp_pgdata: the relation found there */
    const ScanResult *rp_runs; /* every run, in order */
    int rp_nruns;              /* how many (at least 1) */
    MeasureSpread rp_spread;   /* the runs' figures: medians are reported */
} ScanReport;

/* The text report: each run's line when there were several, then the
 * table, the access method, the query, the counts and the medians. */
void scan_report_text(FILE *f, const ScanReport *r);

/* The same as one JSON object and a newline. */
void scan_report_json(FILE *f, const ScanReport *r);

#endif
