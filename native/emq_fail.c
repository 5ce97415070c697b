/* EMQ.FAIL 4 <active> <schedule> <dead> <row> <id> <token> <delay_ms> <max_attempts>
 *          <reason> <base> <parent_id> [<record>]:
 * the native twin of @retry (echomq_teach/lua/retry.lua) for a job outside a flow.
 * The record flag is optional, as EMQ.COMPLETE's: absent, the death is not recorded.
 *
 * Reply, as the script's: "scheduled" (parked until now + delay), "dead" (at
 * the cap), or 0 when stale, with nothing written. Flows run only as scripts:
 * the flow layout (7 keys), a parent_id, or a row carrying parent is refused
 * before any write.
 *
 * Replicated effects: ZREM from active, HDEL of lease_epoch, ZADD to schedule
 * (at now + delay) or dead (at now) with the time as a number, HSET of state and
 * last_error, and for a recorded death XADD with the id the server chose. */
#include "tk_keys.h"

#define FAIL_FLOW_ERROR "EMQSTATE fail flow not native"

/* seven arguments, or eight with the record flag */
#define FAIL_BARE_ARGC (2 + 4 + 7)
static const TkShape fail_bare_shape = {"EMQ.FAIL", 4, 7, 7, FAIL_FLOW_ERROR};
static const TkShape fail_shape = {"EMQ.FAIL", 4, 8, 7, FAIL_FLOW_ERROR};

int emq_fail(TkCtx *ctx, TkStr **argv, int argc) {
    tk_AutoMemory(ctx);
    const TkShape *shape = argc == FAIL_BARE_ARGC ? &fail_bare_shape : &fail_shape;
    if (!tk_check_brand(ctx, argv, argc) || !tk_check_shape(ctx, argv, argc, shape)) return TK_OK;
    TkStr *active_k = argv[2], *schedule_k = argv[3], *dead_k = argv[4], *row_k = argv[5];
    TkStr *id_k = argv[6], *token_k = argv[7], *reason_k = argv[10];
    TkBuf active = tk_arg(active_k), schedule = tk_arg(schedule_k), dead = tk_arg(dead_k), row = tk_arg(row_k);
    TkBuf id = tk_arg(id_k), token = tk_arg(token_k);
    TkBuf base = tk_arg(argv[11]), parent_id = tk_arg(argv[12]);
    TkBuf record = argc > FAIL_BARE_ARGC ? tk_arg(argv[FAIL_BARE_ARGC]) : tk_lit("0");
    long long token_n, delay, max_attempts;
    if (!tk_positive(ctx, token_k, "token", &token_n) || !tk_positive(ctx, argv[8], "delay_ms", &delay) ||
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

    /* each key the failure writes is opened once: read while nothing is written, then written */
    TkOpen row_w = tk_open(ctx, row_k, TK_READ | TK_WRITE);
    TkStr *const wanted[] = {TK_W(ATTEMPTS), TK_W(STATE), TK_W(PARENT), TK_W(PRIOR_ATTEMPTS), TK_W(LEASE_EPOCH)};
    TkBuf fields[5];
    int row_type = tk_hmget(row_w, wanted, 5, fields);
    if (row_type != TK_KEYTYPE_HASH && row_type != TK_KEYTYPE_EMPTY) return tk_wrongtype(ctx);
    /* a flow child: its parent_policy lives only in the script */
    if (fields[2].ptr) return tk_ReplyWithError(ctx, FAIL_FLOW_ERROR);
    /* the token fence, as @complete's */
    if (!tk_same(fields[0], token) || !tk_is(fields[1], "active")) return tk_ReplyWithLongLong(ctx, 0);

    /* the row's attempts equals the token here. It runs on across a reprocess, so a token never
     * repeats (D-5 in docs/decisions.md); the cap counts this life's claims only: attempts minus prior_attempts, where
     * @reprocess started this life (absent: 0), as @retry counts them */
    long long prior = 0;
    if (fields[3].ptr && !tk_parse_ll(fields[3], &prior))
        return tk_error(ctx, "EMQSTATE %s prior_attempts is not an integer", tk_show(ctx, row));
    int below_cap = token_n - prior < max_attempts;
    int record_it = !below_cap && tk_is(record, "1");
    /* what the writes below would trip on, checked while nothing is written */
    TkOpen active_w = tk_open(ctx, active_k, TK_READ | TK_WRITE);
    if (!tk_holds(ctx, active_w, TK_KEYTYPE_ZSET, NULL)) return TK_OK;
    TkOpen parked_w = tk_open(ctx, below_cap ? schedule_k : dead_k, TK_READ | TK_WRITE);
    if (!tk_holds(ctx, parked_w, TK_KEYTYPE_ZSET, NULL)) return TK_OK;
    TkOpen stream_w = {NULL, NULL};
    if (record_it) {
        stream_w = tk_open(ctx, tk_name(ctx, tk_key(ctx, base, "stream:completions")), TK_READ | TK_WRITE);
        if (!tk_holds(ctx, stream_w, TK_KEYTYPE_STREAM, NULL)) return TK_OK;
    }

    if (!tk_zrem(ctx, active_w, id_k)) return TK_OK;
    /* the lease ends here, and its lease_epoch with it: a later lease is judged on its own */
    if (fields[4].ptr && !tk_hdel(ctx, row_w, &TK_W(LEASE_EPOCH), 1)) return TK_OK;
    /* below the cap the schedule set, a visibility fence, not a second queue, at now + delay; at the
     * cap (this life's claims equal max attempts) the morgue, at the time of death */
    TkStr *settled[] = {TK_W(STATE), below_cap ? TK_W(SCHEDULED) : TK_W(DEAD), TK_W(LAST_ERROR), reason_k};
    if (!tk_zadd(ctx, parked_w, below_cap ? now + delay : now, id_k) || !tk_hset(ctx, row_w, settled, 2))
        return TK_OK;
    if (record_it) {
        TkStr *entry[] = {TK_W(ID),       id_k,    TK_W(OUTCOME), TK_W(DEAD),
                          TK_W(ATTEMPTS), token_k, TK_W(ERROR),   reason_k};
        if (!tk_xadd(ctx, stream_w, entry, 4)) return TK_OK;
    }
    return tk_ReplyWithString(ctx, below_cap ? TK_W(SCHEDULED) : TK_W(DEAD));
}
