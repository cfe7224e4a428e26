"""Secure by default: demo credentials, deploy checks, throttling, token expiry, password rules."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from unittest import mock

import pytest
import redis
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from marketplace.api.authentication import forget_tokens
from marketplace.infra import resilience
from marketplace.management.commands.seed_demo import DEMO_TENANTS
from marketplace.web import throttling

ROOT = Path(__file__).resolve().parents[2]


def test_seed_demo_gives_every_login_its_own_password_and_keeps_them(db, settings, tmp_path, capsys):
    settings.VAR_DIR = tmp_path
    call_command("seed_demo")
    first = capsys.readouterr().out
    lines = dict(line.split(": ", 1) for line in (tmp_path / "demo-credentials.txt").read_text().splitlines())
    assert set(lines) == {"admin", *DEMO_TENANTS}
    assert len(set(lines.values())) == len(lines)  # all distinct, the admin's included
    assert oct((tmp_path / "demo-credentials.txt").stat().st_mode & 0o777) == "0o600"
    User = get_user_model()
    for name, password in lines.items():
        assert User.objects.get(username=name).check_password(password)
        validate_password(password, User.objects.get(username=name))
    assert User.objects.get(username="admin").is_superuser
    call_command("seed_demo")
    assert capsys.readouterr().out == first  # idempotent: same credentials


def test_check_deploy_is_clean_with_production_settings(tmp_path):
    env = dict(os.environ, DJANGO_DEBUG="0", DJANGO_SECRET_KEY=secrets.token_urlsafe(64),
               DJANGO_ALLOWED_HOSTS="market.example.com", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    env.pop("REDIS_URL", None)
    out = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "no issues" in out.stdout


def test_production_settings_refuse_to_start_without_a_secret(tmp_path):
    env = dict(os.environ, DJANGO_DEBUG="0", DJANGO_SECRET_KEY="", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    out = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "DJANGO_SECRET_KEY" in out.stderr


def test_wrong_logins_on_the_page_are_limited_with_retry_after(client, alice, settings):
    settings.FAILURE_LIMITS = {"login": (5, 300), "login_ip": (50, 300), "token": (20, 300)}
    for _ in range(5):
        assert client.post("/login/", {"username": "alice", "password": "wrong"}).status_code == 401
    blocked = client.post("/login/", {"username": "alice", "password": "pw-for-tests-1"})  # right, but blocked
    assert blocked.status_code == 429 and 0 < int(blocked["Retry-After"]) <= 300


def test_wrong_passwords_from_one_address_are_limited_across_usernames(client, alice, settings):
    settings.FAILURE_LIMITS = {"login": (5, 300), "login_ip": (8, 300), "token": (20, 300)}
    for k in range(8):
        assert client.post("/login/", {"username": f"nobody{k}", "password": "wrong"}).status_code == 401
    assert client.post("/login/", {"username": "alice", "password": "pw-for-tests-1"}).status_code == 429


def test_wrong_passwords_at_the_token_endpoint_are_limited(alice, settings):
    settings.FAILURE_LIMITS = {"login": (5, 300), "login_ip": (50, 300), "token": (20, 300)}
    api = APIClient()
    for _ in range(5):
        assert api.post("/api/auth/token/", {"username": "alice", "password": "nope"}).status_code == 401
    resp = api.post("/api/auth/token/", {"username": "alice", "password": "pw-for-tests-1"})
    assert resp.status_code == 429 and int(resp["Retry-After"]) > 0


def test_wrong_tokens_are_limited_per_address(alice, settings):
    settings.FAILURE_LIMITS = {"login": (10, 300), "login_ip": (50, 300), "token": (20, 300)}
    api = APIClient()
    codes = [api.get("/api/account/", HTTP_AUTHORIZATION=f"Token {secrets.token_hex(20)}").status_code for _ in range(22)]
    # the limit's 20 wrong tokens are refused (401; 403 when session auth comes first), then limited
    assert set(codes[:20]) <= {401, 403} and codes[20:] == [429, 429]


def test_tokens_expire_and_are_rotated(alice, settings):
    api = APIClient()
    got = api.post("/api/auth/token/", {"username": "alice", "password": "pw-for-tests-1"}).json()
    assert set(got) == {"token", "expires_at"}
    assert api.get("/api/account/", HTTP_AUTHORIZATION=f"Token {got['token']}").status_code == 200
    Token.objects.filter(key=got["token"]).update(created=timezone.now() - timedelta(seconds=settings.API_TOKEN_TTL_S + 1))
    forget_tokens()  # a token's creation time never changes in use; this test ages it behind the process's back
    expired = api.get("/api/account/", HTTP_AUTHORIZATION=f"Token {got['token']}")
    assert expired.status_code in (401, 403) and "expired" in expired.json()["detail"]
    fresh = api.post("/api/auth/token/", {"username": "alice", "password": "pw-for-tests-1"}).json()
    assert fresh["token"] != got["token"]
    assert api.get("/api/account/", HTTP_AUTHORIZATION=f"Token {fresh['token']}").status_code == 200
    assert api.delete("/api/auth/token/", HTTP_AUTHORIZATION=f"Token {fresh['token']}").status_code == 204
    assert api.get("/api/account/", HTTP_AUTHORIZATION=f"Token {fresh['token']}").status_code in (401, 403)


def test_writes_are_rate_limited_with_retry_after(alice_api, alice, monkeypatch):
    monkeypatch.setattr(throttling.WriteRateThrottle, "THROTTLE_RATES", {"writes": "3/min", "user": "1000/min", "anon": "10/min"})
    body = json.dumps({"budget": "1", "work": [{"resource_type": "map", "tasks": 1, "task_duration": 1.0}]})
    codes = [alice_api.post("/api/jobs/", body, content_type="application/json").status_code for _ in range(4)]
    assert codes == [201, 201, 201, 429]
    assert alice_api.get("/api/jobs/").status_code == 200  # reads are not writes
    last = alice_api.post("/api/jobs/", body, content_type="application/json")
    assert int(last["Retry-After"]) > 0


def test_throttling_answers_when_the_cache_is_down(alice_api, alice):
    # the rates then count per process (tests/marketplace/web/test_limits.py), never a 500
    resilience.CACHE.reset()
    down = redis.exceptions.ConnectionError("down")
    with mock.patch("django.core.cache.cache.get", side_effect=down), mock.patch("django.core.cache.cache.set", side_effect=down), \
            mock.patch("django.core.cache.cache.add", side_effect=down), mock.patch("django.core.cache.cache.incr", side_effect=down):
        assert alice_api.get("/api/account/").status_code == 200
        assert not resilience.CACHE.allows()  # the failure was seen (and the cache is left alone for a while)
    resilience.CACHE.reset()


@pytest.mark.parametrize("password", ["short1", "password1234", "123456789012"])
def test_weak_passwords_are_refused(alice, password):
    with pytest.raises(ValidationError):
        validate_password(password, alice.user)


def test_compose_is_secure_by_default():
    import yaml  # PyYAML, pinned in requirements.txt

    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())
    services = compose["services"]
    app_env = services["web"]["environment"]
    assert app_env["DJANGO_DEBUG"] == "0"
    assert app_env["DJANGO_SECRET_KEY"].startswith("${DJANGO_SECRET_KEY:?")  # from the environment, required
    assert "gunicorn" in services["web"]["command"] and "runserver" not in json.dumps(compose)
    for name in ("web", "worker", "beat", "clock", "postgres", "redis"):
        assert services[name]["restart"] == "unless-stopped", name
    for name in ("migrate", "seed"):  # one-off steps
        assert services[name]["restart"] == "no"
    assert "seed_demo" not in services["web"]["command"] and services["seed"]["profiles"] == ["demo"]
    assert services["web"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert "--without-gossip" in services["worker"]["command"]


def test_a_bad_login_is_401_and_a_missing_field_400(alice, client):
    api = APIClient()
    wrong = api.post("/api/auth/token/", {"username": "alice", "password": "nope"})
    assert wrong.status_code == 401 and wrong["WWW-Authenticate"].startswith("Token") and "non_field_errors" in wrong.json()
    assert api.post("/api/auth/token/", {"username": "alice"}).status_code == 400
    page = client.post("/login/", {"username": "alice", "password": "nope"})
    assert page.status_code == 401 and b"correct username and password" in page.content
    assert client.post("/login/", {"username": "alice"}).status_code == 200  # nothing was checked
