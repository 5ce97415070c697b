/* tk_keys.h: how every EMQ.* command reaches the data: the module key API, read and written
 * directly (no command is called), each write replicated as one plain command with literal values.
 *
 * A command opens each key it will write once, reads through that handle while it checks, and
 * writes through the same handle afterwards: one lookup per key. Reads come first in every
 * command (a refusal writes nothing); writes follow. What a write sends to replicas and the AOF is
 * the change it made, spelled out: ZADD with the computed score, HSET with the new count, XADD with
 * the id the server chose. The server wraps everything one command replicated in MULTI/EXEC, so a
 * replica applies the whole transition or none of it.
 *
 * One rule keeps handles safe: two handles on the same key must never be open at once while one
 * of them writes (a write can delete an emptied key and free the value the other points at). The
 * hot commands open distinct keys; the stall sweep, whose keys can coincide (a lapsed row that is
 * also a parent), closes each handle before it opens the next on a key that may be the same. */
#ifndef TK_KEYS_H
#define TK_KEYS_H

#include "tk_util.h"

/* An open key and its name (the name is what a write replicates and signals). */
typedef struct {
    TkStr *name;
    TkKey *key; /* NULL for an absent key opened TK_READ */
} TkOpen;

/* The words the commands read and write (field names, states, stream fields) and the node's brand
 * key, made once at load and kept for the server's life: no command allocates or frees them. */
enum {
    TK_W_ATTEMPTS,
    TK_W_PAYLOAD,
    TK_W_STATE,
    TK_W_PARENT,
    TK_W_PARENT_POLICY,
    TK_W_FLOW,
    TK_W_PRIOR_ATTEMPTS,
    TK_W_LEASE_EPOCH,
    TK_W_LAST_ERROR,
    TK_W_STALLED,
    TK_W_COUNT,
    TK_W_ACTIVE,
    TK_W_PENDING,
    TK_W_SCHEDULED,
    TK_W_DEAD,
    TK_W_ID,
    TK_W_OUTCOME,
    TK_W_COMPLETED,
    TK_W_CHILD_FAILED,
    TK_W_RESULT,
    TK_W_ERROR,
    TK_W_BRAND_KEY,
    TK_WORDS
};
extern TkStr *tk_words[TK_WORDS];
#define TK_W(name) (tk_words[TK_W_##name])

/* A key name (or any value) as the server takes it, from a byte view or a C string. */
TkStr *tk_name(TkCtx *ctx, TkBuf bytes);
TkStr *tk_cstr(TkCtx *ctx, const char *s);

/* TK_READ, or TK_READ | TK_WRITE for a key the command may write. Closed when the command returns
 * if not before. */
TkOpen tk_open(TkCtx *ctx, TkStr *name, int mode);
void tk_close(TkOpen *k);

/* Called once at load: makes the words, and has the commands tell the server themselves which keys
 * they changed (closing a handle opened for writing would otherwise count as a change, even after a
 * refusal). */
void tk_keys_init(TkCtx *ctx);

/* ---- reads ---- */

/* The key's type, TK_KEYTYPE_EMPTY when it does not exist. */
int tk_kind(TkOpen k);
/* Answers 1 when the key holds `type` or nothing (and sets *exists, when given); else replies
 * "WRONGTYPE <key> holds a <type>, not a <type>" and answers 0. */
int tk_holds(TkCtx *ctx, TkOpen k, int type, int *exists);
/* Replies with the server's own WRONGTYPE error (what a command on that key would answer); TK_OK. */
int tk_wrongtype(TkCtx *ctx);
/* The fields of a hash, out[i] absent when missing (every one absent when the key is); answers the
 * key's type and reads nothing unless it is a hash. */
int tk_hmget(TkOpen k, TkStr *const *fields, size_t n, TkBuf *out);
/* A string key's value (a copy), absent unless the key holds a string; answers the key's type. */
int tk_string(TkCtx *ctx, TkOpen k, TkBuf *out);
/* Up to `limit` members of a sorted set from the lowest score while score < below (all members when
 * below is +inf), in the set's order; answers how many, or -1 when the key is not a sorted set. */
long tk_zhead(TkOpen k, double below, TkStr **out, long limit);

/* ---- writes, on a key opened TK_WRITE: 1 when done, or 0 after replying (a write the reads have
 * made sure can succeed) ---- */

int tk_zadd(TkCtx *ctx, TkOpen k, long long score, TkStr *member);
/* Replicated only when the member was there. */
int tk_zrem(TkCtx *ctx, TkOpen k, TkStr *member);
/* Pops the member with the lowest score (the lowest member among equal scores) if it is `expect`:
 * *out is the head found (NULL when the set is empty), removed only when it is the one expected. */
int tk_zpopmin(TkCtx *ctx, TkOpen k, TkBuf expect, TkStr **out);
/* pairs holds 2 * npairs fields and values, binary-safe (a job id can be a field name). */
int tk_hset(TkCtx *ctx, TkOpen k, TkStr *const *pairs, size_t npairs);
/* Replicates the fields that were there, if any. */
int tk_hdel(TkCtx *ctx, TkOpen k, TkStr *const *fields, size_t n);
int tk_del(TkCtx *ctx, TkOpen k);
/* The key expires at at_ms (server time); nothing when the key does not exist, as EXPIRE. */
int tk_pexpireat(TkCtx *ctx, TkOpen k, long long at_ms);
/* An entry with an id the server picks, as XADD's `*`; values holds 2 * npairs fields and values. */
int tk_xadd(TkCtx *ctx, TkOpen k, TkStr **values, size_t npairs);
/* A string key set to an integer, keeping its expiry (what INCR/DECR do to a counter). */
int tk_set_integer(TkCtx *ctx, TkOpen k, long long value);

/* Whether the server runs in cluster mode, read once at load (it cannot change while it runs). */
void tk_note_cluster(TkCtx *ctx);
/* argv[2], the command's first key, names the queue whose brand a cluster node reads. */
int tk_check_brand(TkCtx *ctx, TkStr **argv, int argc);

#endif
