"""Idempotent execution of a money-moving request (``ledger.models.IdempotencyKey``).

:func:`idempotent_call` runs a request at most once per (user, key):

1. Insert the key row first unless it is stored (``ON CONFLICT DO NOTHING``), in
   the transaction that will hold the request's writes. A concurrent request with
   the same key blocks on the unique index (PostgreSQL) or on the write lock
   (SQLite's IMMEDIATE transactions) until the first one commits or rolls back; it
   then replays the stored answer, or runs itself if the first rolled back. A
   stored key is read only when the insert found it (a new key costs no read). No "in progress" state is ever
   visible, so a crash between the money moving and the answer being stored
   is impossible: both commit together or neither does.
2. Run the request; store a 2xx answer on the key row and commit. Anything
   else (a 4xx, an exception) rolls the key back with the request's writes,
   so the client may retry with the same key once it fixes the cause.

A key is bound to the request it was first used with (method, path and body,
as a SHA-256 :func:`request_fingerprint`): reusing it for another request is a
:class:`KeyReused` (the API answers 422). Keys expire after
``settings.IDEMPOTENCY_KEY_TTL_S`` (default 24 h): an expired key is a new key,
and :func:`idempotency_purge` deletes expired rows (the market sweeper runs it: ``ledger.hooks``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from marketplace.infra import instances, rows
from marketplace.ledger.models import IdempotencyKey

KEY_PATTERN = re.compile(r"[\x21-\x7e]{1,255}")  # printable ASCII, no spaces, as Stripe's keys


@dataclass(frozen=True)
class Outcome:
    """What a request answered: HTTP status and JSON body."""

    status_code: int
    body: Any
    replayed: bool = False


class KeyReused(Exception):
    """The key was first used with a different request (method, path or body)."""


class _NotStored(Exception):
    def __init__(self, outcome: Outcome) -> None:
        self.outcome = outcome


def key_ttl() -> timedelta:
    return timedelta(seconds=getattr(settings, "IDEMPOTENCY_KEY_TTL_S", 24 * 3600))


def valid_key(key: str) -> bool:
    """True for 1-255 printable ASCII characters without spaces."""
    return bool(KEY_PATTERN.fullmatch(key))


def request_fingerprint(*, method: str, path: str, body: object) -> str:
    """SHA-256 (hex, 64 characters) of the method, the path and the body as canonical JSON."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(f"{method.upper()} {path}\n{canonical}".encode()).hexdigest()


def idempotent_call(*, user: Any, key: str, fingerprint: str, call: Callable[[], Outcome]) -> Outcome:
    """Run ``call`` once per (user, key); see the module docstring.

    Raises:
        KeyReused: the key is stored with another fingerprint.
        whatever ``call`` raises (nothing is stored then).
    """
    for _ in range(3):  # an expired row deleted, or a stored row purged meanwhile
        try:
            return _first_call(user, key, fingerprint, call)  # the common case: a new key, no read first
        except _Taken:
            pass
        except _NotStored as not_stored:
            return not_stored.outcome
        stored = _stored(user, key)
        if stored is None:
            continue
        if stored.created_at < timezone.now() - key_ttl():
            IdempotencyKey.objects.filter(pk=stored.pk).delete()
            continue
        if stored.fingerprint != fingerprint:
            raise KeyReused(key)
        return Outcome(stored.status_code, json.loads(stored.response) if stored.response else None, replayed=True)
    raise IntegrityError(f"idempotency key {key!r} kept changing hands")


class _Taken(Exception):
    pass


def form_submit_once(*, request: Any, key: str, scope: str, name: str, call: Callable[[], int], reused: str) -> int:
    """Run a page form's money-moving ``call`` (returning the id it made) at most once per
    rendered form: ``key``, its hidden ``idempotency_key`` field, keys the first outcome
    (stored as ``{name: id}`` under ``scope:key``), so a second submission of the same form
    returns the first id instead of moving money again. A form without a valid key just
    runs ``call``.

    Raises:
        ValidationError: ``reused`` when the key comes back with other field values.
    """
    from django.core.exceptions import ValidationError

    if not valid_key(key):
        return call()
    body = {k: v for k, v in request.POST.lists() if k not in ("csrfmiddlewaretoken", "idempotency_key")}
    try:
        outcome = idempotent_call(user=request.user, key=f"{scope}:{key}", call=lambda: Outcome(201, {name: call()}),
                                  fingerprint=request_fingerprint(method="POST", path=request.path, body=body))
    except KeyReused:
        raise ValidationError(reused) from None
    return int(outcome.body[name])


def _stored(user: Any, key: str) -> IdempotencyKey | None:
    return instances.find_row(IdempotencyKey, user=user.pk, key=key)  # type: ignore[no-any-return]


def _first_call(user: Any, key: str, fingerprint: str, call: Callable[[], Outcome]) -> Outcome:
    with transaction.atomic():
        row_id = rows.insert_new(IdempotencyKey, ("user", "key", "fingerprint", "status_code", "response", "created_at"),
                                 ("user", "key"), (user.pk, key, fingerprint, 0, "", timezone.now()))
        if row_id is None:
            raise _Taken  # this key is stored (another request committed it first, or earlier): replay it
        outcome = call()
        if not 200 <= outcome.status_code < 300:
            raise _NotStored(outcome)  # roll the key back with whatever the request wrote
        rows.update_rows(IdempotencyKey, ("status_code", "response"), ("id",), [(outcome.status_code, json.dumps(outcome.body), row_id)])
    return outcome


def idempotency_purge(*, now: Any = None) -> int:
    """Delete keys older than the TTL; returns how many."""
    cutoff = (now or timezone.now()) - key_ttl()
    deleted, _ = IdempotencyKey.objects.filter(created_at__lt=cutoff).delete()
    return deleted
