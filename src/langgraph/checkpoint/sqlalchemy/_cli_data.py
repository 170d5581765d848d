"""CLI commands on stored threads: ``threads``, ``prune``, ``copy-thread``, ``stats``."""

from __future__ import annotations

import argparse
from typing import Any


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the thread commands to the CLI's subparsers."""
