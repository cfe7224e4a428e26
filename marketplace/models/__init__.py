"""Models of the marketplace, one module per area (conventions: models/ package)."""

from marketplace.models.accounts import Account, LedgerEntry, Tenant
from marketplace.models.allocation import AllocationSnapshot, FairnessSample, MarketSample, PriceSample, ShareSample
from marketplace.models.deadlines import DeadlineBooking
from marketplace.models.experiments import ExperimentRun
from marketplace.models.jobs import Job, JobWork
from marketplace.models.market import ConfigChange, Market
from marketplace.models.queues import Queue, ResourceType
from marketplace.models.reservations import Reservation, ReservationQuote, ReservationSettings
from marketplace.models.simulations import SimulationStudy

__all__ = [
    "Account",
    "AllocationSnapshot",
    "ConfigChange",
    "DeadlineBooking",
    "ExperimentRun",
    "FairnessSample",
    "Job",
    "JobWork",
    "LedgerEntry",
    "Market",
    "MarketSample",
    "PriceSample",
    "Queue",
    "Reservation",
    "ReservationQuote",
    "ReservationSettings",
    "ResourceType",
    "ShareSample",
    "SimulationStudy",
    "Tenant",
]
