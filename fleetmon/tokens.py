"""Bearer-token files: one reader with one set of rules for the agent and the collector.

The agent reads ``--token-file`` at start (a bad file stops it); the collector
reads each node's ``token_file`` once per poll cycle (a bad file is that node's
error, the other nodes are polled). Both refuse the same files, with the same
messages:

* a file that cannot be read (missing, a directory, no permission) or is not UTF-8;
* a file group or others may read (the token is a password): ``chmod 600`` it;
* an empty file, a token under :data:`MIN_TOKEN_LENGTH` characters, or whitespace
  inside the token (two lines, a token with a blank in it: neither side could
  tell which part is meant).

One trailing newline (or surrounding blanks) is fine: ``echo TOKEN > file`` works.

Core module: standard library only (the agent imports it).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from fleetmon.errors import KnownError
from fleetmon.i18n import N_, Text

__all__ = ["MIN_TOKEN_LENGTH", "TokenFileError", "read_secret_file", "read_token_file"]

MIN_TOKEN_LENGTH = 16


class TokenFileError(KnownError):
    """A token file that cannot be used; the message names the file and what to do."""


def read_token_file(path: str | os.PathLike[str]) -> str:
    """The bearer token held in ``path`` (``~`` expanded), stripped of surrounding blanks.

    Raises:
        TokenFileError: unreadable, readable by group or others, empty, shorter
            than :data:`MIN_TOKEN_LENGTH`, or with whitespace inside.
    """
    token = _read_private(path, N_("token file"))
    if len(token) < MIN_TOKEN_LENGTH:
        raise TokenFileError(Text(N_("token file {path} holds a token shorter than {length} characters"),
                                  path=str(path), length=MIN_TOKEN_LENGTH))
    if any(c.isspace() for c in token):
        raise TokenFileError(Text(N_("token file {path} holds whitespace inside the token (one line, one token)"),
                                  path=str(path)))
    return token


def read_secret_file(path: str | os.PathLike[str], what: str = N_("secret file")) -> str:
    """The one-line secret held in ``path`` (a notification URL or its token, :mod:`fleetmon.fleet.notify`),
    stripped of surrounding blanks (``what`` names the file in the messages: a noun marked with ``N_``, said in the
    reader's language): read with the token files' rules on mode and encoding, but any length
    and blanks inside allowed (a password may hold one); more than one line is refused.

    Raises:
        TokenFileError: unreadable, readable by group or others, not UTF-8, empty, or several lines.
    """
    secret = _read_private(path, what)
    if "\n" in secret or "\r" in secret:
        raise TokenFileError(Text(N_("{what} {path} holds more than one line (one line, one secret)"),
                                  what=Text(what), path=str(path)))
    return secret


def _read_private(path: str | os.PathLike[str], what: str) -> str:
    """The text of a file only its owner may read (``~`` expanded), stripped of surrounding blanks: the
    rules token and secret files share (readable, mode 0600 or stricter, UTF-8, not empty)."""
    noun = Text(what)  # the file's kind, a noun said in the reader's language where the message is shown
    file = Path(path).expanduser()
    try:
        st = file.stat()
        raw = file.read_bytes()
    except OSError as exc:
        raise TokenFileError(Text(N_("{what} {path}: cannot read it ({error})"), what=noun, path=str(path),
                                  error=str(exc.strerror or exc))) from exc
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise TokenFileError(Text(N_("{what} {path} is readable by group or others (mode {mode}); run: chmod 600 "
                                     "{path}"), what=noun, path=str(path), mode=f"{stat.S_IMODE(st.st_mode):04o}"))
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise TokenFileError(Text(N_("{what} {path}: cannot read it (not UTF-8 text)"), what=noun,
                                  path=str(path))) from exc
    if not text:
        raise TokenFileError(Text(N_("{what} {path} is empty"), what=noun, path=str(path)))
    return text
