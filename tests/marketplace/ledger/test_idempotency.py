"""Idempotency-Key on money-moving POSTs: a repeat returns the first answer and moves nothing."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from marketplace.ledger.idempotency import idempotency_purge
from marketplace.ledger.models import IdempotencyKey, LedgerEntry
from marketplace.ledger.services import ledger_reconcile
from marketplace.market.models.jobs import Job

BID = {"name": "wc", "budget": "10", "work": [{"resource_type": "map", "tasks": 2, "task_duration": 5.0}]}


def _bid(client, body=BID, key: str | None = "k-1"):  # type: ignore[no-untyped-def]
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    return client.post("/api/jobs/", json.dumps(body), content_type="application/json", **headers)


def _holds(tenant) -> int:  # type: ignore[no-untyped-def]
    return LedgerEntry.objects.filter(account__tenant=tenant, kind=LedgerEntry.Kind.HOLD).count()


def test_same_key_and_body_replays_the_first_answer_and_moves_nothing(alice_api, alice):
    first = _bid(alice_api)
    assert first.status_code == 201 and "Idempotent-Replayed" not in first
    again = _bid(alice_api)
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert again.content == first.content  # the first answer, byte for byte
    assert Job.objects.filter(tenant=alice).count() == 1 and _holds(alice) == 1
    alice.account.refresh_from_db()
    assert alice.account.available == Decimal("990") and ledger_reconcile(account=alice.account) == []


def test_without_a_key_each_post_is_a_new_bid(alice_api, alice):
    assert _bid(alice_api, key=None).status_code == 201
    assert _bid(alice_api, key=None).status_code == 201
    assert _holds(alice) == 2


def test_same_key_with_another_body_is_a_422(alice_api, alice):
    assert _bid(alice_api).status_code == 201
    resp = _bid(alice_api, dict(BID, budget="11"))
    assert resp.status_code == 422 and "Idempotency-Key" in resp.json()
    assert _holds(alice) == 1


def test_keys_are_per_user(alice_api, bob_api, alice, bob):
    assert _bid(alice_api).status_code == 201
    resp = _bid(bob_api)
    assert resp.status_code == 201 and "Idempotent-Replayed" not in resp  # bob's own bid, not alice's answer
    assert _holds(alice) == 1 and _holds(bob) == 1


def test_a_refused_request_stores_nothing_so_a_fixed_retry_runs(alice_api, alice):
    resp = _bid(alice_api, dict(BID, budget="5000"))  # above the balance
    assert resp.status_code == 400
    assert not IdempotencyKey.objects.exists()
    assert _bid(alice_api, dict(BID, budget="5000")).status_code == 400  # still refused, not replayed as stored


@pytest.mark.parametrize("key", ["", " ", "a b", "x" * 256, "ключ"])
def test_malformed_key_is_a_400(alice_api, alice, key):
    resp = _bid(alice_api, key=key)
    assert resp.status_code == 400 and "Idempotency-Key" in resp.json()
    assert _holds(alice) == 0


def test_cancel_with_a_key_is_idempotent(alice_api, alice):
    job = _bid(alice_api, key=None).json()
    url = f"/api/jobs/{job['id']}/cancel/"
    first = alice_api.post(url, HTTP_IDEMPOTENCY_KEY="c-1")
    again = alice_api.post(url, HTTP_IDEMPOTENCY_KEY="c-1")
    assert first.status_code == again.status_code == 200 and again.json() == first.json()
    assert LedgerEntry.objects.filter(job_id=job["id"], kind=LedgerEntry.Kind.RELEASE).count() == 1
    assert alice_api.post(url, HTTP_IDEMPOTENCY_KEY="c-2").status_code == 409  # a new key: really cancelled already (a conflict)


def test_a_key_expires_after_the_ttl(alice_api, alice, settings):
    settings.IDEMPOTENCY_KEY_TTL_S = 60
    assert _bid(alice_api).status_code == 201
    IdempotencyKey.objects.update(created_at=timezone.now() - timedelta(seconds=61))
    resp = _bid(alice_api)
    assert resp.status_code == 201 and "Idempotent-Replayed" not in resp  # an expired key is a new key
    assert _holds(alice) == 2
    IdempotencyKey.objects.update(created_at=timezone.now() - timedelta(seconds=61))
    assert idempotency_purge() == 1 and not IdempotencyKey.objects.exists()


def test_schema_documents_the_header(alice_api):
    schema = alice_api.get("/api/schema/?format=json").json()
    params = schema["paths"]["/api/jobs/"]["post"]["parameters"]
    assert any(p["name"] == "Idempotency-Key" and p["in"] == "header" for p in params)


def test_the_bid_page_places_one_bid_when_its_form_is_submitted_twice(client, alice):
    client.force_login(alice.user)
    form = client.get("/bid/").content.decode()
    key = form.split('name="idempotency_key" value="', 1)[1].split('"', 1)[0]
    post = {"idempotency_key": key, "name": "twice", "budget": "7", "utility": "linear", "map_tasks": 2, "map_duration": 10,
            "map_weight": 1, "reduce_tasks": 0, "reduce_duration": 10, "reduce_weight": 1}
    first, second = client.post("/bid/", post), client.post("/bid/", post)
    assert first.status_code == second.status_code == 302 and first.url == second.url
    assert _holds(alice) == 1
    assert client.get("/bid/").content.decode().count(key) == 0  # a new form gets a new key


def test_the_sweepers_ledger_work_purges_expired_keys_at_most_once_a_period(alice, settings):  # type: ignore[no-untyped-def]
    # given an expired key and a process that has not purged yet
    from marketplace.ledger.hooks import forget
    from marketplace.market import hooks

    settings.IDEMPOTENCY_KEY_TTL_S = 60
    forget()
    old = timezone.now() - timedelta(seconds=61)
    IdempotencyKey.objects.create(user=alice.user, key="old", fingerprint="f", status_code=201, created_at=old)
    # when the sweeper runs the registered sweep work, the key is gone
    hooks.run_sweep_work()
    assert not IdempotencyKey.objects.exists()
    # and within the period a second expired key stays until the next one
    IdempotencyKey.objects.create(user=alice.user, key="old2", fingerprint="f", status_code=201, created_at=old)
    hooks.run_sweep_work()
    assert IdempotencyKey.objects.filter(key="old2").exists()
    forget()
