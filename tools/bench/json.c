/*
 * json.c -- the JSON writer (see json.h).
 *
 * Entry points: json_init, json_begin_object, json_begin_array,
 * json_begin_array_lines, json_end, json_string, json_int, json_uint,
 * json_double, json_bool, json_null, json_raw.
 *
 * Each value first calls member(), which writes what goes between it and
 * the previous one (", ", or ",\n" and the indent in a lines array) and its
 * key; the value then writes itself.
 */
#include "json.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>

void json_init(JsonWriter *j, FILE *out)
{
    j->jw_out = out;
    j->jw_depth = 0;
    j->jw_level[0] = (JsonLevel){.jl_first = true, .jl_lines = -1, .jl_close = 0};
}

/* s between double quotes, with '"', '\\' and control characters escaped. */
static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s != '\0'; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

/*
 * Before a value: the separator from the previous value of the container
 * (none before the first), the new line and indent of a lines array, and
 * "key": when the container is an object.
 */
static void member(JsonWriter *j, const char *key)
{
    JsonLevel *l = &j->jw_level[j->jw_depth];
    if (j->jw_depth > 0) {
        if (!l->jl_first)
            fputc(',', j->jw_out);
        if (l->jl_lines >= 0)
            fprintf(j->jw_out, "\n%*s", l->jl_lines, "");
        else if (!l->jl_first)
            fputc(' ', j->jw_out);
    }
    l->jl_first = false;
    if (key != NULL) {
        put_string(j->jw_out, key);
        fputs(": ", j->jw_out);
    }
}

/* Open a container: its bracket, and a new level that has nothing yet. */
static void begin(JsonWriter *j, const char *key, char open, char close, int lines)
{
    member(j, key);
    fputc(open, j->jw_out);
    assert(j->jw_depth < JSON_MAX_DEPTH);
    j->jw_level[++j->jw_depth] =
        (JsonLevel){.jl_first = true, .jl_lines = lines, .jl_close = close};
}

void json_begin_object(JsonWriter *j, const char *key)
{
    begin(j, key, '{', '}', -1);
}

void json_begin_array(JsonWriter *j, const char *key)
{
    begin(j, key, '[', ']', -1);
}

void json_begin_array_lines(JsonWriter *j, const char *key, int indent)
{
    begin(j, key, '[', ']', indent);
}

void json_end(JsonWriter *j)
{
    assert(j->jw_depth > 0);
    const JsonLevel *l = &j->jw_level[j->jw_depth--];
    if (l->jl_lines >= 0)
        fputc('\n', j->jw_out);
    fputc(l->jl_close, j->jw_out);
}

void json_string(JsonWriter *j, const char *key, const char *s)
{
    if (s == NULL) {
        json_null(j, key);
        return;
    }
    member(j, key);
    put_string(j->jw_out, s);
}

void json_int(JsonWriter *j, const char *key, int64_t v)
{
    member(j, key);
    fprintf(j->jw_out, "%" PRId64, v);
}

void json_uint(JsonWriter *j, const char *key, uint64_t v)
{
    member(j, key);
    fprintf(j->jw_out, "%" PRIu64, v);
}

void json_double(JsonWriter *j, const char *key, double v, int decimals)
{
    if (!isfinite(v)) {
        json_null(j, key);
        return;
    }
    member(j, key);
    fprintf(j->jw_out, "%.*f", decimals, v);
}

void json_bool(JsonWriter *j, const char *key, bool v)
{
    member(j, key);
    fputs(v ? "true" : "false", j->jw_out);
}

void json_null(JsonWriter *j, const char *key)
{
    member(j, key);
    fputs("null", j->jw_out);
}

void json_raw(JsonWriter *j, const char *key, const char *number)
{
    member(j, key);
    fputs(number, j->jw_out);
}
