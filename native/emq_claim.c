/* EMQ.CLAIM 3 <pending> <active> <base> <lease_ms>: the native twin of @claim2
 * (echomq_teach/lua/claim2.lua), with the keys and the lease in the script's places.
 *
 * Reply, as the script's: [] when nothing is pending or the head is a ghost,
 * else [id, payload, attempts]. The page's four differences: a paused queue
 * answers [] (the pause read is inside); every read and check comes before the
 * first write (peek the head, then pop it and check it against the peek); the
 * deadline is the cached command time plus the lease, with no TIME call; and
 * the row gains lease_epoch, the server's run_id. */
#include <limits.h>

#include "tk_util.h"

static const TkShape claim_shape = {"EMQ.CLAIM", 3, 1, 0, NULL};

int emq_claim(TkCtx *ctx, TkStr **argv, int argc) {
    tk_AutoMemory(ctx);
    if (!tk_check_brand(ctx, argv, argc) || !tk_check_shape(ctx, argv, argc, &claim_shape)) return TK_OK;
    TkBuf pending = tk_arg(argv[2]), active = tk_arg(argv[3]), base = tk_arg(argv[4]);
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
    TkBuf paused = tk_key(ctx, base, "paused");
    TkReply *r = tk_Call(ctx, "EXISTS", "Eb", TK_B(paused));
    if (tk_failed(ctx, r)) return TK_OK;
    if (tk_CallReplyInteger(r) != 0) return tk_ReplyWithEmptyArray(ctx);

    /* peek the oldest pending id (every score is 0: the lowest id, the oldest mint) */
    TkReply *head = tk_Call(ctx, "ZRANGE", "Ebcc", TK_B(pending), "0", "0");
    if (tk_failed(ctx, head)) return TK_OK;
    if (tk_CallReplyLength(head) == 0) return tk_ReplyWithEmptyArray(ctx);
    TkBuf id = tk_str(tk_CallReplyArrayElement(head, 0));
    /* the row key, derived from the declared base: it shares the queue's hashtag */
    TkBuf row = tk_row_key(ctx, base, id);

    /* the ghost guard reads the row's type: "none" is an id with no row */
    int exists;
    if (!tk_holds(ctx, row, "hash", &exists)) return TK_OK;
    int ghost = !exists;

    TkBuf payload = {NULL, 0};
    const char *run_id = NULL;
    if (!ghost) {
        /* what the writes below would trip on, checked while nothing is written */
        if (!tk_holds(ctx, active, "zset", NULL)) return TK_OK;
        TkReply *fields = tk_Call(ctx, "HMGET", "Ebcc", TK_B(row), "attempts", "payload");
        if (tk_failed(ctx, fields)) return TK_OK;
        TkBuf att_s = tk_str(tk_CallReplyArrayElement(fields, 0));
        long long att = 0;
        if (att_s.ptr && (!tk_parse_ll(att_s, &att) || att == LLONG_MAX))
            return tk_error(ctx, "EMQSTATE %s attempts is not an integer that can grow", tk_show(ctx, row));
        payload = tk_str(tk_CallReplyArrayElement(fields, 1));
        run_id = tk_run_id(ctx);
        if (!run_id) return TK_OK;
    }

    /* the first write: pop the head, and it must be the id peeked */
    TkReply *popped = tk_Call(ctx, "ZPOPMIN", "!Eb", TK_B(pending));
    if (tk_failed(ctx, popped)) return TK_OK;
    TkBuf got = tk_str(tk_CallReplyArrayElement(popped, 0));
    if (!tk_same(got, id)) {
        /* cannot happen inside one atomic command; if it ever did, put the member back */
        TkBuf score = tk_str(tk_CallReplyArrayElement(popped, 1));
        if (got.ptr && score.ptr) tk_Call(ctx, "ZADD", "!Ebbb", TK_B(pending), TK_B(score), TK_B(got));
        return tk_error(ctx, "EMQSTATE claim popped %s, not the peeked %s", tk_show(ctx, got), tk_show(ctx, id));
    }
    /* the ghost guard: an id with no row is consumed by the pop and mints nothing */
    if (ghost) return tk_ReplyWithEmptyArray(ctx);

    /* the NEW attempts is the fencing token */
    TkReply *att = tk_Call(ctx, "HINCRBY", "!Ebcc", TK_B(row), "attempts", "1");
    if (tk_failed(ctx, att)) return TK_OK;
    r = tk_Call(ctx, "HSET", "!Ebcccc", TK_B(row), "state", "active", "lease_epoch", run_id);
    if (tk_failed(ctx, r)) return TK_OK;
    /* the active score IS the lease deadline, sent as a literal so a replica needs no module */
    r = tk_Call(ctx, "ZADD", "!Eblb", TK_B(active), deadline, TK_B(id));
    if (tk_failed(ctx, r)) return TK_OK;

    tk_ReplyWithArray(ctx, 3);
    tk_ReplyWithStringBuffer(ctx, TK_B(id));
    if (payload.ptr) {
        tk_ReplyWithStringBuffer(ctx, TK_B(payload));
    } else {
        tk_ReplyWithNull(ctx); /* the script's HGET of a missing payload: nil */
    }
    tk_ReplyWithLongLong(ctx, tk_CallReplyInteger(att));
    return TK_OK;
}
