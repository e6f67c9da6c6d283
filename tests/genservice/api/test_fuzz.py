"""Property-based fuzzing of the whole API against its own OpenAPI schema with schemathesis
(its command line, every phase: examples, coverage, fuzzing, stateful links): no request,
however malformed, gets a 5xx."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.genservice.api.service import Service

pytestmark = pytest.mark.slow
# Generations the fuzzer submits are real jobs: keep them small.
FUZZ_LIMITS = {"GENSERVICE_MAX_N": "2", "GENSERVICE_MAX_NEW_TOKENS": "48"}


@pytest.fixture(scope="module")
def fuzzed_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    service = Service(tmp_path_factory.mktemp("fuzz") / "data", env=FUZZ_LIMITS).start()
    try:
        yield service
    finally:
        service.stop()


def test_no_input_makes_the_api_fail(fuzzed_service: Service, tmp_path: Path) -> None:
    schemathesis = Path(sys.executable).parent / "schemathesis"
    done = subprocess.run(
        [
            str(schemathesis),
            "run",
            f"{fuzzed_service.url}/openapi.json",
            "--header",
            f"Authorization: Bearer {fuzzed_service.key}",
            "--checks",
            "not_a_server_error",
            "--max-examples",
            "40",
            "--seed",
            "20261130",
            "--request-timeout",
            "120",
            "--report-dir",
            str(tmp_path),
            "--no-color",
        ],
        cwd=tmp_path,  # its example database goes there, not into the checkout
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "errored" not in done.stdout


def test_the_fuzzed_service_is_still_healthy(fuzzed_service: Service) -> None:
    with fuzzed_service.client() as client:
        assert client.get("/readyz").status_code == 200
        response = client.post("/v1/validate", json={"program": "result = 1\n"})
        assert response.status_code == 200 and response.json()["valid"] is False
