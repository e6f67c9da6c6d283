"""One embedded service (SQLite, folder broker, shipped model) shared by the API tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.genservice.api.service import Service

# Small limits that the input-limit tests can reach with small requests.
LIMITS = {
    "GENSERVICE_MAX_IMAGE_BYTES": "100000",
    "GENSERVICE_MAX_REQUEST_BYTES": "1000000",
    "GENSERVICE_MAX_PROMPT_CHARS": "2000",
}


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The embedded default, started by `genservice run`."""
    running = Service(tmp_path_factory.mktemp("svc") / "data", env=LIMITS).start()
    try:
        yield running
    finally:
        running.stop()
