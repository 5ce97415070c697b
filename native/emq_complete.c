/* EMQ.COMPLETE 2 <active> <row> <id> <token> <base> <parent_id> <result> <record>:
 * the native twin of @complete (echomq_teach/lua/complete.lua) for a job outside a flow.
 *
 * Reply, as the script's: 1 when settled, 0 when stale (the token moved on, or
 * the row is no longer active), with nothing written. Flows run only as
 * scripts: the flow layout (5 keys), a parent_id, or a row carrying parent is
 * refused before any write. A flow parent is a plain row, so it completes here
 * too: like the script, the command then gives the parent's :dependencies,
 * :processed and :unsuccessful an expiry (TK_FLOW_KEYS_TTL_S). */
#include <limits.h>

#include "tk_util.h"

#define COMPLETE_FLOW_ERROR "EMQSTATE complete flow not native"

static const TkShape complete_shape = {"EMQ.COMPLETE", 2, 6, 5, COMPLETE_FLOW_ERROR};

int emq_complete(TkCtx *ctx, TkStr **argv, int argc) {
    tk_AutoMemory(ctx);
    if (!tk_check_brand(ctx, argv, argc) || !tk_check_shape(ctx, argv, argc, &complete_shape)) return TK_OK;
    TkBuf active = tk_arg(argv[2]), row = tk_arg(argv[3]);
    TkBuf id = tk_arg(argv[4]), token = tk_arg(argv[5]), base = tk_arg(argv[6]);
    TkBuf parent_id = tk_arg(argv[7]), result = tk_arg(argv[8]), record = tk_arg(argv[9]);
    long long token_n;
    if (!tk_positive(ctx, argv[5], "token", &token_n) || !tk_check_record(ctx, record)) return TK_OK;
    if (parent_id.len != 0) return tk_ReplyWithError(ctx, COMPLETE_FLOW_ERROR);
    if (!tk_check_base(ctx, base) || !tk_check_key(ctx, "active", active, base, "active") ||
        !tk_check_row(ctx, row, base, id))
        return TK_OK;

    TkReply *fields = tk_Call(ctx, "HMGET", "Ebccc", TK_B(row), "attempts", "state", "parent");
    if (tk_failed(ctx, fields)) return TK_OK;
    /* a flow child: its fan-in lives only in the script */
    if (tk_str(tk_CallReplyArrayElement(fields, 2)).ptr) return tk_ReplyWithError(ctx, COMPLETE_FLOW_ERROR);
    /* the token fence (D-3 in docs/decisions.md): the claim count must still be this token and the row still active */
    if (!tk_same(tk_str(tk_CallReplyArrayElement(fields, 0)), token) ||
        !tk_is(tk_str(tk_CallReplyArrayElement(fields, 1)), "active"))
        return tk_ReplyWithLongLong(ctx, 0);

    /* what the writes below would trip on, checked while nothing is written */
    TkBuf stream = tk_key(ctx, base, "stream:completions");
    TkBuf metrics = tk_key(ctx, base, "metrics:completed");
    if (!tk_holds(ctx, active, "zset", NULL)) return TK_OK;
    if (tk_is(record, "1") && !tk_holds(ctx, stream, "stream", NULL)) return TK_OK;
    TkReply *r, *count = tk_Call(ctx, "HGET", "Ebc", TK_B(metrics), "count");
    if (tk_failed(ctx, count)) return TK_OK;
    TkBuf count_s = tk_str(count);
    long long count_n = 0;
    if (count_s.ptr && (!tk_parse_ll(count_s, &count_n) || count_n == LLONG_MAX))
        return tk_error(ctx, "EMQSTATE %s count is not an integer that can grow", tk_show(ctx, metrics));
    /* a flow parent is known by its counter; EXPIRE takes a key of any type, so there is nothing to check */
    static const char *const flow_suffixes[] = {":dependencies", ":processed", ":unsuccessful"};
    r = tk_Call(ctx, "EXISTS", "Eb", TK_B(tk_key(ctx, row, flow_suffixes[0])));
    if (tk_failed(ctx, r)) return TK_OK;
    int parent = tk_CallReplyInteger(r) == 1;

    r = tk_Call(ctx, "ZREM", "!Ebb", TK_B(active), TK_B(id));
    if (tk_failed(ctx, r)) return TK_OK;
    /* record the settle in the same atomic step, so a crash can never leave one without the other */
    if (tk_is(record, "1")) {
        r = tk_Call(ctx, "XADD", "!Ebccbcccbcb", TK_B(stream), "*", "id", TK_B(id), "outcome", "completed",
                    "attempts", TK_B(token), "result", TK_B(result));
        if (tk_failed(ctx, r)) return TK_OK;
    }
    /* a completing flow parent: its counter and results were kept for its handler; they stay
     * readable for TK_FLOW_KEYS_TTL_S more, then go (the script's same three EXPIREs) */
    for (size_t i = 0; parent && i < sizeof flow_suffixes / sizeof flow_suffixes[0]; i++) {
        r = tk_Call(ctx, "EXPIRE", "!Ebc", TK_B(tk_key(ctx, row, flow_suffixes[i])), TK_FLOW_KEYS_TTL_S);
        if (tk_failed(ctx, r)) return TK_OK;
    }
    /* the completing row goes, and the metric counts it */
    r = tk_Call(ctx, "DEL", "!Eb", TK_B(row));
    if (tk_failed(ctx, r)) return TK_OK;
    r = tk_Call(ctx, "HINCRBY", "!Ebcc", TK_B(metrics), "count", "1");
    if (tk_failed(ctx, r)) return TK_OK;
    return tk_ReplyWithLongLong(ctx, 1);
}
