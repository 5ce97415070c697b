/* tk_keys.c: direct key access and effect replication, and the brand check that reads through them (see tk_keys.h). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tk_keys.h"

/* What TYPE would call each key type, for refusals. */
static const char *type_name(int type) {
    switch (type) {
    case TK_KEYTYPE_EMPTY: return "none";
    case TK_KEYTYPE_STRING: return "string";
    case TK_KEYTYPE_LIST: return "list";
    case TK_KEYTYPE_HASH: return "hash";
    case TK_KEYTYPE_SET: return "set";
    case TK_KEYTYPE_ZSET: return "zset";
    case TK_KEYTYPE_STREAM: return "stream";
    default: return "module value";
    }
}

TkStr *tk_name(TkCtx *ctx, TkBuf bytes) { return tk_CreateString(ctx, bytes.ptr, bytes.len); }

TkStr *tk_cstr(TkCtx *ctx, const char *s) { return tk_CreateString(ctx, s, strlen(s)); }

TkStr *tk_words[TK_WORDS];

static const char *const word_text[TK_WORDS] = {
    [TK_W_ATTEMPTS] = "attempts",
    [TK_W_PAYLOAD] = "payload",
    [TK_W_STATE] = "state",
    [TK_W_PARENT] = "parent",
    [TK_W_PARENT_POLICY] = "parent_policy",
    [TK_W_FLOW] = "flow",
    [TK_W_PRIOR_ATTEMPTS] = "prior_attempts",
    [TK_W_LEASE_EPOCH] = "lease_epoch",
    [TK_W_LAST_ERROR] = "last_error",
    [TK_W_STALLED] = "stalled",
    [TK_W_COUNT] = "count",
    [TK_W_ACTIVE] = "active",
    [TK_W_PENDING] = "pending",
    [TK_W_SCHEDULED] = "scheduled",
    [TK_W_DEAD] = "dead",
    [TK_W_ID] = "id",
    [TK_W_OUTCOME] = "outcome",
    [TK_W_COMPLETED] = "completed",
    [TK_W_CHILD_FAILED] = "child_failed",
    [TK_W_RESULT] = "result",
    [TK_W_ERROR] = "error",
    [TK_W_BRAND_KEY] = TK_BRAND_KEY,
};

void tk_keys_init(TkCtx *ctx) {
    /* no context: the server does not free them when a command returns */
    for (size_t i = 0; i < TK_WORDS; i++) tk_words[i] = tk_cstr(NULL, word_text[i]);
    tk_SetModuleOptions(ctx, TK_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED);
}

TkOpen tk_open(TkCtx *ctx, TkStr *name, int mode) {
    TkOpen k = {name, tk_OpenKey(ctx, name, mode)};
    return k;
}

void tk_close(TkOpen *k) {
    tk_CloseKey(k->key);
    k->key = NULL;
}

/* After a write: WATCH and client-side caching learn of it, replicas and the AOF get the effect
 * (wrapped by the caller's Replicate), and keyspace events fire as the command's own would. */
static void changed(TkCtx *ctx, TkOpen k, int event_class, const char *event) {
    tk_SignalModifiedKey(ctx, k.name);
    tk_NotifyKeyspaceEvent(ctx, event_class, event, k.name);
}

/* A failed write after every check passed: not seen in practice; the reply says which key. */
static int write_failed(TkCtx *ctx, TkOpen k) {
    tk_error(ctx, "ERR trafikey could not write %s", tk_show(ctx, tk_arg(k.name)));
    return 0;
}

int tk_kind(TkOpen k) { return tk_KeyType(k.key); /* a NULL handle (absent key) is EMPTY */ }

int tk_holds(TkCtx *ctx, TkOpen k, int type, int *exists) {
    /* checked before the first write, where the script would fail half-way */
    int got = tk_kind(k);
    if (exists) *exists = got != TK_KEYTYPE_EMPTY;
    if (got == TK_KEYTYPE_EMPTY || got == type) return 1;
    tk_error(ctx, "WRONGTYPE %s holds a %s, not a %s", tk_show(ctx, tk_arg(k.name)), type_name(got), type_name(type));
    return 0;
}

int tk_wrongtype(TkCtx *ctx) {
    tk_ReplyWithError(ctx, "WRONGTYPE Operation against a key holding the wrong kind of value");
    return TK_OK;
}

int tk_hmget(TkOpen k, TkStr *const *fields, size_t n, TkBuf *out) {
    for (size_t i = 0; i < n; i++) out[i].ptr = NULL, out[i].len = 0;
    int type = tk_kind(k);
    if (type != TK_KEYTYPE_HASH) return type;
    for (size_t i = 0; i < n; i++) {
        TkStr *value = NULL;
        tk_HashGet(k.key, 0, fields[i], &value, NULL);
        /* the value is a copy, freed with the command: it outlives the handle and later writes */
        if (value) out[i] = tk_arg(value);
    }
    return type;
}

int tk_string(TkCtx *ctx, TkOpen k, TkBuf *out) {
    out->ptr = NULL;
    out->len = 0;
    int type = tk_kind(k);
    if (type != TK_KEYTYPE_STRING) return type;
    size_t len;
    const char *p = tk_StringDMA(k.key, &len, TK_READ);
    if (p) {
        /* a copy: the pointer is the key's own bytes, which a later write may move */
        char *copy = tk_PoolAlloc(ctx, len + 1);
        memcpy(copy, p, len);
        copy[len] = '\0';
        out->ptr = copy;
        out->len = len;
    }
    return type;
}

long tk_zhead(TkOpen k, double below, TkStr **out, long limit) {
    int type = tk_kind(k);
    if (type != TK_KEYTYPE_ZSET) return type == TK_KEYTYPE_EMPTY ? 0 : -1;
    long n = 0;
    /* maxex: a score equal to `below` is not below it; +inf takes every member */
    tk_ZsetFirstInScoreRange(k.key, -INFINITY, below, 0, !isinf(below));
    while (n < limit && !tk_ZsetRangeEndReached(k.key)) {
        out[n++] = tk_ZsetRangeCurrentElement(k.key, NULL); /* a copy, freed with the command */
        /* step on only for a member still wanted: a step reads the next node, a cache miss away */
        if (n < limit) tk_ZsetRangeNext(k.key);
    }
    tk_ZsetRangeStop(k.key);
    return n;
}

int tk_zadd(TkCtx *ctx, TkOpen k, long long score, TkStr *member) {
    /* every score the kit writes is an integer below 2^53: the double holds it exactly */
    if (tk_ZsetAdd(k.key, (double)score, member, NULL) != TK_OK) return write_failed(ctx, k);
    tk_Replicate(ctx, "ZADD", "sls", k.name, score, member);
    changed(ctx, k, TK_NOTIFY_ZSET, "zadd");
    return 1;
}

int tk_zrem(TkCtx *ctx, TkOpen k, TkStr *member) {
    int deleted = 0;
    if (tk_ZsetRem(k.key, member, &deleted) != TK_OK) return write_failed(ctx, k);
    if (deleted) {
        tk_Replicate(ctx, "ZREM", "ss", k.name, member);
        changed(ctx, k, TK_NOTIFY_ZSET, "zrem");
    }
    return 1;
}

int tk_zpopmin(TkCtx *ctx, TkOpen k, TkBuf expect, TkStr **out) {
    TkStr *head = NULL;
    if (tk_zhead(k, INFINITY, &head, 1) < 0) return write_failed(ctx, k);
    *out = head;
    if (!head || !tk_same(tk_arg(head), expect)) return 1;
    int deleted = 0;
    if (tk_ZsetRem(k.key, head, &deleted) != TK_OK || !deleted) return write_failed(ctx, k);
    /* the member popped, named: the replica removes exactly it */
    tk_Replicate(ctx, "ZREM", "ss", k.name, head);
    changed(ctx, k, TK_NOTIFY_ZSET, "zpopmin");
    return 1;
}

int tk_hset(TkCtx *ctx, TkOpen k, TkStr *const *pairs, size_t npairs) {
    TkStr *const *p = pairs;
    /* one HashSet with every pair: the commands write one to three fields at a time (a claim three) */
    if (npairs == 1) {
        tk_HashSet(k.key, 0, p[0], p[1], NULL);
    } else if (npairs == 2) {
        tk_HashSet(k.key, 0, p[0], p[1], p[2], p[3], NULL);
    } else if (npairs == 3) {
        tk_HashSet(k.key, 0, p[0], p[1], p[2], p[3], p[4], p[5], NULL);
    } else {
        for (size_t i = 0; i < npairs; i++) tk_HashSet(k.key, 0, p[2 * i], p[2 * i + 1], NULL);
    }
    /* HashSet answers how many existing fields it changed (0 is no failure for new fields): the key
     * holding a hash afterwards is what says the write happened; the checks made sure it would */
    if (tk_kind(k) != TK_KEYTYPE_HASH) return write_failed(ctx, k);
    /* a fixed format for the usual sizes spares the server growing an argument vector */
    if (npairs == 1) {
        tk_Replicate(ctx, "HSET", "sss", k.name, p[0], p[1]);
    } else if (npairs == 2) {
        tk_Replicate(ctx, "HSET", "sssss", k.name, p[0], p[1], p[2], p[3]);
    } else if (npairs == 3) {
        tk_Replicate(ctx, "HSET", "sssssss", k.name, p[0], p[1], p[2], p[3], p[4], p[5]);
    } else {
        tk_Replicate(ctx, "HSET", "sv", k.name, pairs, 2 * npairs);
    }
    changed(ctx, k, TK_NOTIFY_HASH, "hset");
    return 1;
}

int tk_hdel(TkCtx *ctx, TkOpen k, TkStr *const *fields, size_t n) {
    int type = tk_kind(k);
    if (type == TK_KEYTYPE_EMPTY) return 1;
    if (type != TK_KEYTYPE_HASH) return write_failed(ctx, k);
    TkStr **gone = tk_PoolAlloc(ctx, n * sizeof *gone);
    size_t ngone = 0;
    for (size_t i = 0; i < n && tk_kind(k) == TK_KEYTYPE_HASH; i++) {
        /* the count is of fields deleted: 1 when this one was there (the last field deletes the key) */
        if (tk_HashSet(k.key, 0, fields[i], TK_HASH_DELETE, NULL) == 1) gone[ngone++] = fields[i];
    }
    if (ngone) {
        tk_Replicate(ctx, "HDEL", "sv", k.name, gone, ngone);
        changed(ctx, k, TK_NOTIFY_HASH, "hdel");
    }
    return 1;
}

int tk_del(TkCtx *ctx, TkOpen k) {
    if (tk_kind(k) == TK_KEYTYPE_EMPTY) return 1;
    if (tk_DeleteKey(k.key) != TK_OK) return write_failed(ctx, k);
    tk_Replicate(ctx, "DEL", "s", k.name);
    changed(ctx, k, TK_NOTIFY_GENERIC, "del");
    return 1;
}

int tk_pexpireat(TkCtx *ctx, TkOpen k, long long at_ms) {
    if (tk_kind(k) == TK_KEYTYPE_EMPTY) return 1;
    if (tk_SetAbsExpire(k.key, at_ms) != TK_OK) return write_failed(ctx, k);
    /* what the server itself sends for an EXPIRE: the absolute time */
    tk_Replicate(ctx, "PEXPIREAT", "sl", k.name, at_ms);
    changed(ctx, k, TK_NOTIFY_GENERIC, "expire");
    return 1;
}

int tk_xadd(TkCtx *ctx, TkOpen k, TkStr **values, size_t npairs) {
    TkStreamID id;
    if (tk_StreamAdd(k.key, TK_STREAM_ADD_AUTOID, &id, values, (int64_t)npairs) != TK_OK)
        return write_failed(ctx, k);
    /* the id the server picked, spelled out, so the replica's entry has the same one */
    char id_s[48];
    snprintf(id_s, sizeof id_s, "%" PRIu64 "-%" PRIu64, id.ms, id.seq);
    tk_Replicate(ctx, "XADD", "scv", k.name, id_s, values, 2 * npairs);
    changed(ctx, k, TK_NOTIFY_STREAM, "xadd");
    return 1;
}

int tk_set_integer(TkCtx *ctx, TkOpen k, long long value) {
    char digits[24];
    size_t n = (size_t)snprintf(digits, sizeof digits, "%lld", value);
    int type = tk_kind(k);
    if (type != TK_KEYTYPE_STRING && type != TK_KEYTYPE_EMPTY) return write_failed(ctx, k);
    /* rewritten in place (resize, then the bytes), which keeps the key's expiry as DECR does */
    size_t len = 0;
    char *p = tk_StringTruncate(k.key, n) == TK_OK ? tk_StringDMA(k.key, &len, TK_READ | TK_WRITE) : NULL;
    if (!p || len != n) return write_failed(ctx, k);
    memcpy(p, digits, n);
    tk_Replicate(ctx, "SET", "scc", k.name, digits, "KEEPTTL");
    changed(ctx, k, TK_NOTIFY_STRING, "set");
    return 1;
}

/* -- the brand: read through the key layer above ------------------------------------------- */
/* On a cluster: emq:version:{q} for the first key emq:{q}:..., the same hashtag and so the
 * same slot as every key the command declares; absent (after replying) when the key is not a
 * queue's. */
static TkBuf tk_queue_brand_key(TkCtx *ctx, TkStr **argv, int argc) {
    TkBuf none = {NULL, 0};
    if (argc < 3) {
        tk_WrongArity(ctx);
        return none;
    }
    TkBuf first = tk_arg(argv[2]);
    const char *close = first.len > 5 ? memchr(first.ptr + 5, '}', first.len - 5) : NULL;
    if (!close || close == first.ptr + 5 || memcmp(first.ptr, "emq:{", 5) != 0) {
        tk_error(ctx, "EMQKEYS the first key must look like emq:{q}:..., got %s", tk_show(ctx, first));
        return none;
    }
    TkBuf tag = {first.ptr + 4, (size_t)(close - first.ptr) - 3}; /* {q} with its braces */
    TkBuf empty = {"", 0};
    return tk_concat(ctx, tk_lit(TK_QUEUE_BRAND_PREFIX), tag, empty);
}

/* Set once at load: the server's cluster mode is fixed for its life. */
static int cluster_mode = -1;

void tk_note_cluster(TkCtx *ctx) { cluster_mode = (tk_GetContextFlags(ctx) & TK_CTX_FLAGS_CLUSTER) != 0; }

int tk_check_brand(TkCtx *ctx, TkStr **argv, int argc) {
    /* a standalone node carries one brand; a cluster node reads the queue's, in the queue's slot */
    if (cluster_mode < 0) tk_note_cluster(ctx);
    int cluster = cluster_mode;
    TkBuf key = cluster ? tk_queue_brand_key(ctx, argv, argc) : tk_lit(TK_BRAND_KEY);
    if (!key.ptr) return 0;
    TkStr *name = cluster ? tk_name(ctx, key) : TK_W(BRAND_KEY);
    const char *who = cluster ? "queue" : "node";
    TkBuf brand;
    TkOpen k = tk_open(ctx, name, TK_READ);
    int type = tk_string(ctx, k, &brand);
    tk_close(&k);
    if (type == TK_KEYTYPE_EMPTY) {
        tk_error(ctx, "EMQWIRE %s has no %s brand; a wire 6 %s needs " TK_BRAND, who, tk_show(ctx, key), who);
        return 0;
    }
    if (type != TK_KEYTYPE_STRING) {
        tk_error(ctx, "EMQWIRE %s's %s is not a string; a wire 6 %s needs " TK_BRAND, who, tk_show(ctx, key), who);
        return 0;
    }
    if (!tk_is(brand, TK_BRAND)) {
        tk_error(ctx, "EMQWIRE %s is branded %s; need " TK_BRAND, who, tk_show(ctx, brand));
        return 0;
    }
    return 1;
}
