"""`fleetmon fleet import`, `check` and `prometheus-targets`: build, validate and export fleet files."""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.parse
from pathlib import Path
from typing import Any

from fleetmon.errors import ConfigError
from fleetmon import i18n
from fleetmon.i18n import gettext as _
from fleetmon.fleet import (
    DEFAULT_AGENT_PORT,
    IMPORTERS,
    detect_format,
    import_ansible_ini,
    load_fleet,
    parse_fleet,
    render_fleet_toml,
)


def add_import_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``fleetmon fleet import``."""
    parser.add_argument(
        "source", help=_("inventory to read: a file, or '-' for standard input")
    )
    parser.add_argument(
        "--format",
        choices=("auto", "hosts", "ansible", "scontrol"),
        default="auto",
        help=_("input format: a host list, an Ansible INI inventory, or "
        "`scontrol show nodes` output (default: guess from the content)"),
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_AGENT_PORT,
        help=_("agent port for hosts that name none (default: {port})").format(port=DEFAULT_AGENT_PORT),
    )
    parser.add_argument(
        "-o",
        "--output",
        default=None,
        help=_("write the fleet file here instead of standard output"),
    )
    parser.add_argument(
        "--group",
        default=None,
        help=_("ansible only: import just this group and its children"),
    )
    parser.add_argument(
        "--history-prometheus",
        metavar="URL",
        default=None,
        help=_("write [history] prometheus = URL: the GUI and the reports read history through this "
        "Prometheus-compatible API instead of the local database (docs/prometheus.md)"),
    )


def add_check_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``fleetmon fleet check``."""
    parser.add_argument("file", help=_("fleet file (TOML) to validate"))


def main_import(args: argparse.Namespace) -> int:
    """Run ``fleetmon fleet import``; returns the exit status."""
    source = args.source
    try:
        if source == "-":
            text = sys.stdin.read()
        else:
            text = Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        print(_("error: {file}: cannot read: {error}").format(file=source, error=err), file=sys.stderr)
        return 1
    fmt = getattr(args, "format", "auto") or "auto"
    if fmt == "auto":
        fmt = detect_format(text)
    port = getattr(args, "port", None) or DEFAULT_AGENT_PORT
    if not 0 < port < 65536:
        print(_("error: --port {port} is out of range").format(port=port), file=sys.stderr)
        return 1
    group = getattr(args, "group", None)
    try:
        if fmt == "ansible":
            nodes = import_ansible_ini(text, group_filter=group)
        elif fmt in IMPORTERS:
            nodes = IMPORTERS[fmt](text)
        else:
            print(_("error: unknown format {format}").format(format=repr(fmt)), file=sys.stderr)
            return 1
    except ValueError as err:
        print(_("error: {file}: {error}").format(file=source, error=i18n.message_of(err)), file=sys.stderr)
        return 1
    if not nodes:
        print(_("error: {file}: no hosts found ({format} format)").format(file=source, format=fmt), file=sys.stderr)
        return 1
    rendered = render_fleet_toml(nodes, port=port, history_prometheus=getattr(args, "history_prometheus", None))
    try:
        fleet = parse_fleet(rendered, path=args.output or "<output>")
    except ConfigError as err:
        print(_("error: the imported fleet is not valid:\n{error}").format(error=i18n.message_of(err)), file=sys.stderr)
        return 1
    if args.output:
        try:
            Path(args.output).write_text(rendered, encoding="utf-8")
        except OSError as err:
            print(_("error: {file}: cannot write: {error}").format(file=args.output, error=err), file=sys.stderr)
            return 1
        print(_("wrote {file}: {nodes} nodes in {groups} groups").format(
            file=args.output, nodes=len(fleet.nodes), groups=len(fleet.groups)), file=sys.stderr)
    else:
        sys.stdout.write(rendered)
    return 0


def main_check(args: argparse.Namespace) -> int:
    """Run ``fleetmon fleet check``; returns the exit status."""
    try:
        fleet = load_fleet(args.file)
    except ConfigError as err:
        print(i18n.message_of(err), file=sys.stderr)
        return 1
    if fleet.specs:
        print(_("OK: {nodes} nodes in {groups} groups, {specs} user specs ([[spec]])").format(
            nodes=len(fleet.nodes), groups=len(fleet.groups), specs=len(fleet.specs)))
    else:
        print(_("OK: {nodes} nodes in {groups} groups").format(nodes=len(fleet.nodes), groups=len(fleet.groups)))
    for warning in fleet.warnings:
        print(_("warning: {warning}").format(warning=i18n.localized(warning)), file=sys.stderr)
    return 0


PROMETHEUS_SCHEMES: dict[str, tuple[str, str]] = {
    "http": ("http", "/metrics"), "https": ("https", "/metrics"),
    "dcgm+http": ("http", "/metrics"), "dcgm+https": ("https", "/metrics"),
}
"""Node URL scheme -> (scrape scheme, default metrics path). Other sources (ssh://) have no
HTTP endpoint a Prometheus could scrape and are left out."""


def prometheus_targets(fleet: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """Prometheus file_sd target groups for a fleet: one group per scrapable node.

    Each group's labels carry the node's name (``node``, which the shipped scrape
    configuration copies into ``instance``), its group and, where they differ from
    Prometheus's defaults, ``__scheme__`` and ``__metrics_path__`` (a dcgm-exporter
    node's own path). Returns (groups, one line per node left out).
    """
    groups: list[dict[str, Any]] = []
    skipped: list[str] = []
    for node in fleet.nodes:
        parts = urllib.parse.urlsplit(node.url)
        scheme = PROMETHEUS_SCHEMES.get(parts.scheme.lower())
        if scheme is None or not parts.hostname:
            skipped.append(f"{node.name}: {parts.scheme}:// nodes have no endpoint Prometheus can scrape")
            continue
        port = parts.port
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        labels: dict[str, str] = {"node": node.name}
        if node.group:
            labels["fleetmon_group"] = node.group
        if scheme[0] != "http":
            labels["__scheme__"] = scheme[0]
        path = parts.path if parts.scheme.lower().startswith("dcgm+") and parts.path not in ("", "/") else scheme[1]
        if path != "/metrics":
            labels["__metrics_path__"] = path
        groups.append({"targets": [f"{host}:{port}" if port else host], "labels": labels})
    return groups, skipped


def add_targets_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``fleetmon fleet prometheus-targets``."""
    parser.add_argument("file", help=_("fleet file (TOML)"))
    parser.add_argument("-o", "--output", default=None,
                        help=_("write the targets here (atomically, for Prometheus's file_sd to pick up) "
                             "instead of standard output"))


def main_targets(args: argparse.Namespace) -> int:
    """Run ``fleetmon fleet prometheus-targets``; returns the exit status."""
    try:
        fleet = load_fleet(args.file)
    except ConfigError as err:
        print(i18n.message_of(err), file=sys.stderr)
        return 1
    groups, skipped = prometheus_targets(fleet)
    for line in skipped:
        print(_("warning: left out {what}").format(what=line), file=sys.stderr)
    text = json.dumps(groups, indent=2) + "\n"
    if not args.output:
        sys.stdout.write(text)
        return 0
    tmp = f"{args.output}.tmp{os.getpid()}"
    try:
        Path(tmp).write_text(text, encoding="utf-8")
        os.replace(tmp, args.output)
    except OSError as err:
        print(_("error: {file}: cannot write: {error}").format(file=args.output, error=err), file=sys.stderr)
        return 1
    print(_("wrote {file}: {count} targets").format(file=args.output, count=len(groups)), file=sys.stderr)
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("fleet", help=_("fleet file tools: import, check, prometheus-targets"),
                       description=_("Build and validate fleet files."))
    fsub = p.add_subparsers(dest="fleet_command", metavar="SUBCOMMAND")
    fp = fsub.add_parser("import", help=_("build a fleet file from a host list, Ansible inventory or scontrol output"),
                         description=_("Build a fleet file from a plain host list, an Ansible INI inventory or "
                                     "the output of `scontrol show nodes`."))
    add_import_arguments(fp)
    fp.set_defaults(func=main_import)
    fp = fsub.add_parser("check", help=_("validate a fleet file"), description=_("Validate a fleet file."))
    add_check_arguments(fp)
    fp.set_defaults(func=main_check)
    fp = fsub.add_parser("prometheus-targets", help=_("print the fleet's agents as Prometheus file_sd targets"),
                         description=_("Print the fleet's scrapable nodes (agents and dcgm-exporter endpoints) as "
                                     "Prometheus file_sd JSON, labelled with their fleetmon node names."))
    add_targets_arguments(fp)
    fp.set_defaults(func=main_targets)

    def _help(args: argparse.Namespace) -> int:
        p.print_help()
        return 2

    p.set_defaults(func=_help)
