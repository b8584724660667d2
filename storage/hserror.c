/*
 * hserror.c -- filling and formatting the error record (see hserror.h).
 */
#include "hserror.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void hs_error_clear(HsError *err)
{
    err->code = 0;
    err->block = HS_NO_BLOCK;
    err->file[0] = '\0';
    err->msg[0] = '\0';
}

int hs_error_set(HsError *err, int code, const char *file, int64_t block,
                 const char *fmt, ...)
{
    if (err == NULL)
        return code;
    err->code = code;
    err->block = block;
    snprintf(err->file, sizeof(err->file), "%s", file ? file : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return code;
}

const char *hs_error_format(const HsError *err, char *buf, size_t len)
{
    char where[64] = "";
    if (err->block != HS_NO_BLOCK)
        snprintf(where, sizeof(where), "block %lld: ", (long long)err->block);
    snprintf(buf, len, "%s%s%s%s", err->file, err->file[0] ? ": " : "", where,
             err->msg);
    return buf;
}
