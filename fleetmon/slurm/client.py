"""The Slurm boundary: the system's ``sinfo`` and ``scontrol``, run as argument lists with a timeout.

Never a shell: every call is ``subprocess.run([...])`` with the node name and the reason as
single arguments, so nothing in them is interpreted; names that are not Slurm node names are
refused before any command runs. Every call has a timeout (a stopped or unreachable
``slurmctld`` makes ``scontrol`` wait about 10 s per try). Errors are one line:
:class:`SlurmUnavailable` (Slurm not installed, or its controller not answering) and
:class:`SlurmError` (a command refused: an unknown node, a bad name).

The state is read with ``sinfo --Node --noheader --format=%N|%T|%u|%H|%E``: the reason
(``%E``) comes last so that a ``|`` inside it cannot shift the other fields. A node in two
partitions is listed twice (the first line is kept).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fleetmon.errors import KnownError
from fleetmon.i18n import N_, Text, reason_of
from fleetmon.text import printable

__all__ = ["REASON_MAX", "REASON_PREFIX", "NodeState", "SlurmClient", "SlurmError", "SlurmUnavailable", "SlurmView",
           "check_slurm_name", "clean_reason"]

REASON_MAX = 240
"""Longest reason handed to Slurm (characters, the ``fleetmon:`` prefix included); a longer one is cut,
ending in ``…``, and the full text stays in fleetmon's record (:mod:`storage.slurm_actions`)."""
REASON_PREFIX = "fleetmon:"
DEFAULT_TIMEOUT_S = 10.0
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_FORMAT = "%N|%T|%u|%H|%E"


class SlurmError(KnownError):
    """A Slurm command refused or failed (unknown node, bad name, bad answer); the message is one line."""


class SlurmUnavailable(SlurmError):
    """Slurm cannot be asked: its commands are not installed, or ``slurmctld`` does not answer."""


def check_slurm_name(name: str) -> str:
    """``name`` if it is a plain Slurm node name (letters, digits, ``.``, ``_``, ``-``); else :class:`SlurmError`.

    Slurm host lists (``gpu[01-04]``), spaces, quotes and shell metacharacters are refused: one node
    per call, and nothing a reader of a log could mistake for a command.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        # i18n.Text: the English as before, said in the reader's language where shown; the name stays as given
        raise SlurmError(Text(N_("not a Slurm node name: {name!r} (letters, digits, '.', '_' and '-' only)"),
                              name=printable(str(name), 80)))
    return name


def clean_reason(text: str, limit: int = REASON_MAX) -> str:
    """The reason as Slurm gets it: one line (newlines and controls become spaces, runs of blanks one),
    prefixed ``fleetmon:`` (once), at most ``limit`` characters (cut with ``…``)."""
    one = " ".join(re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", " ", str(text)).split())
    if not one.lower().startswith(REASON_PREFIX):
        one = f"{REASON_PREFIX} {one}" if one else REASON_PREFIX
    if len(one) > limit:
        one = one[: max(len(REASON_PREFIX), limit - 1)].rstrip() + "…"
    return one


@dataclass(frozen=True, slots=True)
class NodeState:
    """One node as Slurm sees it.

    ``state`` is ``sinfo``'s long state in lower case without its flag (``idle``, ``allocated``,
    ``mixed``, ``drained``, ``draining``, ``down``, …); ``responding`` is false when Slurm marks the
    node not responding (``*``). ``reason`` / ``reason_by`` / ``reason_at``: why it was drained or
    set down, by whom and when (None when Slurm holds no reason).
    """

    name: str
    state: str
    responding: bool = True
    reason: str | None = None
    reason_by: str | None = None
    reason_at: str | None = None

    @property
    def drained(self) -> bool:
        """Drained or draining (taken out of scheduling)."""
        return "drain" in self.state

    @property
    def down(self) -> bool:
        return self.state.startswith("down") or self.state in ("fail", "failing")

    @property
    def by_fleetmon(self) -> bool:
        """Drained with a reason fleetmon wrote."""
        return self.drained and (self.reason or "").lower().startswith(REASON_PREFIX)

    @property
    def short(self) -> str:
        """A few words: ``idle``, ``alloc``, ``drain``, ``down`` (``*`` when not responding)."""
        base = {"allocated": "alloc", "drained": "drain", "draining": "drain", "mixed": "mix"}.get(
            self.state, self.state.split("+")[0])
        return base + ("" if self.responding else "*")

    def label(self) -> str:
        """The state with the reason and who set it: ``drain (fleetmon: gpu lost; root 2026-12-03T12:41)``."""
        if not self.reason:
            return self.short
        who = " ".join(x for x in (self.reason_by, self.reason_at) if x)
        return f"{self.short} ({printable(self.reason, 120)}{'; ' + who if who else ''})"

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "state": self.state, "short": self.short, "responding": self.responding,
                "reason": self.reason, "reason_by": self.reason_by, "reason_at": self.reason_at}


@dataclass(frozen=True, slots=True)
class SlurmView:
    """Slurm's answer for the fleet: every node it knows, or why it could not be asked (``error``).

    ``error`` set means the states are unknown, not that a node has some state: the views show
    "Slurm unavailable" rather than a state.
    """

    nodes: Mapping[str, NodeState] = field(default_factory=dict)
    error: str | None = None
    at: float | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def parse_sinfo(text: str) -> dict[str, NodeState]:
    """Nodes from ``sinfo --Node --noheader --format=%N|%T|%u|%H|%E`` output (first line of each node)."""
    out: dict[str, NodeState] = {}
    for line in text.splitlines():
        parts = line.split("|", 4)
        if len(parts) != 5 or not parts[0].strip():
            continue
        name, state, user, when, reason = (p.strip() for p in parts)
        if name in out:
            continue  # the same node in another partition
        responding = not state.endswith(("*", "~", "#", "%", "$", "@", "^", "-", "!"))
        state = state.rstrip("*~#%$@^-!").lower()
        no_reason = reason in ("", "none", "(null)")
        out[name] = NodeState(
            name=name, state=state, responding=responding, reason=None if no_reason else reason,
            reason_by=None if no_reason or user in ("", "Unknown", "(null)") else user,
            reason_at=None if no_reason or when in ("", "Unknown", "None") else when)
    return out


class SlurmClient:
    """The system's Slurm commands, with a timeout on every call.

    Args:
        conf: a ``slurm.conf`` to use (``SLURM_CONF`` for the commands); None: Slurm's own default.
        timeout_s: the longest any one command may take.
        bin_dir: where ``sinfo`` and ``scontrol`` are (None: ``PATH``).
    """

    def __init__(self, conf: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                 bin_dir: str | None = None) -> None:
        self.conf = conf
        self.timeout_s = float(timeout_s)
        self.bin_dir = bin_dir

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.conf:
            env["SLURM_CONF"] = self.conf
        return env

    def _run(self, argv: Sequence[str]) -> str:
        program = os.path.join(self.bin_dir, argv[0]) if self.bin_dir else argv[0]
        try:
            done = subprocess.run([program, *argv[1:]], stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=self.timeout_s, env=self._env(), check=False)
        except FileNotFoundError:
            raise SlurmUnavailable(Text(N_("Slurm is not installed here: no {program!r} on PATH"),
                                        program=argv[0])) from None
        except subprocess.TimeoutExpired:
            raise SlurmUnavailable(Text(N_("slurmctld did not answer within {seconds:g} s ({program})"),
                                        seconds=self.timeout_s, program=argv[0])) from None
        except OSError as exc:
            raise SlurmUnavailable(Text(N_("cannot run {program}: {error}"), program=argv[0],
                                        error=str(exc.strerror or exc))) from None
        if done.returncode != 0:
            # Slurm's own message stays as Slurm printed it (a value); only fleetmon's frame is translated
            message: str = (_first_line(done.stderr) or _first_line(done.stdout)
                            or Text(N_("exit status {status}"), status=done.returncode))
            if "Unable to contact slurm controller" in message or "Socket timed out" in message:
                raise SlurmUnavailable(Text(N_("{program}: {message}"), program=argv[0], message=message))
            raise SlurmError(Text(N_("{program}: {message}"), program=argv[0], message=message))
        return done.stdout.decode("utf-8", "replace")

    def nodes(self) -> dict[str, NodeState]:
        """Every node Slurm knows, by name.

        Raises:
            SlurmUnavailable: Slurm not installed, or its controller not answering in time.
            SlurmError: ``sinfo`` failed otherwise.
        """
        return parse_sinfo(self._run(["sinfo", "--Node", "--noheader", f"--format={_FORMAT}"]))

    def view(self, now: float | None = None) -> SlurmView:
        """:meth:`nodes` as a :class:`SlurmView` (an error becomes its ``error``, never a state)."""
        try:
            return SlurmView(nodes=self.nodes(), at=now)
        except SlurmError as exc:
            return SlurmView(error=reason_of(exc), at=now)  # a Text stays one: said in the reader's language

    def node(self, name: str) -> NodeState:
        """One node's state; :class:`SlurmError` naming it when Slurm does not know it."""
        check_slurm_name(name)
        found = self.nodes().get(name)
        if found is None:
            raise SlurmError(Text(N_("Slurm does not know node {name!r} (not in sinfo's list; "
                                     "set slurm_name for it in the fleet file, or [slurm] name_pattern)"), name=name))
        return found

    def drain(self, name: str, reason: str) -> str:
        """Drain ``name`` with ``reason`` (cleaned by :func:`clean_reason`); returns the reason as sent."""
        self.node(name)  # an unknown node is an error that says so, before any change
        sent = clean_reason(reason)
        self._run(["scontrol", "update", f"NodeName={name}", "State=DRAIN", f"Reason={sent}"])
        return sent

    def resume(self, name: str) -> None:
        """Return ``name`` to service (``State=RESUME``)."""
        self.node(name)
        self._run(["scontrol", "update", f"NodeName={name}", "State=RESUME"])


def _first_line(data: bytes | None) -> str:
    for line in (data or b"").decode("utf-8", "replace").splitlines():
        if line.strip():
            return printable(line.strip(), 300)
    return ""
