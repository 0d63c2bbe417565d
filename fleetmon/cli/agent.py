"""`fleetmon agent`: sample this node's GPUs and serve them over HTTP.

Runs on a GPU node with only the standard library and nvidia-ml-py: the
arguments and the command live in ``fleetmon.agent.main`` (stdlib only).
"""

from __future__ import annotations

import argparse
from fleetmon.i18n import gettext as _


def run(args: argparse.Namespace) -> int:
    from fleetmon.agent.main import main

    return main(args)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from fleetmon.agent.main import add_arguments

    p = sub.add_parser("agent", help=_("sample this node's GPUs and serve them over HTTP"),
                       description=_("Sample this node's GPUs through NVML and serve inventory, telemetry, "
                                   "events and Prometheus metrics over HTTP."))
    add_arguments(p)
    p.set_defaults(func=run)
