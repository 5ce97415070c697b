"""The connector: one traced client for one node and one wire (EchoMQ.Connector).

``Connector`` is what every connector is (the wire, the brand, scripts loaded
once and sent by EVALSHA, the NOSCRIPT retry, the trace); ``NodeConnector`` is
the one on a single node, and ``cluster_connector.ClusterConnector`` the one
on a Valkey Cluster. A ``wire=4`` connector runs scripts only and holds its
node at ``echomq:4.0.0``. A ``wire=6`` connector requires ``echomq:6.0.0`` and the loaded ``trafikey``
module; the job functions send it the native command wherever one exists.
Every command is kept in a trace, written as a learner would type it.

A transition's call (``transitions``: its keys and arguments, built once)
goes through ``run`` (or ``NodeConnector.entry`` for a pipelined lane): the
native command on wire 6 where the call has one, else the script; a
connector made with a ``ScriptSet`` runs another script in a transition's
place, on either wire, and its forks keep the set.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

import redis
from redis._parsers import _HiredisParser, _RESP2Parser
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.utils import HIREDIS_AVAILABLE

from . import keyspace, scripts
from .errors import BadInput, NodeError, WireError
from .transitions import KIT, Call, ScriptSet

TRACE_LIMIT = 500
#: how long a connector waits for a keeper to load a script this user may not load (a classroom's node)
KEEPER_WAIT_S = 10.0
_SHOWN_ARG = 40  # longer arguments (payloads) are cut in the trace text
#: the reply parsers a client may use: redis-py's own (the default) or the hiredis C parser
PARSERS = {"python": _RESP2Parser, "hiredis": _HiredisParser}

# With hiredis installed, redis-py also packs every command with it, and hiredis encodes a str
# argument strictly: a payload that came back surrogate-escaped (bytes that are not UTF-8) could not
# be sent back. The kit keeps redis-py's own packing, which encodes with the client's
# encoding_errors, for every client in the process (cluster clients too); hiredis parses replies only,
# where a connector asks for it (docs/decisions.md).
redis.connection.HIREDIS_AVAILABLE = False


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


#: a node gone (killed, failing over): the call may or may not have run there (``NotSent`` is one that did not)
LINK_ERRORS = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.ClusterDownError,
    redis.exceptions.ClusterError,
)


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
    #: the shortcuts this command was sent with (``pipeline 1/2``, ``hiredis`` …): none on the plain path
    shortcuts: tuple[str, ...] = ()

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
        cut = f"  ⟨{' · '.join(self.shortcuts)}⟩" if self.shortcuts else ""
        hops = "".join(f"\n  ↪ {r}" for r in self.redirects)
        where = f"  @ {self.node}" if self.node else ""
        return f"{self.line}{who}{cut}{hops}\n  → {self.reply_text}{where}"


@dataclass
class Connector(ABC):
    """What every connector is: a client on one wire (4 or 6) with one trace (EchoMQ.Connector).

    Two kinds share it: ``NodeConnector`` (one node, here) and ``ClusterConnector``
    (a Valkey Cluster, ``cluster_connector.py``). Both check the wire and the
    brand when made, load each transition script once and send it by EVALSHA,
    load it again and send once more when the node answers NOSCRIPT, and trace
    every command. What differs is where a command goes: a subclass says how it
    sends a script (``_send_script``), loads it (``_load_once``, ``_reload``)
    and pipelines a batch of calls (``_batches``, ``_pipeline``).
    """

    client: Any
    wire: int = 4
    trace: deque[TraceEntry] = field(default_factory=lambda: deque(maxlen=TRACE_LIMIT))
    #: how to reach the node again (redis-py keyword arguments), for ``fork`` and other processes
    address: dict[str, Any] = field(default_factory=dict)
    #: the node this connector came from: held so the node lives while its connectors do
    node: Any = field(default=None, repr=False, compare=False)
    #: the client's reply parser: ``"python"`` (redis-py's, the default) or ``"hiredis"`` (a shortcut)
    parser: str = "python"
    #: the Lua each transition runs (``run``): the kit's, or another script in a transition's place; forks keep it
    script_set: ScriptSet = field(default=KIT, repr=False)
    #: True for a connector on a Valkey Cluster: every call is routed on its own (no pipelined lane)
    on_cluster: ClassVar[bool] = False

    def __post_init__(self) -> None:
        check_wire(self.wire)
        if not isinstance(self.script_set, ScriptSet):
            raise BadInput(f"script_set must be a transitions.ScriptSet, got {type(self.script_set).__name__}")
        #: the round trips this connector has made (a command, or a pipeline): what the throughput lab counts
        self.round_trips = 0
        #: what this connector has loaded: a sha, or (node, sha) on a cluster (a script cache is per node)
        self.loaded: set[Any] = set()
        # every entry names the shortcuts it went with: hiredis for each one this client parses
        self._tags: tuple[str, ...] = ("hiredis",) if self.parser == "hiredis" else ()
        self._start()
        self._check_brand()

    @abstractmethod
    def _start(self) -> None:
        """A subclass's own state, set before the brand is checked."""

    # -- the brand -----------------------------------------------------------------
    @property
    def brand(self) -> str:
        """The brand this connector's wire needs: ``echomq:4.0.0`` or ``echomq:6.0.0``."""
        return keyspace.BRAND_WIRE4 if self.wire == 4 else keyspace.BRAND_WIRE6

    @property
    def native(self) -> bool:
        """True when this connector sends EMQ.* commands where a twin exists."""
        return self.wire == 6

    @abstractmethod
    def _check_brand(self) -> None:
        """Refuse (``WireError``) a node or cluster this wire may not use; brand it where that is the rule."""

    @abstractmethod
    def module_loaded(self) -> bool:
        """True when the ``trafikey`` module is loaded (on every node, for a cluster)."""

    # -- sending ----------------------------------------------------------------------
    @abstractmethod
    def call(self, *args: Any) -> Any:
        """Send one plain command and trace it."""

    def via(self, call: Call) -> str | scripts.Script:
        """What runs ``call`` here: its native command (wire 6, where it has one and its script is the kit's),
        else the script: the one standing in its transition's place (``script_set``), or the kit's."""
        own = self.script_set.get(call.transition)
        if own is None and self.native and call.command:
            return call.command
        return own or scripts.load(call.script)

    def run(self, call: Call) -> Any:
        """Send one transition's call (``transitions``) as ``via`` says; traced, a refusal raised as it came."""
        how = self.via(call)
        if isinstance(how, str):
            return self.call(how, len(call.keys), *call.keys, *call.argv)
        return self.eval(how, call.keys, call.argv)

    def run_many(self, calls: Sequence[Call]) -> list[Any]:
        """Calls of one transition without a native twin (a batch of enqueues), pipelined as ``eval_many``."""
        if len({c.transition for c in calls}) > 1 or any(c.command for c in calls):
            raise BadInput("run_many takes calls of one transition that has no native command")
        if not calls:
            return []
        return self.eval_many(self.script_set.script(calls[0].transition), [(c.keys, c.argv) for c in calls])

    def eval(self, script: str | scripts.Script, keys: Sequence[str], argv: Iterable[Any]) -> Any:
        """Run a transition script by EVALSHA, loading it once; NOSCRIPT reloads and retries once."""
        sc = scripts.load(script) if isinstance(script, str) else script
        args = ["EVALSHA", sc.sha, len(keys), *keys, *list(argv)]
        where = self._script_place(sc, keys)
        self._load_once(sc, where)
        refused = TraceEntry(args, script=sc.name)
        try:
            return self._send_script(refused, where)
        except redis.exceptions.NoScriptError:
            # the node lost its script cache (SCRIPT FLUSH, a restart, a promoted replica): load again
            # and retry once; the refused EVALSHA, the SCRIPT LOAD and the retry each stay in the trace
            self._reload(sc, refused)
            return self._send_script(TraceEntry(list(args), script=sc.name), where)

    def eval_many(
        self, script: str | scripts.Script, calls: Sequence[tuple[Sequence[str], Sequence[Any]]]
    ) -> list[Any]:
        """Run one script once per (keys, argv), pipelined: one round trip for them all (per slot on a cluster).

        Each call is its own EVALSHA (each atomic, none with the others), each
        traced; a call's refusal is its answer in the list (an exception
        object), not raised. A call the node answered NOSCRIPT (or, on a
        cluster, MOVED) did not run: those calls are sent again, once.
        """
        sc = scripts.load(script) if isinstance(script, str) else script
        replies: list[Any] = [None] * len(calls)
        for where, todo in self._batches(sc, calls):
            for attempt in range(2):
                todo = self._pipeline(sc, calls, todo, where, replies, last=attempt == 1)
                if not todo:
                    break
        return replies

    def _script_place(self, sc: scripts.Script, keys: Sequence[str]) -> Any:
        """Where a script call goes (nothing on one node; a cluster's slot); refusals before any send."""
        return None

    @abstractmethod
    def _load_once(self, sc: scripts.Script, where: Any) -> None:
        """Load ``sc`` (untraced) where it runs, unless this connector already did."""

    @abstractmethod
    def _reload(self, sc: scripts.Script, refused: TraceEntry) -> None:
        """Load ``sc`` again (traced) where ``refused`` was answered NOSCRIPT."""

    @abstractmethod
    def _send_script(self, entry: TraceEntry, where: Any) -> Any:
        """Send the EVALSHA ``entry`` and trace it."""

    @abstractmethod
    def _batches(
        self, sc: scripts.Script, calls: Sequence[tuple[Sequence[str], Sequence[Any]]]
    ) -> list[tuple[Any, list[int]]]:
        """The calls of ``eval_many`` in the batches they are pipelined in: (where, indices)."""

    @abstractmethod
    def _pipeline(self, sc: scripts.Script, calls: Sequence[tuple[Sequence[str], Sequence[Any]]],
                  todo: list[int], where: Any, replies: list[Any], last: bool) -> list[int]:
        """Send the calls ``todo`` in one pipeline into ``replies``; answers those to send again."""

    def traced(self, entry: TraceEntry, fn: Any) -> Any:
        """Send by ``fn`` what ``entry`` names, and trace it (its shortcuts, its reply or refusal): the one place a
        connector's commands are sent and traced, one round trip each."""
        if self._tags:
            entry.shortcuts += self._tags
        self.trace.append(entry)
        self.round_trips += 1
        try:
            entry.reply = fn()
        except redis.exceptions.ResponseError as exc:
            entry.reply, entry.error = exc, True
            raise
        return entry.reply

    @contextmanager
    def tagged(self, *names: str) -> Iterator[None]:
        """Every entry sent inside the block also names ``names`` (a shortcut's fallback, a metronome's tick)."""
        before = self._tags
        self._tags = (*names, *before)
        try:
            yield
        finally:
            self._tags = before

    # -- the trace ----------------------------------------------------------------------
    def last(self, n: int = 1) -> list[TraceEntry]:
        """The last ``n`` entries of the trace, oldest first."""
        return list(self.trace)[-n:]

    def show_trace(self, n: int = 10) -> str:
        """The last ``n`` commands and replies, as text."""
        return "\n".join(str(e) for e in self.last(n))

    def clear_trace(self) -> None:
        self.trace.clear()

    @abstractmethod
    def fork(self, parser: str | None = None) -> Connector:
        """A new connector on the same node or cluster (its own client and trace), e.g. for another process.

        ``parser`` chooses the new client's reply parser (``None``: this one's).
        """

    def close(self) -> None:
        self.client.close()


@dataclass
class NodeConnector(Connector):
    """A connector bound to one node: one client, one wire (4 or 6), one trace, and a pipelined lane."""

    client: redis.Redis

    def _start(self) -> None:
        self._lane: Any = None  # the socket send_many holds (a redis-py Connection), opened on first use
        self._by_sha: dict[str, scripts.Script] = {}  # every script script_call made ready, by its SHA
        # True once the node refused this user SCRIPT LOAD: a classroom's shared node, whose scripts the
        # instructor's keeper loads (python -m echomq_teach.classroom keep-scripts); then this connector waits
        self._kept = False

    # -- the brand -----------------------------------------------------------------
    def _check_brand(self) -> None:
        want = self.brand
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
        return lists_trafikey(mods)

    # -- sending ----------------------------------------------------------------------
    def call(self, *args: Any) -> Any:
        """Send one plain command and trace it."""
        entry = TraceEntry(list(args))
        return self.traced(entry, lambda: self.client.execute_command(*args))

    def _load_once(self, sc: scripts.Script, where: Any) -> None:
        if sc.sha not in self.loaded:
            if not self._kept:
                try:
                    self.client.script_load(sc.source)
                except redis.exceptions.NoPermissionError:
                    self._kept = True  # the EVALSHA finds the keeper's copy, or waits for it on NOSCRIPT
            self.loaded.add(sc.sha)

    def _reload(self, sc: scripts.Script, refused: TraceEntry) -> None:
        if not self._kept:
            try:
                self.call("SCRIPT", "LOAD", sc.source)
                return
            except redis.exceptions.NoPermissionError:
                self._kept = True
        self._await_keeper(sc)

    def _await_keeper(self, sc: scripts.Script) -> None:
        """Wait (bounded) for the node's keeper to load ``sc`` again: after a restart or a flush of its cache."""
        deadline = time.monotonic() + KEEPER_WAIT_S
        while not self.client.script_exists(sc.sha)[0]:
            if time.monotonic() > deadline:
                raise NodeError(
                    f"the node has no {sc.name} and this user may not load scripts: on a classroom's shared node "
                    "the instructor's side loads the kit's scripts (python -m echomq_teach.classroom keep-scripts)"
                )
            time.sleep(0.1)

    def _send_script(self, entry: TraceEntry, where: Any) -> Any:
        return self.traced(entry, lambda: self.client.execute_command(*entry.args))

    def _batches(
        self, sc: scripts.Script, calls: Sequence[tuple[Sequence[str], Sequence[Any]]]
    ) -> list[tuple[Any, list[int]]]:
        return [(None, list(range(len(calls))))]

    def _pipeline(self, sc: scripts.Script, calls: Sequence[tuple[Sequence[str], Sequence[Any]]],
                  todo: list[int], where: Any, replies: list[Any], last: bool) -> list[int]:
        self._load_once(sc, where)
        pipe = self.client.pipeline(transaction=False)
        entries = []
        for i in todo:
            keys, argv = calls[i]
            args = ["EVALSHA", sc.sha, len(keys), *keys, *argv]
            entries.append(TraceEntry(args, script=sc.name))
            pipe.execute_command(*args)
        self.trace.extend(entries)
        self.round_trips += 1
        answers = pipe.execute(raise_on_error=False)
        again = []
        for i, entry, answer in zip(todo, entries, answers):
            entry.reply, entry.error = answer, isinstance(answer, Exception)
            if isinstance(answer, redis.exceptions.NoScriptError) and not last:
                again.append(i)
            replies[i] = answer
        if again:
            self._reload(sc, entries[0])
        return again

    # -- several commands in one round trip (the Pool's shortcuts, docs/decisions.md) ------------
    def command(self, *args: Any) -> TraceEntry:
        """A plain command, ready for ``send_many`` (nothing is sent yet)."""
        return TraceEntry(list(args))

    def script_call(self, script: str | scripts.Script, keys: Sequence[str], argv: Iterable[Any]) -> TraceEntry:
        """An EVALSHA of a transition script, ready for ``send_many``; the script is loaded first if need be."""
        sc = scripts.load(script) if isinstance(script, str) else script
        self._load_once(sc, None)
        self._by_sha[sc.sha] = sc  # a NOSCRIPT answer loads it again by its SHA
        return TraceEntry(["EVALSHA", sc.sha, len(keys), *keys, *argv], script=sc.name)

    def entry(self, call: Call) -> TraceEntry:
        """A transition's call (``transitions``) ready for ``send_many``, as ``via`` says it runs."""
        how = self.via(call)
        if isinstance(how, str):
            return self.command(how, len(call.keys), *call.keys, *call.argv)
        return self.script_call(how, call.keys, call.argv)

    def send_many(self, entries: Sequence[TraceEntry], tag: str = "pipeline") -> list[Any]:
        """Send the entries in one round trip on this connector's own socket; each one is traced.

        More than one entry is a pipeline (no MULTI: the node runs them one after
        another, as it would one round trip apart), each entry named ``pipeline
        i/n`` in the trace. Replies come back in order, and a refusal stands in
        its place as the exception, not raised: the caller decides what each one
        means. A lost link raises, as a single call does. An EVALSHA the node
        answers NOSCRIPT (its script cache was flushed) is loaded and sent again
        on its own, in order.
        """
        n = len(entries)
        for i, e in enumerate(entries, 1):
            e.shortcuts += ((f"{tag} {i}/{n}",) if n > 1 else ()) + self._tags
            self.trace.append(e)
        self.round_trips += 1
        link = self._lane_link()
        try:
            if self.parser == "hiredis":
                # hiredis packs too; each str is encoded first as the client decodes (surrogateescape)
                link.send_packed_command([b"".join(_hiredis_pack(e.args) for e in entries)], check_health=False)
            elif n == 1:
                link.send_packed_command(link.pack_command(*entries[0].args), check_health=False)
            else:
                link.send_packed_command(link.pack_commands([e.args for e in entries]), check_health=False)
            for e in entries:
                try:
                    e.reply = link.read_response()
                except redis.exceptions.ResponseError as exc:
                    e.reply, e.error = exc, True
        except BaseException:
            link.disconnect()  # a half-read link is no use: the next send opens a fresh one
            raise
        replies = [e.reply for e in entries]
        for i, e in enumerate(entries):
            if isinstance(e.reply, redis.exceptions.NoScriptError):
                replies[i] = self._send_again(e)
        return replies

    def _send_again(self, refused: TraceEntry) -> Any:
        """An EVALSHA refused NOSCRIPT: load its script, then send it alone; the reply or the refusal."""
        sc = self._by_sha[refused.args[1]]
        if self._kept or isinstance(self.send_many([self.command("SCRIPT", "LOAD", sc.source)])[0],
                                    redis.exceptions.NoPermissionError):
            self._kept = True
            self._await_keeper(sc)
        again = TraceEntry(list(refused.args), script=refused.script)
        return self.send_many([again])[0]

    def _lane_link(self) -> Any:
        if self._lane is None:
            self._lane = self.client.connection_pool.get_connection()
        return self._lane

    def fork(self, parser: str | None = None) -> NodeConnector:
        """A new connector on the same node (its own client and trace), e.g. for another process."""
        return connect(self.address, wire=self.wire, node=self.node, parser=parser or self.parser,
                       script_set=self.script_set)

    def close(self) -> None:
        if self._lane is not None:
            self.client.connection_pool.release(self._lane)
            self._lane = None
        self.client.close()


def _hiredis_pack(args: Sequence[Any]) -> bytes:
    import hiredis

    try:
        # the usual case: every str encodes as plain UTF-8, and hiredis encodes it in C (a fifth of the cost)
        return hiredis.pack_command(tuple(args))
    except UnicodeEncodeError:
        # a payload that came back surrogate-escaped: encoded first as the client decodes it
        return hiredis.pack_command(tuple(a.encode("utf-8", "surrogateescape") if isinstance(a, str) else a
                                          for a in args))


def lists_trafikey(modules: Any) -> bool:
    """True when a ``MODULE LIST`` reply names ``trafikey``."""
    return any(_module_name(m) == "trafikey" for m in modules)


def _module_name(entry: Any) -> str:
    if isinstance(entry, dict):
        return str(entry.get("name", ""))
    if isinstance(entry, (list, tuple)):
        pairs = dict(zip(entry[::2], entry[1::2]))
        return str(pairs.get("name", ""))
    return ""


def check_parser(parser: object) -> str:
    """``"python"`` or ``"hiredis"`` (only where the hiredis package is installed), or BadInput."""
    if parser not in PARSERS:
        raise BadInput(f"parser must be 'python' or 'hiredis', got {parser!r}")
    if parser == "hiredis" and not HIREDIS_AVAILABLE:
        raise BadInput("parser 'hiredis' needs the hiredis package (3.2 or newer): pip install hiredis")
    return parser  # type: ignore[return-value]


def check_wire(wire: object) -> int:
    """4 or 6, or WireError."""
    if wire not in (4, 6):
        raise WireError(f"wire must be 4 or 6, got {wire!r}")
    return wire  # type: ignore[return-value]


def client_options() -> dict[str, Any]:
    """What every client the kit makes shares (a node's or a cluster's): strings back, no silent retry."""
    # surrogateescape: a bytes payload that is not UTF-8 comes back as a str that encodes to the
    # same bytes, instead of a decode error raised after the claim already moved the job
    return {"decode_responses": True, "encoding_errors": "surrogateescape", "retry": Retry(NoBackoff(), 0)}


def make_client(address: dict[str, Any], parser: str = "python") -> redis.Redis:
    """A redis-py client that answers strings and never retries silently.

    ``address`` holds ``host``/``port`` or ``unix_socket_path``, and ``password``
    (and ``username`` for a classroom's ACL user). ``parser`` names the reply
    parser: redis-py's own by default, whether or not hiredis is installed, so
    that the C parser is a choice a caller makes (a Pool's shortcut).
    """
    check_parser(parser)
    client = redis.Redis(**address, **client_options())
    client.connection_pool.connection_kwargs["parser_class"] = PARSERS[parser]
    return client


def connect(address: dict[str, Any], wire: int = 4, node: Any = None, parser: str = "python",
            script_set: ScriptSet = KIT) -> NodeConnector:
    """A fresh connector (its own client and trace) on the node at ``address`` (``node`` kept alive).

    ``script_set`` runs another script in a transition's place (``transitions.ScriptSet``).
    """
    return NodeConnector(make_client(address, parser), wire=wire, address=dict(address), node=node, parser=parser,
                         script_set=script_set)


def address_from_url(url: str) -> dict[str, Any]:
    """redis-py keyword arguments for a ``redis://[user:pw@]host:port[/db]`` or ``unix://`` URL."""
    kw = redis.connection.parse_url(url)
    kw.pop("connection_class", None)
    if "path" in kw:
        kw["unix_socket_path"] = kw.pop("path")
    return kw
