/* EMQ.STALLED.CHECK 4 <active> <pending> <dead> <base> <max_stalled>: the native
 * twin of @stalled_check (echomq_teach/lua/stalled_check.lua).
 *
 * Reply, as the script's: [[requeued ids], [dead ids]], up to 100 lapsed leases
 * (score < now) per call, earliest deadline first. Each counted stall adds 1 to
 * the row's stalled; over max_stalled the job is buried with last_error
 * "stalled". The one difference: a lease whose row carries a lease_epoch other
 * than this server's run_id was granted before a restart, so the job returns
 * to pending without being counted. Every row is read before the first write. */
#include <limits.h>
#include <stdio.h>

#include "tk_util.h"

static const TkShape stalled_shape = {"EMQ.STALLED.CHECK", 4, 1, 0, NULL};

/* What the write pass does with one lapsed id. */
enum verdict { GHOST, EXEMPT, REQUEUE, BURY };

int emq_stalled_check(TkCtx *ctx, TkStr **argv, int argc) {
    tk_AutoMemory(ctx);
    if (!tk_check_brand(ctx) || !tk_check_shape(ctx, argv, argc, &stalled_shape)) return TK_OK;
    TkBuf active = tk_arg(argv[2]), pending = tk_arg(argv[3]), dead = tk_arg(argv[4]), base = tk_arg(argv[5]);
    long long max_stalled;
    if (!tk_positive(ctx, argv[6], "max_stalled", &max_stalled)) return TK_OK;
    if (!tk_check_base(ctx, base) || !tk_check_key(ctx, "active", active, base, "active") ||
        !tk_check_key(ctx, "pending", pending, base, "pending") || !tk_check_key(ctx, "dead", dead, base, "dead"))
        return TK_OK;
    long long now = tk_now_ms();
    const char *run_id = tk_run_id(ctx);
    if (!run_id) return TK_OK;

    /* a lease is lapsed once the clock has passed its deadline (the active score) */
    char below[32];
    snprintf(below, sizeof below, "(%lld", now);
    TkReply *lapsed = tk_Call(ctx, "ZRANGEBYSCORE", "Ebccccc", TK_B(active), "-inf", below, "LIMIT", "0",
                              TK_SWEEP_LIMIT_S);
    if (tk_failed(ctx, lapsed)) return TK_OK;
    size_t n = tk_CallReplyLength(lapsed);
    if (n > TK_SWEEP_LIMIT) n = TK_SWEEP_LIMIT;

    /* the read pass: every row judged while nothing is written */
    TkBuf ids[TK_SWEEP_LIMIT], rows[TK_SWEEP_LIMIT];
    enum verdict verdicts[TK_SWEEP_LIMIT];
    size_t nrequeued = 0, ndead = 0;
    if (n > 0 && (!tk_holds(ctx, pending, "zset", NULL) || !tk_holds(ctx, dead, "zset", NULL))) return TK_OK;
    for (size_t i = 0; i < n; i++) {
        ids[i] = tk_str(tk_CallReplyArrayElement(lapsed, i));
        rows[i] = tk_row_key(ctx, base, ids[i]);
        int exists;
        if (!tk_holds(ctx, rows[i], "hash", &exists)) return TK_OK;
        if (!exists) {
            verdicts[i] = GHOST; /* dropped from active, in neither list, as the script does */
            continue;
        }
        TkReply *fields = tk_Call(ctx, "HMGET", "Ebcc", TK_B(rows[i]), "stalled", "lease_epoch");
        if (tk_failed(ctx, fields)) return TK_OK;
        TkBuf epoch = tk_str(tk_CallReplyArrayElement(fields, 1));
        if (epoch.ptr && !tk_is(epoch, run_id)) {
            /* a lease from before a restart: its worker is gone with the old process, not stalled */
            verdicts[i] = EXEMPT;
            nrequeued++;
            continue;
        }
        TkBuf stalled_s = tk_str(tk_CallReplyArrayElement(fields, 0));
        long long stalled = 0;
        if (stalled_s.ptr && (!tk_parse_ll(stalled_s, &stalled) || stalled == LLONG_MAX))
            return tk_error(ctx, "EMQSTATE %s stalled is not an integer that can grow", tk_show(ctx, rows[i]));
        if (stalled + 1 > max_stalled) {
            verdicts[i] = BURY;
            ndead++;
        } else {
            verdicts[i] = REQUEUE;
            nrequeued++;
        }
    }

    /* the write pass, id by id in the script's order */
    for (size_t i = 0; i < n; i++) {
        TkReply *r = tk_Call(ctx, "ZREM", "!Ebb", TK_B(active), TK_B(ids[i]));
        if (tk_failed(ctx, r)) return TK_OK;
        if (verdicts[i] == GHOST) continue;
        if (verdicts[i] != EXEMPT) {
            r = tk_Call(ctx, "HINCRBY", "!Ebcc", TK_B(rows[i]), "stalled", "1");
            if (tk_failed(ctx, r)) return TK_OK;
        }
        if (verdicts[i] == BURY) {
            r = tk_Call(ctx, "ZADD", "!Eblb", TK_B(dead), now, TK_B(ids[i]));
            if (tk_failed(ctx, r)) return TK_OK;
            r = tk_Call(ctx, "HSET", "!Ebcccc", TK_B(rows[i]), "state", "dead", "last_error", "stalled");
        } else {
            r = tk_Call(ctx, "ZADD", "!Ebcb", TK_B(pending), "0", TK_B(ids[i]));
            if (tk_failed(ctx, r)) return TK_OK;
            r = tk_Call(ctx, "HSET", "!Ebcc", TK_B(rows[i]), "state", "pending");
        }
        if (tk_failed(ctx, r)) return TK_OK;
    }

    tk_ReplyWithArray(ctx, 2);
    tk_ReplyWithArray(ctx, (long)nrequeued);
    for (size_t i = 0; i < n; i++) {
        if (verdicts[i] == REQUEUE || verdicts[i] == EXEMPT) tk_ReplyWithStringBuffer(ctx, TK_B(ids[i]));
    }
    tk_ReplyWithArray(ctx, (long)ndead);
    for (size_t i = 0; i < n; i++) {
        if (verdicts[i] == BURY) tk_ReplyWithStringBuffer(ctx, TK_B(ids[i]));
    }
    return TK_OK;
}
