"""The connector: one traced client for one node and one wire (EchoMQ.Connector).

A ``wire=4`` connector runs scripts only and holds its node at ``echomq:4.0.0``.
A ``wire=6`` connector requires ``echomq:6.0.0`` and the loaded ``trafikey``
module; the job functions send it the native command wherever one exists.
Every command is kept in a trace, written as a learner would type it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from . import keyspace, scripts
from .errors import WireError

TRACE_LIMIT = 500
_SHOWN_ARG = 40  # longer arguments (payloads) are cut in the trace text


def _arg_text(arg: object) -> str:
    s = arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)
    # keys are shown whole (a cut key hides its suffix, the part a learner reads); payloads are cut
    if len(s) > _SHOWN_ARG and not s.startswith(("emq:", "{emq}")):
        s = s[: _SHOWN_ARG - 1] + "…"
    if s == "" or any(c.isspace() for c in s) or '"' in s:
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return s


def _reply_text(reply: object) -> str:
    if isinstance(reply, (list, tuple)):
        return "[" + ", ".join(_reply_text(r) for r in reply) + "]"
    if isinstance(reply, Exception):
        return f"(error) {reply}"
    if isinstance(reply, str):
        return repr(reply if len(reply) <= _SHOWN_ARG else reply[: _SHOWN_ARG - 1] + "…")
    return repr(reply)


class NotSent(redis.exceptions.ConnectionError):
    """No link to the node could be opened: the command never left this process, so it did not run.

    A lost link is a ``ConnectionError`` whose command may or may not have run;
    this one is known not to have (a history records it as refused).
    """


@dataclass
class TraceEntry:
    """One command sent and what came back. ``script`` is ``@claim2`` for an EVALSHA."""

    args: list[Any]
    reply: Any = None
    script: str | None = None
    error: bool = False
    #: on a cluster: the node that answered (``127.0.0.1:7001``), and each MOVED or ASK on the way
    node: str | None = None
    redirects: list[str] = field(default_factory=list)

    @property
    def line(self) -> str:
        """The command as typed: ``EVALSHA <sha> 3 emq:{q}:pending … 30000``."""
        words = (
            ["EVALSHA", "<sha>"] + [_arg_text(a) for a in self.args[2:]]
            if self.script
            else [_arg_text(a) for a in self.args]
        )
        return " ".join(words)

    @property
    def reply_text(self) -> str:
        return _reply_text(self.reply)

    def __str__(self) -> str:
        who = f"  # {self.script}" if self.script else ""
        hops = "".join(f"\n  ↪ {r}" for r in self.redirects)
        where = f"  @ {self.node}" if self.node else ""
        return f"{self.line}{who}{hops}\n  → {self.reply_text}{where}"


@dataclass
class Connector:
    """A client bound to one node, one wire (4 or 6) and one trace."""

    client: redis.Redis
    wire: int = 4
    trace: deque[TraceEntry] = field(default_factory=lambda: deque(maxlen=TRACE_LIMIT))
    #: how to reach the node again (redis-py keyword arguments), for ``fork`` and other processes
    address: dict[str, Any] = field(default_factory=dict)
    #: the node this connector came from: held so the node lives while its connectors do
    node: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.wire not in (4, 6):
            raise WireError(f"wire must be 4 or 6, got {self.wire!r}")
        self._loaded: set[str] = set()
        self._check_brand()

    # -- the brand -----------------------------------------------------------------
    def _check_brand(self) -> None:
        want = keyspace.BRAND_WIRE4 if self.wire == 4 else keyspace.BRAND_WIRE6
        brand = self.client.get(keyspace.VERSION_KEY)
        if self.wire == 4 and brand is None:
            # hold the node at wire 4: brand it if nobody has. Only then: a classroom
            # student may read the brand but not write it, even with NX
            try:
                self.client.set(keyspace.VERSION_KEY, want, nx=True)
            except redis.exceptions.NoPermissionError as exc:
                raise WireError(
                    "EMQWIRE the node has no brand and this user may not write it: on a shared node the "
                    "instructor brands it (python -m echomq_teach.classroom brand)"
                ) from exc
            brand = self.client.get(keyspace.VERSION_KEY)
        if brand != want:
            raise WireError(
                f"EMQWIRE node is branded {brand!r} but a wire={self.wire} connector needs {want!r}"
                + ("" if brand else " (a native node is branded when it starts)")
            )
        if self.wire == 6 and not self.module_loaded():
            raise WireError("EMQWIRE a wire=6 connector needs the trafikey module loaded on the node")

    def module_loaded(self) -> bool:
        """True when the node has loaded the ``trafikey`` module."""
        try:
            mods = self.client.execute_command("MODULE", "LIST")
        except redis.exceptions.NoPermissionError:
            # a classroom student may not run MODULE: ask which commands the module registered
            return bool(self.client.command_list(module="trafikey"))
        return any(_module_name(m) == "trafikey" for m in mods)

    @property
    def native(self) -> bool:
        """True when this connector sends EMQ.* commands where a twin exists."""
        return self.wire == 6

    # -- sending ----------------------------------------------------------------------
    def call(self, *args: Any) -> Any:
        """Send one plain command and trace it."""
        entry = TraceEntry(list(args))
        return self._send(entry, lambda: self.client.execute_command(*args))

    def eval(self, script: str | scripts.Script, keys: Sequence[str], argv: Iterable[Any]) -> Any:
        """Run a transition script by EVALSHA, loading it once; NOSCRIPT reloads and retries once."""
        sc = scripts.load(script) if isinstance(script, str) else script
        argv = list(argv)
        if sc.sha not in self._loaded:
            self.client.script_load(sc.source)
            self._loaded.add(sc.sha)
        args = ["EVALSHA", sc.sha, len(keys), *keys, *argv]
        try:
            return self._send(TraceEntry(args, script=sc.name), lambda: self.client.execute_command(*args))
        except redis.exceptions.NoScriptError:
            # the node lost its script cache (SCRIPT FLUSH, a restart): load again and retry once;
            # the refused EVALSHA, the SCRIPT LOAD and the retry each stay in the trace
            self.call("SCRIPT", "LOAD", sc.source)
            return self._send(TraceEntry(list(args), script=sc.name), lambda: self.client.execute_command(*args))

    def eval_many(
        self, script: str | scripts.Script, calls: Sequence[tuple[Sequence[str], Sequence[Any]]]
    ) -> list[Any]:
        """Run one script once per (keys, argv) in a single pipeline: one round trip for them all.

        Each call is its own EVALSHA (each atomic, none with the others), each
        traced; a call's refusal is its answer in the list (an exception
        object), not raised. Calls the node answered NOSCRIPT did not run: the
        script is loaded again and those calls are sent again, once.
        """
        sc = scripts.load(script) if isinstance(script, str) else script
        if sc.sha not in self._loaded:
            self.client.script_load(sc.source)
            self._loaded.add(sc.sha)
        todo = list(range(len(calls)))
        replies: list[Any] = [None] * len(calls)
        for attempt in range(2):
            pipe = self.client.pipeline(transaction=False)
            entries = []
            for i in todo:
                keys, argv = calls[i]
                args = ["EVALSHA", sc.sha, len(keys), *keys, *argv]
                entries.append(TraceEntry(args, script=sc.name))
                pipe.execute_command(*args)
            self.trace.extend(entries)
            answers = pipe.execute(raise_on_error=False)
            again = []
            for i, entry, answer in zip(todo, entries, answers):
                entry.reply, entry.error = answer, isinstance(answer, Exception)
                if isinstance(answer, redis.exceptions.NoScriptError) and attempt == 0:
                    again.append(i)
                replies[i] = answer
            if not again:
                break
            self.call("SCRIPT", "LOAD", sc.source)
            todo = again
        return replies

    def _send(self, entry: TraceEntry, fn: Any) -> Any:
        self.trace.append(entry)
        try:
            entry.reply = fn()
        except redis.exceptions.ResponseError as exc:
            entry.reply, entry.error = exc, True
            raise
        return entry.reply

    # -- the trace ----------------------------------------------------------------------
    def last(self, n: int = 1) -> list[TraceEntry]:
        """The last ``n`` entries of the trace, oldest first."""
        return list(self.trace)[-n:]

    def show_trace(self, n: int = 10) -> str:
        """The last ``n`` commands and replies, as text."""
        return "\n".join(str(e) for e in self.last(n))

    def clear_trace(self) -> None:
        self.trace.clear()

    def fork(self) -> Connector:
        """A new connector on the same node (its own client and trace), e.g. for another process."""
        return connect(self.address, wire=self.wire, node=self.node)

    def close(self) -> None:
        self.client.close()


def _module_name(entry: Any) -> str:
    if isinstance(entry, dict):
        return str(entry.get("name", ""))
    if isinstance(entry, (list, tuple)):
        pairs = dict(zip(entry[::2], entry[1::2]))
        return str(pairs.get("name", ""))
    return ""


def make_client(address: dict[str, Any]) -> redis.Redis:
    """A redis-py client that answers strings and never retries silently.

    ``address`` holds ``host``/``port`` or ``unix_socket_path``, and ``password``
    (and ``username`` for a classroom's ACL user).
    """
    # surrogateescape: a bytes payload that is not UTF-8 comes back as a str that encodes to the
    # same bytes, instead of a decode error raised after the claim already moved the job
    return redis.Redis(**address, decode_responses=True, encoding_errors="surrogateescape", retry=Retry(NoBackoff(), 0))


def connect(address: dict[str, Any], wire: int = 4, node: Any = None) -> Connector:
    """A fresh connector (its own client and trace) on the node at ``address`` (``node`` kept alive)."""
    return Connector(make_client(address), wire=wire, address=dict(address), node=node)


def address_from_url(url: str) -> dict[str, Any]:
    """redis-py keyword arguments for a ``redis://[user:pw@]host:port[/db]`` or ``unix://`` URL."""
    kw = redis.connection.parse_url(url)
    kw.pop("connection_class", None)
    if "path" in kw:
        kw["unix_socket_path"] = kw.pop("path")
    return kw
