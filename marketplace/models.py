"""The app's models module: every part's models, imported so that Django registers them under the one
app label ``marketplace`` (no table moved when the code did). Code imports a model from its part, never from here."""

from marketplace.auction.models import AdoptedUtility
from marketplace.deadlines.models import DeadlineBooking
from marketplace.lab.models import ExperimentRun, SimulationStudy
from marketplace.ledger.models import Account, IdempotencyKey, LedgerEntry
from marketplace.market.models.allocation import (
    AllocationSnapshot,
    FairnessSample,
    MarketSample,
    PriceSample,
    RateSample,
    ShareSample,
    SpotSettlement,
)
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.models.market import ConfigChange, Market
from marketplace.market.models.queues import Queue, ResourceType
from marketplace.market.models.tenants import Tenant
from marketplace.pools.models import CuraJob, CuraLedgerLink, PoolReconfiguration, PoolSettings, VMInstanceType, VMPool
from marketplace.reservations.models import Reservation, ReservationQuote, ReservationSettings
from marketplace.slurm.models import SlurmReservation, SlurmStatus, SlurmTask

__all__ = [
    "Account",
    "AdoptedUtility",
    "AllocationSnapshot",
    "ConfigChange",
    "CuraJob",
    "CuraLedgerLink",
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
    "RateSample",
    "Reservation",
    "ReservationQuote",
    "ReservationSettings",
    "ResourceType",
    "ShareSample",
    "SimulationStudy",
    "SlurmReservation",
    "SlurmStatus",
    "SlurmTask",
    "SpotSettlement",
    "Tenant",
    "VMInstanceType",
    "VMPool",
]
