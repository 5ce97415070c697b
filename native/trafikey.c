/* trafikey: the EMQ.* commands, native twins of the Queue's core flat
 * transitions (claim, complete, fail, the counted stall sweep).
 *
 * Only the OnLoad entry point leaves this object (-fvisibility=hidden plus the
 * attribute below); the server finds everything else through the API table. */
#include "tk_keys.h"

#define TRAFIKEY_VERSION 1

/* The kit's batch claim (emq_claim_many.c): the page has no batch, so it is not among the twins
 * tk_util.h lists. */
int emq_claim_many(TkCtx *ctx, TkStr **argv, int argc);

/* Each command's keys sit at fixed places, argv[2] up to argv[1 + numkeys],
 * because each accepts exactly one numkeys. Declaring that range lets COMMAND
 * GETKEYS, ACL key patterns and cluster routing see the queue's keys. The
 * brand is read but not declared: on a standalone node it is {emq}:version, the
 * node's; on a cluster node it is the queue's emq:version:{q}, in the slot of
 * the declared keys, so it is always local (tk_check_brand). */
static const struct {
    const char *name;
    TkCmdFunc fn;
    int lastkey;
} commands[] = {
    {"EMQ.CLAIM", emq_claim, 4},                 /* pending active base */
    {"EMQ.CLAIM.MANY", emq_claim_many, 4},       /* pending active base */
    {"EMQ.COMPLETE", emq_complete, 3},           /* active row */
    {"EMQ.FAIL", emq_fail, 5},                   /* active schedule dead row */
    {"EMQ.STALLED.CHECK", emq_stalled_check, 5}, /* active pending dead base */
};

__attribute__((visibility("default"))) int ValkeyModule_OnLoad(TkCtx *ctx, TkStr **argv, int argc);

int ValkeyModule_OnLoad(TkCtx *ctx, TkStr **argv, int argc) {
    (void)argv; /* trafikey takes no load-time arguments */
    (void)argc;
    if (tk_api_load(ctx) != TK_OK) return TK_ERR;
    tk_SetModuleAttribs(ctx, "trafikey", TRAFIKEY_VERSION, 1);
    tk_note_cluster(ctx);
    tk_keys_init(ctx);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        /* every command may write, so it is refused under OOM and on a replica */
        if (tk_CreateCommand(ctx, commands[i].name, commands[i].fn, "write deny-oom", 2, commands[i].lastkey, 1) !=
            TK_OK) {
            tk_Log(ctx, "warning", "trafikey: could not register %s", commands[i].name);
            return TK_ERR;
        }
    }
    return TK_OK;
}
