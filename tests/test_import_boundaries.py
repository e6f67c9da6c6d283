"""The packages' import rules, checked on the source by AST (and one check at run time).

- only `training/` may import trl or deepspeed;
- `validators/` (the trust boundary) imports none of genservice, training, exporters or the
  service and model stacks (fastapi, celery, sqlalchemy, transformers);
- `exporters/` imports neither genservice nor training;
- in `validators/` and `genservice/`, cadquery and OCP are imported at module top level only by
  the sandbox's guest side (validators/cad/guest.py and measurer.py, validators/sandbox/guest/):
  the host imports them lazily, if at all;
- `genservice --help` loads neither torch nor cadquery.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("genservice", "validators", "exporters", "training")
GUEST_SIDE = ("validators/cad/guest.py", "validators/cad/measurer.py", "validators/sandbox/guest/")


def _sources(*folders: str) -> list[Path]:
    return sorted(
        p for folder in folders for p in (ROOT / folder).rglob("*.py") if ".venv" not in p.parts
    )


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node: ast.ImportFrom, path: Path) -> str:
    if not node.level:
        return node.module or ""
    package = _module_of(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(path: Path, top_level_only: bool = False) -> set[str]:
    """Modules a file imports; with top_level_only, those imported when the module loads."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if top_level_only and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return
        if top_level_only and isinstance(node, ast.If) and _is_type_checking(node):
            for statement in node.orelse:
                visit(statement)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, path)
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), filename=str(path)))
    return found


def _offenders(paths: list[Path], banned: set[str], top_level_only: bool = False) -> dict:
    result = {}
    for path in paths:
        hits = sorted(m for m in imports(path, top_level_only) if m.split(".")[0] in banned)
        if hits:
            result[_relative(path)] = hits
    return result


def test_the_scanner_sees_imports() -> None:
    measurer = ROOT / "validators/cad/measurer.py"
    assert {"cadquery", "OCP.BRepAdaptor"} <= imports(measurer, top_level_only=True)
    cli = ROOT / "genservice/cli/validate.py"
    assert "validators.cad.validate" in imports(cli)
    assert "validators.cad.validate" not in imports(cli, top_level_only=True)
    for package in PACKAGES:
        assert _sources(package), f"no sources found in {package}/"


def test_only_training_imports_trl_or_deepspeed() -> None:
    others = [
        p
        for p in _sources(*PACKAGES, "bench", "scripts")
        if not _relative(p).startswith("training/")
    ]
    assert _offenders(others, {"trl", "deepspeed"}) == {}


def test_validators_import_no_service_training_or_model_code() -> None:
    banned = {
        "genservice",
        "training",
        "exporters",
        "fastapi",
        "celery",
        "sqlalchemy",
        "transformers",
    }
    assert _offenders(_sources("validators"), banned) == {}


def test_exporters_import_neither_genservice_nor_training() -> None:
    assert _offenders(_sources("exporters"), {"genservice", "training"}) == {}


def test_only_the_guest_side_imports_cadquery_at_module_level() -> None:
    host = [
        p for p in _sources("validators", "genservice") if not _relative(p).startswith(GUEST_SIDE)
    ]
    assert _offenders(host, {"cadquery", "OCP"}, top_level_only=True) == {}


@pytest.mark.parametrize("argv", [["--help"], ["validate", "--help"]])
def test_cli_help_loads_neither_torch_nor_cadquery(argv: list[str]) -> None:
    probe = (
        "import contextlib, io, json, sys\n"
        "import genservice.cli\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        f"    genservice.cli.main({argv!r})\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    loaded = set(json.loads(run.stdout))
    assert "genservice" in loaded
    assert loaded.isdisjoint({"torch", "cadquery", "OCP"})
