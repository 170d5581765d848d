"""CLI commands that move data: ``copy``, ``export``, ``import`` (being built)."""

from __future__ import annotations

import argparse
from typing import Any


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the data-moving commands to the CLI's subparsers."""
