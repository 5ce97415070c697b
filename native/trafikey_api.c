/* trafikey_api.c: the API function pointers, filled in by name at load time. */
#include <string.h>

#include "trafikey_api.h"

void (*tk_SetModuleAttribs)(TkCtx *, const char *, int, int);
int (*tk_CreateCommand)(TkCtx *, const char *, TkCmdFunc, const char *, int, int, int);
void (*tk_Log)(TkCtx *, const char *, const char *, ...);
void (*tk_AutoMemory)(TkCtx *);
void *(*tk_PoolAlloc)(TkCtx *, size_t);
TkReply *(*tk_Call)(TkCtx *, const char *, const char *, ...);
int (*tk_CallReplyType)(TkReply *);
size_t (*tk_CallReplyLength)(TkReply *);
TkReply *(*tk_CallReplyArrayElement)(TkReply *, size_t);
const char *(*tk_CallReplyStringPtr)(TkReply *, size_t *);
long long (*tk_CallReplyInteger)(TkReply *);
int (*tk_WrongArity)(TkCtx *);
int (*tk_ReplyWithArray)(TkCtx *, long);
int (*tk_ReplyWithEmptyArray)(TkCtx *);
int (*tk_ReplyWithStringBuffer)(TkCtx *, const char *, size_t);
int (*tk_ReplyWithLongLong)(TkCtx *, long long);
int (*tk_ReplyWithNull)(TkCtx *);
int (*tk_ReplyWithError)(TkCtx *, const char *);
int (*tk_ReplyWithCallReply)(TkCtx *, TkReply *);
const char *(*tk_StringPtrLen)(const TkStr *, size_t *);
int (*tk_GetContextFlags)(TkCtx *);
long long (*tk_CachedMicroseconds)(void);
TkInfo *(*tk_GetServerInfo)(TkCtx *, const char *);
const char *(*tk_ServerInfoGetFieldC)(TkInfo *, const char *);
void (*tk_FreeServerInfo)(TkCtx *, TkInfo *);

/* GetApi writes the function's address through `target` (a pointer to our pointer). */
typedef int (*TkGetApi)(const char *name, void *target);

struct tk_api_entry {
    const char *name;
    void *target;
};

#define TK_API(fn) {"ValkeyModule_" #fn, &tk_##fn}

static const struct tk_api_entry tk_api_table[] = {
    TK_API(Log), /* first, so a later miss can be logged */
    TK_API(SetModuleAttribs),
    TK_API(CreateCommand),
    TK_API(AutoMemory),
    TK_API(PoolAlloc),
    TK_API(Call),
    TK_API(CallReplyType),
    TK_API(CallReplyLength),
    TK_API(CallReplyArrayElement),
    TK_API(CallReplyStringPtr),
    TK_API(CallReplyInteger),
    TK_API(WrongArity),
    TK_API(ReplyWithArray),
    TK_API(ReplyWithEmptyArray),
    TK_API(ReplyWithStringBuffer),
    TK_API(ReplyWithLongLong),
    TK_API(ReplyWithNull),
    TK_API(ReplyWithError),
    TK_API(ReplyWithCallReply),
    TK_API(StringPtrLen),
    TK_API(GetContextFlags),
    TK_API(CachedMicroseconds),
    TK_API(GetServerInfo),
    TK_API(ServerInfoGetFieldC),
    TK_API(FreeServerInfo),
};

int tk_api_load(TkCtx *ctx) {
    TkGetApi get_api;
    /* The context's first word is GetApi; memcpy avoids an object-to-function pointer cast. */
    memcpy(&get_api, ctx, sizeof get_api);
    for (size_t i = 0; i < sizeof tk_api_table / sizeof tk_api_table[0]; i++) {
        if (get_api(tk_api_table[i].name, tk_api_table[i].target) != 0) {
            if (tk_Log) tk_Log(ctx, "warning", "trafikey: the server has no %s", tk_api_table[i].name);
            return TK_ERR;
        }
    }
    return TK_OK;
}
