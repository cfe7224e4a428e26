"""The login lockout holds against whitespace usernames and parallel
guesses, credential limits hold while the cache (Redis) is down, and the pages' forms share
the API's write limit."""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from unittest import mock

import pytest
import redis
from django.contrib.auth.hashers import MD5PasswordHasher
from rest_framework.test import APIClient

from marketplace.infra import resilience
from marketplace.web import throttling

PASSWORD = "pw-for-tests-1"  # tests.factories' password
LIMITS = {"login": (5, 300), "login_ip": (500, 300), "token": (20, 300)}


@pytest.mark.parametrize("variant", [" alice", "alice\t", "alice ", "\u00a0alice"])
def test_a_locked_username_stays_locked_with_extra_whitespace(client, alice, settings, variant):
    settings.FAILURE_LIMITS = LIMITS
    for _ in range(5):
        assert client.post("/login/", {"username": "alice", "password": "wrong"}).status_code == 401
    # the form strips (and NFKC-normalises) the username, so these are alice: locked as well
    assert client.post("/login/", {"username": variant, "password": PASSWORD}).status_code == 429
    assert APIClient().post("/api/auth/token/", {"username": variant, "password": PASSWORD}).status_code == 429


def test_whitespace_variants_share_one_count_at_the_token_endpoint(alice, settings):
    settings.FAILURE_LIMITS = LIMITS
    api = APIClient()
    codes = [api.post("/api/auth/token/", {"username": name, "password": "nope"}).status_code
             for name in ["alice", " alice", "alice\t", "ALICE ", " alice ", "alice"]]
    assert codes[:5] == [401] * 5 and codes[5] == 429


class _SlowHasher(MD5PasswordHasher):
    """MD5 that takes as long as a real hash, so parallel guesses overlap."""

    def verify(self, password: str, encoded: str) -> bool:
        time.sleep(0.05)
        return super().verify(password, encoded)


def test_parallel_wrong_passwords_get_no_more_answers_than_the_limit(alice, settings, transactional_db):
    settings.FAILURE_LIMITS = LIMITS
    settings.PASSWORD_HASHERS = ["tests.marketplace.web.test_limits._SlowHasher"]
    alice.user.set_password(PASSWORD)
    alice.user.save()
    codes: list[int] = []
    lock = threading.Lock()

    def guess() -> None:
        code = APIClient().post("/api/auth/token/", {"username": "alice", "password": "wrong"}).status_code
        with lock:
            codes.append(code)

    threads = [threading.Thread(target=guess) for _ in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(codes) == 24
    assert codes.count(401) <= 5, codes  # counted before the hash, atomically: 5 answers at most
    assert codes.count(429) >= 19


def test_a_right_password_does_not_use_up_the_limit(client, alice, settings):
    settings.FAILURE_LIMITS = LIMITS
    for _ in range(8):
        assert APIClient().post("/api/auth/token/", {"username": "alice", "password": PASSWORD}).status_code == 200
    for _ in range(5):
        assert client.post("/login/", {"username": "alice", "password": "wrong"}).status_code == 401
    assert client.post("/login/", {"username": "alice", "password": "wrong"}).status_code == 429


def _cache_down():  # type: ignore[no-untyped-def]
    down = redis.exceptions.ConnectionError("down")
    return [mock.patch(f"django.core.cache.cache.{name}", side_effect=down) for name in ("get", "set", "add", "incr", "decr", "delete")]


def test_credential_limits_hold_while_the_cache_is_down(alice, settings, caplog):
    settings.FAILURE_LIMITS = {"login": (5, 300), "login_ip": (50, 300), "token": (10, 300)}
    resilience.CACHE.reset()
    throttling.LOCAL_FALLBACK.clear()
    api = APIClient()
    patches = _cache_down()
    try:
        for p in patches:
            p.start()
        with caplog.at_level(logging.WARNING):
            passwords = [api.post("/api/auth/token/", {"username": "alice", "password": "nope"}).status_code for _ in range(7)]
            tokens = [api.get("/api/account/", HTTP_AUTHORIZATION=f"Token {secrets.token_hex(20)}").status_code for _ in range(12)]
    finally:
        for p in patches:
            p.stop()
        resilience.CACHE.reset()
        throttling.LOCAL_FALLBACK.clear()
    assert passwords[:5] == [401] * 5 and passwords[5:] == [429, 429]
    assert set(tokens[:10]) <= {401, 403} and tokens[10:] == [429, 429]
    assert any("per-process" in r.getMessage() for r in caplog.records)


def _bid_form(client, name: str):  # type: ignore[no-untyped-def]
    return client.post("/bid/", {"name": name, "budget": "1", "utility": "linear", "map_tasks": "1", "map_duration": "1",
                                 "map_weight": "1", "reduce_tasks": "0", "reduce_duration": "1", "reduce_weight": "1"})


def test_form_writes_share_the_api_write_limit(client, alice, alice_api, monkeypatch):
    monkeypatch.setattr(throttling.WriteRateThrottle, "THROTTLE_RATES", {"writes": "4/min", "user": "1000/min", "anon": "10/min"})
    client.force_login(alice.user)
    body = json.dumps({"budget": "1", "work": [{"resource_type": "map", "tasks": 1, "task_duration": 1.0}]})
    assert [alice_api.post("/api/jobs/", body, content_type="application/json").status_code for _ in range(2)] == [201, 201]
    assert [_bid_form(client, f"form-{k}").status_code for k in range(2)] == [302, 302]
    over = _bid_form(client, "one-too-many")
    assert over.status_code == 429 and int(over["Retry-After"]) > 0
    assert b"Too many changes" in over.content
    assert alice_api.post("/api/jobs/", body, content_type="application/json").status_code == 429
    assert client.get("/jobs/").status_code == 200  # reads are not writes


def test_the_admin_login_shares_the_login_limit(client, settings, django_user_model):
    # given a staff user locked out on /login/ (the attack: the admin's login had no limit)
    settings.FAILURE_LIMITS = LIMITS
    django_user_model.objects.create_user("staff2", password=PASSWORD, is_staff=True)
    for _ in range(5):
        assert client.post("/login/", {"username": "staff2", "password": "wrong"}).status_code == 401
    # when the right password is tried on /admin/login/
    answer = client.post("/admin/login/", {"username": "staff2", "password": PASSWORD})
    # then it is refused as on /login/, and no session opened the staff pages
    assert answer.status_code == 429 and answer["Retry-After"]
    assert client.get("/admin/").status_code == 302


def test_wrong_admin_passwords_count_towards_the_one_limit(client, settings, django_user_model):
    settings.FAILURE_LIMITS = LIMITS
    django_user_model.objects.create_user("staff3", password=PASSWORD, is_staff=True)
    codes = [client.post("/admin/login/", {"username": "staff3", "password": "wrong"}).status_code for _ in range(6)]
    assert codes == [200] * 5 + [429]
    assert client.post("/login/", {"username": "staff3", "password": PASSWORD}).status_code == 429


def test_a_right_admin_password_is_forgiven(client, settings, django_user_model):
    settings.FAILURE_LIMITS = LIMITS
    django_user_model.objects.create_user("staff4", password=PASSWORD, is_staff=True)
    for _ in range(3):
        client.post("/admin/login/", {"username": "staff4", "password": "wrong"})
    assert client.post("/admin/login/", {"username": "staff4", "password": PASSWORD}).status_code == 302
    client.logout()
    # only the 3 wrong ones count: 2 more wrong ones are still answered, the 6th attempt would not be
    assert [client.post("/admin/login/", {"username": "staff4", "password": "wrong"}).status_code for _ in range(2)] == [200, 200]


def test_write_limits_count_per_process_while_the_cache_is_down(alice, alice_api, monkeypatch, caplog):
    # given the write limit at 3 a minute and the cache (Redis) down (the attack: ~1,400 bids passed in a 25 s outage)
    monkeypatch.setattr(throttling.WriteRateThrottle, "THROTTLE_RATES", {"writes": "3/min", "user": "1000/min", "anon": "10/min"})
    resilience.CACHE.reset()
    throttling.LOCAL_FALLBACK.clear()
    body = json.dumps({"budget": "1", "work": [{"resource_type": "map", "tasks": 1, "task_duration": 1.0}]})
    patches = _cache_down()
    try:
        for p in patches:
            p.start()
        with caplog.at_level(logging.WARNING):
            # when the tenant bids five times
            codes = [alice_api.post("/api/jobs/", body, content_type="application/json").status_code for _ in range(5)]
    finally:
        for p in patches:
            p.stop()
        resilience.CACHE.reset()
        throttling.LOCAL_FALLBACK.clear()
    # then the limit still holds, counted in this process, and the log says so
    assert codes == [201, 201, 201, 429, 429]
    assert any("per-process" in r.getMessage() for r in caplog.records)
