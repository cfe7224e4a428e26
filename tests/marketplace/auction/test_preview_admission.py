"""Price previews are admitted one per user at a time and ``PREVIEW_CONCURRENCY`` at once on the site
(``marketplace.auction.admission``): a refused one is a 429 / 503 with ``Retry-After`` that computes and
stores nothing; a finished or failed one gives its slots back."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from unittest import mock

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from marketplace.auction import admission
from marketplace.auction.admission import LOCAL_SLOTS, PreviewBusy, preview_slot
from marketplace.infra.resilience import CACHE
from marketplace.market.models.market import Market
from marketplace.market.models.tenants import Tenant
from tests.marketplace.auction.test_preview import BID, _stored


@pytest.fixture(autouse=True)
def _free_slots(settings) -> Iterator[None]:  # type: ignore[no-untyped-def]
    settings.PREVIEW_CONCURRENCY = 2
    keys = [f"preview-slot:user:{i}" for i in range(64)] + [f"preview-slot:site:{i}" for i in range(8)]
    cache.delete_many(keys)
    LOCAL_SLOTS.clear()
    yield
    CACHE.reset()
    assert all(cache.get(k) is None for k in keys), "a slot was left taken"
    assert not any(LOCAL_SLOTS.get(k) for k in keys), "a local slot was left taken"


def _refused(user_id: int) -> PreviewBusy | None:
    try:
        with preview_slot(user_id):
            return None
    except PreviewBusy as busy:
        return busy


def test_one_preview_per_user_and_concurrency_previews_on_the_site() -> None:
    with preview_slot(1):
        mine = _refused(1)
        assert mine is not None and mine.mine and mine.wait > 0
        with preview_slot(2):
            site = _refused(3)
            assert site is not None and not site.mine
            assert _refused(2) is not None and _refused(2).mine  # type: ignore[union-attr]
        assert _refused(3) is None  # user 2's site slot is free again
    assert _refused(1) is None
    # a refusal for the site's slots held nothing: user 3 is not left marked busy
    with preview_slot(1), preview_slot(2):
        assert not _refused(3).mine  # type: ignore[union-attr]
    assert _refused(3) is None


def test_a_failed_preview_gives_its_slots_back() -> None:
    with pytest.raises(ZeroDivisionError), preview_slot(7):
        _ = 1 / 0
    with preview_slot(7), preview_slot(8):  # both site slots and user 7's are free
        pass


@pytest.mark.parametrize("concurrency", [1, 2, 3])
def test_parallel_previews_of_distinct_users_admit_exactly_the_concurrency(settings, concurrency: int) -> None:  # type: ignore[no-untyped-def]
    settings.PREVIEW_CONCURRENCY = concurrency
    users, inside, release = 8, threading.Barrier(8), threading.Event()
    admitted: list[int] = []
    refusals: list[PreviewBusy] = []
    lock = threading.Lock()

    def one(user: int) -> None:
        inside.wait()
        try:
            with preview_slot(user):
                with lock:
                    admitted.append(user)
                release.wait(10)
        except PreviewBusy as busy:
            with lock:
                refusals.append(busy)

    threads = [threading.Thread(target=one, args=(u,)) for u in range(users)]
    for t in threads:
        t.start()
    for _ in range(200):  # until every thread was admitted or refused
        with lock:
            if len(admitted) + len(refusals) == users:
                break
        threading.Event().wait(0.01)
    release.set()
    for t in threads:
        t.join(10)
    assert len(admitted) == concurrency and len(refusals) == users - concurrency
    assert not any(b.mine for b in refusals)


def test_a_slot_taken_by_another_holder_after_expiry_is_not_given_back_by_the_first() -> None:
    with preview_slot(5):
        cache.set("preview-slot:user:5", "someone-else", 60)  # as if it had expired and been retaken
    assert cache.get("preview-slot:user:5") == "someone-else"
    assert _refused(5) is not None
    cache.delete("preview-slot:user:5")


def test_a_store_with_compare_and_delete_gives_slots_back_with_it_in_one_step() -> None:
    store = mock.Mock(spec=["add", "get", "delete", "delete_if"])
    store.add.return_value = True
    with mock.patch.object(admission, "cache", store), preview_slot(6):
        pass
    released = {call.args[0] for call in store.delete_if.call_args_list}
    assert released == {"preview-slot:user:6", "preview-slot:site:0"}
    token = store.add.call_args_list[0].args[1]
    assert all(call.args[1] == token for call in store.delete_if.call_args_list)
    store.get.assert_not_called()  # no read then delete, whose gap lets another holder's slot go
    store.delete.assert_not_called()


def test_while_the_cache_is_down_slots_are_taken_in_this_process() -> None:
    with mock.patch.object(admission.cache, "add", side_effect=ConnectionError("redis down")):
        with preview_slot(4):
            assert _refused(4) is not None and _refused(4).mine  # type: ignore[union-attr]
            assert LOCAL_SLOTS.get("preview-slot:user:4") is not None
        assert LOCAL_SLOTS.get("preview-slot:user:4") is None
    assert not CACHE.allows()  # the breaker tripped: one failure, not one per call
    CACHE.reset()


def test_api_preview_while_the_users_own_runs_is_a_429_and_computes_nothing(market: Market, alice: Tenant, bob: Tenant,
                                                                            alice_api: APIClient, bob_api: APIClient) -> None:
    before = _stored(market)
    with preview_slot(alice.user.pk):
        resp = alice_api.post("/api/bids/preview/", BID, format="json")
        assert resp.status_code == 429 and int(resp["Retry-After"]) > 0
        assert "still being computed" in resp.json()["detail"]
        assert bob_api.post("/api/bids/preview/", BID, format="json").status_code == 200  # others are not held up
    assert _stored(market) == before
    assert alice_api.post("/api/bids/preview/", BID, format="json").status_code == 200


def test_api_preview_when_every_site_slot_is_taken_is_a_503(settings, market: Market, alice: Tenant, bob: Tenant,  # type: ignore[no-untyped-def]
                                                            alice_api: APIClient) -> None:
    settings.PREVIEW_CONCURRENCY = 1
    with preview_slot(bob.user.pk):
        resp = alice_api.post("/api/bids/preview/", BID, format="json")
        assert resp.status_code == 503 and int(resp["Retry-After"]) > 0 and "other previews" in resp.json()["detail"]
    assert alice_api.post("/api/bids/preview/", BID, format="json").status_code == 200


def test_form_preview_while_the_users_own_runs_keeps_the_form_and_says_when_to_retry(market: Market, alice: Tenant) -> None:
    client = Client()
    client.force_login(alice.user)
    form = {"name": "etl-busy", "budget": "43.5", "utility": "linear", "map_tasks": "10", "map_duration": "60",
            "map_weight": "2", "reduce_tasks": "2", "reduce_duration": "30", "reduce_weight": "1", "action": "preview"}
    before = _stored(market)
    with preview_slot(alice.user.pk):
        resp = client.post(reverse("bid-new"), form)
    body = resp.content.decode()
    assert resp.status_code == 429 and int(resp["Retry-After"]) > 0
    assert "still being computed" in body and 'value="43.5"' in body and 'value="etl-busy"' in body
    assert resp.context["preview"] is None and _stored(market) == before
    assert client.post(reverse("bid-new"), form).status_code == 200


def test_the_schema_documents_the_503_on_the_preview_only(alice_api: APIClient, market: Market) -> None:
    schema = alice_api.get("/api/schema/?format=json").json()
    preview = schema["paths"]["/api/bids/preview/"]["post"]["responses"]
    assert "Retry-After" in preview["503"]["headers"] and "Retry-After" in preview["429"]["headers"]
    assert "503" not in schema["paths"]["/api/jobs/"]["post"]["responses"]
