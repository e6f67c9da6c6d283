"""Request and response bodies of the API (the OpenAPI schema is generated from these)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from genservice.generation.engine import DEFAULT_REPAIR, MAX_REPAIR
from genservice.generation.fit import DEFAULT_FIT, FIT_STARTS, MAX_FIT
from genservice.generation.gallery import MAX_RETRIEVE, RETRIEVE_DEFAULT

Domain = Literal["cad", "scene", "code"]
ExportFormat = Literal["glb", "step", "stl", "3mf", "ply", "spz", "splat-glb", "png"]
JobStatus = Literal[
    "queued", "generating", "validating", "exporting", "done", "failed", "cancelled"
]


def time_budget_field() -> Any:
    """The code domain's `time_budget_s` field. At most 60 s here (the task file and the command
    line allow 300): a job validates up to `max_n` candidates within its stage's time limit, and
    /v1/validate answers within the service's wait."""
    return Field(
        default=None,
        gt=0,
        le=60,
        allow_inf_nan=False,
        description="code: seconds for all the tests together (default 10, at most 60); a test "
        "may use what the tests before it left, less a fair reserve for each test after it",
    )


class Strict(BaseModel):
    """Unknown fields are an error, so that a misspelt option is not silently ignored."""

    model_config = ConfigDict(extra="forbid")


class GenerationCreate(Strict):
    """A generation request. With `session_id`, `parent_version_id` and `instruction` it edits
    that version's program; images come base64-encoded here or as multipart files."""

    domain: Domain = "cad"
    prompt: str = Field(default="", description="what to make (may be empty for an edit)")
    images: list[str] = Field(default_factory=list, description="base64 PNG or JPEG images")
    n: int = Field(default=4, description="candidates to sample; the best is kept")
    seed: int | None = Field(default=None, ge=0, le=2**63 - 1)
    temperature: float | None = Field(
        default=None, ge=0, le=10, allow_inf_nan=False,
        description="0 = greedy (default: 0.4 for a new part with a picture, else 0.8)",
    )  # fmt: skip
    top_p: float = Field(default=0.95, gt=0, le=1, allow_inf_nan=False)
    greedy_first: bool | None = Field(
        default=None,
        description="decode the first candidate greedily (default: true for a new part with a "
        "picture, else false)",
    )
    max_new_tokens: int | None = Field(
        default=None, ge=1, description="per candidate (default: the service's limit)"
    )
    session_id: str | None = Field(default=None, max_length=64)
    parent_version_id: str | None = Field(default=None, max_length=64)
    instruction: str | None = Field(default=None, description="the change to make (edits)")
    spec: dict[str, Any] | None = Field(default=None, description="cad/scene: dimensions to meet")
    tests: str | None = Field(default=None, description="code: check(candidate) or test_*")
    entry_point: str | None = Field(default=None, max_length=200, description="code: function")
    time_budget_s: float | None = time_budget_field()
    formats: list[ExportFormat] | None = Field(default=None, description="export formats")
    repair: int = Field(
        default=DEFAULT_REPAIR,
        ge=0,
        le=MAX_REPAIR,
        description="cad/scene: when no candidate is valid, up to this many rounds feed the best "
        "failing candidate and its error back to the model (0 = off); the result lists them "
        "under `repairs`",
    )
    fit: int | None = Field(
        default=None,
        ge=0,
        le=MAX_FIT,
        description="cad/scene: up to this many rounds adjust the best part's parameters while "
        "it stays sound: to the sizes the prompt states when only those are off, then (with a "
        f"picture) to look more like the picture, from the best {FIT_STARTS} candidates of "
        f"different designs, the best fitted one answering (0 = off; default {DEFAULT_FIT} "
        "with a picture, 0 without); the result says what changed under `fit`",
    )
    retrieve: int | None = Field(
        default=None,
        ge=0,
        le=MAX_RETRIEVE,
        description="cad/scene with a picture: this many parts of the model's gallery that look "
        "most like the picture join the sampled candidates, judged by the same checks (0 = off; "
        f"default {RETRIEVE_DEFAULT} with a picture); such a candidate has `retrieved_from`",
    )


class ValidateRequest(Strict):
    """A program to validate, with what it is checked against."""

    domain: Domain = "cad"
    program: str = Field(min_length=1)
    spec: dict[str, Any] | None = None
    parameters: dict[str, float | int | str | bool] | None = None
    tests: str | None = None
    entry_point: str | None = Field(default=None, max_length=200)
    time_budget_s: float | None = time_budget_field()
    request: str | None = Field(
        default=None,
        max_length=4000,
        description="The request's words: the part is also checked against the sizes and "
        "counts they ask (the `request` check), as a served generation is.",
    )
    version_id: str | None = Field(
        default=None,
        max_length=64,
        description="The version this program edits: it is checked against the request that "
        "version was judged against (what the editor sends for code edits).",
    )
    job_id: str | None = Field(
        default=None,
        max_length=64,
        description="The generation job this program is a candidate of: it is checked against "
        "that job's request (the editor's opened candidates).",
    )


class SessionCreate(Strict):
    """A new design session."""

    name: str = Field(default="", max_length=200)
    domain: Domain = "cad"


class VersionCreate(Strict):
    """A manual edit: new code, or new parameter values for the parent's code (or both)."""

    parent_version_id: str | None = Field(default=None, max_length=64)
    program: str | None = None
    parameters: dict[str, float | int | str | bool] | None = None
    formats: list[ExportFormat] | None = None
    job_id: str | None = Field(
        default=None,
        max_length=64,
        description="The generation job the program is a candidate of (an opened candidate): "
        "the version is judged against that job's request instead of its parent's.",
    )


class Progress(BaseModel):
    """How far the current stage is."""

    stage: str
    done: int
    total: int
    fraction: float
    message: str


class AssetOut(BaseModel):
    """A downloadable file of a version."""

    id: str
    format: str
    url: str
    sha256: str
    size: int
    media_type: str


class JobOut(BaseModel):
    """A job: its state and progress and, once done, its result."""

    id: str
    kind: str
    status: JobStatus
    domain: str
    progress: Progress
    error: str | None
    session_id: str | None
    parent_version_id: str | None
    version_id: str | None
    attempts: int
    created_at: float
    updated_at: float
    finished_at: float | None
    result: dict[str, Any] | None
    url: str
    events_url: str


class JobAccepted(BaseModel):
    """The answer to a submitted job."""

    id: str
    status: JobStatus
    session_id: str | None
    url: str
    events_url: str


class JobPage(BaseModel):
    """One page of jobs, newest first; pass next_cursor to get the next."""

    items: list[JobOut]
    next_cursor: str | None


class VersionOut(BaseModel):
    """One version: program, parameters, Report, assets, parent."""

    id: str
    session_id: str
    parent_id: str | None
    number: int
    source: str
    domain: str
    prompt: str
    program: str
    parameters: dict[str, Any]
    report: dict[str, Any]
    valid: bool
    job_id: str
    assets: list[AssetOut]
    created_at: float


class SessionOut(BaseModel):
    """A session with its version tree (children by parent id; roots under "root")."""

    id: str
    name: str
    domain: str
    head_version_id: str | None
    created_at: float
    updated_at: float
    versions: list[VersionOut]
    children: dict[str, list[str]]


class SessionSummary(BaseModel):
    """A session without its versions."""

    id: str
    name: str
    domain: str
    head_version_id: str | None
    created_at: float
    updated_at: float


class ModelOut(BaseModel):
    """A model the service generates with."""

    id: str
    kind: str
    path: str
    default: bool


class Health(BaseModel):
    """Liveness or readiness."""

    status: str
    checks: dict[str, str] = Field(default_factory=dict)
