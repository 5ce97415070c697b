/* EMQ.CLAIM 3 <pending> <active> <base> <lease_ms>: the native twin of @claim2
 * (echomq_teach/lua/claim2.lua), with the keys and the lease in the script's places.
 *
 * Reply, as the script's: [] when nothing is pending or the head is a ghost,
 * else [id, payload, attempts]. The page's four differences: a paused queue
 * answers [] (the pause read is inside); every read and check comes before the
 * first write (peek the head, then pop it and check it against the peek); the
 * deadline is the cached command time plus the lease, with no TIME call; and
 * the row gains lease_epoch, the server's run_id.
 *
 * The data is read and written through the key API (tk_keys.h), and what is
 * replicated is the effect: ZREM of the popped id, one HSET of the row's new
 * attempts, state and lease_epoch, and ZADD of the id at its deadline. */
#include <limits.h>
#include <math.h>

#include "tk_keys.h"

static const TkShape claim_shape = {"EMQ.CLAIM", 3, 1, 0, NULL};

int emq_claim(TkCtx *ctx, TkStr **argv, int argc) {
    tk_AutoMemory(ctx);
    if (!tk_check_brand(ctx, argv, argc) || !tk_check_shape(ctx, argv, argc, &claim_shape)) return TK_OK;
    TkStr *pending_k = argv[2], *active_k = argv[3];
    TkBuf pending = tk_arg(pending_k), active = tk_arg(active_k), base = tk_arg(argv[4]);
    long long lease;
    if (!tk_positive(ctx, argv[5], "lease_ms", &lease)) return TK_OK;
    if (!tk_check_base(ctx, base) || !tk_check_key(ctx, "pending", pending, base, "pending") ||
        !tk_check_key(ctx, "active", active, base, "active"))
        return TK_OK;
    /* the server clock, not the caller's: the command's cached start time, as TIME reports it */
    long long deadline = tk_now_ms();
    /* a guard only: tk_positive's 2^52 bound already keeps the deadline below 2^53 */
    if (lease > TK_MAX_SCORE - deadline) return tk_error(ctx, "EMQARG lease_ms is too large");
    deadline += lease;

    /* the pause read, inside the command: present = paused, and nothing moves */
    if (tk_KeyExists(ctx, tk_name(ctx, tk_key(ctx, base, "paused")))) return tk_ReplyWithEmptyArray(ctx);

    /* peek the oldest pending id (every score is 0: the lowest id, the oldest mint); each key the
     * claim writes is opened once, read while nothing is written, and written afterwards */
    TkOpen pending_w = tk_open(ctx, pending_k, TK_READ | TK_WRITE);
    TkStr *peeked;
    long found = tk_zhead(pending_w, INFINITY, &peeked, 1);
    if (found < 0) return tk_wrongtype(ctx);
    if (found == 0) return tk_ReplyWithEmptyArray(ctx);
    TkBuf id = tk_arg(peeked);
    /* the row key, derived from the declared base: it shares the queue's hashtag */
    TkOpen row = tk_open(ctx, tk_name(ctx, tk_row_key(ctx, base, id)), TK_READ | TK_WRITE);

    /* one read of the row: its type for the ghost guard (none is an id with no row), its fields */
    int exists;
    if (!tk_holds(ctx, row, TK_KEYTYPE_HASH, &exists)) return TK_OK;
    int ghost = !exists;
    TkStr *const wanted[] = {TK_W(ATTEMPTS), TK_W(PAYLOAD)};
    TkBuf fields[2];
    tk_hmget(row, wanted, 2, fields);

    long long att = 0;
    TkStr *run_id = NULL;
    TkOpen active_w = {NULL, NULL};
    if (!ghost) {
        /* what the writes below would trip on, checked while nothing is written */
        active_w = tk_open(ctx, active_k, TK_READ | TK_WRITE);
        if (!tk_holds(ctx, active_w, TK_KEYTYPE_ZSET, NULL)) return TK_OK;
        if (fields[0].ptr && (!tk_parse_ll(fields[0], &att) || att == LLONG_MAX)) {
            const char *shown = tk_show(ctx, tk_arg(row.name));
            return tk_error(ctx, "EMQSTATE %s attempts is not an integer that can grow", shown);
        }
        run_id = tk_run_id(ctx);
        if (!run_id) return TK_OK;
    }

    /* the first write: pop the head, and it must be the id peeked */
    TkStr *popped;
    if (!tk_zpopmin(ctx, pending_w, id, &popped)) return TK_OK;
    if (!popped || !tk_same(tk_arg(popped), id)) {
        /* cannot happen inside one atomic command; if it ever did, nothing was popped */
        TkBuf got = popped ? tk_arg(popped) : tk_lit("(nothing)");
        return tk_error(ctx, "EMQSTATE claim popped %s, not the peeked %s", tk_show(ctx, got), tk_show(ctx, id));
    }
    /* the ghost guard: an id with no row is consumed by the pop and mints nothing */
    if (ghost) return tk_ReplyWithEmptyArray(ctx);

    /* the NEW attempts is the fencing token; state and lease_epoch in the same HSET */
    TkStr *claimed[] = {TK_W(ATTEMPTS),    tk_CreateStringFromLongLong(ctx, att + 1),
                        TK_W(STATE),       TK_W(ACTIVE),
                        TK_W(LEASE_EPOCH), run_id};
    if (!tk_hset(ctx, row, claimed, 3)) return TK_OK;
    /* the active score IS the lease deadline, replicated as the number it is */
    if (!tk_zadd(ctx, active_w, deadline, popped)) return TK_OK;

    tk_ReplyWithArray(ctx, 3);
    tk_ReplyWithString(ctx, popped);
    if (fields[1].ptr) {
        tk_ReplyWithStringBuffer(ctx, TK_B(fields[1]));
    } else {
        tk_ReplyWithNull(ctx); /* the script's HGET of a missing payload: nil */
    }
    tk_ReplyWithLongLong(ctx, att + 1);
    return TK_OK;
}
