"""Preview slots on Redis hold across processes: a preview running in another web process keeps the
same user's next one out (429) and, at ``PREVIEW_CONCURRENCY=1``, everyone's (503); its slots expire
if that process dies, and are free once it is done (``marketplace.auction.admission``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from django.core.cache import caches

from marketplace.auction.admission import PreviewBusy, preview_slot
from marketplace.infra import resilience

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]

HOLDER = textwrap.dedent("""
    import sys, django
    django.setup()
    from marketplace.auction.admission import preview_slot
    with preview_slot(9001):
        print("held", flush=True)
        sys.stdin.readline()
    print("released", flush=True)
""")


@pytest.fixture
def redis_slots(real_services, settings):  # type: ignore[no-untyped-def]
    settings.CACHES = {"default": {"BACKEND": "marketplace.infra.cache.SharedClientRedisCache",
                                   "LOCATION": os.environ["REDIS_URL"]}}
    settings.PREVIEW_CONCURRENCY = 1
    caches["default"].clear()
    resilience.CACHE.reset()
    yield real_services
    caches["default"].clear()


def _refusal(user_id: int) -> PreviewBusy | None:
    try:
        with preview_slot(user_id):
            return None
    except PreviewBusy as busy:
        return busy


def test_a_preview_in_another_process_holds_its_users_slot_and_the_sites(redis_slots) -> None:  # type: ignore[no-untyped-def]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "marketplace.settings", "PREVIEW_CONCURRENCY": "1"}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        mine, site = _refusal(9001), _refusal(9002)
        assert mine is not None and mine.mine
        assert site is not None and not site.mine
        # the keys carry an expiry, so a process killed while holding them frees them in time
        ttls = [redis_slots.ttl(key) for key in redis_slots.keys("*preview-slot:*")]
        assert len(ttls) == 2 and all(0 < t <= 300 for t in ttls), ttls
        holder.stdin.write("\n")  # type: ignore[union-attr]
        holder.stdin.flush()  # type: ignore[union-attr]
        assert holder.stdout.readline().strip() == "released"
    finally:
        holder.kill() if holder.poll() is None else None
        holder.wait(10)
    assert _refusal(9001) is None and _refusal(9002) is None


def test_delete_if_deletes_only_the_holders_value_in_one_step(redis_slots) -> None:  # type: ignore[no-untyped-def]
    store = caches["default"]
    store.set("lock", "token-a", 60)
    assert store.delete_if("lock", "token-b") is False and store.get("lock") == "token-a"
    assert store.delete_if("lock", "token-a") is True and store.get("lock") is None
    assert store.delete_if("lock", "token-a") is False  # nothing left to delete
    store.set("count", 5, 60)  # stored raw by the serializer, not pickled: compared as stored
    assert store.delete_if("count", 6) is False and store.delete_if("count", 5) is True


def test_a_slot_retaken_after_expiry_is_left_to_its_new_holder_on_redis(redis_slots) -> None:  # type: ignore[no-untyped-def]
    store = caches["default"]
    with preview_slot(9003):
        store.set("preview-slot:user:9003", "someone-else", 60)  # as if it had expired and been retaken
    assert store.get("preview-slot:user:9003") == "someone-else"
    assert _refusal(9003) is not None  # still held by the new holder
    assert store.get("preview-slot:site:0") is None  # the site slot, still this holder's, was given back
