"""The README a newcomer reads: short, its links lead somewhere, its commands are real.

(The documentation site itself is built with `mkdocs build --strict` by scripts/test.sh.)
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from genservice.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_readme_fits_a_screenful_of_scrolling() -> None:
    assert len(README.splitlines()) <= 250


def test_every_relative_link_in_the_readme_exists() -> None:
    targets = [t for t in LINK.findall(README) if not t.startswith(("http://", "https://"))]
    assert targets, "the README links to the docs"
    missing = [t for t in targets if not (ROOT / t.split("#", 1)[0]).exists()]
    assert not missing, f"README links to files that do not exist: {missing}"


def test_every_docs_page_the_readme_names_is_in_the_site() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = [t.split("#", 1)[0] for t in LINK.findall(README) if t.startswith("docs/")]
    for page in (p for p in pages if p.endswith(".md")):
        assert page.removeprefix("docs/") in nav, f"{page} is not in mkdocs.yml's nav"


def _readme_commands() -> list[list[str]]:
    """Every `genservice ...` command line in the README's code blocks."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", README, flags=re.S):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            line = line.split(" #", 1)[0].strip()
            if line.startswith(".venv/bin/genservice "):
                commands.append(shlex.split(line)[1:])
    return commands


@pytest.mark.parametrize("argv", _readme_commands(), ids=lambda a: " ".join(a[:2]))
def test_the_readmes_commands_parse(argv: list[str]) -> None:
    """A renamed command or flag breaks the tour; the parser says so here first."""
    args = build_parser().parse_args(argv)
    assert args.command == argv[0]


def test_the_readme_shows_the_two_commands() -> None:
    assert "./scripts/run.sh" in README and "./scripts/test.sh" in README
