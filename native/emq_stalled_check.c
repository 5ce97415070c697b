/* EMQ.STALLED.CHECK 4 <active> <pending> <dead> <base> <max_stalled>: the native
 * twin of @stalled_check (echomq_teach/lua/stalled_check.lua).
 *
 * Reply, as the script's: [[requeued ids], [dead ids]], up to 100 lapsed leases
 * (score < now) per call, earliest deadline first. Each counted stall adds 1 to
 * the row's stalled; over max_stalled the job is buried with last_error
 * "stalled", and a buried flow child (a row carrying parent, whose parent row
 * exists) answers to its parent_policy as lua/includes/child_death.lua does.
 * The one difference: a lease whose row carries a lease_epoch other than this
 * server's run_id was granted before a restart, so the job returns to pending
 * without being counted; every lapsed lease's lease_epoch goes with it. Every
 * row is read before the first write: the read pass keeps what the script's
 * earlier writes would have changed (a parent's state, its :dependencies
 * count), so it judges each id as the script would. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "tk_util.h"

static const TkShape stalled_shape = {"EMQ.STALLED.CHECK", 4, 1, 0, NULL};

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
    if (!tk_holds(ctx, prow, "hash", NULL)) return 0;
    TkReply *r = tk_Call(ctx, "HGET", "Ebc", TK_B(prow), "state");
    if (tk_failed(ctx, r)) return 0;
    note = &notes->states[notes->nstates++];
    note->key = prow;
    note->state = tk_str(r);
    *out = note->state;
    return 1;
}

/* DECR of a parent's :dependencies, as the script's would answer it now; 0 after replying on failure. */
static int decr_count(TkCtx *ctx, Notes *notes, TkBuf deps, long long *left) {
    Note *note = find(notes->counts, notes->ncounts, deps);
    if (!note) {
        if (!tk_holds(ctx, deps, "string", NULL)) return 0;
        TkReply *r = tk_Call(ctx, "GET", "Eb", TK_B(deps));
        if (tk_failed(ctx, r)) return 0;
        TkBuf v = tk_str(r);
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
                       const TkBuf *rows, size_t i, size_t n) {
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
    TkReply *r = tk_Call(ctx, "EXISTS", "Eb", TK_B(prow));
    if (tk_failed(ctx, r)) return 0;
    /* a removed parent: the script skips the policy (and keeps the child's link) */
    if (tk_CallReplyInteger(r) == 0) return 1;
    d->policy = policy_of(policy);
    d->pid = parent;
    d->prow = prow;
    d->deps = tk_key(ctx, prow, ":dependencies");
    d->unsuccessful = tk_key(ctx, prow, ":unsuccessful");
    if (d->policy == FAIL) {
        TkBuf state;
        if (!get_state(ctx, notes, prow, &state)) return 0;
        d->bury_parent = tk_is(state, "awaiting_children");
        if (d->bury_parent) set_state(notes, prow, "dead");
    } else if (d->policy == IGNORE || d->policy == REMOVE) {
        /* a flow key that is also a later lapsed row would change what the script reads there */
        for (size_t j = i + 1; j < n; j++) {
            if (tk_same(rows[j], d->deps) || (d->policy == IGNORE && tk_same(rows[j], d->unsuccessful))) {
                tk_error(ctx, "EMQSTATE a flow key of %s is also a lapsed row", tk_show(ctx, parent));
                return 0;
            }
        }
        if (d->policy == IGNORE && !tk_holds(ctx, d->unsuccessful, "hash", NULL)) return 0;
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

/* The parent side of a buried child, in child_death.lua's order; 0 after replying on failure. */
static int write_death(TkCtx *ctx, const Death *d, TkBuf row, TkBuf cid, TkBuf pending, TkBuf dead, long long now) {
    if (d->policy == NO_PARENT) return 1;
    TkReply *r;
    if (d->bury_parent) {
        r = tk_Call(ctx, "ZADD", "!Eblb", TK_B(dead), now, TK_B(d->pid));
        if (tk_failed(ctx, r)) return 0;
        TkBuf why = child_failed(ctx, cid);
        r = tk_Call(ctx, "HSET", "!Ebcccb", TK_B(d->prow), "state", "dead", "last_error", TK_B(why));
        if (tk_failed(ctx, r)) return 0;
    }
    if (d->policy == IGNORE) {
        r = tk_Call(ctx, "HSET", "!Ebbc", TK_B(d->unsuccessful), TK_B(cid), "stalled");
        if (tk_failed(ctx, r)) return 0;
    }
    if (d->policy == IGNORE || d->policy == REMOVE) {
        /* counted as done: the same release the fan-in in @complete makes */
        r = tk_Call(ctx, "DECR", "!Eb", TK_B(d->deps));
        if (tk_failed(ctx, r)) return 0;
        if (d->release) {
            r = tk_Call(ctx, "ZADD", "!Ebcb", TK_B(pending), "0", TK_B(d->pid));
            if (tk_failed(ctx, r)) return 0;
            r = tk_Call(ctx, "HSET", "!Ebcc", TK_B(d->prow), "state", "pending");
            if (tk_failed(ctx, r)) return 0;
        }
    }
    /* a counted death detaches the child; 'wait' keeps the link for a reprocess */
    if (d->policy != WAIT) {
        r = tk_Call(ctx, "HDEL", "!Ebcc", TK_B(row), "parent", "parent_policy");
        if (tk_failed(ctx, r)) return 0;
    }
    return 1;
}

int emq_stalled_check(TkCtx *ctx, TkStr **argv, int argc) {
    tk_AutoMemory(ctx);
    if (!tk_check_brand(ctx, argv, argc) || !tk_check_shape(ctx, argv, argc, &stalled_shape)) return TK_OK;
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
    int epochs[TK_SWEEP_LIMIT]; /* the row carries a lease_epoch, which goes with the lease */
    Death deaths[TK_SWEEP_LIMIT];
    Notes notes;
    notes.nstates = notes.ncounts = 0;
    size_t nrequeued = 0, ndead = 0;
    if (n > 0 && (!tk_holds(ctx, pending, "zset", NULL) || !tk_holds(ctx, dead, "zset", NULL))) return TK_OK;
    for (size_t i = 0; i < n; i++) {
        ids[i] = tk_str(tk_CallReplyArrayElement(lapsed, i));
        rows[i] = tk_row_key(ctx, base, ids[i]);
    }
    for (size_t i = 0; i < n; i++) {
        deaths[i].policy = NO_PARENT;
        epochs[i] = 0;
        int exists;
        if (!tk_holds(ctx, rows[i], "hash", &exists)) return TK_OK;
        if (!exists) {
            verdicts[i] = GHOST; /* dropped from active, in neither list, as the script does */
            continue;
        }
        TkReply *fields =
            tk_Call(ctx, "HMGET", "Ebcccc", TK_B(rows[i]), "stalled", "lease_epoch", "parent", "parent_policy");
        if (tk_failed(ctx, fields)) return TK_OK;
        TkBuf epoch = tk_str(tk_CallReplyArrayElement(fields, 1));
        epochs[i] = epoch.ptr != NULL;
        if (epoch.ptr && !tk_is(epoch, run_id)) {
            /* a lease from before a restart: its worker is gone with the old process, not stalled */
            verdicts[i] = EXEMPT;
            set_state(&notes, rows[i], "pending");
            nrequeued++;
            continue;
        }
        TkBuf stalled_s = tk_str(tk_CallReplyArrayElement(fields, 0));
        long long stalled = 0;
        if (stalled_s.ptr && (!tk_parse_ll(stalled_s, &stalled) || stalled == LLONG_MAX))
            return tk_error(ctx, "EMQSTATE %s stalled is not an integer that can grow", tk_show(ctx, rows[i]));
        if (stalled + 1 > max_stalled) {
            verdicts[i] = BURY;
            set_state(&notes, rows[i], "dead");
            ndead++;
            /* a buried flow child answers to its parent's policy, as a retry at the cap does */
            TkBuf parent = tk_str(tk_CallReplyArrayElement(fields, 2));
            TkBuf policy = tk_str(tk_CallReplyArrayElement(fields, 3));
            if (!judge_death(ctx, &notes, deaths, base, parent, policy, rows, i, n)) return TK_OK;
        } else {
            verdicts[i] = REQUEUE;
            set_state(&notes, rows[i], "pending");
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
        /* every lapsed lease ends here, exempt or not, and its lease_epoch with it (as the script's
         * HDEL): a later lease, say one @claim2 grants after a restart, is then counted again */
        if (epochs[i]) {
            r = tk_Call(ctx, "HDEL", "!Ebc", TK_B(rows[i]), "lease_epoch");
            if (tk_failed(ctx, r)) return TK_OK;
        }
        if (verdicts[i] == BURY) {
            r = tk_Call(ctx, "ZADD", "!Eblb", TK_B(dead), now, TK_B(ids[i]));
            if (tk_failed(ctx, r)) return TK_OK;
            r = tk_Call(ctx, "HSET", "!Ebcccc", TK_B(rows[i]), "state", "dead", "last_error", "stalled");
            if (tk_failed(ctx, r)) return TK_OK;
            if (!write_death(ctx, &deaths[i], rows[i], ids[i], pending, dead, now)) return TK_OK;
        } else {
            r = tk_Call(ctx, "ZADD", "!Ebcb", TK_B(pending), "0", TK_B(ids[i]));
            if (tk_failed(ctx, r)) return TK_OK;
            r = tk_Call(ctx, "HSET", "!Ebcc", TK_B(rows[i]), "state", "pending");
            if (tk_failed(ctx, r)) return TK_OK;
        }
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
