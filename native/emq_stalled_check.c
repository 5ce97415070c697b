/* EMQ.STALLED.CHECK 4 <active> <pending> <dead> <base> <max_stalled> [<record>]: the
 * native twin of @stalled_check (echomq_teach/lua/stalled_check.lua).
 *
 * Reply, as the script's: [[requeued ids], [dead ids]], up to 100 lapsed leases
 * (score < now) per call, earliest deadline first. Each counted stall adds 1 to
 * the row's stalled; over max_stalled the job is buried with last_error
 * "stalled", and a buried flow child (a row carrying parent, whose parent row
 * exists and carries the child's own flow number) answers to its parent_policy
 * as lua/includes/child_death.lua does.
 * With the record flag '1' (absent: '0') each burial adds its entry to the
 * completions stream (outcome stalled), and a parent it fails its own after
 * it (outcome child_failed), as the script's XADDs do.
 * The one difference: a lease whose row carries a lease_epoch other than this
 * server's run_id was granted before a restart, so the job returns to pending
 * without being counted; every lapsed lease's lease_epoch goes with it. Every
 * row is read before the first write: the read pass keeps what the script's
 * earlier writes would have changed (a parent's state, its :dependencies
 * count), so it judges each id as the script would.
 *
 * Replicated effects, id by id in the script's order: ZREM from active, HSET of
 * the new stalled count, HDEL of lease_epoch, ZADD to pending or dead (the time
 * of death as a number), HSET of state; for a buried child's parent, its HSET,
 * ZADD, the :unsuccessful HSET, the :dependencies count SET as a number (KEEPTTL,
 * as DECR keeps an expiry), and HDEL of the child's link; recording, XADD of each
 * entry with the id the server chose. */
#include <limits.h>
#include <string.h>

#include "tk_keys.h"

/* max_stalled, and the record flag when the caller records */
#define STALLED_BARE_ARGC (2 + 4 + 1)
static const TkShape stalled_bare_shape = {"EMQ.STALLED.CHECK", 4, 1, 0, NULL};
static const TkShape stalled_shape = {"EMQ.STALLED.CHECK", 4, 2, 0, NULL};

/* What the write pass does with one lapsed id. */
enum verdict { GHOST, EXEMPT, REQUEUE, BURY };

/* A buried child's parent_policy (child_death.lua); OTHER is a value the script knows no branch for. */
enum policy { NO_PARENT, FAIL, IGNORE, REMOVE, WAIT, OTHER };

/* The parent side of one buried child, decided in the read pass. */
typedef struct {
    enum policy policy;
    int bury_parent; /* fail, and the parent was awaiting_children at that point */
    int release;     /* ignore/remove brought the count to <= 0 with the parent awaiting_children */
    TkBuf pid, prow, deps, unsuccessful;
    TkBuf attempts; /* a buried parent's attempts, for its child_failed entry (absent: none) */
} Death;

/* A key's value as the script would read it at this point of the sweep. */
typedef struct {
    TkBuf key;
    TkBuf state;     /* a row's state (absent: no field) */
    long long count; /* a :dependencies value */
} Note;

/* Lapsed rows and parents: each key is noted at most once per table. */
#define NOTES_MAX (2 * TK_SWEEP_LIMIT)

typedef struct {
    Note states[NOTES_MAX];
    size_t nstates;
    Note counts[TK_SWEEP_LIMIT];
    size_t ncounts;
} Notes;

static Note *find(Note *notes, size_t n, TkBuf key) {
    for (size_t i = 0; i < n; i++) {
        if (tk_same(notes[i].key, key)) return &notes[i];
    }
    return NULL;
}

/* Records the state a write of the sweep gives key, for reads later in the sweep. */
static void set_state(Notes *notes, TkBuf key, const char *state) {
    Note *note = find(notes->states, notes->nstates, key);
    if (!note) {
        note = &notes->states[notes->nstates++];
        note->key = key;
    }
    note->state = tk_lit(state);
}

/* A parent row's state as the script's HGET would see it now; 0 after replying on failure. */
static int get_state(TkCtx *ctx, Notes *notes, TkBuf prow, TkBuf *out) {
    Note *note = find(notes->states, notes->nstates, prow);
    if (note) {
        *out = note->state;
        return 1;
    }
    /* HGET on a row that is not a hash would fail the script half-way: refuse it here */
    TkBuf state;
    TkOpen k = tk_open(ctx, tk_name(ctx, prow), TK_READ);
    int ok = tk_holds(ctx, k, TK_KEYTYPE_HASH, NULL);
    tk_hmget(k, &TK_W(STATE), 1, &state);
    tk_close(&k);
    if (!ok) return 0;
    note = &notes->states[notes->nstates++];
    note->key = prow;
    note->state = state;
    *out = note->state;
    return 1;
}

/* DECR of a parent's :dependencies, as the script's would answer it now; 0 after replying on failure. */
static int decr_count(TkCtx *ctx, Notes *notes, TkBuf deps, long long *left) {
    Note *note = find(notes->counts, notes->ncounts, deps);
    if (!note) {
        TkBuf v;
        TkOpen k = tk_open(ctx, tk_name(ctx, deps), TK_READ);
        int ok = tk_holds(ctx, k, TK_KEYTYPE_STRING, NULL);
        tk_string(ctx, k, &v);
        tk_close(&k);
        if (!ok) return 0;
        long long count = 0; /* DECR of an absent key starts from 0 */
        if (v.ptr && !tk_parse_ll(v, &count)) {
            tk_error(ctx, "EMQSTATE %s is not an integer", tk_show(ctx, deps));
            return 0;
        }
        note = &notes->counts[notes->ncounts++];
        note->key = deps;
        note->count = count;
    }
    if (note->count == LLONG_MIN) {
        tk_error(ctx, "EMQSTATE %s cannot go lower", tk_show(ctx, deps));
        return 0;
    }
    *left = --note->count;
    return 1;
}

static enum policy policy_of(TkBuf v) {
    if (!v.ptr || tk_is(v, "fail")) return FAIL; /* the script's default: `or 'fail'` */
    if (tk_is(v, "ignore")) return IGNORE;
    if (tk_is(v, "remove")) return REMOVE;
    if (tk_is(v, "wait")) return WAIT;
    return OTHER;
}

/* "child <cid> failed: stalled", the parent's last_error, in pool memory. */
static TkBuf child_failed(TkCtx *ctx, TkBuf cid) {
    static const char pre[] = "child ", post[] = " failed: stalled";
    size_t n = sizeof pre - 1 + cid.len + sizeof post - 1;
    char *out = tk_PoolAlloc(ctx, n + 1);
    memcpy(out, pre, sizeof pre - 1);
    if (cid.len) memcpy(out + sizeof pre - 1, cid.ptr, cid.len);
    memcpy(out + sizeof pre - 1 + cid.len, post, sizeof post);
    TkBuf b = {out, n};
    return b;
}

/* Judges the parent side of buried child i (child_death.lua), noting its effects; 0 after replying. */
static int judge_death(TkCtx *ctx, Notes *notes, Death *deaths, TkBuf base, TkBuf parent, TkBuf policy,
                       TkBuf flow, const TkBuf *rows, size_t i, size_t n) {
    Death *d = &deaths[i];
    memset(d, 0, sizeof *d);
    d->policy = NO_PARENT;
    if (!parent.ptr) return 1;
    TkBuf prow = tk_row_key(ctx, base, parent);
    /* an earlier death's DECR or HSET may create this row in the script: refuse what it cannot mirror */
    for (size_t k = 0; k < i; k++) {
        int decr = deaths[k].policy == IGNORE || deaths[k].policy == REMOVE;
        if ((decr && tk_same(prow, deaths[k].deps)) ||
            (deaths[k].policy == IGNORE && tk_same(prow, deaths[k].unsuccessful))) {
            tk_error(ctx, "EMQSTATE the parent row %s is also a flow key", tk_show(ctx, prow));
            return 0;
        }
    }
    /* a removed parent: the script skips the policy (and keeps the child's link) */
    if (!tk_KeyExists(ctx, tk_name(ctx, prow))) return 1;
    /* so it does for a row landed later under the same id (lua/includes/same_flow.lua): another flow
     * number than the child's; the sweep never writes a row's flow, so reading it now is what the
     * script reads. A parent key that is not a hash goes on to the checks below, as in the script */
    TkOpen pk = tk_open(ctx, tk_name(ctx, prow), TK_READ);
    TkBuf parent_flow;
    int parent_type = tk_hmget(pk, &TK_W(FLOW), 1, &parent_flow);
    tk_close(&pk);
    if (parent_type == TK_KEYTYPE_HASH && !tk_same(parent_flow, flow)) return 1;
    d->policy = policy_of(policy);
    d->pid = parent;
    d->prow = prow;
    d->deps = tk_key(ctx, prow, ":dependencies");
    d->unsuccessful = tk_key(ctx, prow, ":unsuccessful");
    if (d->policy == FAIL) {
        TkBuf state;
        if (!get_state(ctx, notes, prow, &state)) return 0;
        d->bury_parent = tk_is(state, "awaiting_children");
        if (d->bury_parent) {
            set_state(notes, prow, "dead");
            /* no write of the sweep changes a row's attempts: read now, it is what the script's HGET sees */
            TkOpen k = tk_open(ctx, tk_name(ctx, prow), TK_READ);
            tk_hmget(k, &TK_W(ATTEMPTS), 1, &d->attempts);
            tk_close(&k);
        }
    } else if (d->policy == IGNORE || d->policy == REMOVE) {
        /* a flow key that is also a later lapsed row would change what the script reads there */
        for (size_t j = i + 1; j < n; j++) {
            if (tk_same(rows[j], d->deps) || (d->policy == IGNORE && tk_same(rows[j], d->unsuccessful))) {
                tk_error(ctx, "EMQSTATE a flow key of %s is also a lapsed row", tk_show(ctx, parent));
                return 0;
            }
        }
        if (d->policy == IGNORE) {
            TkOpen k = tk_open(ctx, tk_name(ctx, d->unsuccessful), TK_READ);
            int ok = tk_holds(ctx, k, TK_KEYTYPE_HASH, NULL);
            tk_close(&k);
            if (!ok) return 0;
        }
        long long left;
        if (!decr_count(ctx, notes, d->deps, &left)) return 0;
        if (left <= 0) {
            TkBuf state;
            if (!get_state(ctx, notes, prow, &state)) return 0;
            d->release = tk_is(state, "awaiting_children");
            if (d->release) set_state(notes, prow, "pending");
        }
    }
    return 1;
}

/* A key of a buried child's parent, opened for one write and closed again: it may be a key the
 * sweep opens again later (a parent that is also a lapsed row). */
static TkOpen parent_key(TkCtx *ctx, TkBuf name) { return tk_open(ctx, tk_name(ctx, name), TK_READ | TK_WRITE); }

/* DECR, as the script's: the count now, less one, written as the number it is; 0 after replying. */
static int decrement(TkCtx *ctx, TkOpen k) {
    TkBuf v;
    tk_string(ctx, k, &v);
    long long count = 0;
    /* the read pass checked this key's type and value, and nothing since has written it but us */
    if (v.ptr && (!tk_parse_ll(v, &count) || count == LLONG_MIN)) {
        tk_error(ctx, "EMQSTATE %s is not an integer", tk_show(ctx, tk_arg(k.name)));
        return 0;
    }
    return tk_set_integer(ctx, k, count - 1);
}

/* One entry on the completions stream: the job, how its life ended, its attempts (absent: 0), why. */
static int record_ending(TkCtx *ctx, TkOpen stream, TkStr *id, TkStr *outcome, TkBuf attempts, TkStr *why) {
    TkStr *entry[] = {TK_W(ID),       id,
                      TK_W(OUTCOME),  outcome,
                      TK_W(ATTEMPTS), attempts.ptr ? tk_name(ctx, attempts) : tk_cstr(ctx, "0"),
                      TK_W(ERROR),    why};
    return tk_xadd(ctx, stream, entry, 4);
}

/* The parent side of a buried child, in child_death.lua's order; 0 after replying on failure. A
 * recording sweep (stream.key set) ends a parent it fails with that parent's own entry. */
static int write_death(TkCtx *ctx, const Death *d, TkOpen row, TkStr *cid, TkOpen pending, TkOpen dead,
                       TkOpen stream, int record_it, long long now) {
    if (d->policy == NO_PARENT) return 1;
    TkStr *pid = tk_name(ctx, d->pid);
    int ok = 1;
    if (d->bury_parent) {
        ok = tk_zadd(ctx, dead, now, pid);
        TkStr *why = tk_name(ctx, child_failed(ctx, tk_arg(cid)));
        TkStr *buried[] = {TK_W(STATE), TK_W(DEAD), TK_W(LAST_ERROR), why};
        TkOpen prow = parent_key(ctx, d->prow);
        ok = ok && tk_hset(ctx, prow, buried, 2);
        tk_close(&prow);
        if (ok && record_it) ok = record_ending(ctx, stream, pid, TK_W(CHILD_FAILED), d->attempts, why);
    }
    if (ok && d->policy == IGNORE) {
        /* the child's id is the field name */
        TkStr *failed[] = {cid, TK_W(STALLED)};
        TkOpen unsuccessful = parent_key(ctx, d->unsuccessful);
        ok = tk_hset(ctx, unsuccessful, failed, 1);
        tk_close(&unsuccessful);
    }
    if (ok && (d->policy == IGNORE || d->policy == REMOVE)) {
        /* counted as done: the same release the fan-in in @complete makes */
        TkOpen deps = parent_key(ctx, d->deps);
        ok = decrement(ctx, deps);
        tk_close(&deps);
        if (ok && d->release) {
            TkStr *released[] = {TK_W(STATE), TK_W(PENDING)};
            TkOpen prow = parent_key(ctx, d->prow);
            ok = tk_zadd(ctx, pending, 0, pid) && tk_hset(ctx, prow, released, 1);
            tk_close(&prow);
        }
    }
    /* a counted death detaches the child; 'wait' keeps the link for a reprocess */
    if (ok && d->policy != WAIT) {
        TkStr *const link[] = {TK_W(PARENT), TK_W(PARENT_POLICY)};
        ok = tk_hdel(ctx, row, link, 2);
    }
    return ok;
}

int emq_stalled_check(TkCtx *ctx, TkStr **argv, int argc) {
    tk_AutoMemory(ctx);
    const TkShape *shape = argc == STALLED_BARE_ARGC ? &stalled_bare_shape : &stalled_shape;
    if (!tk_check_brand(ctx, argv, argc) || !tk_check_shape(ctx, argv, argc, shape)) return TK_OK;
    TkStr *active_k = argv[2], *pending_k = argv[3], *dead_k = argv[4];
    TkBuf active = tk_arg(active_k), pending = tk_arg(pending_k), dead = tk_arg(dead_k), base = tk_arg(argv[5]);
    long long max_stalled;
    TkBuf record = argc > STALLED_BARE_ARGC ? tk_arg(argv[STALLED_BARE_ARGC]) : tk_lit("0");
    if (!tk_positive(ctx, argv[6], "max_stalled", &max_stalled) || !tk_check_record(ctx, record)) return TK_OK;
    int record_it = tk_is(record, "1");
    if (!tk_check_base(ctx, base) || !tk_check_key(ctx, "active", active, base, "active") ||
        !tk_check_key(ctx, "pending", pending, base, "pending") || !tk_check_key(ctx, "dead", dead, base, "dead"))
        return TK_OK;
    long long now = tk_now_ms();
    TkStr *run_id = tk_run_id(ctx);
    if (!run_id) return TK_OK;

    /* a lease is lapsed once the clock has passed its deadline (the active score) */
    TkStr *ids[TK_SWEEP_LIMIT];
    TkOpen active_w = tk_open(ctx, active_k, TK_READ | TK_WRITE);
    long lapsed = tk_zhead(active_w, (double)now, ids, TK_SWEEP_LIMIT);
    if (lapsed < 0) return tk_wrongtype(ctx);
    size_t n = (size_t)lapsed;

    /* the read pass: every row judged while nothing is written */
    TkBuf rows[TK_SWEEP_LIMIT];
    TkStr *row_names[TK_SWEEP_LIMIT];
    enum verdict verdicts[TK_SWEEP_LIMIT];
    long long stalls[TK_SWEEP_LIMIT]; /* the row's stalled count once this sweep counts it */
    int epochs[TK_SWEEP_LIMIT];       /* the row carries a lease_epoch, which goes with the lease */
    TkBuf attempts[TK_SWEEP_LIMIT];   /* a buried row's attempts, for its stalled entry */
    Death deaths[TK_SWEEP_LIMIT];
    Notes notes;
    notes.nstates = notes.ncounts = 0;
    size_t nrequeued = 0, ndead = 0;
    /* the sets are opened once for the whole sweep: no other key of it can be one of them */
    TkOpen pending_w = tk_open(ctx, pending_k, TK_READ | TK_WRITE), dead_w = tk_open(ctx, dead_k, TK_READ | TK_WRITE);
    if (n > 0 && (!tk_holds(ctx, pending_w, TK_KEYTYPE_ZSET, NULL) || !tk_holds(ctx, dead_w, TK_KEYTYPE_ZSET, NULL)))
        return TK_OK;
    /* a recording sweep's stream, opened for the whole sweep: it is none of the rows or sets */
    TkOpen stream_w = {NULL, NULL};
    if (n > 0 && record_it) {
        stream_w = tk_open(ctx, tk_name(ctx, tk_key(ctx, base, "stream:completions")), TK_READ | TK_WRITE);
        if (!tk_holds(ctx, stream_w, TK_KEYTYPE_STREAM, NULL)) return TK_OK;
    }
    for (size_t i = 0; i < n; i++) {
        rows[i] = tk_row_key(ctx, base, tk_arg(ids[i]));
        row_names[i] = tk_name(ctx, rows[i]);
    }
    TkStr *const wanted[] = {TK_W(STALLED),       TK_W(LEASE_EPOCH), TK_W(PARENT),
                             TK_W(PARENT_POLICY), TK_W(ATTEMPTS),    TK_W(FLOW)};
    for (size_t i = 0; i < n; i++) {
        deaths[i].policy = NO_PARENT;
        epochs[i] = 0;
        TkBuf fields[6];
        int exists;
        TkOpen row = tk_open(ctx, row_names[i], TK_READ);
        int ok = tk_holds(ctx, row, TK_KEYTYPE_HASH, &exists);
        tk_hmget(row, wanted, 6, fields);
        attempts[i] = fields[4];
        tk_close(&row);
        if (!ok) return TK_OK;
        if (!exists) {
            verdicts[i] = GHOST; /* dropped from active, in neither list, as the script does */
            continue;
        }
        TkBuf epoch = fields[1];
        epochs[i] = epoch.ptr != NULL;
        if (epoch.ptr && !tk_same(epoch, tk_arg(run_id))) {
            /* a lease from before a restart: its worker is gone with the old process, not stalled */
            verdicts[i] = EXEMPT;
            set_state(&notes, rows[i], "pending");
            nrequeued++;
            continue;
        }
        long long stalled = 0;
        if (fields[0].ptr && (!tk_parse_ll(fields[0], &stalled) || stalled == LLONG_MAX))
            return tk_error(ctx, "EMQSTATE %s stalled is not an integer that can grow", tk_show(ctx, rows[i]));
        stalls[i] = stalled + 1;
        if (stalls[i] > max_stalled) {
            verdicts[i] = BURY;
            set_state(&notes, rows[i], "dead");
            ndead++;
            /* a buried flow child answers to its parent's policy, as a retry at the cap does */
            if (!judge_death(ctx, &notes, deaths, base, fields[2], fields[3], fields[5], rows, i, n)) return TK_OK;
        } else {
            verdicts[i] = REQUEUE;
            set_state(&notes, rows[i], "pending");
            nrequeued++;
        }
    }

    /* the write pass, id by id in the script's order; each row is opened for its own id only */
    for (size_t i = 0; i < n; i++) {
        if (!tk_zrem(ctx, active_w, ids[i])) return TK_OK;
        if (verdicts[i] == GHOST) continue;
        TkOpen row = tk_open(ctx, row_names[i], TK_READ | TK_WRITE);
        int ok = 1;
        if (verdicts[i] != EXEMPT) {
            /* the script's HINCRBY, as the count it leaves: only this sweep writes the field */
            TkStr *counted[] = {TK_W(STALLED), tk_CreateStringFromLongLong(ctx, stalls[i])};
            ok = tk_hset(ctx, row, counted, 1);
        }
        /* every lapsed lease ends here, exempt or not, and its lease_epoch with it (as the script's
         * HDEL): a later lease, say one @claim2 grants after a restart, is then counted again */
        if (ok && epochs[i]) ok = tk_hdel(ctx, row, &TK_W(LEASE_EPOCH), 1);
        if (ok && verdicts[i] == BURY) {
            TkStr *buried[] = {TK_W(STATE), TK_W(DEAD), TK_W(LAST_ERROR), TK_W(STALLED)};
            /* recording, the burial's entry comes before any its parent's death adds */
            ok = tk_zadd(ctx, dead_w, now, ids[i]) && tk_hset(ctx, row, buried, 2) &&
                 (!record_it || record_ending(ctx, stream_w, ids[i], TK_W(STALLED), attempts[i], TK_W(STALLED))) &&
                 write_death(ctx, &deaths[i], row, ids[i], pending_w, dead_w, stream_w, record_it, now);
        } else if (ok) {
            TkStr *requeued[] = {TK_W(STATE), TK_W(PENDING)};
            ok = tk_zadd(ctx, pending_w, 0, ids[i]) && tk_hset(ctx, row, requeued, 1);
        }
        tk_close(&row);
        if (!ok) return TK_OK;
    }

    tk_ReplyWithArray(ctx, 2);
    tk_ReplyWithArray(ctx, (long)nrequeued);
    for (size_t i = 0; i < n; i++) {
        if (verdicts[i] == REQUEUE || verdicts[i] == EXEMPT) tk_ReplyWithString(ctx, ids[i]);
    }
    tk_ReplyWithArray(ctx, (long)ndead);
    for (size_t i = 0; i < n; i++) {
        if (verdicts[i] == BURY) tk_ReplyWithString(ctx, ids[i]);
    }
    return TK_OK;
}
