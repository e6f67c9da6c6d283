"""The web editor in a real headless Chromium (Debian's, driven by Playwright; no browser
download) against a real service: prompt → 3D → parameter → broken code → refine → undo →
downloads. Screenshots of every step are kept in var/test-artifacts/editor/."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.genservice.api.service import FLANGE, ROOT, Service

pytestmark = pytest.mark.slow
CHROMIUM = Path("/usr/bin/chromium")
ARTEFACTS = ROOT / "var" / "test-artifacts" / "editor"
# Headless, software WebGL, and none of Chromium's calls home (this machine has no network).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def editor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    if not (ROOT / "web" / "dist" / "index.html").is_file():
        pytest.fail("the editor is not built: run scripts/setup.sh (it runs npm run build in web/)")
    service = Service(tmp_path_factory.mktemp("editor") / "data", {"GENSERVICE_MAX_N": "8"}).start()
    try:
        yield service
    finally:
        service.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    assert CHROMIUM.is_file(), "Debian's chromium is missing: run scripts/setup.sh"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        yield launched
        launched.close()


@pytest.fixture()
def page(browser: Any, editor: Service) -> Iterator[tuple[Any, list[str]]]:
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
    context.add_init_script(f"localStorage.setItem('genservice.apiKey', {json.dumps(editor.key)})")
    opened = context.new_page()
    errors: list[str] = []
    opened.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    opened.on("pageerror", lambda e: errors.append(str(e)))
    opened.set_default_timeout(30_000)
    yield opened, errors
    context.close()


def _shot(page: Any, name: str) -> None:
    page.screenshot(path=str(ARTEFACTS / f"{name}.png"), full_page=True)


def _pixels(page: Any) -> Any:
    import numpy as np
    from PIL import Image

    image = Image.open(io.BytesIO(page.locator("#viewport").screenshot())).convert("RGB")
    return np.asarray(image, dtype=np.int16)


def _drawn_share(pixels: Any) -> float:
    """Share of the canvas that is not the white background."""
    return float(((255 - pixels).max(axis=2) > 24).mean())


def _wait_job(page: Any, timeout_s: float = 240) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = page.locator("#job-status").inner_text().strip()
        if text.endswith("done") or "failed" in text:
            return str(text)
        time.sleep(0.25)
    raise AssertionError(f"the job did not end: {page.locator('#job-status').inner_text()}")


def _rendered(page: Any) -> str:
    return str(page.evaluate("document.body.dataset.renderedVersion || ''"))


def _wait_rendered(page: Any, not_version: str = "", timeout_s: float = 120) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        version = _rendered(page)
        if version and version != not_version:
            return version
        time.sleep(0.2)
    raise AssertionError(f"no new model was rendered (still {not_version!r})")


def _largest_parameter(page: Any) -> tuple[str, float]:
    inputs = page.locator("section[aria-label='Parameters'] input[type='number']")
    best: tuple[str, float] = ("", 0.0)
    for index in range(inputs.count()):
        field = inputs.nth(index)
        value = float(field.input_value() or 0)
        if value > best[1]:
            best = (str(field.get_attribute("aria-label")), value)
    assert best[0], "the parameter panel shows the program's parameters"
    return best


SEED = 0


def _with_seed(seed: int) -> Any:
    """A route handler that adds `seed` to the generation request the page posts."""

    def handle(route: Any) -> None:
        request = route.request
        if request.method != "POST":
            route.continue_()
            return
        body = {**json.loads(request.post_data or "{}"), "seed": seed}
        route.continue_(post_data=json.dumps(body))

    return handle


def test_a_newcomer_goes_from_a_sentence_to_a_step_file_and_back(
    page: tuple[Any, list[str]], editor: Service, tmp_path: Path
) -> None:
    browser_page, errors = page
    p = browser_page
    # The editor draws a fresh seed per request; pin it so the journey is the same every run
    # (the request the page built is otherwise sent untouched).
    p.route("**/v1/generations", _with_seed(SEED))
    p.goto(editor.url)
    p.get_by_label("Prompt").fill(FLANGE)
    p.get_by_role("spinbutton", name="Candidates").fill("4")
    p.get_by_role("button", name="Generate").click()
    status = _wait_job(p)
    assert status.endswith("done"), status
    first = _wait_rendered(p)
    # The gallery shows each candidate's picture beside its reward.
    p.wait_for_function(
        "[...document.querySelectorAll(\"ol[aria-label='Candidates'] img.shot\")]"
        ".some((img) => img.complete && img.naturalWidth > 0)"
    )
    _shot(p, "1-generated")
    before = _pixels(p)
    assert _drawn_share(before) > 0.005, "the model is drawn on the canvas"
    assert p.locator("ol[aria-label='Candidates'] li").count() == 4
    assert p.locator("#verdict").inner_text().strip() == "VALID"
    assert p.locator("section[aria-label='Checks'] [data-check][data-passed='true']").count() >= 2

    # A parameter: the geometry changes and a new version renders.
    name, value = _largest_parameter(p)
    field = p.get_by_label(name, exact=True)
    field.fill(f"{value * 1.5:g}")
    field.press("Enter")
    second = _wait_rendered(p, not_version=first)
    p.wait_for_timeout(500)
    _shot(p, "2-parameter")
    after = _pixels(p)
    assert float((abs(after - before).max(axis=2) > 24).mean()) > 0.002, "the picture changed"
    with editor.client() as client:
        old = client.get(f"/v1/versions/{first}").json()["report"]["metrics"]["bbox_mm"]
        new = client.get(f"/v1/versions/{second}").json()
    assert new["parameters"][name] == pytest.approx(value * 1.5)
    assert new["report"]["metrics"]["bbox_mm"] != old

    # Broken code: its line is marked, the last good model stays.
    p.locator("section[aria-label='Code'] .cm-content").click()
    p.keyboard.press("Control+End")
    p.keyboard.type("\nresult = (")
    lines = new["program"].count("\n") + 2  # typed on a new line after the last
    p.wait_for_function(
        "document.querySelector('#code-error') && "
        "document.querySelector('#code-error').textContent.includes('line')"
    )
    assert f"line {lines}" in p.locator("#code-error").inner_text()
    assert p.locator("section[aria-label='Code'] .cm-lintRange-error").count() >= 1
    p.wait_for_timeout(2500)
    _shot(p, "3-syntax-error")
    assert _rendered(p) == second
    assert _drawn_share(_pixels(p)) > 0.005

    # Refine: a new version appears in the history, and undo goes back.
    p.get_by_role("spinbutton", name="Candidates").fill("8")
    p.get_by_label("Instruction").fill("make it 12 mm thick")
    p.get_by_role("button", name="Refine").click()
    status = _wait_job(p)
    assert status.endswith("done"), status
    third = _wait_rendered(p, not_version=second)
    history = p.locator("section[aria-label='History'] [data-version-id]")
    assert history.count() == 3
    current = p.locator("section[aria-label='History'] [aria-current='true']")
    assert current.get_attribute("data-version-id") == third
    # Each version shows its preview picture (the service's PNG, fetched with the key).
    p.wait_for_function(
        "[...document.querySelectorAll(\"section[aria-label='History'] img.thumb\")]"
        ".filter((img) => img.complete && img.naturalWidth > 0).length === 3"
    )
    _shot(p, "4-refined")
    p.get_by_role("button", name="Undo").click()
    assert _wait_rendered(p, not_version=third) == second
    assert current.get_attribute("data-version-id") == second
    _shot(p, "5-undo")

    # Downloads: a STEP that imports and a GLB the Khronos validator accepts.
    files = {}
    for label, suffix in (("Download STEP", ".step"), ("Download GLB", ".glb")):
        with p.expect_download() as download:
            p.get_by_role("button", name=label).click()
        target = tmp_path / download.value.suggested_filename
        download.value.save_as(target)
        assert target.name == f"{second}{suffix}"
        files[suffix] = target
    import cadquery as cq

    from exporters.gltf_validator import validate_files

    solids = cq.importers.importStep(str(files[".step"])).solids().vals()
    assert solids and all(s.isValid() for s in solids)
    (report,) = validate_files([files[".glb"]])
    assert report.errors == 0, report.messages
    assert errors == [], errors


def test_a_part_that_ignores_the_request_shows_which_number_is_off(
    page: tuple[Any, list[str]], editor: Service
) -> None:
    browser_page, errors = page
    p = browser_page
    p.route("**/v1/generations", _with_seed(SEED))
    p.goto(editor.url)
    # The shipped model writes flanges 8 mm thick; none is 250 mm tall as well.
    p.get_by_label("Prompt").fill(FLANGE + ", 250 mm tall")
    p.get_by_role("spinbutton", name="Candidates").fill("2")
    p.get_by_role("button", name="Generate").click()
    status = _wait_job(p)
    assert status.endswith("done"), status  # delivered: the part is shown, with what is off
    _wait_rendered(p)
    _shot(p, "6-not-as-asked")
    assert p.locator("#verdict").inner_text().strip() == "NOT AS ASKED"
    checks = p.locator("section[aria-label='Checks']")
    assert checks.locator("[data-half='sound']").get_attribute("data-passed") == "true"
    asked = checks.locator("[data-half='asked']")
    assert asked.get_attribute("data-passed") == "false"
    assert "asked 250 mm" in asked.inner_text()
    mark = p.locator("section[aria-label='History'] [data-version-id] .bad")
    assert mark.inner_text() == "≠"
    assert "not as asked" in p.locator("ol[aria-label='Candidates'] li").first.inner_text()
    # No candidate was valid, so the default repair round ran: the gallery says what it fed
    # back and marks the candidates it wrote.
    rounds = p.locator("ul[aria-label='Repair rounds'] li")
    assert rounds.count() == 1 and rounds.first.inner_text().startswith("repair 1: fed back #")
    assert p.locator("ol[aria-label='Candidates'] li .round").count() == 2
    assert not p.locator("#code-error").inner_text().strip(), "the code itself is not at fault"
    assert errors == [], errors


def test_a_picture_is_uploaded_shown_and_comes_back_as_the_part_it_shows(
    page: tuple[Any, list[str]], editor: Service, tmp_path: Path
) -> None:
    from tests.genservice.api.service import wait_job
    from tests.pictures import ROUND_TRIP_IOU, iou_to, pictured_test_part

    browser_page, _ = page
    p = browser_page
    p.goto(editor.url)
    _, mesh, photo = pictured_test_part(tmp_path)
    p.get_by_label("Reference image").set_input_files(str(photo))
    shown = p.get_by_role("img", name="Input picture")
    shown.wait_for(state="visible")
    # Visible comes before decoded: wait for the picture itself, then check it is the upload.
    p.wait_for_function("document.querySelector('img.input-picture').complete")
    assert p.evaluate("document.querySelector('img.input-picture').naturalWidth") == 450
    sent: list[dict[str, Any]] = []
    jobs: list[str] = []

    def record(response: Any) -> None:
        if response.request.method == "POST" and response.url.endswith("/v1/generations"):
            sent.append(json.loads(response.request.post_data or "{}"))
            jobs.append(response.json()["id"])

    p.on("response", record)
    p.route("**/v1/generations", _with_seed(SEED))
    p.get_by_label("Prompt").fill("make this")
    p.get_by_role("spinbutton", name="Candidates").fill("4")
    p.get_by_role("button", name="Generate").click()
    status = _wait_job(p, timeout_s=300)
    assert sent and len(sent[0]["images"]) == 1, "the picture goes with the request"
    assert status.endswith("done"), status
    with editor.client() as client:
        result = wait_job(client, jobs[0])["result"]
        stl = next(a for a in result["assets"] if a["format"] == "stl")
        part = client.get(stl["url"])
    assert iou_to(mesh, part.content) >= ROUND_TRIP_IOU, "the part in the picture came back"
    fit = p.get_by_label("Fit to the picture")  # the served fit, as the result says it
    assert fit.inner_text().startswith("fitted to the picture"), fit.inner_text()
    if result["fit"]["improved"]:
        assert p.locator(".gallery li").first.get_by_text("fitted from #").is_visible()
    p.get_by_role("button", name="Remove picture").click()
    assert shown.is_hidden()


def test_several_pictures_of_a_part_are_shown_and_sent_together(
    page: tuple[Any, list[str]], editor: Service, tmp_path: Path
) -> None:
    """Photographs of one part from two sides: chosen together, or one chosen and another
    dropped in, both are shown and both go with the request; removing them clears both."""
    from PIL import Image

    p, _ = page
    p.goto(editor.url)
    front, side = tmp_path / "front.png", tmp_path / "side.png"
    Image.new("RGB", (64, 48), (200, 90, 40)).save(front)
    Image.new("RGB", (48, 64), (40, 90, 200)).save(side)
    p.get_by_label("Reference image").set_input_files([str(front), str(side)])
    shown = p.locator("img.input-picture")
    shown.nth(1).wait_for(state="visible")
    assert shown.count() == 2
    assert p.get_by_role("button", name="Remove pictures").is_visible()
    sent: list[dict[str, Any]] = []

    def refuse(route: Any) -> None:  # only what the page sends is under test here
        sent.append(json.loads(route.request.post_data or "{}"))
        route.fulfill(status=422, content_type="application/json",
                      body=json.dumps({"detail": "refused in this test"}))  # fmt: skip

    p.route("**/v1/generations", refuse)
    p.get_by_label("Prompt").fill("make this, 60 mm wide")
    p.get_by_role("button", name="Generate").click()
    p.wait_for_function("document.querySelector('#job-status').textContent.includes('refused')")
    assert len(sent) == 1 and len(sent[0]["images"]) == 2, "both pictures go with the request"
    p.get_by_role("button", name="Remove pictures").click()
    assert shown.count() == 0
