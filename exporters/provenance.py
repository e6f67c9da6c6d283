"""Where an exported file came from, and whether it was altered since.

Every export gets a sidecar manifest (`NAME.manifest.json`): the sha256 of every file written,
of the program source, the model and weights that generated it (when a model did), the prompt's
sha256 (the prompt itself only on request), seed and sampling settings, the validator Report,
software versions, the time and the IPTC digital source type. The files carry the provenance id
and the manifest's name themselves (glTF asset.extras and KHR_xmp_json_ld, STEP header, PLY
comments, STL header), so either can be found from the other.

The time comes from the generation record, never from the clock at export, so the same input
gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

MANIFEST_VERSION = 1
MANIFEST_SUFFIX = ".manifest.json"
IPTC_SOURCE_TYPES = "http://cv.iptc.org/newscodes/digitalsourcetype/"
# A model wrote the program; a person wrote it (and software built the geometry).
GENERATED = IPTC_SOURCE_TYPES + "trainedAlgorithmicMedia"
AUTHORED = IPTC_SOURCE_TYPES + "digitalCreation"
# Packages whose versions decide the bytes of an export.
SOFTWARE = ("genservice", "cadquery", "cadquery-ocp", "trimesh", "numpy", "lib3mf", "DracoPy")


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of bytes."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def software_versions() -> dict[str, str]:
    """Versions of Python and of the packages that shape an export's bytes."""
    versions = {"python": platform.python_version()}
    for name in SOFTWARE:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def creator_tool() -> str:
    """The name and version written as creator / originating system."""
    return f"genservice {software_versions().get('genservice', '0')}"


def utc_seconds(moment: datetime) -> datetime:
    """A timezone-aware UTC time with the microseconds dropped (files keep whole seconds)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).replace(microsecond=0)


@dataclass(frozen=True)
class GenerationRecord:
    """How a program came to be: when, and (if a model wrote it) the model, prompt and sampling."""

    created_at: datetime
    model_id: str | None = None
    weights_sha256: str | None = None
    prompt: str | None = None
    include_prompt: bool = False
    seed: int | None = None
    sampling: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def for_script(cls, path: Path | None = None) -> GenerationRecord:
        """A record for a hand-written script: SOURCE_DATE_EPOCH if set, else the file's mtime.

        Both are fixed for a given input, so exporting the same file twice gives the same bytes.
        """
        epoch = os.environ.get("SOURCE_DATE_EPOCH")
        if epoch is not None:
            try:
                stamp = float(epoch)
            except ValueError as exc:
                raise ValueError(f"SOURCE_DATE_EPOCH must be seconds, not {epoch!r}") from exc
        elif path is not None:
            stamp = path.stat().st_mtime
        else:
            stamp = 0.0
        return cls(created_at=datetime.fromtimestamp(int(stamp), UTC))

    def to_dict(self) -> dict[str, Any]:
        """JSON form; the prompt appears only as its sha256 unless include_prompt is set."""
        prompt_sha = sha256_bytes(self.prompt.encode()) if self.prompt is not None else None
        return {
            "model_id": self.model_id,
            "weights_sha256": self.weights_sha256,
            "prompt_sha256": prompt_sha,
            "prompt": self.prompt if self.include_prompt else None,
            "seed": self.seed,
            "sampling": dict(self.sampling),
        }


@dataclass(frozen=True)
class Provenance:
    """What every file of one export carries: an id, the manifest's name and the facts."""

    id: str
    stem: str
    program_sha256: str
    parameters: dict[str, Any]
    record: GenerationRecord
    digital_source_type: str
    creator_tool: str

    @property
    def manifest_name(self) -> str:
        """The sidecar manifest's file name."""
        return self.stem + MANIFEST_SUFFIX

    @property
    def created(self) -> str:
        """ISO-8601 UTC time of the generation record."""
        return utc_seconds(self.record.created_at).strftime("%Y-%m-%dT%H:%M:%SZ")

    def summary(self) -> dict[str, Any]:
        """The short form embedded in files (glTF asset.extras, PLY comments)."""
        return {
            "id": self.id,
            "manifest": self.manifest_name,
            "created": self.created,
            "program_sha256": self.program_sha256,
            "model_id": self.record.model_id,
            "digital_source_type": self.digital_source_type,
        }

    def xmp_packet(self) -> dict[str, Any]:
        """A JSON-LD XMP packet (for glTF KHR_xmp_json_ld)."""
        return {
            "@context": {
                "dc": "http://purl.org/dc/elements/1.1/",
                "dcterms": "http://purl.org/dc/terms/",
                "xmp": "http://ns.adobe.com/xap/1.0/",
                "Iptc4xmpExt": "http://iptc.org/std/Iptc4xmpExt/2008-02-29/",
            },
            "xmp:CreatorTool": self.creator_tool,
            "xmp:CreateDate": self.created,
            "dc:identifier": self.id,
            "dc:format": "model/gltf-binary",
            "dcterms:provenance": self.manifest_name,
            "Iptc4xmpExt:DigitalSourceType": self.digital_source_type,
        }


def make_provenance(
    program: str,
    parameters: dict[str, Any],
    record: GenerationRecord,
    stem: str,
    digital_source_type: str | None = None,
) -> Provenance:
    """The provenance of one export; its id is a hash of everything that decides the result."""
    program_sha = sha256_bytes(program.encode())
    identity = json.dumps(
        {"program": program_sha, "parameters": parameters, "record": record.to_dict()},
        sort_keys=True,
        default=str,
    )
    created = utc_seconds(record.created_at).isoformat()
    export_id = "gs-" + sha256_bytes(f"{identity}|{created}".encode())[:20]
    source_type = digital_source_type or (GENERATED if record.model_id else AUTHORED)
    return Provenance(
        id=export_id,
        stem=stem,
        program_sha256=program_sha,
        parameters=dict(parameters),
        record=record,
        digital_source_type=source_type,
        creator_tool=creator_tool(),
    )


def build_manifest(
    provenance: Provenance,
    files: dict[str, Path],
    report: dict[str, Any],
    checks: dict[str, Any] | None = None,
    brep: dict[str, Any] | None = None,
    verdict: str = "valid",
) -> dict[str, Any]:
    """The manifest of an export: provenance, the Report and its verdict ("valid", or "not as
    asked": sound geometry that misses its request), the exporters' own read-back checks, the
    sha256 of each file and of the B-rep they were all written from (`brep`)."""
    manifest: dict[str, Any] = {
        "manifest_version": MANIFEST_VERSION,
        "id": provenance.id,
        "created": provenance.created,
        "digital_source_type": provenance.digital_source_type,
        "creator_tool": provenance.creator_tool,
        "program": {"sha256": provenance.program_sha256, "parameters": provenance.parameters},
        "generation": provenance.record.to_dict(),
        "report": report,
        "verdict": verdict,
        "export_checks": checks or {},
        "brep": brep,
        "software": software_versions(),
        "files": [
            {
                "name": path.name,
                "format": fmt,
                "bytes": path.stat().st_size,
                "sha256": sha256_file(path),
            }
            for fmt, path in files.items()
        ],
    }
    manifest["manifest_sha256"] = _self_hash(manifest)
    return manifest


def write_manifest(
    provenance: Provenance,
    files: dict[str, Path],
    report: dict[str, Any],
    folder: Path,
    checks: dict[str, Any] | None = None,
    brep: dict[str, Any] | None = None,
    verdict: str = "valid",
) -> Path:
    """Write the sidecar manifest next to the files; return its path."""
    path = folder / provenance.manifest_name
    manifest = build_manifest(provenance, files, report, checks, brep, verdict)
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return path


def _self_hash(manifest: dict[str, Any]) -> str:
    body = {k: v for k, v in manifest.items() if k != "manifest_sha256"}
    return sha256_bytes(json.dumps(body, sort_keys=True).encode())


@dataclass(frozen=True)
class Verification:
    """The outcome of checking a file against a manifest."""

    ok: bool
    problems: list[str]
    entry: dict[str, Any] | None = None


def verify(file: Path, manifest_path: Path) -> Verification:
    """Check that `file` is, byte for byte, a file the manifest lists."""
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return Verification(False, [f"cannot read manifest {manifest_path}: {exc}"])
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), list):
        return Verification(False, [f"{manifest_path} is not a genservice manifest"])
    problems = []
    if manifest.get("manifest_sha256") != _self_hash(manifest):
        problems.append("the manifest was edited after it was written (its own hash differs)")
    if not file.is_file():
        return Verification(False, [*problems, f"{file} does not exist"])
    actual = sha256_file(file)
    entries = [e for e in manifest["files"] if isinstance(e, dict)]
    entry = next((e for e in entries if e.get("name") == file.name), None)
    if entry is None:
        entry = next((e for e in entries if e.get("sha256") == actual), None)
        if entry is None:
            return Verification(False, [*problems, f"{file.name} is not listed in the manifest"])
    if entry.get("sha256") != actual:
        problems.append(
            f"{file.name} was altered: sha256 {actual[:16]}… differs from the manifest's "
            f"{str(entry.get('sha256'))[:16]}…"
        )
    return Verification(not problems, problems, entry)
