"""`genservice docs`: MkDocs on the checkout's mkdocs.yml, and a clear exit 2 when it cannot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import genservice.cli.docs
from genservice.cli import main


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout root with a mkdocs.yml, MkDocs "installed", and the commands it would run."""
    (tmp_path / "mkdocs.yml").write_text("site_name: test\n")
    monkeypatch.setattr(genservice.cli.docs, "repo_root", lambda: tmp_path)
    monkeypatch.setattr(genservice.cli.docs, "mkdocs_installed", lambda: True)
    return tmp_path


def _recorded(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    ran: list[list[str]] = []

    def run(argv: list[str], **kwargs: Any) -> Any:
        ran.append(argv)
        return type("Done", (), {"returncode": 0})()

    monkeypatch.setattr(genservice.cli.docs.subprocess, "run", run)
    return ran


def test_the_root_is_the_checkout_that_holds_the_package() -> None:
    assert (genservice.cli.docs.repo_root() / "genservice" / "cli" / "docs.py").is_file()


def test_without_mkdocs_yml_it_exits_2_and_says_what_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(genservice.cli.docs, "repo_root", lambda: tmp_path)
    assert main(["docs"]) == 2
    error = capsys.readouterr().err
    assert "mkdocs.yml" in error and "bash scripts/setup.sh" in error


def test_without_mkdocs_it_exits_2_and_says_what_to_run(
    checkout: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(genservice.cli.docs, "mkdocs_installed", lambda: False)
    assert main(["docs", "--serve"]) == 2
    error = capsys.readouterr().err
    assert "MkDocs is not installed" in error and "bash scripts/setup.sh" in error


def test_a_build_is_strict_into_site_or_output(
    checkout: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ran = _recorded(monkeypatch)
    assert main(["docs"]) == 0
    assert main(["docs", "--output", str(tmp_path / "out")]) == 0
    config = str(checkout / "mkdocs.yml")
    assert ran[0][-6:] == ["build", "--strict", "-f", config, "-d", str(checkout / "site")]
    assert ran[1][-2:] == ["-d", str((tmp_path / "out").resolve())]
    assert ran[0][1:3] == ["-m", "mkdocs"]


def test_serve_runs_mkdocs_serve_on_the_address(
    checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = _recorded(monkeypatch)
    assert main(["docs", "--serve"]) == 0
    assert main(["docs", "--serve", "--addr", "0.0.0.0:9000"]) == 0
    config = str(checkout / "mkdocs.yml")
    assert ran[0][-5:] == ["serve", "-f", config, "-a", "127.0.0.1:8001"]
    assert ran[1][-1] == "0.0.0.0:9000"


@pytest.mark.parametrize("argv", [["--serve", "--output", "x"], ["--addr", "127.0.0.1:1"]])
def test_options_of_the_other_mode_are_usage_errors(checkout: Path, argv: list[str]) -> None:
    assert main(["docs", *argv]) == 2
