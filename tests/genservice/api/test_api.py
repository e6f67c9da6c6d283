"""The REST API against a real embedded service: generation end to end with its files, sessions
and versions, validation, assets on demand, auth and ownership, limits, cancel, health."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from genservice.generation.sampler import PICTURE_TEMPERATURE
from tests.genservice.api.service import FLANGE, Service, wait_job
from tests.pictures import bad_pictures

pytestmark = pytest.mark.slow
BOX = (
    "import cadquery as cq\nwidth = 20\nheight = 10\n"
    "result = cq.Workplane().box(width, 15, height)\n"
)


@pytest.fixture(scope="module")
def generated(service: Service) -> dict[str, Any]:
    """One finished best-of-4 generation of the flange prompt."""
    with service.client() as client:
        accepted = client.post("/v1/generations", json={"prompt": FLANGE, "n": 4, "seed": 1})
        assert accepted.status_code == 202, accepted.text
        return wait_job(client, accepted.json()["id"])


def _download(
    client: httpx.Client, url: str, tmp_path: Path, name: str
) -> tuple[Path, httpx.Response]:
    response = client.get(url)
    assert response.status_code == 200, response.text
    path = tmp_path / name
    path.write_bytes(response.content)
    return path, response


def test_generation_runs_end_to_end_with_events(service: Service) -> None:
    with service.client() as client:
        job_id = client.post("/v1/generations", json={"prompt": FLANGE, "n": 2, "seed": 3}).json()[
            "id"
        ]
        events = []
        with client.stream("GET", f"/v1/generations/{job_id}/events") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            name = None
            for line in stream.iter_lines():
                if line.startswith("event: "):
                    name = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    events.append((name, json.loads(line.removeprefix("data: "))))
    stages = [data["status"] for _, data in events]
    assert events[-1][0] in ("done", "failed")
    assert "generating" in stages and "validating" in stages
    order = ["queued", "generating", "validating", "exporting", "done", "failed"]
    assert stages == sorted(stages, key=order.index), "progress never goes backwards"
    if events[-1][0] == "failed":
        assert events[-1][1]["error"], "a failed job says why"


def test_a_done_generation_has_its_program_report_candidates_and_files(
    service: Service, generated: dict[str, Any], tmp_path: Path
) -> None:
    assert generated["status"] == "done", generated["error"]
    result = generated["result"]
    assert result["valid"] and result["report"]["valid"]
    assert "cadquery" in result["program"]
    assert len(result["candidates"]) == 4
    rewards = [c["reward"] for c in result["candidates"]]
    assert rewards[0] == max(rewards) and all(0 <= r <= 1 for r in rewards)
    assert generated["version_id"] == result["version_id"]
    formats = {a["format"]: a for a in result["assets"]}
    assert {"glb", "step", "stl", "png", "manifest"} <= set(formats)
    with service.client() as client:
        files = {}
        for fmt in ("glb", "step", "png", "manifest"):
            path, response = _download(client, formats[fmt]["url"], tmp_path, f"model.{fmt}")
            assert hashlib.sha256(path.read_bytes()).hexdigest() == formats[fmt]["sha256"]
            assert response.headers["x-content-sha256"] == formats[fmt]["sha256"]
            files[fmt] = path
    assert client_content_type(formats, "glb") == "model/gltf-binary"
    # The preview: the four-view rig as a PNG, listed in the manifest like every other file.
    from PIL import Image

    assert client_content_type(formats, "png") == "image/png"
    with Image.open(files["png"]) as preview:
        assert preview.format == "PNG" and preview.size == (450, 450)
    listed = {f["format"] for f in json.loads(files["manifest"].read_text())["files"]}
    assert "png" in listed
    # Every candidate that built geometry has its own picture, for the editor's gallery.
    drawn = [c for c in result["candidates"] if c.get("preview_url")]
    assert drawn
    assert all(c["preview_url"] for c in result["candidates"] if c["valid"])
    with service.client() as client:
        shot = client.get(drawn[0]["preview_url"])
        assert shot.status_code == 200 and shot.headers["content-type"] == "image/png"
        assert Image.open(io.BytesIO(shot.content)).size == (192, 192)
        missing = client.get(f"/v1/generations/{generated['id']}/candidates/99/preview")
        assert missing.status_code == 404 and "no picture" in missing.json()["detail"]
    from exporters.gltf_validator import validate_files
    from exporters.provenance import verify

    (report,) = validate_files([files["glb"]])
    assert report.errors == 0, report.messages
    import cadquery as cq

    solids = cq.importers.importStep(str(files["step"])).solids().vals()
    assert solids and all(s.isValid() for s in solids)
    manifest = tmp_path / "model.manifest.json"
    files["manifest"].rename(manifest)
    for fmt in ("glb", "step"):
        (tmp_path / f"model.{fmt}").rename(tmp_path / f"model{'.glb' if fmt == 'glb' else '.step'}")
    assert verify(tmp_path / "model.step", manifest).ok
    record = json.loads(manifest.read_text())
    assert record["generation"]["model_id"] == "tiny"


def client_content_type(formats: dict[str, Any], fmt: str) -> str:
    return str(formats[fmt]["media_type"])


def test_more_formats_are_made_on_demand_and_cached(
    service: Service, generated: dict[str, Any], tmp_path: Path
) -> None:
    assets = {a["format"]: a for a in generated["result"]["assets"]}
    glb = assets["glb"]
    with service.client() as client:
        first = client.get(f"{glb['url']}?format=3mf")
        assert first.status_code == 200, first.text
        assert first.headers["content-type"] == "model/3mf"
        digest = first.headers["x-content-sha256"]
        assert hashlib.sha256(first.content).hexdigest() == digest
        again = client.get(f"{glb['url']}?format=3mf")
        assert again.headers["x-content-sha256"] == digest
        # Exporting another format does not change the files already handed out.
        assert client.get(glb["url"]).headers["x-content-sha256"] == glb["sha256"]
        version = client.get(f"/v1/versions/{generated['version_id']}").json()
        assert "3mf" in {a["format"] for a in version["assets"]}
        manifest = client.get(f"{glb['url']}?format=manifest").json()
        assert {f["format"] for f in manifest["files"]} >= {"glb", "step", "3mf"}
        bad = client.get(f"{glb['url']}?format=obj")
        assert bad.status_code == 422 and "format" in bad.json()["detail"]


def test_sessions_keep_a_version_tree_and_manual_edits(
    service: Service, generated: dict[str, Any]
) -> None:
    with service.client() as client:
        session = client.get(f"/v1/sessions/{generated['session_id']}").json()
        (first,) = session["versions"]
        assert first["id"] == generated["version_id"] and first["parent_id"] is None
        assert session["head_version_id"] == first["id"]
        # A hand-written program becomes version 2, a child of version 1.
        job = client.post(
            f"/v1/sessions/{session['id']}/versions",
            json={"parent_version_id": first["id"], "program": BOX},
        )
        assert job.status_code == 202, job.text
        done = wait_job(client, job.json()["id"])
        assert done["status"] == "done", done["error"]
        second = client.get(f"/v1/versions/{done['version_id']}").json()
        assert second["parent_id"] == first["id"] and second["number"] == 2
        assert second["report"]["metrics"]["bbox_mm"] == pytest.approx([20, 15, 10])
        # A parameter change re-validates and re-exports the parent's program.
        job = client.post(
            f"/v1/sessions/{session['id']}/versions",
            json={"parent_version_id": second["id"], "parameters": {"width": 42}},
        )
        third_job = wait_job(client, job.json()["id"])
        third = client.get(f"/v1/versions/{third_job['version_id']}").json()
        assert third["parameters"] == {"width": 42} and third["program"] == BOX
        assert third["report"]["metrics"]["bbox_mm"] == pytest.approx([42, 15, 10])
        assert {a["format"] for a in third["assets"]} >= {"glb", "step"}
        # Broken code: the job fails at the line, no version is made, nothing is lost.
        broken = client.post(
            f"/v1/sessions/{session['id']}/versions",
            json={"parent_version_id": third["id"], "program": BOX + "result = result.(\n"},
        )
        failed = wait_job(client, broken.json()["id"])
        assert failed["status"] == "failed" and "line 5" in failed["error"]
        tree = client.get(f"/v1/sessions/{session['id']}").json()
        assert [v["number"] for v in tree["versions"]] == [1, 2, 3]
        assert tree["children"][first["id"]] == [second["id"]]
        assert tree["head_version_id"] == third["id"]


def test_a_sound_part_that_ignores_the_request_is_delivered_but_never_valid(
    service: Service,
) -> None:
    # The shipped model writes flanges 8 mm thick; none is 250 mm tall as well.
    with service.client() as client:
        prompt = FLANGE + ", 250 mm tall"
        accepted = client.post("/v1/generations", json={"prompt": prompt, "n": 2, "seed": 1})
        assert accepted.status_code == 202, accepted.text
        done = wait_job(client, accepted.json()["id"])
        assert done["status"] == "done", done["error"]
        result = done["result"]
        assert result["verdict"] == "not as asked" and not result["valid"]
        report = result["report"]
        assert report["metrics"]["geometry_sound"] and not report["valid"]
        check = report["checks"]["request"]
        assert not check["passed"] and "asked 250 mm" in check["detail"]["summary"]
        assert "not as asked: " in report["error"]["message"]
        # The part is still shown and downloadable, with what is off.
        version = client.get(f"/v1/versions/{done['version_id']}").json()
        assert version["valid"] is False
        assert {"glb", "step"} <= {a["format"] for a in result["assets"]}


def test_a_manual_edit_is_judged_against_the_request_its_version_stands_on(
    service: Service, generated: dict[str, Any]
) -> None:
    # The flange was asked 8 mm thick: a slider (or code edit) that makes it 20 mm thick is a
    # sound part the user keeps, but it is no longer what was asked, and never shown VALID.
    assert generated["status"] == "done" and generated["result"]["verdict"] == "valid"
    assert {"what": "thickness", "value_mm": 8.0}.items() <= generated["result"]["asked"][0].items()
    with service.client() as client:
        first = client.get(f"/v1/versions/{generated['version_id']}").json()
        name = re.search(r"^(\w*thick\w*) = ", first["program"], re.M)
        assert name, first["program"]
        edit = client.post(
            f"/v1/sessions/{generated['session_id']}/versions",
            json={"parent_version_id": first["id"], "parameters": {name[1]: 20}},
        )
        done = wait_job(client, edit.json()["id"])
        assert done["status"] == "done", done["error"]
        assert done["result"]["verdict"] == "not as asked"
        report = done["result"]["report"]
        assert report["metrics"]["geometry_sound"] and not report["valid"]
        assert "asked 8 mm" in report["checks"]["request"]["detail"]["summary"]
        manifest = next(a for a in done["result"]["assets"] if a["format"] == "manifest")
        written = client.get(manifest["url"]).json()
        assert written["verdict"] == "not as asked" and written["report"]["valid"] is False
        # The editor checks a code edit before saving it, against the same request.
        thick = re.sub(rf"^{name[1]} = .*$", f"{name[1]} = 20", first["program"], flags=re.M)
        checked = client.post(
            "/v1/validate", json={"program": thick, "version_id": first["id"]}
        ).json()
        assert not checked["valid"] and not checked["checks"]["request"]["passed"]
        same = client.post(
            "/v1/validate", json={"program": first["program"], "version_id": first["id"]}
        ).json()
        assert same["valid"] and same["checks"]["request"]["passed"]
        # An opened candidate is judged against the request of the generation that made it.
        opened = client.post(
            "/v1/validate", json={"program": thick, "job_id": generated["id"]}
        ).json()
        assert not opened["checks"]["request"]["passed"]
        # Or against the words given.
        worded = client.post(
            "/v1/validate", json={"program": BOX, "request": "a block 50 mm tall"}
        ).json()
        assert not worded["valid"] and "asked 50 mm" in worded["error"]["message"]
        # Whose request is judged must be the caller's, and one at a time.
        unknown = client.post("/v1/validate", json={"program": BOX, "version_id": "ver_nope"})
        assert unknown.status_code == 404 and "ver_nope" in unknown.text
        both = client.post(
            "/v1/validate", json={"program": BOX, "request": "a cube", "job_id": generated["id"]}
        )
        assert both.status_code == 422


def test_an_edit_instruction_makes_a_child_version_or_says_why_not(
    service: Service, generated: dict[str, Any]
) -> None:
    with service.client() as client:
        response = client.post(
            "/v1/generations",
            json={
                "session_id": generated["session_id"],
                "parent_version_id": generated["version_id"],
                "instruction": "make it 12 mm thick",
                "n": 2,
                "seed": 5,
            },
        )
        assert response.status_code == 202, response.text
        done = wait_job(client, response.json()["id"])
        if done["status"] == "done":
            version = client.get(f"/v1/versions/{done['version_id']}").json()
            assert version["parent_id"] == generated["version_id"]
            assert version["prompt"] == "make it 12 mm thick"
        else:
            assert done["status"] == "failed" and done["error"]
            rounds = len(done["result"]["repairs"])  # the default: one repair round
            assert rounds == 1 and len(done["result"]["candidates"]) == 2 * (1 + rounds)


def test_when_no_candidate_is_valid_a_repair_round_feeds_the_error_back(
    service: Service,
) -> None:
    # Eight tokens cannot hold a program: every candidate fails, then the repair round's too.
    with service.client() as client:
        body = {"prompt": FLANGE, "n": 2, "seed": 2, "max_new_tokens": 8, "repair": 1}
        job_id = client.post("/v1/generations", json=body).json()["id"]
        done = wait_job(client, job_id)
        assert done["status"] == "failed" and "none of the 4 candidates is valid" in done["error"]
        repairs = done["result"]["repairs"]
        assert len(repairs) == 1 and repairs[0]["round"] == 1
        assert repairs[0]["candidates"] == 2 and repairs[0]["valid"] == 0
        assert repairs[0]["error"]["kind"] and repairs[0]["repaired"] in (0, 1)
        rounds = sorted(c["round"] for c in done["result"]["candidates"])
        assert rounds == [0, 0, 1, 1]
        off = client.post("/v1/generations", json={**body, "repair": 0}).json()["id"]
        assert wait_job(client, off)["result"]["repairs"] == []
        too_many = client.post("/v1/generations", json={**body, "repair": 99})
        assert too_many.status_code == 422


def test_validate_returns_the_report(service: Service) -> None:
    with service.client() as client:
        good = client.post("/v1/validate", json={"program": BOX, "parameters": {"height": 4}})
        assert good.status_code == 200, good.text
        assert good.json()["valid"] and good.json()["metrics"]["bbox_mm"] == pytest.approx(
            [20, 15, 4]
        )
        bad = client.post("/v1/validate", json={"program": "import cadquery as cq\nresult = (\n"})
        assert bad.status_code == 200
        assert bad.json()["valid"] is False and bad.json()["error"]["line"] == 2
        hostile = client.post(
            "/v1/validate",
            json={"program": "import socket\nsocket.create_connection(('1.1.1.1', 80))\n"},
        )
        assert hostile.status_code == 200 and hostile.json()["valid"] is False
        code = client.post(
            "/v1/validate",
            json={
                "domain": "code",
                "program": "def add(a, b):\n    return a + b\n",
                "tests": "def check(candidate):\n    assert candidate(2, 3) == 5\n",
                "entry_point": "add",
            },
        )
        assert code.status_code == 200 and code.json()["valid"] is True
        counted = client.post(  # MBPP-style assert lines, a Counter back, a time budget
            "/v1/validate",
            json={
                "domain": "code",
                "program": "import collections\ndef tally(s):\n    return collections.Counter(s)\n",
                "tests": "assert tally('aab') == {'a': 2, 'b': 1}\nassert tally('') == {}\n",
                "entry_point": "tally",
                "time_budget_s": 5,
            },
        )
        assert counted.status_code == 200 and counted.json()["valid"] is True, counted.text
        assert counted.json()["checks"]["tests"]["detail"]["style"] == "asserts"


def test_code_generations_report_their_tests(service: Service) -> None:
    with service.client() as client:
        response = client.post(
            "/v1/generations",
            json={
                "domain": "code",
                "prompt": "Write a function add(a, b) that returns the sum of a and b.",
                "tests": "def check(candidate):\n    assert candidate(2, 3) == 5\n",
                "entry_point": "add",
                "n": 2,
                "seed": 0,
            },
        )
        assert response.status_code == 202, response.text
        done = wait_job(client, response.json()["id"])
    assert done["status"] in ("done", "failed")
    assert len(done["result"]["candidates"]) == 2
    assert "checks" in done["result"]["report"]
    if done["status"] == "done":
        assert done["result"]["assets"] == [] and done["version_id"]


def test_keys_are_required_and_resources_are_private(
    service: Service, generated: dict[str, Any]
) -> None:
    other = service.new_key("other-owner")
    asset = generated["result"]["assets"][0]["id"]
    urls = [
        ("GET", f"/v1/generations/{generated['id']}"),
        ("GET", f"/v1/generations/{generated['id']}/events"),
        ("POST", f"/v1/generations/{generated['id']}/cancel"),
        ("GET", f"/v1/sessions/{generated['session_id']}"),
        ("GET", f"/v1/versions/{generated['version_id']}"),
        ("GET", f"/v1/assets/{asset}"),
    ]
    with httpx.Client(base_url=service.url, timeout=30) as anonymous:
        for method, url in [*urls, ("GET", "/v1/generations"), ("GET", "/v1/models")]:
            response = anonymous.request(method, url)
            assert response.status_code == 401, (url, response.text)
            assert response.headers["www-authenticate"] == "Bearer"
            bad = anonymous.request(method, url, headers={"Authorization": "Bearer gs_wrong"})
            assert bad.status_code == 401
    with service.client(other) as client:
        for method, url in urls:
            assert client.request(method, url).status_code == 404, url
        assert client.get("/v1/generations").json()["items"] == []
        versions = client.post(
            f"/v1/sessions/{generated['session_id']}/versions", json={"program": BOX}
        )
        assert versions.status_code == 404
    service.cli("keys", "revoke", "other-owner")
    with service.client(other) as client:
        assert client.get("/v1/generations").status_code == 401


def test_rate_limits_and_quotas_answer_429_with_retry_after(service: Service) -> None:
    limited = service.new_key("limited", "--rate-limit", "3")
    with service.client(limited) as client:
        codes = [client.get("/v1/generations").status_code for _ in range(4)]
        assert codes[:3] == [200, 200, 200] and codes[3] == 429
        response = client.get("/v1/generations")
        assert response.status_code == 429 and int(response.headers["retry-after"]) >= 1
        assert "rate limit" in response.json()["detail"]
    quota = service.new_key("quota", "--jobs-per-day", "1")
    with service.client(quota) as client:
        first = client.post("/v1/generations", json={"prompt": "a washer", "n": 1})
        assert first.status_code == 202
        second = client.post("/v1/generations", json={"prompt": "a washer", "n": 1})
        assert second.status_code == 429 and "quota" in second.json()["detail"]
        assert int(second.headers["retry-after"]) > 0
        client.post(f"/v1/generations/{first.json()['id']}/cancel")


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"prompt": "x" * 2001}, "limit is 2000"),
        ({"prompt": "a plate", "n": 10000}, "n must be between 1 and 4"),
        ({"prompt": "a plate", "n": 0}, "n must be between"),
        ({"prompt": "a plate", "domain": "mesh"}, "domain"),
        ({"prompt": "   "}, "prompt is empty"),
        ({"prompt": "a plate", "colour": "red"}, "colour"),
        ({"prompt": "a plate", "temperature": -1}, "temperature"),
        ({"prompt": "a plate", "images": ["not base64!"]}, "not valid base64"),
        ({"prompt": "a plate", "images": [base64.b64encode(b"GIF89a...").decode()]}, "PNG or JPEG"),
        (
            {
                "prompt": "a plate",
                "images": [base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"0" * 100001).decode()],
            },
            "limit",
        ),
        ({"prompt": "sum", "domain": "code"}, "needs tests"),
        ({"prompt": "a plate", "tests": "def check(c): pass"}, "domain code only"),
        ({"prompt": "a plate", "time_budget_s": 5}, "domain code only"),
        (
            {
                "prompt": "f",
                "domain": "code",
                "tests": "assert f() == 1",
                "entry_point": "f",
                "time_budget_s": 0,
            },
            "time_budget_s",
        ),
        ({"prompt": "a plate", "spec": {"bbox_mm": "big"}}, "spec"),
        ({"prompt": "a plate", "max_new_tokens": 100000}, "max_new_tokens"),
        ({"prompt": "like this", "retrieve": 99}, "retrieve"),
        ({"prompt": "like this", "retrieve": -1}, "retrieve"),
        ({"instruction": "thicker"}, "session_id and parent_version_id"),
        *[
            ({"prompt": "like this", "images": [base64.b64encode(data).decode()]}, reason)
            for data, reason in bad_pictures().values()
        ],
    ],
)
def test_bad_requests_get_a_422_that_says_what_to_fix(
    service: Service, body: dict[str, Any], fragment: str
) -> None:
    with service.client() as client:
        response = client.post("/v1/generations", json=body)
    assert response.status_code == 422, response.text
    assert fragment in json.dumps(response.json()["detail"])


@pytest.mark.parametrize("upload", ["multipart", "json"])
def test_a_test_split_render_comes_back_as_the_part_it_shows(
    service: Service, upload: str, tmp_path: Path
) -> None:
    from tests.pictures import ROUND_TRIP_IOU, iou_to, pictured_test_part

    _, mesh, picture = pictured_test_part(tmp_path)
    request = {"prompt": "make this", "n": 4, "seed": 0}
    with service.client() as client:
        if upload == "multipart":
            files = [("images", ("screenshot.png", picture.read_bytes(), "image/png"))]
            data = {"request": json.dumps(request)}
            response = client.post("/v1/generations", data=data, files=files)
        else:
            request["images"] = [base64.b64encode(picture.read_bytes()).decode()]
            response = client.post("/v1/generations", json=request)
        assert response.status_code == 202, response.text
        done = wait_job(client, response.json()["id"], timeout=300)
        assert done["status"] == "done", done["error"]
        result = done["result"]
        assert result["valid"] and "image_match" in result["report"]["checks"]
        fit = result["fit"]  # served by default: the best part fitted to the picture
        assert fit is not None and fit["rounds"] >= 1 and fit["trials"] > 0, fit
        assert fit["score_after"] >= fit["score_before"]
        assert fit["starts"] >= 2  # as the engine: the best and the next of other designs
        first = result["candidates"][0]
        assert ("fitted_from" in first) == fit["improved"]  # the fitted part leads when better
        # The gallery's parts that look like the picture compete with the 4 samples (the
        # default with a picture); an answer from the gallery says so in its provenance.
        retrieved = [c for c in result["candidates"] if "retrieved_from" in c]
        assert retrieved and all(c["finish_reason"] == "retrieved" for c in retrieved)
        # They were checked before sampling, and the model was shown the best of them.
        shown = result["look_alike"]
        assert shown["state"] == "shown" and shown["retrieved_from"] in {
            c["retrieved_from"] for c in retrieved
        }
        indices = sorted(c["index"] for c in result["candidates"])
        assert indices == list(range(len(indices)))  # samples, gallery parts, fitted parts
        assert {c["index"] for c in result["candidates"] if c["finish_reason"] != "retrieved"
                and "fitted_from" not in c} == set(range(4))  # fmt: skip
        source = first["fitted_from"] if "fitted_from" in first else first["index"]
        answer = next(c for c in result["candidates"] if c["index"] == source)
        manifest = next(a for a in result["assets"] if a["format"] == "manifest")
        record = client.get(manifest["url"]).json()["generation"]["sampling"]
        assert record.get("retrieved_from") == answer.get("retrieved_from")
        assert record["temperature"] == PICTURE_TEMPERATURE  # the default for a picture
        assert record["greedy_first"] is True  # and its first candidate decoded greedily
        stl = next(a for a in result["assets"] if a["format"] == "stl")
        part = client.get(stl["url"])
        assert part.status_code == 200, part.text
    assert iou_to(mesh, part.content) >= ROUND_TRIP_IOU


def test_oversized_and_malformed_bodies_get_413_and_422(service: Service) -> None:
    with service.client() as client:
        big = client.post(
            "/v1/generations",
            content=b"{" + b" " * 1_100_000 + b"}",
            headers={"content-type": "application/json"},
        )
        assert big.status_code == 413 and "larger than" in big.json()["detail"]
        malformed = client.post(
            "/v1/generations", content=b"{nope", headers={"content-type": "application/json"}
        )
        assert malformed.status_code == 422 and "JSON" in malformed.json()["detail"]


def test_cancel_ends_a_job_for_good(service: Service) -> None:
    with service.client() as client:
        job = client.post("/v1/generations", json={"prompt": FLANGE, "n": 4}).json()
        cancelled = client.post(f"/v1/generations/{job['id']}/cancel")
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
        again = client.post(f"/v1/generations/{job['id']}/cancel")
        assert again.status_code == 409
        time.sleep(3)  # a worker that picked it up must not bring it back
        assert client.get(f"/v1/generations/{job['id']}").json()["status"] == "cancelled"


def test_jobs_are_listed_newest_first_page_by_page(service: Service) -> None:
    with service.client() as client:
        seen: list[str] = []
        cursor = None
        while True:
            params: dict[str, Any] = {"limit": 2}
            if cursor:
                params["cursor"] = cursor
            page = client.get("/v1/generations", params=params).json()
            seen += [j["id"] for j in page["items"]]
            cursor = page["next_cursor"]
            if not cursor:
                break
        everything = client.get("/v1/generations", params={"limit": 100}).json()["items"]
        assert seen == [j["id"] for j in everything] and len(seen) == len(set(seen)) >= 3
        stamps = [j["created_at"] for j in everything]
        assert stamps == sorted(stamps, reverse=True)
        assert client.get("/v1/generations", params={"cursor": "junk"}).status_code == 422


def test_health_readiness_metrics_models_and_the_page(service: Service) -> None:
    with service.client() as client:
        assert client.get("/healthz").json()["status"] == "ok"
        ready = client.get("/readyz").json()
        assert ready["status"] == "ready" and ready["checks"] == {"database": "ok", "broker": "ok"}
        metrics = client.get("/metrics").text
        assert (
            "genservice_http_requests_total" in metrics
            and 'genservice_jobs{status="done"}' in metrics
        )
        (model,) = client.get("/v1/models").json()
        assert model["id"] == "tiny" and model["kind"] == "vlm" and model["default"]
        page = client.get("/")
        assert page.status_code == 200 and "genservice" in page.text
        schema = client.get("/openapi.json").json()
        assert "/v1/generations" in schema["paths"] and "/v1/assets/{asset_id}" in schema["paths"]
