"""Market configuration: validated, audited (who, old, new), re-clears when the auction's input changes."""

from __future__ import annotations

import math

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.test import Client

from marketplace.market.models.market import ConfigChange, Market
from marketplace.market.models.queues import ResourceType
from marketplace.market.services.config import market_configure, queue_save, resource_capacity_set
from tests.factories import leaf


@pytest.fixture
def admin_user(db):  # type: ignore[no-untyped-def]
    return get_user_model().objects.create_superuser("root", "root@localhost", "pw-admin-123")


def test_changes_are_audited_with_user_and_values(market, admin_user):
    changes = market_configure(market=market, user=admin_user, alpha=0.8, t_wait=12.5)
    assert {(c.field, c.old_value, c.new_value) for c in changes} == {("alpha", "0.5", "0.8"), ("t_wait", "30.0", "12.5")}
    assert all(c.changed_by == admin_user for c in ConfigChange.objects.all())
    market.refresh_from_db()
    assert (market.alpha, market.t_wait) == (0.8, 12.5)


def test_every_parameter_change_bumps_the_version_the_clock_speed_does_not(market):
    # a parameter reaches the next clearing, which records it (docs/economy.md, "Settings")
    v = market.state_version
    market_configure(market=market, clock_speed=120)
    assert Market.objects.get(pk=market.pk).state_version == v
    for k, change in enumerate([{"alpha": 0.1}, {"t_wait": 5}, {"fairshare_policy": "ltrf"}, {"dispatch_mode": "lottery"},
                                {"fairshare_history": "decay"}, {"fairshare_history_length": 60.0}], start=1):
        market_configure(market=market, **change)
        assert Market.objects.get(pk=market.pk).state_version == v + k, change


def test_unchanged_value_writes_no_audit_row(market):
    assert market_configure(market=market, alpha=market.alpha) == []
    assert not ConfigChange.objects.exists()


@pytest.mark.parametrize(
    "changes,field",
    [({"alpha": 1.5}, "alpha"), ({"alpha": -0.1}, "alpha"), ({"alpha": math.nan}, "alpha"), ({"alpha": "x"}, "alpha"),
     ({"t_wait": -1}, "t_wait"), ({"clock_speed": 0}, "clock_speed"), ({"fairshare_policy": "wfq"}, "fairshare_policy"),
     ({"name": "other"}, "name")],
)
def test_bad_values_are_field_errors_and_change_nothing(market, changes, field):
    with pytest.raises(ValidationError) as err:
        market_configure(market=market, alpha=0.7, **changes) if "alpha" not in changes else market_configure(market=market, **changes)
    assert field in err.value.message_dict
    market.refresh_from_db()
    assert market.alpha == 0.5 and not ConfigChange.objects.exists()


def test_capacity_change_is_audited(market, admin_user):
    rt = ResourceType.objects.get(market=market, name="map")
    resource_capacity_set(resource_type=rt, capacity=40, user=admin_user)
    assert ResourceType.objects.get(pk=rt.pk).capacity == 40
    assert ConfigChange.objects.get().field == "capacity[map]"
    with pytest.raises(ValidationError):
        resource_capacity_set(resource_type=rt, capacity=0)


def test_queue_weight_must_be_positive_and_tree_acyclic(market):
    q = leaf(market, "root.orga")
    q.weight = 0
    with pytest.raises(ValidationError) as err:
        queue_save(queue=q)
    assert "weight" in err.value.message_dict
    q.refresh_from_db()
    q.parent = leaf(market, "root.orga.analytics")
    with pytest.raises(ValidationError) as err:
        queue_save(queue=q)
    assert "parent" in err.value.message_dict


def test_admin_change_goes_through_the_audited_service(market, admin_user):
    client = Client()
    client.force_login(admin_user)
    url = f"/admin/marketplace/market/{market.pk}/change/"
    form = client.get(url).context["adminform"].form
    data = {k: v for k, v in form.initial.items() if k in form.fields and v is not None}
    data.update({"alpha": "0.25", "name": market.name})
    resp = client.post(url, data)
    assert resp.status_code == 302, resp.content[:2000]
    change = ConfigChange.objects.get(field="alpha")
    assert (change.old_value, change.new_value, change.changed_by) == ("0.5", "0.25", admin_user)
    # the admin page shows the T_wait guidance of paper 002, Eq. 7
    assert b"T_task / T_wait" in client.get(url).content
