"""``vcbus simulate FILE``: run a scenario through the real services and print the outcome.

The command parses its arguments and prints; running the scenario is the simulation
room's (:mod:`vcbus.services.simulation.run`: in memory on virtual time, or ``--bus kafka`` on a
real broker in real time), and so is how an outcome prints
(:mod:`vcbus.services.simulation.report`), and so is the page ``--html`` writes
(:mod:`vcbus.services.simulation.html`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

from vcbus.core.logging.setup import configure_logging
from vcbus.core.runtime.collector import tune_collector
from vcbus.core.scheduling.framework.conf import ConfError
from vcbus.services.cli import terminal
from vcbus.services.simulation import swf
from vcbus.services.simulation.html import cluster_of, render_html
from vcbus.services.simulation.report import render_json, render_text
from vcbus.services.simulation.run import simulate_file
from vcbus.services.simulation.scenario import (
    ScenarioFileError,
    check_keys,
    load_document,
    parse_scenario,
)
from vcbus.services.simulation.snapshot import ScenarioError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus simulate``."""
    parser = sub.add_parser(
        "simulate", help="run a scenario through the services (docs/design.md#scenarios)"
    )
    parser.add_argument("file", help="scenario YAML or JSON, or an SWF trace (.swf)")
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")
    parser.add_argument(
        "--bus",
        choices=("memory", "kafka"),
        default="memory",
        help="memory: virtual time, deterministic [default]; kafka: a real broker, real time",
    )
    parser.add_argument(
        "--speed", type=float, default=10.0, help="kafka: scenario seconds per real second [10]"
    )
    parser.add_argument("--prefix", help="kafka: topic prefix (default: a fresh one per run)")
    parser.add_argument(
        "--cycles",
        action="store_true",
        help="full mode, in memory: add what each scheduling cycle decided (docs/simulate.md)",
    )
    parser.add_argument(
        "--html",
        metavar="FILE",
        help="also write the run's charts and a Gantt of its jobs as one HTML page (full mode)",
    )
    swf.add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the scenario and print its outcome; 2 when the scenario cannot be run."""
    tune_collector()
    configure_logging("simulate", level="warning")
    path = Path(args.file)
    document: Mapping[str, object]
    try:
        if swf.is_trace(path):
            document = swf.document_from_args(path, args)
        else:
            document = load_document(path.read_text())
            check_keys(document, str(path))
        outcome, snapshot = simulate_file(
            path,
            document=document,
            kafka=args.bus == "kafka",
            speed=args.speed,
            prefix=args.prefix,
            cycles=args.cycles,
            warn=_warn,
        )
    except (OSError, ScenarioFileError, ScenarioError, ConfError, swf.TraceError) as exc:
        terminal.error(f"vcbus simulate: {exc}\n")
        return 2
    if args.html and snapshot:
        terminal.error("vcbus simulate: --html needs a full-mode scenario (jobs over time)\n")
        return 2
    if args.html:
        cluster = cluster_of(parse_scenario(document, path.parent))
        page = render_html(outcome, cluster, title=path.name)
        try:
            Path(args.html).write_text(page)
        except OSError as exc:
            terminal.error(f"vcbus simulate: cannot write {args.html}: {exc}\n")
            return 2
    as_json = args.json or snapshot
    terminal.write(render_json(outcome) if as_json else render_text(outcome))
    if args.bus == "kafka":
        sys.stderr.write(
            "note: on a broker the services race in real time: final phases and counts match "
            "the in-memory run; bindings may differ where nodes tie, and times are approximate\n"
        )
    return 0


def _warn(warning: str) -> None:
    sys.stderr.write(f"vcbus simulate: warning: config: {warning}\n")
