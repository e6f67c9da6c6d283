"""API keys: created with a random secret shown once, stored as sha256, revocable."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from sqlalchemy import select

from genservice.store.db import Database
from genservice.store.models import ApiKey, new_id, now

KEY_PREFIX = "gs_"


def hash_key(key: str) -> str:
    """The stored form of a key (the key has 256 random bits, so a plain sha256 suffices)."""
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class NewKey:
    """A freshly created key: the secret (shown once) and its record's id and name."""

    id: str
    name: str
    key: str


def create_key(
    db: Database,
    name: str,
    rate_limit_per_minute: int | None = None,
    jobs_per_day: int | None = None,
) -> NewKey:
    """Create a key; the secret is returned here and never stored."""
    if not name.strip() or len(name) > 200:
        raise ValueError("a key needs a name of 1 to 200 characters")
    for value, what in ((rate_limit_per_minute, "rate limit"), (jobs_per_day, "daily quota")):
        if value is not None and value < 0:
            raise ValueError(f"the {what} must be 0 (unlimited) or more")
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    record = ApiKey(
        id=new_id("key"),
        name=name.strip(),
        prefix=secret[:10],
        key_hash=hash_key(secret),
        created_at=now(),
        rate_limit_per_minute=rate_limit_per_minute,
        jobs_per_day=jobs_per_day,
    )
    with db.session() as session:
        session.add(record)
    return NewKey(record.id, record.name, secret)


def authenticate(db: Database, key: str) -> ApiKey | None:
    """The live key record for a presented key, or None."""
    if not key.startswith(KEY_PREFIX) or len(key) > 200:
        return None
    with db.session() as session:
        record = session.scalar(select(ApiKey).where(ApiKey.key_hash == hash_key(key)))
    if record is None or record.revoked_at is not None:
        return None
    return record


def list_keys(db: Database) -> list[ApiKey]:
    """Every key, oldest first."""
    with db.session() as session:
        return list(session.scalars(select(ApiKey).order_by(ApiKey.created_at)).all())


def revoke_key(db: Database, key_id_or_name: str) -> int:
    """Revoke keys by id or name; how many were revoked."""
    with db.session() as session:
        records = session.scalars(
            select(ApiKey).where(
                (ApiKey.id == key_id_or_name) | (ApiKey.name == key_id_or_name),
                ApiKey.revoked_at.is_(None),
            )
        ).all()
        for record in records:
            record.revoked_at = now()
        return len(records)
