/* trafikey_api.c: the API function pointers, filled in by name at load time. */
#include <string.h>

#include "trafikey_api.h"

void (*tk_SetModuleAttribs)(TkCtx *, const char *, int, int);
int (*tk_CreateCommand)(TkCtx *, const char *, TkCmdFunc, const char *, int, int, int);
void (*tk_Log)(TkCtx *, const char *, const char *, ...);
void (*tk_SetModuleOptions)(TkCtx *, int);
int (*tk_SignalModifiedKey)(TkCtx *, TkStr *);
void (*tk_AutoMemory)(TkCtx *);
void *(*tk_PoolAlloc)(TkCtx *, size_t);
int (*tk_WrongArity)(TkCtx *);
int (*tk_ReplyWithArray)(TkCtx *, long);
int (*tk_ReplyWithEmptyArray)(TkCtx *);
int (*tk_ReplyWithStringBuffer)(TkCtx *, const char *, size_t);
int (*tk_ReplyWithString)(TkCtx *, TkStr *);
int (*tk_ReplyWithLongLong)(TkCtx *, long long);
int (*tk_ReplyWithNull)(TkCtx *);
int (*tk_ReplyWithError)(TkCtx *, const char *);
const char *(*tk_StringPtrLen)(const TkStr *, size_t *);
TkStr *(*tk_CreateString)(TkCtx *, const char *, size_t);
TkStr *(*tk_CreateStringFromLongLong)(TkCtx *, long long);
TkKey *(*tk_OpenKey)(TkCtx *, TkStr *, int);
void (*tk_CloseKey)(TkKey *);
int (*tk_KeyType)(TkKey *);
int (*tk_KeyExists)(TkCtx *, TkStr *);
int (*tk_DeleteKey)(TkKey *);
char *(*tk_StringDMA)(TkKey *, size_t *, int);
int (*tk_StringTruncate)(TkKey *, size_t);
int (*tk_SetAbsExpire)(TkKey *, long long);
int (*tk_ZsetAdd)(TkKey *, double, TkStr *, int *);
int (*tk_ZsetRem)(TkKey *, TkStr *, int *);
int (*tk_ZsetFirstInScoreRange)(TkKey *, double, double, int, int);
TkStr *(*tk_ZsetRangeCurrentElement)(TkKey *, double *);
int (*tk_ZsetRangeNext)(TkKey *);
int (*tk_ZsetRangeEndReached)(TkKey *);
void (*tk_ZsetRangeStop)(TkKey *);
int (*tk_HashSet)(TkKey *, int, ...);
int (*tk_HashGet)(TkKey *, int, ...);
int (*tk_StreamAdd)(TkKey *, int, TkStreamID *, TkStr **, int64_t);
int (*tk_Replicate)(TkCtx *, const char *, const char *, ...);
int (*tk_NotifyKeyspaceEvent)(TkCtx *, int, const char *, TkStr *);
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
    TK_API(SetModuleOptions),
    TK_API(SignalModifiedKey),
    TK_API(AutoMemory),
    TK_API(PoolAlloc),
    TK_API(WrongArity),
    TK_API(ReplyWithArray),
    TK_API(ReplyWithEmptyArray),
    TK_API(ReplyWithStringBuffer),
    TK_API(ReplyWithString),
    TK_API(ReplyWithLongLong),
    TK_API(ReplyWithNull),
    TK_API(ReplyWithError),
    TK_API(StringPtrLen),
    TK_API(CreateString),
    TK_API(CreateStringFromLongLong),
    TK_API(OpenKey),
    TK_API(CloseKey),
    TK_API(KeyType),
    TK_API(KeyExists),
    TK_API(DeleteKey),
    TK_API(StringDMA),
    TK_API(StringTruncate),
    TK_API(SetAbsExpire),
    TK_API(ZsetAdd),
    TK_API(ZsetRem),
    TK_API(ZsetFirstInScoreRange),
    TK_API(ZsetRangeCurrentElement),
    TK_API(ZsetRangeNext),
    TK_API(ZsetRangeEndReached),
    TK_API(ZsetRangeStop),
    TK_API(HashSet),
    TK_API(HashGet),
    TK_API(StreamAdd),
    TK_API(Replicate),
    TK_API(NotifyKeyspaceEvent),
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
