"""Roles: the navigation offers only what the role can use; staff see every tenant's jobs and
credit or debit an account through the ledger with a reason (audited, idempotent)."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import Client
from rest_framework.test import APIClient

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.ledger.models import LedgerEntry
from marketplace.ledger.services import account_adjust, ledger_reconcile
from marketplace.market.roles import CLUSTER_MANAGER


@pytest.fixture
def staff(db):  # type: ignore[no-untyped-def]
    return get_user_model().objects.create_user(username="staffer", password="pw-for-tests-1", is_staff=True)


@pytest.fixture
def manager(db):  # type: ignore[no-untyped-def]
    user = get_user_model().objects.create_user(username="yarn-rm", password="pw-for-tests-1")
    user.groups.add(Group.objects.get_or_create(name=CLUSTER_MANAGER)[0])
    return user


def _nav_links(client: Client) -> list[str]:
    html = client.get("/").content.decode()
    nav = html[html.index('<nav aria-label="Main"'):html.index("</nav>")]
    return re.findall(r'href="([^"]+)"', nav)


@pytest.mark.parametrize("who", ["alice", "staff", "manager"])
def test_every_navigation_link_answers_200_for_the_role_that_sees_it(market, alice, staff, manager, who) -> None:  # type: ignore[no-untyped-def]
    user = {"alice": alice.user, "staff": staff, "manager": manager}[who]
    client = Client()
    client.force_login(user)
    links = _nav_links(client)
    assert len(links) >= 6
    for href in links:
        assert client.get(href, follow=True).status_code == 200, (who, href)


def test_staff_see_staff_links_and_no_tenant_links_and_tenants_the_reverse(market, alice, staff) -> None:  # type: ignore[no-untyped-def]
    tenant, admin = Client(), Client()
    tenant.force_login(alice.user)
    admin.force_login(staff)
    tenant_links, staff_links = set(_nav_links(tenant)), set(_nav_links(admin))
    assert {"/bid/", "/jobs/", "/account/"} <= tenant_links and not tenant_links & {"/staff/jobs/", "/market/settings/"}
    assert {"/staff/jobs/", "/staff/ledger/adjust/", "/market/settings/"} <= staff_links
    assert not staff_links & {"/bid/", "/jobs/", "/account/", "/reservations/", "/cura/jobs/"}


def test_the_admin_link_needs_a_model_permission(market, staff) -> None:  # type: ignore[no-untyped-def]
    from django.contrib.auth.models import Permission

    client = Client()
    client.force_login(staff)
    assert "/admin/" not in _nav_links(client)  # staff without model permissions: the admin shows nothing
    staff.user_permissions.add(Permission.objects.get(codename="view_job"))
    staff = get_user_model().objects.get(pk=staff.pk)  # permissions are cached on the instance
    client.force_login(staff)
    assert "/admin/" in _nav_links(client)
    assert client.get("/admin/marketplace/job/").status_code == 200


def test_the_staff_jobs_page_lists_every_tenant_and_filters(market, alice, bob, staff) -> None:  # type: ignore[no-untyped-def]
    for tenant, name in ((alice, "alice-etl"), (bob, "bob-train")):
        bid_submit(tenant=tenant, budget=Decimal("10"), work=[WorkItem("map", 1, 30.0, 1.0)], utility="linear", name=name, user=tenant.user)
    client = Client()
    client.force_login(staff)
    page = client.get("/staff/jobs/").content.decode()
    assert "alice-etl" in page and "bob-train" in page
    only_bob = client.get(f"/staff/jobs/?tenant={bob.name}").content.decode()
    assert "bob-train" in only_bob and "alice-etl" not in only_bob


# --- account_adjust: the service ---------------------------------------------------------------


def test_a_credit_and_a_debit_move_the_available_balance_and_are_audited(alice, staff) -> None:  # type: ignore[no-untyped-def]
    # given alice's 1000
    credit = account_adjust(tenant=alice, direction="credit", amount=Decimal("12.3456"), reason="refund of an outage", user=staff)
    debit = account_adjust(tenant=alice, direction="debit", amount=Decimal("2.3456"), reason="manual correction", user=staff)
    alice.account.refresh_from_db()
    assert alice.account.available == Decimal("1010.0000") and alice.account.held == 0
    assert (credit.kind, credit.available_delta) == ("credit", Decimal("12.3456"))
    assert (debit.kind, debit.available_delta) == ("debit", Decimal("-2.3456"))
    stored = LedgerEntry.objects.get(pk=credit.pk)
    assert stored.created_by == staff and "refund of an outage" in stored.memo and "staffer" in stored.memo
    assert ledger_reconcile(account=alice.account) == []


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"amount": Decimal("0")}, "amount"), ({"amount": Decimal("-1")}, "amount"), ({"amount": Decimal("0.00001")}, "amount"),
    ({"amount": Decimal("1e10")}, "amount"), ({"amount": Decimal("NaN")}, "amount"), ({"reason": "  "}, "reason"),
    ({"reason": "x" * 201}, "reason"), ({"direction": "gift"}, "direction"),
    ({"direction": "debit", "amount": Decimal("1000.0001")}, "amount"),  # more than alice has
])
def test_bad_adjustments_are_field_errors_and_move_nothing(alice, staff, kwargs, field) -> None:  # type: ignore[no-untyped-def]
    before = LedgerEntry.objects.count()
    args = {"direction": "credit", "amount": Decimal("5"), "reason": "a good reason"} | kwargs
    with pytest.raises(ValidationError) as exc:
        account_adjust(tenant=alice, user=staff, **args)
    assert field in exc.value.message_dict
    assert LedgerEntry.objects.count() == before


def test_only_staff_may_adjust(alice, bob, manager) -> None:  # type: ignore[no-untyped-def]
    for user in (alice.user, bob.user, manager):
        with pytest.raises(PermissionDenied):
            account_adjust(tenant=alice, direction="credit", amount=Decimal("5"), reason="a good reason", user=user)


# --- the page and the API ----------------------------------------------------------------------


def test_the_page_books_once_per_rendered_form(alice, staff) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(staff)
    form = client.get("/staff/ledger/adjust/").context["form"]
    key = form["idempotency_key"].value()
    body = {"tenant": alice.name, "direction": "credit", "amount": "7.5", "reason": "goodwill credit", "idempotency_key": key}
    assert client.post("/staff/ledger/adjust/", body).status_code == 302
    assert client.post("/staff/ledger/adjust/", body).status_code == 302  # a double click
    assert LedgerEntry.objects.filter(kind="credit").count() == 1
    bad = client.post("/staff/ledger/adjust/", body | {"amount": "0.00001", "reason": "", "idempotency_key": "k2"})
    assert bad.status_code == 200 and {"amount", "reason"} <= set(bad.context["form"].errors)


def test_the_api_adjusts_with_an_idempotency_key(alice, staff) -> None:  # type: ignore[no-untyped-def]
    api = APIClient()
    api.force_authenticate(staff)
    body = {"tenant": alice.name, "direction": "debit", "amount": "100.25", "reason": "chargeback"}
    first = api.post("/api/staff/ledger/adjust/", body, format="json", HTTP_IDEMPOTENCY_KEY="adj-1")
    again = api.post("/api/staff/ledger/adjust/", body, format="json", HTTP_IDEMPOTENCY_KEY="adj-1")
    assert first.status_code == 201 and again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert first.data["entry"]["amount"] == "100.2500" and first.data["entry"]["available_delta"] == "-100.2500"
    assert LedgerEntry.objects.filter(kind="debit").count() == 1
    alice.account.refresh_from_db()
    assert alice.account.available == Decimal("899.7500")
    other = api.post("/api/staff/ledger/adjust/", body | {"amount": "1"}, format="json", HTTP_IDEMPOTENCY_KEY="adj-1")
    assert other.status_code == 422
    bad = {"tenant": "nobody", "direction": "up", "amount": "1.00001", "reason": "x"}
    errors = api.post("/api/staff/ledger/adjust/", bad, format="json")
    assert errors.status_code == 400 and {"direction", "amount", "reason"} <= set(errors.data)
    unknown = api.post("/api/staff/ledger/adjust/", body | {"tenant": "nobody"}, format="json")
    assert unknown.status_code == 400 and "tenant" in unknown.data
    overdraw = api.post("/api/staff/ledger/adjust/", body | {"amount": "5000"}, format="json")
    assert overdraw.status_code == 400 and "amount" in overdraw.data
