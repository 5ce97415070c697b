/* EMQ.CLAIM.MANY 3 <pending> <active> <base> <lease_ms> <k>: the native twin of @claim_many
 * (echomq_teach/lua/claim_many.lua), the kit's batch claim: up to k heads of pending in one call.
 *
 * Reply, as the script's: [] when the queue is paused or nothing is pending, else one
 * [id, payload, attempts, parent] per job handed out, in pending order (parent "" when the row
 * names none). A ghost (an id with no row) is popped and mints nothing, as in EMQ.CLAIM. Every
 * read and check comes before the first write: the brand, the arguments (k from 1 to
 * TK_MAX_BATCH), the key layout, the pause flag, the k heads, each head's row (its type and an
 * attempts count that can grow) and active's type; then the pops and the writes.
 *
 * Each job is claimed as EMQ.CLAIM claims one: its own token (attempts + 1), state active,
 * lease_epoch = the server's run_id, and its own member of active at the deadline (the cached
 * command time plus the lease: one deadline for the batch). Replicated, per job: ZREM of the
 * popped id, one HSET of the row, ZADD at the deadline. */
#include <limits.h>
#include <math.h>

#include "tk_keys.h"

/* The most heads one call pops: the script's bound (echomq_teach.jobs.MAX_BATCH), so a call's
 * work stays bounded. */
#define TK_MAX_BATCH 1000

static const TkShape claim_many_shape = {"EMQ.CLAIM.MANY", 3, 2, 0, NULL};

int emq_claim_many(TkCtx *ctx, TkStr **argv, int argc) {
    tk_AutoMemory(ctx);
    if (!tk_check_brand(ctx, argv, argc) || !tk_check_shape(ctx, argv, argc, &claim_many_shape)) return TK_OK;
    TkStr *pending_k = argv[2], *active_k = argv[3];
    TkBuf pending = tk_arg(pending_k), active = tk_arg(active_k), base = tk_arg(argv[4]);
    long long lease, k;
    if (!tk_positive(ctx, argv[5], "lease_ms", &lease) || !tk_positive(ctx, argv[6], "k", &k)) return TK_OK;
    if (k > TK_MAX_BATCH) return tk_error(ctx, "EMQARG k must be at most %d", TK_MAX_BATCH);
    if (!tk_check_base(ctx, base) || !tk_check_key(ctx, "pending", pending, base, "pending") ||
        !tk_check_key(ctx, "active", active, base, "active"))
        return TK_OK;
    long long deadline = tk_now_ms();
    /* a guard only: tk_positive's 2^52 bound already keeps the deadline below 2^53 */
    if (lease > TK_MAX_SCORE - deadline) return tk_error(ctx, "EMQARG lease_ms is too large");
    deadline += lease;

    /* the pause read, inside the command: present = paused, and nothing moves */
    if (tk_KeyExists(ctx, tk_name(ctx, tk_key(ctx, base, "paused")))) return tk_ReplyWithEmptyArray(ctx);

    /* the k oldest pending ids, read while nothing is written */
    TkOpen pending_w = tk_open(ctx, pending_k, TK_READ | TK_WRITE);
    TkStr **ids = tk_PoolAlloc(ctx, (size_t)k * sizeof *ids);
    long n = tk_zhead(pending_w, INFINITY, ids, (long)k);
    if (n < 0) return tk_wrongtype(ctx);
    if (n == 0) return tk_ReplyWithEmptyArray(ctx);

    /* each head's row, opened once: a ghost (none) is popped later and mints nothing; a hash is read
     * for its attempts (the count that becomes the token), payload and parent */
    TkOpen *rows = tk_PoolAlloc(ctx, (size_t)n * sizeof *rows);
    TkBuf *fields = tk_PoolAlloc(ctx, (size_t)n * 3 * sizeof *fields);
    long long *att = tk_PoolAlloc(ctx, (size_t)n * sizeof *att);
    TkStr *const wanted[] = {TK_W(ATTEMPTS), TK_W(PAYLOAD), TK_W(PARENT)};
    long live = 0;
    for (long i = 0; i < n; i++) {
        TkBuf id = tk_arg(ids[i]);
        rows[i] = tk_open(ctx, tk_name(ctx, tk_row_key(ctx, base, id)), TK_READ | TK_WRITE);
        int type = tk_hmget(rows[i], wanted, 3, &fields[3 * i]);
        att[i] = -1;
        if (type == TK_KEYTYPE_EMPTY) continue;
        if (type != TK_KEYTYPE_HASH) return tk_wrongtype(ctx);
        att[i] = 0;
        TkBuf a = fields[3 * i];
        if (a.ptr && (!tk_parse_ll(a, &att[i]) || att[i] == LLONG_MAX)) {
            const char *shown = tk_show(ctx, tk_arg(rows[i].name));
            return tk_error(ctx, "EMQSTATE %s attempts is not an integer that can grow", shown);
        }
        live++;
    }
    TkOpen active_w = {NULL, NULL};
    TkStr *run_id = NULL;
    if (live) {
        /* what the writes below would trip on, checked while nothing is written */
        active_w = tk_open(ctx, active_k, TK_READ | TK_WRITE);
        if (!tk_holds(ctx, active_w, TK_KEYTYPE_ZSET, NULL)) return TK_OK;
        run_id = tk_run_id(ctx);
        if (!run_id) return TK_OK;
    }

    /* the writes: pop each head in order (it must be the one read), then claim it unless a ghost;
     * the reply comes after the last write, so a write refused half-way answers only its error */
    for (long i = 0; i < n; i++) {
        TkBuf id = tk_arg(ids[i]);
        TkStr *popped;
        if (!tk_zpopmin(ctx, pending_w, id, &popped)) return TK_OK;
        if (!popped || !tk_same(tk_arg(popped), id)) {
            /* cannot happen inside one atomic command; if it ever did, this head was not popped */
            TkBuf got = popped ? tk_arg(popped) : tk_lit("(nothing)");
            return tk_error(ctx, "EMQSTATE claim popped %s, not the read %s", tk_show(ctx, got), tk_show(ctx, id));
        }
        if (att[i] < 0) continue; /* the ghost guard: consumed by the pop, mints nothing */
        /* the NEW attempts is this job's fencing token; state and lease_epoch in the same HSET */
        TkStr *claimed[] = {TK_W(ATTEMPTS),    tk_CreateStringFromLongLong(ctx, att[i] + 1),
                            TK_W(STATE),       TK_W(ACTIVE),
                            TK_W(LEASE_EPOCH), run_id};
        if (!tk_hset(ctx, rows[i], claimed, 3)) return TK_OK;
        /* the job's own lease: its member of active, scored by the deadline */
        if (!tk_zadd(ctx, active_w, deadline, ids[i])) return TK_OK;
    }
    tk_ReplyWithArray(ctx, live);
    for (long i = 0; i < n; i++) {
        if (att[i] < 0) continue;
        TkBuf payload = fields[3 * i + 1], parent = fields[3 * i + 2];
        tk_ReplyWithArray(ctx, 4);
        tk_ReplyWithString(ctx, ids[i]);
        if (payload.ptr) {
            tk_ReplyWithStringBuffer(ctx, TK_B(payload));
        } else {
            tk_ReplyWithNull(ctx); /* the script's HMGET of a missing payload: nil */
        }
        tk_ReplyWithLongLong(ctx, att[i] + 1);
        tk_ReplyWithStringBuffer(ctx, parent.ptr ? parent.ptr : "", parent.ptr ? parent.len : 0);
    }
    return TK_OK;
}
