"""The classroom's JupyterHub authenticator: a password of each student's own, the instructor as admin.

Built on the native authenticator (``jupyterhub-nativeauthenticator``): a
student signs up at ``/hub/signup`` with a password they choose, and may log
in only once the instructor has authorized that sign-up at ``/hub/authorize``.
What this class adds for a classroom:

- only names on the roster (and the instructor) may sign up or log in;
- a roster name is never authorized by itself (the native authenticator
  would pre-authorize every allowed user's sign-up, so whoever signed up first
  as ``bob`` would be bob): the instructor approves each one;
- the instructor's own account is created when the hub starts, from a
  root-only password file, so nobody can sign up as the instructor first.

Wrong passwords are slowed, never a name locked: every login comes from the same
address (the proxy, 127.0.0.1), so the native authenticator's lock-out of a
name after ``allowed_failed_logins`` failures let any student lock any other
out. Here a correct password always opens the account at once, whatever others
tried before; past ``allowed_failed_logins`` wrong ones for a name (within
``seconds_before_next_try`` of each other) every further wrong answer waits
1, 2, 4 … up to ``max_wrong_delay_s`` seconds before it is given. The password
check (bcrypt, about a quarter of a second) runs off the hub's event loop.
Imported only by ``docker/jupyterhub_config.py``: the kit never needs JupyterHub.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import bcrypt
from nativeauthenticator import NativeAuthenticator
from nativeauthenticator.handlers import LoginHandler
from nativeauthenticator.orm import UserInfo
from traitlets import Float, Set, Unicode

from ..classroom.roster import read_roster


class _Timer:
    def start(self) -> _Timer:
        return self

    def stop(self, send: bool = True) -> None:
        pass


class _NoStats:
    def timer(self, name: str) -> _Timer:
        return _Timer()


class _Login(LoginHandler):
    """The native login form on JupyterHub 6, which dropped the handlers' ``statsd`` it still times with."""

    @property
    def statsd(self) -> _NoStats:
        return _NoStats()


class ClassroomAuthenticator(NativeAuthenticator):
    """NativeAuthenticator limited to the roster, every student approved by the instructor."""

    roster_file = Unicode("", config=True, help="The roster: only its students may sign up and log in")
    instructor_password_file = Unicode(
        "", config=True, help="A root-only file holding the instructor's password; the account is made from it"
    )
    roster = Set()
    max_wrong_delay_s = Float(30.0, config=True, help="The longest a wrong password's answer waits")

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        if self.roster_file and Path(self.roster_file).exists():
            self.roster = set(read_roster(self.roster_file))
        self.allowed_users = set(self.roster) | set(self.admin_users)

    def get_handlers(self, app: object) -> list:
        return [(path, _Login if handler is LoginHandler else handler) for path, handler in super().get_handlers(app)]

    def validate_username(self, username: str) -> bool:
        name = self.normalize_username(username)
        if name not in self.roster and name not in self.admin_users:
            return False
        return super().validate_username(username)

    def get_authed_users(self) -> set[str]:
        # authorized sign-ups and the admins: never the roster by itself (see the module docstring)
        authed = {info.username for info in UserInfo.all_users(self.db) if info.is_authorized}
        return authed | set(self.admin_users)

    async def authenticate(self, handler: Any, data: dict[str, str]) -> str | None:
        """The name, for an authorized user's correct password (at once); None, slowed, for a wrong one."""
        name = self.normalize_username(data.get("username", ""))
        info = self.get_user(name)
        if not info:
            return None
        hashed, password = info.password, data.get("password", "")
        right = await asyncio.to_thread(bcrypt.checkpw, password.encode(), hashed)
        if info.has_2fa:
            right = right and info.is_valid_token(data.get("2fa"))
        if right and info.is_authorized:
            # the name's count of wrong ones stays: a login by its owner does not hand a guesser fresh tries
            return name
        if not right:
            await asyncio.sleep(self.wrong_delay(name))
        return None

    def wrong_delay(self, name: str, now: float | None = None) -> float:
        """Count one wrong password for ``name``; answers how long its answer waits (0 for the first few)."""
        now = time.time() if now is None else now
        seen = self.login_attempts.get(name)
        if seen is None or now - seen["at"] > self.seconds_before_next_try:
            seen = self.login_attempts[name] = {"count": 0, "at": now}
        seen["count"] += 1
        seen["at"] = now
        over = seen["count"] - self.allowed_failed_logins
        return 0.0 if over <= 0 else min(2.0 ** (over - 1), self.max_wrong_delay_s)

    def add_user(self, user: object) -> None:
        """The hub's start calls this for every admin: the instructor's account, made from the password file."""
        name = getattr(user, "name", "")
        if name in self.admin_users and self.instructor_password_file and not self.user_exists(name):
            password = Path(self.instructor_password_file).read_text(encoding="utf-8").strip()
            hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt())
            self.db.add(UserInfo(username=name, password=hashed, is_authorized=True))
            self.db.commit()
            self.log.info("created the instructor account %s from %s", name, self.instructor_password_file)
        return super().add_user(user)
