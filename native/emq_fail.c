/* EMQ.FAIL 4 <active> <schedule> <dead> <row> <id> <token> <delay_ms> <max_attempts>
 *          <reason> <base> <parent_id> <record>:
 * the native twin of @retry (echomq_teach/lua/retry.lua) for a job outside a flow.
 *
 * Reply, as the script's: "scheduled" (parked until now + delay), "dead" (at
 * the cap), or 0 when stale, with nothing written. Flows run only as scripts:
 * the flow layout (7 keys), a parent_id, or a row carrying parent is refused
 * before any write. */
#include "tk_util.h"

#define FAIL_FLOW_ERROR "EMQSTATE fail flow not native"

static const TkShape fail_shape = {"EMQ.FAIL", 4, 8, 7, FAIL_FLOW_ERROR};

int emq_fail(TkCtx *ctx, TkStr **argv, int argc) {
    tk_AutoMemory(ctx);
    if (!tk_check_brand(ctx, argv, argc) || !tk_check_shape(ctx, argv, argc, &fail_shape)) return TK_OK;
    TkBuf active = tk_arg(argv[2]), schedule = tk_arg(argv[3]), dead = tk_arg(argv[4]), row = tk_arg(argv[5]);
    TkBuf id = tk_arg(argv[6]), token = tk_arg(argv[7]), reason = tk_arg(argv[10]);
    TkBuf base = tk_arg(argv[11]), parent_id = tk_arg(argv[12]), record = tk_arg(argv[13]);
    long long token_n, delay, max_attempts;
    if (!tk_positive(ctx, argv[7], "token", &token_n) || !tk_positive(ctx, argv[8], "delay_ms", &delay) ||
        !tk_positive(ctx, argv[9], "max_attempts", &max_attempts) || !tk_check_record(ctx, record))
        return TK_OK;
    if (parent_id.len != 0) return tk_ReplyWithError(ctx, FAIL_FLOW_ERROR);
    if (!tk_check_base(ctx, base) || !tk_check_key(ctx, "active", active, base, "active") ||
        !tk_check_key(ctx, "schedule", schedule, base, "schedule") ||
        !tk_check_key(ctx, "dead", dead, base, "dead") || !tk_check_row(ctx, row, base, id))
        return TK_OK;
    long long now = tk_now_ms();
    /* a guard only: tk_positive's 2^52 bound already keeps the run-at below 2^53 */
    if (delay > TK_MAX_SCORE - now) return tk_error(ctx, "EMQARG delay_ms is too large");

    TkReply *fields =
        tk_Call(ctx, "HMGET", "Ebccccc", TK_B(row), "attempts", "state", "parent", "prior_attempts", "lease_epoch");
    if (tk_failed(ctx, fields)) return TK_OK;
    /* a flow child: its parent_policy lives only in the script */
    if (tk_str(tk_CallReplyArrayElement(fields, 2)).ptr) return tk_ReplyWithError(ctx, FAIL_FLOW_ERROR);
    /* the token fence, as @complete's */
    if (!tk_same(tk_str(tk_CallReplyArrayElement(fields, 0)), token) ||
        !tk_is(tk_str(tk_CallReplyArrayElement(fields, 1)), "active"))
        return tk_ReplyWithLongLong(ctx, 0);

    /* the row's attempts equals the token here. It runs on across a reprocess, so a token never
     * repeats (D-5 in docs/decisions.md); the cap counts this life's claims only: attempts minus prior_attempts, where
     * @reprocess started this life (absent: 0), as @retry counts them */
    TkBuf prior_s = tk_str(tk_CallReplyArrayElement(fields, 3));
    long long prior = 0;
    if (prior_s.ptr && !tk_parse_ll(prior_s, &prior))
        return tk_error(ctx, "EMQSTATE %s prior_attempts is not an integer", tk_show(ctx, row));
    int below_cap = token_n - prior < max_attempts;
    int has_epoch = tk_str(tk_CallReplyArrayElement(fields, 4)).ptr != NULL;
    TkBuf stream = tk_key(ctx, base, "stream:completions");
    /* what the writes below would trip on, checked while nothing is written */
    if (!tk_holds(ctx, active, "zset", NULL)) return TK_OK;
    if (below_cap && !tk_holds(ctx, schedule, "zset", NULL)) return TK_OK;
    if (!below_cap && !tk_holds(ctx, dead, "zset", NULL)) return TK_OK;
    if (!below_cap && tk_is(record, "1") && !tk_holds(ctx, stream, "stream", NULL)) return TK_OK;

    TkReply *r = tk_Call(ctx, "ZREM", "!Ebb", TK_B(active), TK_B(id));
    if (tk_failed(ctx, r)) return TK_OK;
    /* the lease ends here, and its lease_epoch with it: a later lease is judged on its own */
    if (has_epoch) {
        r = tk_Call(ctx, "HDEL", "!Ebc", TK_B(row), "lease_epoch");
        if (tk_failed(ctx, r)) return TK_OK;
    }
    if (below_cap) {
        /* below the cap: the schedule set is a visibility fence, not a second queue */
        r = tk_Call(ctx, "ZADD", "!Eblb", TK_B(schedule), now + delay, TK_B(id));
        if (tk_failed(ctx, r)) return TK_OK;
        r = tk_Call(ctx, "HSET", "!Ebcccb", TK_B(row), "state", "scheduled", "last_error", TK_B(reason));
        if (tk_failed(ctx, r)) return TK_OK;
        return tk_ReplyWithStringBuffer(ctx, "scheduled", 9);
    }
    /* at the cap this life's claims equal max attempts: the job goes to the morgue */
    r = tk_Call(ctx, "ZADD", "!Eblb", TK_B(dead), now, TK_B(id));
    if (tk_failed(ctx, r)) return TK_OK;
    r = tk_Call(ctx, "HSET", "!Ebcccb", TK_B(row), "state", "dead", "last_error", TK_B(reason));
    if (tk_failed(ctx, r)) return TK_OK;
    if (tk_is(record, "1")) {
        r = tk_Call(ctx, "XADD", "!Ebccbcccbcb", TK_B(stream), "*", "id", TK_B(id), "outcome", "dead", "attempts",
                    TK_B(token), "error", TK_B(reason));
        if (tk_failed(ctx, r)) return TK_OK;
    }
    return tk_ReplyWithStringBuffer(ctx, "dead", 4);
}
