"""Fair-share settings: T_wait (numbers or "off"), history mode, per-queue weights and
min / max shares -- clear field errors on the page, the admin and the API, and every
change audited with who, old and new (paper 002, Sec. 5.2.2, 6.2.2-6.2.3)."""

from __future__ import annotations

import math

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from marketplace.market import adapters
from marketplace.market.models.market import ConfigChange, Market
from marketplace.market.services.config import market_configure, parse_t_wait, queue_save
from tests.factories import leaf

FORM = {"alpha": "0.5", "t_wait": "30", "mechanism": "abacus", "fairshare_policy": "hltrf", "dispatch_mode": "stride", "clock_speed": "60"}


@pytest.fixture
def root_user(market: Market):  # type: ignore[no-untyped-def]
    return get_user_model().objects.create_superuser("root", "root@localhost", "pw-for-tests-1")


@pytest.fixture
def staff_client(root_user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(root_user)
    return client


@pytest.fixture
def staff_api(root_user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(root_user)
    return client


@pytest.mark.parametrize(
    ("raw", "want"), [("0", 0.0), ("12.5", 12.5), (" 7 ", 7.0), ("off", math.inf), ("OFF", math.inf), ("never", math.inf)]
)
def test_parse_t_wait_accepts_seconds_and_off(raw: str, want: float) -> None:
    assert parse_t_wait(raw) == want


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("1e309", "not a finite number"), ("-1", "cannot be negative"), ("", "Enter T_wait"), ("soon", "not a number"),
        ("nan", "not a finite"),
    ],
)
def test_parse_t_wait_explains_what_is_wrong(raw: str, message: str) -> None:
    with pytest.raises(ValidationError) as exc:
        parse_t_wait(raw)
    assert message in exc.value.message_dict["t_wait"][0]


@pytest.mark.parametrize(
    ("value", "message"), [("1e309", "not a finite number"), ("-3", "cannot be negative"), ("", "Enter T_wait")],
    ids=["overflow", "negative", "empty"],
)
def test_settings_page_gives_a_clear_t_wait_error(staff_client, market, value, message) -> None:  # type: ignore[no-untyped-def]
    # when an admin types 1e309 (the browser's number box used to blank it: "This field is required")
    resp = staff_client.post(reverse("market-settings"), FORM | {"t_wait": value})
    # then the page says what is wrong with T_wait, and nothing changes
    assert resp.status_code == 200
    errors = resp.context["form"].errors["t_wait"]
    assert message in errors[0] and "required" not in errors[0]
    assert not ConfigChange.objects.exists()
    assert 'name="t_wait"' in resp.content.decode() and 'type="number" name="t_wait"' not in resp.content.decode()


def test_settings_page_t_wait_off_is_saved_and_audited(staff_client, market, root_user) -> None:  # type: ignore[no-untyped-def]
    resp = staff_client.post(reverse("market-settings"), FORM | {"t_wait": "off", "reason": "try the naive hierarchy"})
    assert resp.status_code == 302
    market.refresh_from_db()
    assert market.t_wait == math.inf
    change = ConfigChange.objects.get(field="t_wait")
    assert (change.old_value, change.new_value, change.changed_by, change.reason) == ("30.0", "off", root_user, "try the naive hierarchy")
    page = staff_client.get(reverse("market-settings")).content.decode()
    assert 'value="off"' in page  # shown back as "off", not "inf"


def test_history_mode_is_validated_audited_and_reaches_the_engine(staff_client, market, root_user) -> None:  # type: ignore[no-untyped-def]
    bad = staff_client.post(reverse("market-settings"), FORM | {"fairshare_history": "decay", "fairshare_history_length": "1e309"})
    assert "finite" in bad.context["form"].errors["fairshare_history_length"][0]
    bad = staff_client.post(reverse("market-settings"), FORM | {"fairshare_history": "weekly"})
    assert "fairshare_history" in bad.context["form"].errors
    assert not ConfigChange.objects.exists()
    ok = staff_client.post(reverse("market-settings"), FORM | {"fairshare_history": "decay", "fairshare_history_length": "600"})
    assert ok.status_code == 302
    audit = {c.field: (c.old_value, c.new_value, c.changed_by) for c in ConfigChange.objects.all()}
    assert audit == {"fairshare_history": ("forever", "decay", root_user), "fairshare_history_length": ("3600.0", "600.0", root_user)}
    market.refresh_from_db()
    config = adapters.market_config(market)
    assert (config.history, config.history_length) == ("decay", 600.0)


def test_api_rejects_an_overflowing_t_wait_and_accepts_off(staff_api, market) -> None:  # type: ignore[no-untyped-def]
    resp = staff_api.generic("PATCH", reverse("api-market"), '{"t_wait": 1e309}', content_type="application/json")
    assert resp.status_code == 400 and "not a finite number" in resp.json()["t_wait"][0]
    resp = staff_api.patch(reverse("api-market"), {"t_wait": -2}, format="json")
    assert resp.status_code == 400 and "negative" in resp.json()["t_wait"][0]
    resp = staff_api.patch(reverse("api-market"), {"t_wait": "30"}, format="json")  # JSON: a number, or the string "off"
    assert resp.status_code == 400 and "off" in resp.json()["t_wait"][0]
    assert not ConfigChange.objects.exists()
    resp = staff_api.patch(reverse("api-market"), {"t_wait": "off", "fairshare_policy": "static"}, format="json")
    assert resp.status_code == 200, resp.content
    assert (resp.json()["t_wait"], resp.json()["fairshare_policy"]) == ("off", "static")
    resp = staff_api.patch(reverse("api-market"), {"t_wait": 15}, format="json")
    assert resp.json()["t_wait"] == 15.0


def test_queue_limits_and_weights_are_validated_and_audited(market, root_user) -> None:  # type: ignore[no-untyped-def]
    queue = leaf(market, "root.orga.analytics")
    for field, value, message in (
        ("weight", 0.0, "positive"), ("weight", math.nan, "positive"),
        ("min_share", 1.5, "from 0 to 1"), ("max_share", -0.1, "from 0 to 1"),
    ):
        queue.refresh_from_db()
        setattr(queue, field, value)
        with pytest.raises(ValidationError) as exc:
            queue_save(queue=queue, user=root_user)
        assert message in exc.value.message_dict[field][0]
    queue.refresh_from_db()
    queue.min_share, queue.max_share = 0.6, 0.5
    with pytest.raises(ValidationError, match="exceeds the maximum"):
        queue_save(queue=queue, user=root_user)
    assert not ConfigChange.objects.exists()
    # a valid change is audited with the old and new limits, and the engine's tree carries them
    queue.refresh_from_db()
    queue.min_share, queue.max_share = 0.1, 0.4
    queue_save(queue=queue, user=root_user)
    change = ConfigChange.objects.get()
    assert "min=0.0 max=1.0" in change.old_value and "min=0.1 max=0.4" in change.new_value and change.changed_by == root_user
    tree = adapters.queue_tree(market).tree
    node = tree.index("root.orga.analytics")
    assert (tree.min_fraction[node], tree.max_fraction[node]) == (0.1, 0.4)


def test_market_configure_refuses_bad_history_length(market) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError) as exc:
        market_configure(market=market, fairshare_history_length=0)
    assert "positive" in exc.value.message_dict["fairshare_history_length"][0]


def test_admin_queue_form_explains_an_overflowing_weight(staff_client, market) -> None:  # type: ignore[no-untyped-def]
    queue = leaf(market, "root.orga.analytics")
    url = reverse("admin:marketplace_queue_change", args=[queue.pk])
    form = {"market": market.pk, "name": queue.name, "parent": queue.parent_id, "weight": "1e309", "min_share": "0", "max_share": "1"}
    resp = staff_client.post(url, form)
    assert resp.status_code == 200 and "Enter a finite number." in resp.content.decode()
    resp = staff_client.post(url, form | {"weight": "2", "min_share": "0.7", "max_share": "0.5"})
    assert "minimum share" in resp.content.decode()
    assert not ConfigChange.objects.exists()
