/*
 * json.h -- the one JSON writer of the tools: objects, arrays and values
 *           streamed to a FILE, strings escaped.
 *
 * Entry points: json_init() starts a document on a stream;
 * json_begin_object(), json_begin_array(), json_begin_array_lines() and
 * json_end() open and close containers; json_string(), json_int(),
 * json_uint(), json_double(), json_bool(), json_null() and json_raw() write
 * one value.  Used by seqscan --json, rawread --json, iobench --json and the
 * comparison's --json (see scanreport.c, iobench_report.c, compare.c).
 *
 * Every value takes the key it has in the enclosing object, or NULL inside
 * an array and at the top.  The layout is the one the tools have always
 * printed, so scripts that grep it keep working: members are separated by
 * ", ", keys by ": ", all on one line; an array opened with
 * json_begin_array_lines() puts each element on a line of its own, indented,
 * and its closing bracket on the next line.  Nothing is buffered beyond the
 * stream's own buffer: a caller may flush between elements.
 *
 * Strings are escaped as JSON requires: '"' and '\\' with a backslash,
 * control characters (below 0x20) as \u00XX; other bytes pass through as
 * they are (file names are bytes, and most are UTF-8).  A double that is
 * not finite is written as null: JSON has no NaN or infinity.
 */
#ifndef HEAPSCAN_JSON_H
#define HEAPSCAN_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 8 /* containers open at once; the tools use three */

/* One open container (level 0 is the top of the document). */
typedef struct JsonLevel {
    bool jl_first; /* nothing written in it yet */
    int jl_lines;  /* -1: elements on one line; else the indent of each
                      element's own line */
    char jl_close; /* the bracket that closes it */
} JsonLevel;

typedef struct JsonWriter {
    FILE *jw_out;                           /* where the text goes */
    int jw_depth;                           /* containers open now */
    JsonLevel jw_level[JSON_MAX_DEPTH + 1]; /* the top, then each open one */
} JsonWriter;

/* Start writing a document to out. */
void json_init(JsonWriter *j, FILE *out);

/* Open an object ("{") or an array ("[") as the value of key. */
void json_begin_object(JsonWriter *j, const char *key);
void json_begin_array(JsonWriter *j, const char *key);

/* Open an array whose every element starts a new line indented by indent
 * spaces; its "]" goes on a line of its own. */
void json_begin_array_lines(JsonWriter *j, const char *key, int indent);

/* Close the innermost open object or array. */
void json_end(JsonWriter *j);

/* A string, escaped; NULL writes null. */
void json_string(JsonWriter *j, const char *key, const char *s);

/* Whole numbers, in decimal. */
void json_int(JsonWriter *j, const char *key, int64_t v);
void json_uint(JsonWriter *j, const char *key, uint64_t v);

/* v with exactly decimals digits after the point ("%.*f"); null if not finite. */
void json_double(JsonWriter *j, const char *key, double v, int decimals);

void json_bool(JsonWriter *j, const char *key, bool v);
void json_null(JsonWriter *j, const char *key);

/* A number the caller has already formatted (e.g. an exact 128-bit sum),
 * written as it is. */
void json_raw(JsonWriter *j, const char *key, const char *number);

#endif
