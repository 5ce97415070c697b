/* tk_util.h: what every EMQ.* command shares: the brand fence, argument and
 * key-layout checks, byte views, and the clock (the data itself: tk_keys.h).
 *
 * Convention: a check answers 1 when it passes; when it fails it has already
 * replied with the error and answers 0, and the command returns at once. All
 * checks run before a command's first write, so a refusal writes nothing. */
#ifndef TK_UTIL_H
#define TK_UTIL_H

#include <stddef.h>

#include "trafikey_api.h"

/* The wire brand every EMQ.* command requires on {emq}:version; on a cluster,
 * where that key lives in one slot of one shard, on the queue's own
 * emq:version:{q}, which shares the queue's slot (docs/cluster.md). */
#define TK_BRAND_KEY "{emq}:version"
#define TK_QUEUE_BRAND_PREFIX "emq:version:"
#define TK_BRAND "echomq:6.0.0"

/* Sorted-set scores are doubles: above 2^53 an integer deadline would round. */
#define TK_MAX_SCORE 9007199254740992LL

/* The largest number any argument may be (2^52), the kit's one rule on both executors
 * (echomq_teach.jobs.MAX_NUMBER, lua/includes/args.lua): now + a lease or delay stays below 2^53. */
#define TK_MAX_NUMBER 4503599627370496LL

/* How long a completed flow parent's :dependencies, :processed and :unsuccessful stay
 * readable, in milliseconds: one hour, as in lua/complete.lua (echomq_teach.flows.FLOW_KEYS_TTL_S). */
#define TK_FLOW_KEYS_TTL_MS 3600000LL

/* The most lapsed leases one stall sweep handles, as @stalled_check. */
#define TK_SWEEP_LIMIT 100

/* A view of bytes; ptr NULL means absent (a missing field), unlike an empty string. */
typedef struct {
    const char *ptr;
    size_t len;
} TkBuf;

/* Spreads a view into a pointer and a length. */
#define TK_B(buf) (buf).ptr, (buf).len

/* A command's argument layout: `numkeys key... arg...`. */
typedef struct {
    const char *name;       /* EMQ.CLAIM, as errors name it */
    long long numkeys;      /* the only key count accepted */
    int nargs;              /* arguments after the keys */
    long long flow_numkeys; /* the script's flow layout (refused), 0 when it has none */
    const char *flow_error; /* the refusal for that layout */
} TkShape;

TkBuf tk_arg(TkStr *s);
TkBuf tk_lit(const char *s);
int tk_same(TkBuf a, TkBuf b);
int tk_is(TkBuf a, const char *s);
/* base..suffix and base..'job:'..id, in pool memory (freed when the command returns). */
TkBuf tk_key(TkCtx *ctx, TkBuf base, const char *suffix);
TkBuf tk_row_key(TkCtx *ctx, TkBuf base, TkBuf id);
/* a, b and c joined, in memory the server frees when the command returns. */
TkBuf tk_concat(TkCtx *ctx, TkBuf a, TkBuf b, TkBuf c);

/* Strict decimal, as the server writes integers: no sign but '-', no leading zero, no space. */
int tk_parse_ll(TkBuf v, long long *out);

/* Replies with a formatted error (values shown through tk_show); answers TK_OK. */
int tk_error(TkCtx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A printable, bounded copy of v for an error message. */
const char *tk_show(TkCtx *ctx, TkBuf v);

int tk_check_shape(TkCtx *ctx, TkStr **argv, int argc, const TkShape *shape);
int tk_positive(TkCtx *ctx, TkStr *arg, const char *name, long long *out);
int tk_check_record(TkCtx *ctx, TkBuf record);
int tk_check_base(TkCtx *ctx, TkBuf base);
int tk_check_key(TkCtx *ctx, const char *role, TkBuf key, TkBuf base, const char *suffix);
int tk_check_row(TkCtx *ctx, TkBuf row, TkBuf base, TkBuf id);

/* Server time in ms from the command's cached start time (no TIME call). */
long long tk_now_ms(void);
/* The server's run_id, read once per process; NULL (after replying) when unavailable. */
TkStr *tk_run_id(TkCtx *ctx);

/* The commands, registered in trafikey.c. */
int emq_claim(TkCtx *ctx, TkStr **argv, int argc);
int emq_complete(TkCtx *ctx, TkStr **argv, int argc);
int emq_fail(TkCtx *ctx, TkStr **argv, int argc);
int emq_stalled_check(TkCtx *ctx, TkStr **argv, int argc);

#endif
