"""Credentials: each student's node URL and namespace, and the instructor's admin URLs.

Every secret file the classroom writes is created exclusively (``O_EXCL``),
mode 0600 from its first byte, under a random name in the target's own folder,
and then renamed over the target: never through a predictable temporary name
that someone else could have planted as a symlink. The file belongs to whoever
writes it (root, on a hub host), and nobody else may read it.

The admin URL never travels on a command line (``ps`` shows every argument to
every user): it comes from ``$ECHOMQ_ADMIN_URL`` or from an env file such as
the ``admin.env`` that ``classroom init`` writes.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import EchoMQError

ADMIN_VARS = ("ECHOMQ_ADMIN_URL", "ECHOMQ_NATIVE_ADMIN_URL")


@dataclass(frozen=True)
class Student:
    """One provisioned student: their ACL user, password and kernel environment."""

    name: str
    password: str
    host: str
    port: int
    native_host: str | None = None
    native_port: int | None = None
    #: the scripted node's Unix socket as the student's container sees it (then host/port are unused)
    socket: str | None = None
    #: the native node's, likewise (then native_host/native_port are unused)
    native_socket: str | None = None

    @property
    def url(self) -> str:
        if self.socket:
            return f"unix://{self.name}:{self.password}@{self.socket}"
        return f"redis://{self.name}:{self.password}@{self.host}:{self.port}/0"

    @property
    def native_url(self) -> str | None:
        if self.native_socket:
            return f"unix://{self.name}:{self.password}@{self.native_socket}"
        if self.native_host is None:
            return None
        return f"redis://{self.name}:{self.password}@{self.native_host}:{self.native_port}/0"

    @property
    def env(self) -> dict[str, str]:
        """The variables the student's kernel needs."""
        out = {"ECHOMQ_URL": self.url, "ECHOMQ_NAMESPACE": self.name}
        if self.native_url:
            out["ECHOMQ_NATIVE_URL"] = self.native_url
        return out


def export_lines(env: Mapping[str, str]) -> str:
    """``export K='v'`` lines for a shell."""
    return "\n".join(f"export {k}='{v}'" for k, v in env.items())


def write_secret(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` as a 0600 file of the caller's, replacing it atomically.

    mkstemp opens a random name in the same folder with O_CREAT|O_EXCL (and no
    symlink is followed); the rename then replaces the target itself, even a
    symlink planted there, never the file it points at.
    """
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{p.name}.", suffix=".new")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p


def write_credentials(path: str | os.PathLike[str], students: Sequence[Student]) -> Path:
    """The credentials file, JSON: ``{"students": {name: {VAR: value}}}`` (0600, the writer's)."""
    data = {"students": {s.name: s.env for s in students}}
    return write_secret(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def read_credentials(path: str | os.PathLike[str]) -> dict[str, dict[str, str]]:
    """name → the student's environment, from a file written by ``write_credentials``."""
    return dict(json.loads(Path(path).read_text(encoding="utf-8"))["students"])


def spawner_environment(username: str, path: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """The variables a hub spawner sets for ``username`` (``{}`` when not on the roster)."""
    path = path or os.environ.get("ECHOMQ_CLASSROOM_CREDENTIALS")
    if not path or not Path(path).exists():
        return {}
    return dict(read_credentials(path).get(username.lower(), {}))


def read_env_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """``KEY=value`` lines (blank lines and ``#`` comments skipped), as ``admin.env`` holds them."""
    out: dict[str, str] = {}
    for lineno, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise EchoMQError(f"{path}:{lineno}: expected KEY=value")
        out[key.strip()] = value.strip()
    return out


def admin_urls(env_file: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """The instructor's admin URLs: from ``env_file`` when given, else from the environment."""
    source = read_env_file(env_file) if env_file else os.environ
    return {k: source[k] for k in ADMIN_VARS if source.get(k)}
