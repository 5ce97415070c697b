/* EMQ.COMPLETE 2 <active> <row> <id> <token> <base> <parent_id> <result> [<record>]:
 * the native twin of @complete (echomq_teach/lua/complete.lua) for a job outside a flow.
 *
 * The page's own call: five arguments, in @complete's ARGV places. The kit's
 * record flag may follow as a sixth ('1' adds the settle to the completions
 * stream, '0' not); without it the call is not recorded, as the script reads it.
 *
 * Reply, as the script's: 1 when settled, 0 when stale (the token moved on, or
 * the row is no longer active), with nothing written. Flows run only as
 * scripts: the flow layout (5 keys), a parent_id, or a row carrying parent is
 * refused before any write. A flow parent is a plain row, so it completes here
 * too: like the script, the command then gives the parent's :dependencies,
 * :processed and :unsuccessful an expiry (TK_FLOW_KEYS_TTL_MS).
 *
 * Replicated effects: ZREM from active, XADD with the id the server chose,
 * PEXPIREAT of a parent's flow keys, DEL of the row, HSET of the new count. */
#include <limits.h>

#include "tk_keys.h"

#define COMPLETE_FLOW_ERROR "EMQSTATE complete flow not native"

/* the page's five arguments, or six with the record flag */
#define COMPLETE_PAGE_ARGC (2 + 2 + 5)
static const TkShape complete_page_shape = {"EMQ.COMPLETE", 2, 5, 5, COMPLETE_FLOW_ERROR};
static const TkShape complete_shape = {"EMQ.COMPLETE", 2, 6, 5, COMPLETE_FLOW_ERROR};

int emq_complete(TkCtx *ctx, TkStr **argv, int argc) {
    tk_AutoMemory(ctx);
    const TkShape *shape = argc == COMPLETE_PAGE_ARGC ? &complete_page_shape : &complete_shape;
    if (!tk_check_brand(ctx, argv, argc) || !tk_check_shape(ctx, argv, argc, shape)) return TK_OK;
    TkStr *active_k = argv[2], *row_k = argv[3], *id_k = argv[4], *token_k = argv[5], *result_k = argv[8];
    TkBuf active = tk_arg(active_k), row = tk_arg(row_k), id = tk_arg(id_k), token = tk_arg(token_k);
    TkBuf base = tk_arg(argv[6]), parent_id = tk_arg(argv[7]);
    TkBuf record = argc > COMPLETE_PAGE_ARGC ? tk_arg(argv[COMPLETE_PAGE_ARGC]) : tk_lit("0");
    long long token_n;
    if (!tk_positive(ctx, token_k, "token", &token_n) || !tk_check_record(ctx, record)) return TK_OK;
    if (parent_id.len != 0) return tk_ReplyWithError(ctx, COMPLETE_FLOW_ERROR);
    if (!tk_check_base(ctx, base) || !tk_check_key(ctx, "active", active, base, "active") ||
        !tk_check_row(ctx, row, base, id))
        return TK_OK;

    /* each key the completion writes is opened once: read while nothing is written, then written */
    TkOpen row_w = tk_open(ctx, row_k, TK_READ | TK_WRITE);
    TkStr *const wanted[] = {TK_W(ATTEMPTS), TK_W(STATE), TK_W(PARENT)};
    TkBuf fields[3];
    int row_type = tk_hmget(row_w, wanted, 3, fields);
    if (row_type != TK_KEYTYPE_HASH && row_type != TK_KEYTYPE_EMPTY) return tk_wrongtype(ctx);
    /* a flow child: its fan-in lives only in the script */
    if (fields[2].ptr) return tk_ReplyWithError(ctx, COMPLETE_FLOW_ERROR);
    /* the token fence (D-3 in docs/decisions.md): the claim count must still be this token and the row still active */
    if (!tk_same(fields[0], token) || !tk_is(fields[1], "active")) return tk_ReplyWithLongLong(ctx, 0);

    /* what the writes below would trip on, checked while nothing is written */
    int record_it = tk_is(record, "1");
    TkOpen active_w = tk_open(ctx, active_k, TK_READ | TK_WRITE);
    if (!tk_holds(ctx, active_w, TK_KEYTYPE_ZSET, NULL)) return TK_OK;
    TkOpen stream_w = {NULL, NULL};
    if (record_it) {
        stream_w = tk_open(ctx, tk_name(ctx, tk_key(ctx, base, "stream:completions")), TK_READ | TK_WRITE);
        if (!tk_holds(ctx, stream_w, TK_KEYTYPE_STREAM, NULL)) return TK_OK;
    }
    TkOpen metrics_w = tk_open(ctx, tk_name(ctx, tk_key(ctx, base, "metrics:completed")), TK_READ | TK_WRITE);
    TkStr *const count_field[] = {TK_W(COUNT)};
    TkBuf count_s;
    int metrics_type = tk_hmget(metrics_w, count_field, 1, &count_s);
    if (metrics_type != TK_KEYTYPE_HASH && metrics_type != TK_KEYTYPE_EMPTY) return tk_wrongtype(ctx);
    long long count_n = 0;
    if (count_s.ptr && (!tk_parse_ll(count_s, &count_n) || count_n == LLONG_MAX))
        return tk_error(ctx, "EMQSTATE %s count is not an integer that can grow", tk_show(ctx, tk_arg(metrics_w.name)));
    /* a flow parent is known by its counter; an expiry takes a key of any type, so nothing to check */
    static const char *const flow_suffixes[] = {":dependencies", ":processed", ":unsuccessful"};
    TkStr *deps = tk_name(ctx, tk_key(ctx, row, flow_suffixes[0]));
    int parent = tk_KeyExists(ctx, deps);

    if (!tk_zrem(ctx, active_w, id_k)) return TK_OK;
    /* record the settle in the same atomic step, so a crash can never leave one without the other */
    if (record_it) {
        TkStr *entry[] = {TK_W(ID),       id_k,    TK_W(OUTCOME), TK_W(COMPLETED),
                          TK_W(ATTEMPTS), token_k, TK_W(RESULT),  result_k};
        if (!tk_xadd(ctx, stream_w, entry, 4)) return TK_OK;
    }
    /* a completing flow parent: its counter and results were kept for its handler; they stay
     * readable for an hour more, then go (the script's three EXPIREs, at the cached command time) */
    long long until = tk_now_ms() + TK_FLOW_KEYS_TTL_MS;
    for (size_t i = 0; parent && i < 3; i++) {
        TkOpen flow_key = tk_open(ctx, i ? tk_name(ctx, tk_key(ctx, row, flow_suffixes[i])) : deps, TK_READ | TK_WRITE);
        int ok = tk_pexpireat(ctx, flow_key, until);
        tk_close(&flow_key);
        if (!ok) return TK_OK;
    }
    /* the completing row goes, and the metric counts it */
    if (!tk_del(ctx, row_w)) return TK_OK;
    TkStr *counted[] = {TK_W(COUNT), tk_CreateStringFromLongLong(ctx, count_n + 1)};
    if (!tk_hset(ctx, metrics_w, counted, 1)) return TK_OK;
    return tk_ReplyWithLongLong(ctx, 1);
}
