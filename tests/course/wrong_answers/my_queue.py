"""Your queue's folder with one stage's idea taken out (the reference folder, one file edited), and the copy
attempts: the kit's scripts as notebooks 02, 03 and 05 print them, as they are and with one line fitted.

Each ``Variant`` names its stage, the files it puts in the reference folder, and what the verdict must say;
``checker`` when that is the checker's counterexample (the history shows the fault), else the stage's own
finding (nothing in the history is invalid, or a probe's known answer is wrong)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from echomq_teach.course.my_queue.stages import STAGES

ROOT = Path(__file__).resolve().parents[3]
REFERENCES = ROOT / "notebooks" / "solutions" / "my_queue"
KIT = ROOT / "echomq_teach" / "lua"


def reference(name: str, upto: str) -> str:
    """File ``name`` as the references of the stages up to ``upto`` leave it (the latest that has it)."""
    text = None
    for s in STAGES:
        path = REFERENCES / s.key.replace(".", "_") / name
        if path.is_file():
            text = path.read_text(encoding="utf-8")
        if s.key == upto:
            break
    assert text is not None, (name, upto)
    return text


def edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new)


def kit(name: str) -> str:
    """The kit's script as its file holds it (``-- @include`` lines and all): what a learner copies."""
    return (KIT / f"{name}.lua").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Variant:
    stage: str
    files: dict[str, str]
    says: tuple[str, ...]
    checker: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)


CLAIM, RENEW = reference("claim.lua", "02.2"), reference("renew.lua", "02.2")
COMPLETE, RETRY = reference("complete.lua", "03.3"), reference("retry.lua", "03.3")
RECOVER, BEAT = reference("recover.lua", "03.6"), reference("beat.py", "03.7")
FAN_IN = reference("complete.lua", "05.2")
FENCE = "if row[1] ~= ARGV[2] or row[2] ~= 'active' then return 0 end"
GHOST_GUARD = "if redis.call('EXISTS', jk) == 0 then return {} end"

VARIANTS: dict[str, Variant] = {
    # -- 02.2: the claim goes past ghosts, the token moves, the renewal is fenced -------------------------------
    "02.2 copy: @claim2": Variant("02.2", {"claim.lua": kit("claim2")}, ("one call of your claim should drop both "
                                                                         "ghosts",)),
    # one line fitted: a ghost at the head pops the next id instead of answering empty (it skips one ghost)
    "02.2 copy: @claim2, one ghost skipped": Variant("02.2", {"claim.lua": edit(
        kit("claim2"), GHOST_GUARD, "if redis.call('EXISTS', jk) == 0 then popped = redis.call('ZPOPMIN', KEYS[1]) "
        "if #popped == 0 then return {} end id = popped[1] jk = KEYS[3] .. 'job:' .. id end")},
        ("one call of your claim should drop both ghosts",)),
    # the token is set once and never raised again: a zombie's late completion passes the kit's fence
    "02.2 a token that does not move": Variant("02.2", {"claim.lua": edit(
        CLAIM, "local token = redis.call('HINCRBY', row, 'attempts', 1)",
        "if redis.call('HGET', row, 'attempts') == '0' then redis.call('HSET', row, 'attempts', 1) end\n"
        "    local token = tonumber(redis.call('HGET', row, 'attempts'))")},
        ("the checker says invalid", "fence violations", "with token 1 was accepted after w2 had claimed the job "
         "again (token 1)"), checker=True),
    "02.2 renew: the token, not the state": Variant("02.2", {"renew.lua": edit(
        RENEW, "if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end\n", "")},
        ("answered 1 to a worker that woke after a sweep", "answer 0, and renew nothing")),
    "02.2 renew: from the old deadline": Variant("02.2", {"renew.lua": edit(
        RENEW, "redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[3]), ARGV[1])",
        "redis.call('ZINCRBY', KEYS[1], tonumber(ARGV[3]), ARGV[1])")},
        ("not the old deadline plus the lease",)),
    "02.2 renew: no token": Variant("02.2", {"renew.lua": edit(
        RENEW, "if redis.call('HGET', KEYS[2], 'attempts') ~= ARGV[2] then return 0 end\n", "")},
        ("answered 1 to a caller with a stale token",)),
    "02.2 claim.lua does not compile": Variant("02.2", {"claim.lua": edit(CLAIM, "return {}\n", "return {\n")},
                                               ("my_queue/claim.lua does not compile: line",)),
    # -- 03.3: the fence on complete and retry, a backoff and a job's own cap ------------------------------------
    "03.3 copy: @complete and @retry": Variant("03.3", {"complete.lua": kit("complete"), "retry.lua": kit("retry")},
                                               ("try 2 of 3 failed", "2600 ms (delay_ms 1300 × 2^1")),
    "03.3 copy: @retry, its delay doubled": Variant("03.3", {"retry.lua": edit(
        kit("retry"), "redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])",
        "redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]) * 2 ^ (tonumber(row[1]) - prior - 1), ARGV[1])")},
        ("a job whose row carries max_attempts 1", "should answer 'dead'")),
    "03.3 copy: @retry, a job's own cap read": Variant("03.3", {"retry.lua": edit(
        kit("retry"), "local below_cap = tonumber(row[1]) - prior < tonumber(ARGV[4])",
        "local below_cap = tonumber(row[1]) - prior < tonumber(redis.call('HGET', KEYS[4], 'max_attempts') or "
        "ARGV[4])")},
        ("2600 ms (delay_ms 1300 × 2^1",)),
    "03.3 complete: no fence": Variant("03.3", {"complete.lua": edit(COMPLETE, FENCE, "")},
                                       ("the checker says invalid", "fence violations", "the fence should have "
                                        "answered stale"), checker=True),
    "03.3 retry: no fence": Variant("03.3", {"retry.lua": edit(RETRY, FENCE, "")},
                                    ("the checker says invalid", "fence violations", "settle with token 1 was "
                                     "accepted after w2"), checker=True),
    "03.3 complete: the token, not the state": Variant("03.3", {"complete.lua": edit(
        COMPLETE, FENCE, "if row[1] ~= ARGV[2] then return 0 end")},
        ("called complete with its token 1", "ghost:")),
    "03.3 complete: the ending unrecorded": Variant("03.3", {"complete.lua": edit(
        COMPLETE, "if ARGV[6] == '1' then", "if false then")},
        ("the checker says invalid", "unrecorded"), checker=True),
    # -- 03.6: a lapse at the cap buried ----------------------------------------------------------------------------
    "03.6 copy: @stalled_check": Variant("03.6", {"recover.lua": kit("stalled_check")},
                                         ("lapsed on its try 3 of 3", "your recover.lua left it in pending")),
    "03.6 copy: @reap": Variant("03.6", {"recover.lua": kit("reap")}, ("answer two lists, {the ids moved back, the "
                                                                       "ids buried}",)),
    # one line fitted: the stall count read as the row's attempts (this life's tries not taken)
    "03.6 copy: @stalled_check, attempts for stalls": Variant("03.6", {"recover.lua": edit(
        kit("stalled_check"), "if stalled > max_stalled then",
        "if tonumber(redis.call('HGET', jk, 'attempts')) >= max_stalled then")},
        ("the first try of a new life", "should move it back to pending")),
    "03.6 no poison bound": Variant("03.6", {"recover.lua": edit(
        RECOVER, "if tries < tonumber(r[3] or ARGV[1]) then", "if true then")},
        ("lapsed on its try 3 of 3", "buries the job in dead, as a poison message must stop somewhere")),
    "03.6 state left active": Variant("03.6", {"recover.lua": edit(
        RECOVER, "      redis.call('HSET', row, 'state', 'pending')\n", "")},
        ("misplaced:", "its row says 'active'")),
    # -- 03.7: the beat sweeps, claims within its budget, settles as the handler said ------------------------------
    "03.7 a beat that never recovers": Variant("03.7", {"beat.py": edit(BEAT, "    queue.recover()\n", "")},
                                               ("should recover it (queue.recover())", "it is still in active")),
    "03.7 a beat that never promotes": Variant("03.7", {"beat.py": edit(BEAT, "    queue.promote()\n", "")},
                                               ("should promote it (queue.promote())",)),
    "03.7 a budget kept on an empty claim": Variant("03.7", {"beat.py": edit(BEAT, "        budget.give_back()\n",
                                                                             "")},
                                                    ("its budget went from 5 jobs left to 4",)),
    "03.7 no budget taken": Variant("03.7", {"beat.py": edit(BEAT, "    if not budget.take():\n        return None\n",
                                                             "")},
                                    ("its budget went from 5 jobs left to 6",)),
    "03.7 an error completed": Variant("03.7", {"beat.py": edit(
        BEAT, "return queue.complete(job, value) if ok else queue.retry(job, value)",
        "return queue.complete(job, value)")}, ("your beat should retry it with that reason",)),
    "03.7 a beat that raises": Variant("03.7", {"beat.py": edit(BEAT, "job = queue.claim()", "job = queue.take()")},
                                       ("your beat raised", "AttributeError", "line")),
    # the lazy learner's beats: an answer of None whatever the settle said; the handler's result dropped
    "03.7 attack: a beat that answers None": Variant("03.7", {"beat.py": edit(
        BEAT, "    return queue.complete(job, value) if ok else queue.retry(job, value)",
        "    queue.complete(job, value) if ok else queue.retry(job, value)\n    return None")},
        ("the settle answered 'ok'", "yours answered None")),
    "03.7 attack: the handler's result dropped": Variant("03.7", {"beat.py": edit(
        BEAT, "queue.complete(job, value) if ok", "queue.complete(job, '') if ok")},
        ("the completion recorded ''",)),
    # 03.3's retry.lua with its delay written in passes 03.3's cases (each hands delay_ms 1000): 03.7's probe hands
    # 1 ms, and its finding names retry.lua, never the beat
    "03.7 attack: retry.lua's delay written in": Variant("03.7", {"retry.lua": edit(
        RETRY, "now + tonumber(ARGV[3]) * 2 ^ (tries - 1)", "now + 1000 * 2 ^ (tries - 1)")},
        ("your retry.lua (stage 03.3), not your beat, is the cause here", "where the spec says delay_ms × 2^0 = 1 ms")),
    # -- 05.2: released at the quorum, each child counted once -----------------------------------------------------
    "05.2 copy: @complete": Variant("05.2", {"complete.lua": kit("complete")},
                                    ("has its quorum of 2: release it to pending",)),
    # one line fitted: the kit's release at zero made a release at the quorum (but no guard on the parent's state)
    "05.2 copy: @complete, the quorum read": Variant("05.2", {"complete.lua": edit(
        kit("complete"), "  if left <= 0 then",
        "  if redis.call('HLEN', KEYS[4]) >= tonumber(redis.call('HGET', KEYS[5], 'quorum')) then")},
        ("its parent running", "two sets:")),
    # counted before the fence: a zombie's completion is refused, yet it counted toward the parent
    "05.2 a fan-in that counts a repeated completion": Variant("05.2", {"complete.lua": edit(
        FAN_IN, "local row = redis.call('HMGET', KEYS[2], 'attempts', 'state')",
        "if KEYS[3] and redis.call('HGET', KEYS[5], 'state') == 'awaiting_children' then\n"
        "  if redis.call('HINCRBY', KEYS[5], 'counted', 1) >= tonumber(redis.call('HGET', KEYS[5], 'quorum')) then\n"
        "    redis.call('ZADD', ARGV[3] .. 'pending', 0, ARGV[4])\n"
        "    redis.call('HSET', KEYS[5], 'state', 'pending')\n"
        "  end\nend\n"
        "local row = redis.call('HMGET', KEYS[2], 'attempts', 'state')")},
        ("the checker says invalid", "released early", "claimed by w3 when 1 of its 3 children had completed"),
        checker=True),
    "05.2 no fence": Variant("05.2", {"complete.lua": edit(FAN_IN, FENCE, "")},
                             ("the checker says invalid", "fence violations"), checker=True),
    "05.2 the parent's row left waiting": Variant("05.2", {"complete.lua": edit(
        FAN_IN, "    redis.call('HSET', KEYS[5], 'state', 'pending')\n", "")},
        ("misplaced:", "its row says 'awaiting_children'")),
    # -- the lazy learner's answers that passed the builds 02.2, 03.3 and 05.2 before the stages (each the attack's
    # one gap, ported to its stage's file: its keys and arguments, the rest the reference's) ----------------------
    # a renewal whose lease is its own: token fence, ZADD XX, now + 1500 (the judged run's lease), ARGV[3] unread
    "02.2 attack: a lease of its own": Variant("02.2", {"renew.lua": (
        "if redis.call('HGET', KEYS[2], 'attempts') ~= ARGV[2] then return 0 end\n"
        "local t = redis.call('TIME')\n"
        "local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
        "return redis.call('ZADD', KEYS[1], 'XX', 'CH', now + 1500, ARGV[1])\n")},
        ("renewed by 7000 ms (its ARGV[3])", "nor a lease of your own")),
    # fenced on one state only: a renewal racing its own handler's retry (the job in schedule or dead, its token
    # unchanged) puts it back in active
    "02.2 attack: a renewal fenced on pending only": Variant("02.2", {"renew.lua": (
        "local row = redis.call('HMGET', KEYS[2], 'attempts', 'state')\n"
        "if row[1] ~= ARGV[2] or row[2] == 'pending' then return 0 end\n"
        "local t = redis.call('TIME')\n"
        "local now = t[1] * 1000 + math.floor(t[2] / 1000)\n"
        "redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])\n"
        "return 1\n")},
        ("a handler's renewal thread after its job was retried to schedule",)),
    "03.3 attack: a delay of its own": Variant("03.3", {"retry.lua": edit(
        RETRY, "now + tonumber(ARGV[3]) * 2 ^ (tries - 1)", "now + 1000 * 2 ^ (tries - 1)")},
        ("delay_ms 1300 × 2^0",)),
    "03.3 attack: a job's own cap held under the caller's": Variant("03.3", {"retry.lua": edit(
        RETRY, "local cap = tonumber(row[4] or ARGV[4])",
        "local cap = math.min(tonumber(row[4] or ARGV[4]), tonumber(ARGV[4]))")},
        ("a job whose row carries max_attempts 3", "should answer 'scheduled'; it answered 'dead'")),
    "03.3 attack: a cap of its own": Variant("03.3", {"retry.lua": edit(
        RETRY, "local cap = tonumber(row[4] or ARGV[4])", "local cap = tonumber(row[4] or 3)")},
        ("try 2 of 2 failed (max_attempts 2, ARGV[4]", "your retry.lua should answer 'dead'")),
    "03.3 attack: dead scored with the lease's deadline": Variant("03.3", {"retry.lua": edit(edit(
        RETRY, "redis.call('ZREM', KEYS[1], ARGV[1])",
        "local deadline = redis.call('ZSCORE', KEYS[1], ARGV[1])\nredis.call('ZREM', KEYS[1], ARGV[1])"),
        "redis.call('ZADD', KEYS[3], now, ARGV[1])", "redis.call('ZADD', KEYS[3], deadline, ARGV[1])")},
        ("scored in dead with the server's TIME now",)),
    "03.6 attack: a cap of its own": Variant("03.6", {"recover.lua": edit(
        RECOVER, "if tries < tonumber(r[3] or ARGV[1]) then", "if tries < tonumber(r[3] or 3) then")},
        ("its try 2 of 2 (max_attempts 2, ARGV[1]; its row carries none)", "buries the job in dead")),
    "03.6 attack: dead scored with the lapsed deadline": Variant("03.6", {"recover.lua": edit(edit(
        RECOVER, "  redis.call('ZREM', KEYS[1], id)",
        "  local deadline = redis.call('ZSCORE', KEYS[1], id)\n  redis.call('ZREM', KEYS[1], id)"),
        "redis.call('ZADD', KEYS[3], now, id)", "redis.call('ZADD', KEYS[3], deadline, id)")},
        ("scored in dead with the server's TIME now", "not its lapsed deadline")),
    "03.6 attack: the stalled entry's attempts not the row's": Variant("03.6", {"recover.lua": edit(
        RECOVER, "'attempts', r[1], 'error'", "'attempts', '0', 'error'")},
        ("its stalled entry carries the row's attempts (3", "yours carries 0")),
    # no guard for an id in active whose row is gone: it comes back to pending with a row of one field, a ghost
    "03.6 attack: a row-less id recovered": Variant("03.6", {"recover.lua": edit(edit(
        RECOVER, "  if r[1] then", "  if true then"),
        "local tries = tonumber(r[1]) - ", "local tries = tonumber(r[1] or '0') - ")},
        ("an id in active whose row is gone (a removed job) leaves active and goes nowhere",)),
    "03.6 attack: the latest deadline first": Variant("03.6", {"recover.lua": edit(
        RECOVER, "redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. now, 'LIMIT', 0, 100)",
        "redis.call('ZREVRANGEBYSCORE', KEYS[1], '(' .. now, '-inf', 'LIMIT', 0, 100)")},
        ("the first call should take the 100 that lapsed earliest",)),
    "03.6 attack: a burial recorded unasked": Variant("03.6", {"recover.lua": edit(
        RECOVER, "if ARGV[2] == '1' then", "if true then")},
        ("the call not asking to record (no ARGV[2]): its burial writes no entry",)),
    "03.6 attack: a burial without its reason": Variant("03.6", {"recover.lua": edit(
        RECOVER, "redis.call('HSET', row, 'state', 'dead', 'last_error', 'stalled')",
        "redis.call('HSET', row, 'state', 'dead')")},
        ("its row keeps why as last_error, 'stalled'",)),
    # :processed keeps the token where the result belongs (its finding names :processed, not the parent's state)
    "05.2 attack: the token kept for the result": Variant("05.2", {"complete.lua": edit(
        FAN_IN, "redis.call('HSET', KEYS[4], ARGV[1], ARGV[5])", "redis.call('HSET', KEYS[4], ARGV[1], ARGV[2])")},
        (":processed should hold that child's result, 'a done', and nothing else; it holds ['1']",)),
    # a parent without a quorum read as one of 3: a parent of more children is released early
    "05.2 attack: a quorum of 3 when the row names none": Variant("05.2", {"complete.lua": edit(
        FAN_IN, "local quorum = redis.call('HGET', KEYS[5], 'quorum')",
        "local quorum = redis.call('HGET', KEYS[5], 'quorum') or '3'")},
        ("a parent without one waits for all its children, here 5. After 3 of them completed it should still wait",)),
    "05.2 attack: no was_active guard": Variant("05.2", {"complete.lua": edit(
        FAN_IN, "if KEYS[3] and was_active == 1 and", "if KEYS[3] and")},
        ("whose claim stopped half-done", "counts it only when its ZREM took the child out of active")),
}
