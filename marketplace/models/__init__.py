"""Models of the marketplace, one module per area (conventions: models/ package)."""

from marketplace.models.accounts import Account, LedgerEntry, Tenant
from marketplace.models.allocation import AllocationSnapshot, FairnessSample, MarketSample, PriceSample, ShareSample
from marketplace.models.idempotency import IdempotencyKey
from marketplace.models.jobs import Job, JobWork
from marketplace.models.market import ConfigChange, Market
from marketplace.models.queues import Queue, ResourceType

__all__ = [
    "Account",
    "AllocationSnapshot",
    "ConfigChange",
    "FairnessSample",
    "IdempotencyKey",
    "Job",
    "JobWork",
    "LedgerEntry",
    "Market",
    "MarketSample",
    "PriceSample",
    "Queue",
    "ResourceType",
    "ShareSample",
    "Tenant",
]
