"""Command-line interface ``schedsearch``: a thin face over the library.

Each subcommand lives in its own module of this package and defines
``add_parser(subparsers)``, which registers the subcommand and sets its
``func(args) -> int``. The modules are listed in ``COMMAND_MODULES``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from schedsearch.errors import NoFittingPlanError, SchedSearchError

COMMAND_MODULES: tuple[str, ...] = (
    "search",
    "validate",
    "demo",
    "reproduce",
    "export",
    "run",
    "profile",
    "partition",
    "jobshop",
    "bound",
    "pareto",
    "plan",
    "sweep",
    "report",
)


def version() -> str:
    """The installed distribution's version (the package's own when it runs from a source tree)."""
    from importlib import metadata

    try:
        return metadata.version("schedsearch")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree
        from schedsearch import __version__

        return __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="schedsearch",
        description="Find placements and schedules for distributed deep learning.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(f"schedsearch.cli.{name}").add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except SchedSearchError as exc:
        if isinstance(exc, NoFittingPlanError) and exc.reasons:  # every family's reason, as the table gives them
            print("why each schedule family has no plan:")
            for family, why in exc.reasons:
                print(f"  {family}: {why}")
        print(f"schedsearch {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a file that cannot be read or written: one line, no traceback
        if isinstance(exc, BrokenPipeError):  # the reader went away (``| head``)
            sys.stderr.close()
            return 1
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"schedsearch {args.command}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
