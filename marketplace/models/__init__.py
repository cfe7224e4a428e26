"""Models of the marketplace, one module per area (conventions: models/ package)."""

from marketplace.models.accounts import Account, LedgerEntry, Tenant
from marketplace.models.allocation import AllocationSnapshot, FairnessSample, MarketSample, PriceSample, ShareSample
from marketplace.models.experiments import ExperimentRun
from marketplace.models.jobs import Job, JobWork
from marketplace.models.market import ConfigChange, Market
from marketplace.models.pools import CuraJob, PoolReconfiguration, PoolSettings, VMInstanceType, VMPool
from marketplace.models.queues import Queue, ResourceType

__all__ = [
    "Account",
    "AllocationSnapshot",
    "ConfigChange",
    "CuraJob",
    "ExperimentRun",
    "FairnessSample",
    "Job",
    "JobWork",
    "LedgerEntry",
    "Market",
    "MarketSample",
    "PoolReconfiguration",
    "PoolSettings",
    "PriceSample",
    "Queue",
    "ResourceType",
    "ShareSample",
    "Tenant",
    "VMInstanceType",
    "VMPool",
]
