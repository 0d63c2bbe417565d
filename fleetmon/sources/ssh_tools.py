"""The agentless SSH source per vendor: which tool runs on the node, the constant command that runs it, and
which capture format reads its output.

A ``ssh://`` node names its tool in the fleet file (``tool = "amd-smi"``) or leaves it to detection
(``tool = "auto"``, the default). :data:`TOOLS` is the registry: each :class:`SshTool` declares its
vendor, what runs on the node and the formats of :mod:`fleetmon.sources.formats` (by name) that read
its output, so a tool is one entry here and no second parser.

What runs is constant text of this module, never built from the fleet file: the node's URL gives
only ssh's destination (checked by :func:`fleetmon.sources.source_of`), and ``tool`` only picks an
entry of :data:`TOOLS` (any other value is refused when the fleet file is loaded).

* A tool with one command and no fallback (``nvidia-smi -q -x``, ``rocm-smi --showallinfo --json``,
  ``hy-smi … --json``) runs as that argument list, as the ssh source always ran nvidia-smi: no shell
  script, so a key restricted to that command (``command="…"`` in ``authorized_keys``) keeps working.
* A tool that needs several commands (amd-smi's ``static`` and ``metric``; npu-smi's table, chip
  mapping and ``-t`` queries per chip) or a fallback (hl-smi's full field list, then the basic one)
  runs a constant one-line POSIX ``sh -c '…'`` script; a line :data:`PART` ``NAME`` precedes each
  document, so they are read apart.
* ``auto`` runs a constant script that takes the first of :data:`AUTO_ORDER` on the node's login
  PATH (``command -v``), prints :data:`MARKER` ``NAME`` and then runs that tool's command(s): one
  round trip, no second connection, no cache to go stale when a node's cards change. When none is
  there it prints ``MARKER none`` and exits 127 ("no vendor tool on the node"). Output that does not
  begin with the marker line did not come from this script (a key restricted with
  ``command="nvidia-smi -q -x"``, the command fleetmon ran before tools were named): it is read as
  nvidia-smi's, as it always was.

The ids npu-smi's ``-t`` queries need (``-i NPU -c CHIP``) come from ``npu-smi info -m`` on the node,
inside the constant script, and only rows of three decimal numbers are used (``expr``); nothing of
the fleet file reaches them. Core layer: the standard library and :mod:`fleetmon.sources` only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fleetmon.i18n import N_, Text
from fleetmon.sources import ReadLimits, SourceError
from fleetmon.sources.capture import Capture
from fleetmon.sources.hl_smi import BASIC_FIELDS, QUERY_COMMAND
from fleetmon.text import printable

__all__ = ["AUTO", "AUTO_ORDER", "MARKER", "NVIDIA_COMMAND", "PART", "RemoteCommand", "SshTool", "TOOLS",
           "TOOL_NAMES", "answer_name", "read_answer", "read_output", "remote_command", "tool_label"]

AUTO = "auto"
MARKER = "fleetmon-ssh-tool:"
"""The first line of ``auto``'s output: ``fleetmon-ssh-tool: amd-smi`` (or ``none``)."""
PART = "fleetmon-ssh-part:"
"""The line before each document of a tool that runs several commands: ``fleetmon-ssh-part: metric``."""
NVIDIA_COMMAND: tuple[str, ...] = ("nvidia-smi", "-q", "-x")
"""What the ssh source ran before tools were named, and still runs for ``tool = "nvidia-smi"``."""


@dataclass(frozen=True, slots=True)
class SshTool:
    """One vendor tool the SSH source can run.

    Attributes:
        name: the fleet file's ``tool`` value, and the program's name on the node.
        vendor: the devices' vendor (:data:`fleetmon.fields.VENDORS`).
        command: the argument list run when the tool is its one command (None: it runs ``script``).
        script: the constant ``sh`` script (one line; no single quote, ``!`` or backslash, so any login
            shell passes it to ``sh -c`` unchanged) that runs the tool, its documents after :data:`PART`
            lines; for a one-command tool, ``exec`` of the command.
        parts: the names of those documents, in order (empty: the output is one document).
        formats: the capture formats that read a document (:func:`fleetmon.sources.formats.by_name`),
            tried by their content detector in order; the first is used when none recognises it (its
            error is the reason).
        where: how the output is named in a check's message (``amd-smi static/metric --json``).
        combine: how the documents of a several-command tool become one capture (None: one document).
    """

    name: str
    vendor: str
    command: tuple[str, ...] | None
    script: str
    formats: tuple[str, ...]
    where: str
    parts: tuple[str, ...] = ()
    combine: Callable[..., Capture] | None = None


def _exec(argv: tuple[str, ...]) -> str:
    return "exec " + " ".join(argv)


def _combine_amd(*captures: Capture) -> Capture:
    from fleetmon.sources.amd import combine

    return combine(*captures)


_HL_FULL = " ".join(QUERY_COMMAND)
_HL_BASIC = " ".join(("hl-smi", "-Q", ",".join(BASIC_FIELDS), "-f", "csv"))
_HL_SCRIPT = (f"out=$({_HL_FULL} 2>/dev/null) && {{ printf %s \"$out\"; echo; }} || exec {_HL_BASIC}")
"""hl-smi: fleetmon's full field list (with the header the parser reads the fields back from); an hl-smi
that refuses a field fails the whole query, so the documented basic list is asked next
(:mod:`fleetmon.sources.hl_smi`)."""

_AMD_SCRIPT = (f"echo {PART} static; amd-smi static --json || exit $?; "
               f"echo; echo {PART} metric; exec amd-smi metric --json")
"""amd-smi: ``static`` (identity, limits, RAS setup) then ``metric`` (the readings), read apart and merged by
:func:`fleetmon.sources.amd.combine`. A blank line before each part line: a document may end without a newline."""

_NPU_SCRIPT = (
    "npu-smi info || exit $?; m=$(npu-smi info -m) || exit $?; echo; echo npu-smi info -m; printf %s \"$m\"; echo; "
    "last=; { printf %s \"$m\"; echo; } | while read -r n c l rest; do "
    "expr \"$n:$c:$l\" : \"[0-9][0-9]*:[0-9][0-9]*:[0-9][0-9]*$\" >/dev/null || continue; "
    "[ \"$n\" = \"$last\" ] || { last=$n; echo; echo npu-smi info -t board -i $n; npu-smi info -t board -i $n; }; "
    "echo; echo npu-smi info -t health -i $n -c $c; npu-smi info -t health -i $n -c $c; done; exit 0")
"""npu-smi: the table, the chip mapping (``-m``: each chip's NPU id, chip id and logical id), then per card
``-t board`` (its serial: the chips' identity) and per chip ``-t health`` (state and error codes), each after
the command line the parser gives the block to its chip by. Mapping rows that are not three decimal ids
(the header, MCU rows with logic id ``-``) are skipped. A failing ``-t`` query leaves lines the parser
skips; the table and the mapping must succeed."""

_HY_SMI = ("hy-smi", "--showid", "--showmeminfo", "vram", "--showpower", "--showserial", "--showuse", "--showtemp",
           "--showproductname", "--showuniqueid", "--json")
"""The flag set of the hy-smi JSON fixture (gpustack issue 2032: Hygon K100_AI), known to be accepted."""
_ROCM_SMI = ("rocm-smi", "--showallinfo", "--json")
_MTHREADS = ("mthreads-gmi", "-q")

TOOLS: dict[str, SshTool] = {t.name: t for t in (
    SshTool("nvidia-smi", "nvidia", NVIDIA_COMMAND, _exec(NVIDIA_COMMAND), ("nvidia-smi-xml",), "nvidia-smi -q -x"),
    SshTool("amd-smi", "amd", None, _AMD_SCRIPT, ("amd-smi-json",), "amd-smi static/metric --json",
            parts=("static", "metric"), combine=_combine_amd),
    SshTool("rocm-smi", "amd", _ROCM_SMI, _exec(_ROCM_SMI), ("rocm-smi-json", "hy-smi-json"),
            "rocm-smi --showallinfo --json"),
    SshTool("hy-smi", "hygon", _HY_SMI, _exec(_HY_SMI), ("hy-smi-json", "rocm-smi-json"), "hy-smi --json"),
    SshTool("npu-smi", "huawei", None, _NPU_SCRIPT, ("npu-smi",), "npu-smi info"),
    SshTool("hl-smi", "intel", None, _HL_SCRIPT, ("hl-smi-csv",), "hl-smi -Q … -f csv"),
    SshTool("mthreads-gmi", "mthreads", _MTHREADS, _exec(_MTHREADS),
            ("mthreads-gmi-q", "mthreads-gmi-json", "mthreads-gmi"), "mthreads-gmi -q"),
)}
"""Every tool the SSH source runs, by the fleet file's ``tool`` value."""

AUTO_ORDER: tuple[str, ...] = ("nvidia-smi", "hy-smi", "amd-smi", "rocm-smi", "npu-smi", "hl-smi", "mthreads-gmi")
"""``auto`` takes the first of these on the node's PATH: hy-smi before amd-smi and rocm-smi (a Hygon node
has Hygon's rocm-smi too), amd-smi before rocm-smi (ROCm 6 and later ship both; amd-smi reads more)."""
TOOL_NAMES: tuple[str, ...] = (AUTO, *TOOLS)
"""What the fleet file's ``tool`` takes."""

_AUTO_SCRIPT = (
    f"for t in {' '.join(AUTO_ORDER)}; do command -v $t >/dev/null 2>&1 || continue; echo {MARKER} $t; case $t in "
    + " ".join(f"{name}) {TOOLS[name].script};;" for name in AUTO_ORDER)
    + f" esac; exit $?; done; echo {MARKER} none; echo none of {', '.join(AUTO_ORDER)} is on the login PATH >&2;"
    " exit 127")

_UNSAFE = ("'", "!", "\\", "\n", "\r")
for _text in (_AUTO_SCRIPT, *(t.script for t in TOOLS.values())):  # pragma: no branch - a guard of the constants
    if any(c in _text for c in _UNSAFE):
        raise AssertionError(f"an ssh tool script holds a character a login shell would read: {_text!r}")
if set(AUTO_ORDER) != set(TOOLS):  # pragma: no cover
    raise AssertionError("AUTO_ORDER must name every tool")


@dataclass(frozen=True, slots=True)
class RemoteCommand:
    """What ssh runs on the node for one ``tool`` value, and how its output names the tool.

    Attributes:
        tool: the fleet file's value (``auto`` or a :data:`TOOLS` name).
        argv: the words after ssh's ``--`` and host (ssh joins them with blanks for the remote login shell).
    """

    tool: str
    argv: tuple[str, ...]


def remote_command(tool: str) -> RemoteCommand:
    """The command for ``tool`` (``auto`` or a :data:`TOOLS` name).

    Raises:
        SourceError: an unknown tool (the message lists the known ones).
    """
    if tool == AUTO:
        return RemoteCommand(tool, ("sh", "-c", f"'{_AUTO_SCRIPT}'"))
    known = TOOLS.get(tool)
    if known is None:
        raise SourceError(Text(N_("unknown ssh tool {tool}; known: {choices}"), tool=repr(tool),
                               choices=", ".join(TOOL_NAMES)))
    if known.command is not None:
        return RemoteCommand(tool, known.command)
    return RemoteCommand(tool, ("sh", "-c", f"'{known.script}'"))


def _marked(head: bytes) -> str | None:
    """The tool the auto script's first line names (None: the output does not begin with the marker)."""
    first = head.split(b"\n", 1)[0].strip()
    if not first.startswith(MARKER.encode()):
        return None
    return first[len(MARKER):].strip().decode("ascii", "replace")


def tool_label(tool: str, head: bytes) -> str:
    """The tool a (possibly partial) output came from, for a message: the named tool; for ``auto`` the one its
    marker names, nvidia-smi for output without the marker (see the module docstring)."""
    if tool != AUTO:
        return tool
    marked = _marked(head)
    if marked is None:
        return "nvidia-smi"
    return marked if marked in TOOLS else "the vendor tool"


def answer_name(tool: str, head: bytes) -> str:
    """How a check's message names a ``tool`` command's output (``nvidia-smi -q -x``), from its first bytes."""
    label = tool_label(tool, head)
    return TOOLS[label].where if label in TOOLS else f"{label}'s output"


def strip_markers(data: bytes) -> bytes:
    """The output without the marker and part lines (what is left to quote as a failing tool's reason)."""
    return b"\n".join(line for line in data.split(b"\n")
                      if not line.strip().startswith((MARKER.encode(), PART.encode())))


def _document(tool: SshTool, data: bytes) -> Capture:
    from fleetmon.sources.formats import by_name, decode

    if not data.strip():
        raise SourceError(Text(N_("{tool} printed nothing"), tool=tool.name))
    formats = [by_name(f) for f in tool.formats]
    try:
        text = decode(data)
    except SourceError:
        text = data.decode("latin-1")  # amd-smi's Latin-1 degree sign: the parser decides what it accepts
    chosen = next((f for f in formats if f.detect(text)), formats[0])
    return chosen.parse(data)


def _split_parts(tool: SshTool, data: bytes) -> list[bytes]:
    """The documents of a several-command tool, by its :data:`PART` lines (all of them, in order)."""
    docs: list[list[bytes]] = []
    names: list[str] = []
    for line in data.split(b"\n"):
        if line.startswith(PART.encode()):
            names.append(line[len(PART):].strip().decode("ascii", "replace"))
            docs.append([])
        elif docs:
            docs[-1].append(line)
        elif line.strip():
            raise SourceError(Text(N_("{tool}: output before its first document"), tool=tool.name))
    if tuple(names) != tool.parts:
        if names == list(tool.parts[:len(names)]):
            raise SourceError(Text(N_("{tool}: the output ends before its {part} document (cut off)"), tool=tool.name,
                                   part=tool.parts[len(names)]))
        raise SourceError(Text(N_("{tool}: the output's documents are not {parts}"), tool=tool.name,
                               parts=", ".join(tool.parts)))
    return [b"\n".join(d) for d in docs]


def read_output(data: bytes, tool: str) -> Capture:
    """The capture in a ``tool`` command's output.

    Raises:
        SourceError: an unknown tool, output of another tool than the one named, no tool on the node, a
            document cut off or missing, or the format's parser refused it (its one-line reason).
    """
    marked = _marked(data)
    if marked is not None:
        data = data.split(b"\n", 1)[1] if b"\n" in data else b""
        if marked == "none":
            raise SourceError(Text(N_("no vendor tool on the node: none of {tools} is on its login PATH"),
                                   tools=", ".join(AUTO_ORDER)))
        if marked not in TOOLS:
            raise SourceError(Text(N_("the node named an unknown tool {tool!r}"), tool=printable(marked, 40)))
        if tool not in (AUTO, marked):
            raise SourceError(Text(N_("the node ran {ran}, the fleet file names {tool}"), ran=marked, tool=tool))
        name = marked
    elif tool == AUTO:
        name = "nvidia-smi"  # not the auto script's output: the command fleetmon always ran (a restricted key)
    elif tool in TOOLS:
        name = tool
    else:
        raise SourceError(Text(N_("unknown ssh tool {tool}; known: {choices}"), tool=repr(tool),
                               choices=", ".join(TOOL_NAMES)))
    spec = TOOLS[name]
    if not spec.parts:
        return _document(spec, data)
    docs = [_document(spec, d) for d in _split_parts(spec, data)]
    assert spec.combine is not None
    return spec.combine(*docs)


def read_answer(body: bytes, tool: str, limits: ReadLimits) -> Capture:
    """The source registry's reader of an ssh answer (:data:`fleetmon.sources.SOURCES`): :func:`read_output`;
    the collector's per-node GPU limit is checked on the capture (each parser has its own bound)."""
    return read_output(body, tool)
