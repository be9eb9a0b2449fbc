"""``python -m schedsearch``: the command-line interface."""

from schedsearch.cli import main

raise SystemExit(main())
