"""Models of the marketplace, one module per area (conventions: models/ package)."""

from marketplace.models.accounts import Account, LedgerEntry, Tenant
from marketplace.models.allocation import AllocationSnapshot, FairnessSample, MarketSample, PriceSample, ShareSample
from marketplace.models.deadlines import DeadlineBooking
from marketplace.models.experiments import ExperimentRun
from marketplace.models.idempotency import IdempotencyKey
from marketplace.models.jobs import Job, JobWork
from marketplace.models.market import ConfigChange, Market
from marketplace.models.pools import CuraJob, PoolReconfiguration, PoolSettings, VMInstanceType, VMPool
from marketplace.models.queues import Queue, ResourceType
from marketplace.models.reservations import Reservation, ReservationQuote, ReservationSettings
from marketplace.models.simulations import SimulationStudy
from marketplace.models.utility import AdoptedUtility

__all__ = [
    "Account",
    "AdoptedUtility",
    "AllocationSnapshot",
    "ConfigChange",
    "CuraJob",
    "DeadlineBooking",
    "ExperimentRun",
    "FairnessSample",
    "IdempotencyKey",
    "Job",
    "JobWork",
    "LedgerEntry",
    "Market",
    "MarketSample",
    "PoolReconfiguration",
    "PoolSettings",
    "PriceSample",
    "Queue",
    "Reservation",
    "ReservationQuote",
    "ReservationSettings",
    "ResourceType",
    "ShareSample",
    "SimulationStudy",
    "Tenant",
    "VMInstanceType",
    "VMPool",
]
