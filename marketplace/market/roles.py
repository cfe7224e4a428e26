"""Who is asking: the roles that decide what a user may see and do.

* **anonymous** -- only the log-in page and the API's token endpoint and schema;
* **tenant** -- a user with a ``Tenant``: bids, jobs, account, reservations of its own,
  and the public market data (see ``market.visibility``);
* **staff** (``is_staff``) -- market settings, VM pools, every tenant's jobs, ledger
  adjustments; sees every tenant's data;
* **cluster manager** -- a member of the ``cluster-manager`` group (or a superuser): the
  cluster-facing interface of paper 001, Sec. 2.3.2 (``getCurrentAllocation``, ``update``)
  with full detail, and every tenant's data read-only.

A user may hold several roles (a staff member who is also a tenant).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CLUSTER_MANAGER = "cluster-manager"


def is_cluster_manager(user: Any) -> bool:
    """Superusers, and members of the ``cluster-manager`` group.

    The answer is kept on the user object (one query per object): a request's user is its own,
    and the API's remembered tokens (``api.authentication``) carry it, so a change of group takes
    effect there within ``API_TOKEN_CACHE_S`` seconds, like a user made inactive."""
    if not (user and user.is_authenticated):
        return False
    known = user.__dict__.get("_is_cluster_manager")
    if known is None:
        known = user.__dict__["_is_cluster_manager"] = bool(user.is_superuser or user.groups.filter(name=CLUSTER_MANAGER).exists())
    return bool(known)


def is_staff(user: Any) -> bool:
    return bool(user and user.is_authenticated and user.is_staff)


def sees_all_tenants(user: Any) -> bool:
    """Staff and cluster managers read every tenant's jobs in full; tenants see aggregates."""
    return is_staff(user) or is_cluster_manager(user)


@dataclass(frozen=True)
class Roles:
    """What the navigation offers: one flag per role (``templates/_nav.html``)."""

    authenticated: bool
    tenant: bool
    staff: bool
    cluster_manager: bool
    admin: bool = False  # Django's admin is useful only with some model permission (a superuser has all)

    @property
    def all_tenants(self) -> bool:
        return self.staff or self.cluster_manager


def roles_of(user: Any) -> Roles:
    if not (user and user.is_authenticated):
        return Roles(False, False, False, False)
    from marketplace.market.selectors import tenant_of

    staff = is_staff(user)
    admin = staff and (user.is_superuser or bool(user.get_all_permissions()))
    return Roles(True, tenant_of(user=user) is not None, staff, is_cluster_manager(user), admin)
