/* trafikey_api.h: our own declarations of the few Valkey module API functions
 * trafikey uses, and nothing else.
 *
 * The server hands a module its lookup function (GetApi) as the first word of
 * the context; every function below is found through it by name, so no server
 * header is needed. The compiler cannot check a signature against the server,
 * so each was checked by hand for Valkey 9.1.2, the one server every node of the
 * kit runs (tools/valkey.lock): every name below is a module API function of that
 * build (its binary exports VM_<Name> for each, and tk_api_load refuses to load
 * when one is missing); every signature, flag and constant is the one Valkey's
 * valkeymodule.h declares (read in its 8.0.1 form: Valkey keeps a released API
 * function's signature and constants, so a module loads on later releases
 * unrebuilt); the commands use every one, and the native tests pass on 9.1.2.
 * Keep them exact: a wrong declaration compiles silently. */
#ifndef TRAFIKEY_API_H
#define TRAFIKEY_API_H

#include <stddef.h>
#include <stdint.h>

/* Opaque server objects: only ever handled through pointers. */
typedef struct TkCtx TkCtx;   /* a command's (or OnLoad's) context */
typedef struct TkStr TkStr;   /* a server string: an argv entry, a key name, a field value */
typedef struct TkKey TkKey;   /* an open key, from OpenKey */
typedef struct TkInfo TkInfo; /* one INFO section, from GetServerInfo */

/* A stream entry's id, as the server lays it out: milliseconds, then a sequence. */
typedef struct {
    uint64_t ms;
    uint64_t seq;
} TkStreamID;

typedef int (*TkCmdFunc)(TkCtx *ctx, TkStr **argv, int argc);

/* Status codes. */
enum { TK_OK = 0, TK_ERR = 1 };

/* OpenKey modes: a READ open of an absent key answers NULL; a WRITE open answers a handle that
 * can create it. Closing a WRITE handle tells the server the key changed (WATCH, client caching). */
enum { TK_READ = 1 << 0, TK_WRITE = 1 << 1 };

/* What KeyType answers (EMPTY for an absent key, or a NULL handle). */
enum {
    TK_KEYTYPE_EMPTY = 0,
    TK_KEYTYPE_STRING = 1,
    TK_KEYTYPE_LIST = 2,
    TK_KEYTYPE_HASH = 3,
    TK_KEYTYPE_SET = 4,
    TK_KEYTYPE_ZSET = 5,
    TK_KEYTYPE_MODULE = 6,
    TK_KEYTYPE_STREAM = 7
};

/* HashSet's value that deletes the field instead (never a real pointer). */
#define TK_HASH_DELETE ((TkStr *)(long)1)

/* StreamAdd's flag for an id chosen by the server, as XADD's `*`. */
enum { TK_STREAM_ADD_AUTOID = 1 << 0 };

/* Keyspace event classes, for NotifyKeyspaceEvent. */
enum {
    TK_NOTIFY_GENERIC = 1 << 2,
    TK_NOTIFY_STRING = 1 << 3,
    TK_NOTIFY_HASH = 1 << 6,
    TK_NOTIFY_ZSET = 1 << 7,
    TK_NOTIFY_STREAM = 1 << 10
};

/* The module's name and the API version it speaks (the only one there is). */
extern void (*tk_SetModuleAttribs)(TkCtx *ctx, const char *name, int ver, int apiver);
extern int (*tk_CreateCommand)(TkCtx *ctx, const char *name, TkCmdFunc fn, const char *flags,
                               int firstkey, int lastkey, int keystep);
extern void (*tk_Log)(TkCtx *ctx, const char *level, const char *fmt, ...);
/* TK_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED: closing a key opened for writing no longer tells the
 * server it changed; the module calls SignalModifiedKey for the keys it did change. */
extern void (*tk_SetModuleOptions)(TkCtx *ctx, int options);
enum { TK_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED = 1 << 1 };
extern int (*tk_SignalModifiedKey)(TkCtx *ctx, TkStr *name);

/* Every command turns this on first: strings, open keys and pool memory are freed (keys closed)
 * when it returns. */
extern void (*tk_AutoMemory)(TkCtx *ctx);
extern void *(*tk_PoolAlloc)(TkCtx *ctx, size_t bytes);

extern int (*tk_WrongArity)(TkCtx *ctx);
extern int (*tk_ReplyWithArray)(TkCtx *ctx, long len);
extern int (*tk_ReplyWithEmptyArray)(TkCtx *ctx);
extern int (*tk_ReplyWithStringBuffer)(TkCtx *ctx, const char *buf, size_t len);
extern int (*tk_ReplyWithString)(TkCtx *ctx, TkStr *str);
extern int (*tk_ReplyWithLongLong)(TkCtx *ctx, long long value);
extern int (*tk_ReplyWithNull)(TkCtx *ctx);
extern int (*tk_ReplyWithError)(TkCtx *ctx, const char *err); /* "CODE message", no dash */

extern const char *(*tk_StringPtrLen)(const TkStr *str, size_t *len);
extern TkStr *(*tk_CreateString)(TkCtx *ctx, const char *ptr, size_t len);
extern TkStr *(*tk_CreateStringFromLongLong)(TkCtx *ctx, long long value);

/* The key API: the commands read and write the data through these, never through a command call. */
extern TkKey *(*tk_OpenKey)(TkCtx *ctx, TkStr *name, int mode);
extern void (*tk_CloseKey)(TkKey *key);
extern int (*tk_KeyType)(TkKey *key);
extern int (*tk_KeyExists)(TkCtx *ctx, TkStr *name);
extern int (*tk_DeleteKey)(TkKey *key);
/* A READ open of a string that is not stored raw converts it in place once (same bytes). */
extern char *(*tk_StringDMA)(TkKey *key, size_t *len, int mode);
extern int (*tk_StringTruncate)(TkKey *key, size_t newlen);
extern int (*tk_SetAbsExpire)(TkKey *key, long long at_ms);

extern int (*tk_ZsetAdd)(TkKey *key, double score, TkStr *member, int *flags);
extern int (*tk_ZsetRem)(TkKey *key, TkStr *member, int *deleted);
extern int (*tk_ZsetFirstInScoreRange)(TkKey *key, double min, double max, int minex, int maxex);
extern TkStr *(*tk_ZsetRangeCurrentElement)(TkKey *key, double *score);
extern int (*tk_ZsetRangeNext)(TkKey *key);
extern int (*tk_ZsetRangeEndReached)(TkKey *key);
extern void (*tk_ZsetRangeStop)(TkKey *key);

/* Variadic: flags, then field/value pairs, then NULL. HashGet gives each value as a new TkStr*
 * (NULL when the field is missing) and answers TK_ERR when the key is not a hash. */
extern int (*tk_HashSet)(TkKey *key, int flags, ...);
extern int (*tk_HashGet)(TkKey *key, int flags, ...);

extern int (*tk_StreamAdd)(TkKey *key, int flags, TkStreamID *id, TkStr **argv, int64_t numfields);

/* Variadic, with the module call format: `c` C string, `s` TkStr*, `b` pointer + size_t, `l` long long,
 * `v` TkStr** + size_t. Every command replicated during one command reaches replicas and the AOF
 * inside one MULTI/EXEC. */
extern int (*tk_Replicate)(TkCtx *ctx, const char *cmd, const char *fmt, ...);
extern int (*tk_NotifyKeyspaceEvent)(TkCtx *ctx, int type, const char *event, TkStr *key);

/* What the server is running as; TK_CTX_FLAGS_CLUSTER is set in cluster mode. */
extern int (*tk_GetContextFlags)(TkCtx *ctx);
enum { TK_CTX_FLAGS_CLUSTER = 1 << 5 };

/* The command's start time, frozen for the whole command: what TIME reports. */
extern long long (*tk_CachedMicroseconds)(void);

extern TkInfo *(*tk_GetServerInfo)(TkCtx *ctx, const char *section);
extern const char *(*tk_ServerInfoGetFieldC)(TkInfo *info, const char *field);
extern void (*tk_FreeServerInfo)(TkCtx *ctx, TkInfo *info);

/* Looks every function above up by name; TK_OK, or TK_ERR after logging the missing one. */
int tk_api_load(TkCtx *ctx);

#endif
