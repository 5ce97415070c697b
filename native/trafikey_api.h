/* trafikey_api.h: our own declarations of the few Valkey module API functions
 * trafikey uses, and nothing else.
 *
 * The server hands a module its lookup function (GetApi) as the first word of
 * the context; every function below is found through it by name, so no server
 * header is needed. The compiler cannot check a signature against the server:
 * each one was checked by hand against Valkey 8.0.1
 * (docs/decisions.md, "The module API trafikey declares"). Keep them exact. */
#ifndef TRAFIKEY_API_H
#define TRAFIKEY_API_H

#include <stddef.h>

/* Opaque server objects: only ever handled through pointers. */
typedef struct TkCtx TkCtx;     /* a command's (or OnLoad's) context */
typedef struct TkStr TkStr;     /* a server string, e.g. one argv entry */
typedef struct TkReply TkReply; /* the reply of a Call */
typedef struct TkInfo TkInfo;   /* one INFO section, from GetServerInfo */

typedef int (*TkCmdFunc)(TkCtx *ctx, TkStr **argv, int argc);

/* Status codes and Call reply types (RESP2 replies: a status is a STRING). */
enum { TK_OK = 0, TK_ERR = 1 };
enum {
    TK_REPLY_STRING = 0,
    TK_REPLY_ERROR = 1,
    TK_REPLY_INTEGER = 2,
    TK_REPLY_ARRAY = 3,
    TK_REPLY_NULL = 4
};

/* The module's name and the API version it speaks (the only one there is). */
extern void (*tk_SetModuleAttribs)(TkCtx *ctx, const char *name, int ver, int apiver);
extern int (*tk_CreateCommand)(TkCtx *ctx, const char *name, TkCmdFunc fn, const char *flags,
                               int firstkey, int lastkey, int keystep);
extern void (*tk_Log)(TkCtx *ctx, const char *level, const char *fmt, ...);

/* Every command turns this on first: replies and pool memory are freed when it returns. */
extern void (*tk_AutoMemory)(TkCtx *ctx);
extern void *(*tk_PoolAlloc)(TkCtx *ctx, size_t bytes);

/* Variadic: `c` C string, `s` TkStr*, `b` pointer + size_t, `l` long long.
 * `!` replicates the effect, `E` answers pre-execution errors as error replies. */
extern TkReply *(*tk_Call)(TkCtx *ctx, const char *cmd, const char *fmt, ...);
extern int (*tk_CallReplyType)(TkReply *reply);
extern size_t (*tk_CallReplyLength)(TkReply *reply);
extern TkReply *(*tk_CallReplyArrayElement)(TkReply *reply, size_t idx);
extern const char *(*tk_CallReplyStringPtr)(TkReply *reply, size_t *len);
extern long long (*tk_CallReplyInteger)(TkReply *reply);

extern int (*tk_WrongArity)(TkCtx *ctx);
extern int (*tk_ReplyWithArray)(TkCtx *ctx, long len);
extern int (*tk_ReplyWithEmptyArray)(TkCtx *ctx);
extern int (*tk_ReplyWithStringBuffer)(TkCtx *ctx, const char *buf, size_t len);
extern int (*tk_ReplyWithLongLong)(TkCtx *ctx, long long value);
extern int (*tk_ReplyWithNull)(TkCtx *ctx);
extern int (*tk_ReplyWithError)(TkCtx *ctx, const char *err); /* "CODE message", no dash */
extern int (*tk_ReplyWithCallReply)(TkCtx *ctx, TkReply *reply);

extern const char *(*tk_StringPtrLen)(const TkStr *str, size_t *len);

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
