"""Row locks that let other transactions go on referencing the row.

PostgreSQL's ``SELECT ... FOR UPDATE`` conflicts with the ``FOR KEY SHARE`` lock that
inserting a row with a foreign key to the locked row takes; ``FOR NO KEY UPDATE`` (the
lock an UPDATE of non-key columns takes) does not. The marketplace locks markets, jobs,
resource types, tenants and accounts only to change non-key columns, and its writers
insert rows that reference them while others hold them (a bid's job references the
market a tick holds; a clearing's snapshot too). A transaction that references a row
(``KEY SHARE``) and then locks it would deadlock with a ``FOR UPDATE`` waiter queued in
between, so these models take ``FOR NO KEY UPDATE`` only: their querysets'
``select_for_update`` defaults to ``no_key=True`` (ignored on SQLite, which locks the
database instead), and the raw statements use ``infra.instances.lock_suffix``.
"""

from __future__ import annotations

from typing import Any

from django.db import models


class NoKeyLockQuerySet(models.QuerySet[Any]):
    """``select_for_update`` takes ``FOR NO KEY UPDATE`` unless told otherwise."""

    def select_for_update(self, nowait: bool = False, skip_locked: bool = False, of: tuple[str, ...] = (),
                          no_key: bool = True) -> NoKeyLockQuerySet:
        return super().select_for_update(nowait=nowait, skip_locked=skip_locked, of=of, no_key=no_key)  # type: ignore[return-value]


NoKeyLockManager = models.Manager.from_queryset(NoKeyLockQuerySet)
