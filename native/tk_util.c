/* tk_util.c: the checks and helpers every EMQ.* command shares (see tk_util.h). */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tk_util.h"

/* Longest stretch of a caller's value an error message quotes. */
#define TK_SHOW_MAX 120

TkBuf tk_arg(TkStr *s) {
    TkBuf b;
    b.ptr = tk_StringPtrLen(s, &b.len);
    return b;
}

TkBuf tk_lit(const char *s) {
    TkBuf b = {s, strlen(s)};
    return b;
}

int tk_same(TkBuf a, TkBuf b) {
    /* absent equals only absent: a missing field is not the empty string */
    if (!a.ptr || !b.ptr) return a.ptr == b.ptr;
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

int tk_is(TkBuf a, const char *s) { return tk_same(a, tk_lit(s)); }

TkBuf tk_concat(TkCtx *ctx, TkBuf a, TkBuf b, TkBuf c) {
    /* PoolAlloc never answers NULL: the server aborts on out-of-memory instead */
    char *out = tk_PoolAlloc(ctx, a.len + b.len + c.len + 1);
    memcpy(out, a.ptr, a.len);
    if (b.len) memcpy(out + a.len, b.ptr, b.len);
    if (c.len) memcpy(out + a.len + b.len, c.ptr, c.len);
    out[a.len + b.len + c.len] = '\0';
    TkBuf r = {out, a.len + b.len + c.len};
    return r;
}

TkBuf tk_key(TkCtx *ctx, TkBuf base, const char *suffix) {
    TkBuf none = {"", 0};
    return tk_concat(ctx, base, tk_lit(suffix), none);
}

TkBuf tk_row_key(TkCtx *ctx, TkBuf base, TkBuf id) { return tk_concat(ctx, base, tk_lit("job:"), id); }

int tk_parse_ll(TkBuf v, long long *out) {
    if (!v.ptr || v.len == 0 || v.len > 20) return 0;
    size_t i = 0;
    int neg = v.ptr[0] == '-';
    if (neg) i = 1;
    if (i == v.len) return 0;
    if (v.ptr[i] == '0') {
        /* "0" alone; "-0" and "007" are not how the server writes a number */
        if (v.len != 1) return 0;
        *out = 0;
        return 1;
    }
    unsigned long long acc = 0;
    for (; i < v.len; i++) {
        unsigned char c = (unsigned char)v.ptr[i];
        if (c < '0' || c > '9') return 0;
        unsigned d = c - '0';
        if (acc > (ULLONG_MAX - d) / 10) return 0;
        acc = acc * 10 + d;
    }
    if (!neg) {
        if (acc > (unsigned long long)LLONG_MAX) return 0;
        *out = (long long)acc;
    } else {
        if (acc > (unsigned long long)LLONG_MAX + 1) return 0;
        *out = acc == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN : -(long long)acc;
    }
    return 1;
}

const char *tk_show(TkCtx *ctx, TkBuf v) {
    if (!v.ptr) return "(absent)";
    size_t n = v.len > TK_SHOW_MAX ? TK_SHOW_MAX : v.len;
    char *out = tk_PoolAlloc(ctx, n + 4);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v.ptr[i];
        /* control bytes would garble the one-line error; UTF-8 passes */
        out[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (n < v.len) {
        memcpy(out + n, "...", 4);
    } else {
        out[n] = '\0';
    }
    return out;
}

int tk_error(TkCtx *ctx, const char *fmt, ...) {
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    const char *msg = "ERR trafikey could not format an error";
    if (n >= 0) {
        char *buf = tk_PoolAlloc(ctx, (size_t)n + 1);
        vsnprintf(buf, (size_t)n + 1, fmt, again);
        msg = buf;
    }
    va_end(again);
    tk_ReplyWithError(ctx, msg);
    return TK_OK;
}

int tk_check_shape(TkCtx *ctx, TkStr **argv, int argc, const TkShape *shape) {
    if (argc < 2) {
        tk_WrongArity(ctx);
        return 0;
    }
    long long numkeys;
    int ok = tk_parse_ll(tk_arg(argv[1]), &numkeys);
    /* the flow layout is refused by name, whatever follows it */
    if (ok && shape->flow_numkeys && numkeys == shape->flow_numkeys) {
        tk_ReplyWithError(ctx, shape->flow_error);
        return 0;
    }
    if (!ok || numkeys != shape->numkeys) {
        tk_error(ctx, "EMQARG numkeys must be %lld for %s", shape->numkeys, shape->name);
        return 0;
    }
    if ((long long)argc != 2 + shape->numkeys + shape->nargs) {
        tk_WrongArity(ctx);
        return 0;
    }
    return 1;
}

int tk_positive(TkCtx *ctx, TkStr *arg, const char *name, long long *out) {
    if (!tk_parse_ll(tk_arg(arg), out) || *out <= 0) {
        tk_error(ctx, "EMQARG %s must be a positive integer", name);
        return 0;
    }
    /* the kit's one bound for every number, as the scripts and Python hold it */
    if (*out > TK_MAX_NUMBER) {
        tk_error(ctx, "EMQARG %s is too large", name);
        return 0;
    }
    return 1;
}

int tk_check_record(TkCtx *ctx, TkBuf record) {
    /* the script records on '1' only; anything but '0' or '1' is a caller's slip */
    if (tk_is(record, "0") || tk_is(record, "1")) return 1;
    tk_ReplyWithError(ctx, "EMQARG record must be 0 or 1");
    return 0;
}

int tk_check_base(TkCtx *ctx, TkBuf base) {
    /* emq:{q}: where q is a queue name the kit accepts (keyspace.check_queue's one rule): no
     * braces, colons, spaces or ASCII control characters; every other byte, UTF-8 included, passes */
    static const char forbidden[] = "{}:";
    int ok = base.len > 7 && memcmp(base.ptr, "emq:{", 5) == 0 && memcmp(base.ptr + base.len - 2, "}:", 2) == 0;
    for (size_t i = 5; ok && i < base.len - 2; i++) {
        unsigned char c = (unsigned char)base.ptr[i];
        if (c <= 0x20 || c == 0x7f || memchr(forbidden, c, sizeof forbidden - 1)) ok = 0;
    }
    if (ok) return 1;
    tk_error(ctx, "EMQKEYS base must look like emq:{q}:, got %s", tk_show(ctx, base));
    return 0;
}

/* key == a + b + c, compared in place (the check runs on every call: no copy is made to pass it). */
static int tk_joins(TkBuf key, TkBuf a, TkBuf b, TkBuf c) {
    if (!key.ptr || key.len != a.len + b.len + c.len) return 0;
    return memcmp(key.ptr, a.ptr, a.len) == 0 && (b.len == 0 || memcmp(key.ptr + a.len, b.ptr, b.len) == 0) &&
           (c.len == 0 || memcmp(key.ptr + a.len + b.len, c.ptr, c.len) == 0);
}

int tk_check_key(TkCtx *ctx, const char *role, TkBuf key, TkBuf base, const char *suffix) {
    TkBuf none = {"", 0};
    if (tk_joins(key, base, tk_lit(suffix), none)) return 1;
    tk_error(ctx, "EMQKEYS %s must be %s, got %s", role, tk_show(ctx, tk_key(ctx, base, suffix)), tk_show(ctx, key));
    return 0;
}

int tk_check_row(TkCtx *ctx, TkBuf row, TkBuf base, TkBuf id) {
    if (id.len == 0) {
        tk_ReplyWithError(ctx, "EMQARG id must not be empty");
        return 0;
    }
    if (tk_joins(row, base, tk_lit("job:"), id)) return 1;
    tk_error(ctx, "EMQKEYS row must be %s, got %s", tk_show(ctx, tk_row_key(ctx, base, id)), tk_show(ctx, row));
    return 0;
}

long long tk_now_ms(void) { return tk_CachedMicroseconds() / 1000; }

TkStr *tk_run_id(TkCtx *ctx) {
    /* run_id never changes within one server process, and INFO is costly: read it once, and keep
     * it as a server string the server does not free when a command returns (no context) */
    static char run_id[64];
    static TkStr *kept;
    if (kept) return kept;
    if (!run_id[0]) {
        TkInfo *info = tk_GetServerInfo(ctx, "server");
        if (info) {
            const char *v = tk_ServerInfoGetFieldC(info, "run_id");
            /* v points into the info data: copy it before the free */
            if (v) snprintf(run_id, sizeof run_id, "%s", v);
            tk_FreeServerInfo(ctx, info);
        }
    }
    if (run_id[0]) return kept = tk_CreateString(NULL, run_id, strlen(run_id));
    tk_ReplyWithError(ctx, "EMQSTATE server run_id is unavailable");
    return NULL;
}
