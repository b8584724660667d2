/*
 * iobench_report.h -- how iobench prints a measured row: a report of a
 *                     single run, a line of the grid's table, a JSON object
 *                     or a CSV line (the same fields in the same order).
 *
 * Entry points: iob_size_name() names a size as the grid does ("200M");
 * iob_report_text(), iob_report_table_header(), iob_report_table_row(),
 * iob_report_json(), iob_report_csv_header() and iob_report_csv() write a
 * row to a stream.
 * See also: iobench_matrix.c -- the rows; json.c -- the JSON writer.
 */
#ifndef HEAPSCAN_IOBENCH_REPORT_H
#define HEAPSCAN_IOBENCH_REPORT_H

#include <stdio.h>

#include "iobench_matrix.h"
#include "json.h"

/* "200M", "2000M", "1K", "32B": the largest unit that divides n exactly. */
const char *iob_size_name(uint64_t n, char *buf, size_t len);

/* A single row's report: what was run, then the figures, a group a line. */
void iob_report_text(FILE *f, const IobRow *r);

/* The grid's header and one of its lines, in the 2002 benchmark's columns. */
void iob_report_table_header(FILE *f);
void iob_report_table_row(FILE *f, const IobRow *r);

/* The row as a JSON object (crc32 a "0x..." string, null for rnd-page). */
void iob_report_json(JsonWriter *j, const IobRow *r);

/* The CSV header line, and the row as a CSV line in the header's order. */
void iob_report_csv_header(FILE *f);
void iob_report_csv(FILE *f, const IobRow *r);

#endif
