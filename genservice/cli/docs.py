"""`genservice docs`: build the documentation site strictly (broken links fail), or serve it live.

Both run MkDocs on the checkout's mkdocs.yml; the checkout is found from the package's own path,
so the command works from any directory.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from genservice.cli.common import UsageError

DEFAULT_ADDR = "127.0.0.1:8001"
SETUP_HINT = "run `bash scripts/setup.sh` in the checkout to set it up"


def add_docs_command(sub: Any) -> None:
    """Register docs."""
    docs = sub.add_parser(
        "docs",
        help="build the documentation site (strict), or serve it live with --serve",
        description="Build the MkDocs site from the checkout's mkdocs.yml in strict mode (a "
        "warning such as a broken link fails the build), or serve it with live reload. Exit "
        "status is MkDocs's; 2 when mkdocs.yml or MkDocs is missing.",
    )
    docs.add_argument(
        "--output", type=Path, metavar="DIR", help="where the site goes (default: <repo>/site)"
    )
    docs.add_argument("--serve", action="store_true", help="serve the docs live instead")
    docs.add_argument(
        "--addr", metavar="HOST:PORT", help=f"address for --serve (default {DEFAULT_ADDR})"
    )


def repo_root() -> Path:
    """The checkout that holds the genservice package (and mkdocs.yml)."""
    import genservice

    return Path(genservice.__file__).resolve().parent.parent


def mkdocs_installed() -> bool:
    """Whether MkDocs can run in this environment."""
    return importlib.util.find_spec("mkdocs") is not None


def docs_command(args: argparse.Namespace) -> int:
    """Run `genservice docs`: `mkdocs build --strict`, or `mkdocs serve` with --serve."""
    if args.serve and args.output is not None:
        raise UsageError("--output applies to a build, not to --serve")
    if not args.serve and args.addr is not None:
        raise UsageError("--addr applies to --serve")
    root = repo_root()
    config = root / "mkdocs.yml"
    if not config.is_file():
        raise UsageError(f"no {config}: the docs are built from a source checkout; {SETUP_HINT}")
    if not mkdocs_installed():
        raise UsageError(f"MkDocs is not installed in this environment; {SETUP_HINT}")
    mkdocs = [sys.executable, "-m", "mkdocs"]
    if args.serve:
        argv = [*mkdocs, "serve", "-f", str(config), "-a", args.addr or DEFAULT_ADDR]
    else:
        output = (args.output or root / "site").resolve()
        argv = [*mkdocs, "build", "--strict", "-f", str(config), "-d", str(output)]
    try:
        # MkDocs Material's banner about a future MkDocs says nothing about this site.
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
        return subprocess.run(argv, cwd=root, env=env, check=False).returncode
    except KeyboardInterrupt:  # Ctrl-C is how a live server stops
        return 0
