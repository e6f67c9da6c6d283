"""Write the API's OpenAPI schema to a file (the web editor's client is generated from it).

Usage: python -m genservice.api.openapi web/openapi.json
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any


def openapi_schema() -> dict[str, Any]:
    """The OpenAPI schema of the app, built without touching the real data directory."""
    from genservice.api.app import create_app
    from genservice.config import Settings

    with tempfile.TemporaryDirectory() as scratch:
        app = create_app(Settings(data_dir=Path(scratch)), reaper=False)
        schema: dict[str, Any] = app.openapi()
        app.state.service.db.dispose()
        return schema


def main(argv: list[str] | None = None) -> int:
    """Write the schema to the path given (stdout without one)."""
    args = sys.argv[1:] if argv is None else argv
    text = json.dumps(openapi_schema(), indent=2, sort_keys=True) + "\n"
    if not args:
        sys.stdout.write(text)
        return 0
    target = Path(args[0])
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists() or target.read_text() != text:
        target.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
