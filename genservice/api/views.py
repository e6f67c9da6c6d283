"""Rows to response bodies."""

from __future__ import annotations

from typing import Any

from genservice.api.schemas import AssetOut, JobOut, Progress, VersionOut
from genservice.store.models import Asset, Job, Version


def job_out(job: Job) -> JobOut:
    """A job as the API shows it."""
    total = job.stage_total or 0
    done = min(job.stage_done or 0, total) if total else 0
    terminal = job.status in ("done", "failed", "cancelled")
    return JobOut(
        id=job.id,
        kind=job.kind,
        status=job.status,  # type: ignore[arg-type]
        domain=job.domain,
        progress=Progress(
            stage=job.status,
            done=done,
            total=total,
            fraction=1.0
            if job.status == "done"
            else (done / total if total and not terminal else 0.0),
            message=job.message or "",
        ),
        error=job.error,
        session_id=job.session_id,
        parent_version_id=job.parent_version_id,
        version_id=job.version_id,
        attempts=job.attempts,
        created_at=job.created_at,
        updated_at=job.updated_at,
        finished_at=job.finished_at,
        result=job.result if terminal else None,
        url=f"/v1/generations/{job.id}",
        events_url=f"/v1/generations/{job.id}/events",
    )


def asset_out(asset: Asset) -> AssetOut:
    """An asset with its download URL."""
    return AssetOut(
        id=asset.id,
        format=asset.format,
        url=f"/v1/assets/{asset.id}",
        sha256=asset.sha256,
        size=asset.size,
        media_type=asset.media_type,
    )


def version_out(version: Version, assets: list[Asset]) -> VersionOut:
    """A version with its assets."""
    report: dict[str, Any] = version.report or {}
    return VersionOut(
        id=version.id,
        session_id=version.session_id,
        parent_id=version.parent_id,
        number=version.number,
        source=version.source,
        domain=version.domain,
        prompt=version.prompt,
        program=version.program,
        parameters=version.parameters or {},
        report=report,
        valid=bool(report.get("valid")),
        job_id=version.job_id,
        assets=[asset_out(a) for a in sorted(assets, key=lambda a: a.format)],
        created_at=version.created_at,
    )
