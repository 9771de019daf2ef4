/* error.c — the one error convention: a code returned, a message kept per thread. */
#include "internal.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char errbuf[1024];

const char *moraine_errmsg(void) { return errbuf; }

const char *moraine_strerror(int code)
{
    switch (code) {
    case MORAINE_OK: return "OK";
    case MORAINE_EINVAL: return "EINVAL";
    case MORAINE_ENOTFOUND: return "ENOTFOUND";
    case MORAINE_EEXIST: return "EEXIST";
    case MORAINE_ESNAPSHOT: return "ESNAPSHOT";
    case MORAINE_ENOTLIVE: return "ENOTLIVE";
    case MORAINE_ECORRUPT: return "ECORRUPT";
    case MORAINE_ELMDB: return "ELMDB";
    case MORAINE_ENOMEM: return "ENOMEM";
    case MORAINE_EIO: return "EIO";
    case MORAINE_EJSON: return "EJSON";
    case MORAINE_EREADONLY: return "EREADONLY";
    case MORAINE_ETXN: return "ETXN";
    case MORAINE_EMAPFULL: return "EMAPFULL";
    case MORAINE_ECONFLICT: return "ECONFLICT";
    case MORAINE_EFORK: return "EFORK";
    case MORAINE_EFORMAT: return "EFORMAT";
    default: return "EUNKNOWN";
    }
}

/* Records a message for the calling thread and returns @code, so callers can
 * write `return mr_err(MORAINE_EINVAL, "...")`. */
int mr_err(int code, const char *fmt, ...)
{
    char tmp[sizeof errbuf];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap); /* fmt may use errbuf via %s */
    va_end(ap);
    memcpy(errbuf, tmp, sizeof errbuf);
    return code;
}

int mr_lmdb_err(int rc, const char *what)
{
    if (rc == MDB_MAP_FULL)
        return mr_err(MORAINE_EMAPFULL,
                      "%s: the commit does not fit in the catalog's map: open the catalog with a larger map_size (for one commit larger "
                      "than the free half of the map) or max_map_size (the most the map doubles to before a commit): %s",
                      what, mdb_strerror(rc));
    if (rc == MDB_READERS_FULL)
        return mr_err(MORAINE_ELMDB, "%s: too many open read transactions: %s", what, mdb_strerror(rc));
    return mr_err(MORAINE_ELMDB, "%s: %s", what, mdb_strerror(rc));
}

int mr_buf_reserve(mr_buf *b, size_t extra)
{
    if (b->len + extra <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra) cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) return mr_err(MORAINE_ENOMEM, "out of memory (buffer of %zu bytes)", cap);
    b->p = p;
    b->cap = cap;
    return 0;
}

int mr_buf_put(mr_buf *b, const void *src, size_t n)
{
    int rc = mr_buf_reserve(b, n);
    if (rc) return rc;
    if (n) memcpy(b->p + b->len, src, n);
    b->len += n;
    return 0;
}

int mr_buf_byte(mr_buf *b, uint8_t c) { return mr_buf_put(b, &c, 1); }

void mr_buf_free(mr_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}
