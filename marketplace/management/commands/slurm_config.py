"""Print the node and partition lines of Slurm's configuration file (``/etc/slurm/slurm.conf``) from the market's resource types.

``make slurm-up`` (``docker/slurm/slurm-up.sh``) writes them into ``/etc/slurm/slurm.conf``:
one partition per resource type of the market (the first market, or ``--market NAME``),
capped with ``MaxCPUsPerNode`` at the type's capacity, so Slurm runs at most that many
one-CPU tasks of the type at once (docs/slurm.md). The one node is configured with
``--node-cpus`` CPUs (``SlurmdParameters=config_overrides`` lets it claim more than the
machine has), at least the sum of the capacities.

Without a market (a fresh database, or none migrated yet) it prints the demo market's types
(``seed_demo``: map 40, reduce 20) and says so in a comment line.
"""

from __future__ import annotations

import re
import socket

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from marketplace.management.commands.seed_demo import Command as SeedDemo

PARTITION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


def demo_types() -> list[tuple[str, int]]:
    """The demo market's resource types and capacities, from ``seed_demo``'s defaults."""
    parser = SeedDemo().create_parser("manage.py", "seed_demo")
    opts = parser.parse_args([])
    return [("map", int(opts.map_slots)), ("reduce", int(opts.reduce_slots))]


def market_types(name: str | None) -> list[tuple[str, int]] | None:
    """(name, capacity) of the market's resource types in stage order; None without a market."""
    from marketplace.market.models.market import Market
    from marketplace.market.models.queues import ResourceType

    markets = Market.objects.order_by("id")
    market = markets.filter(name=name).first() if name else markets.first()
    if market is None:
        return None
    return [(rt.name, rt.capacity) for rt in ResourceType.objects.filter(market=market).order_by("stage", "id")]


def config_lines(types: list[tuple[str, int]], *, node: str, node_cpus: int, memory_mb: int = 16000) -> list[str]:
    """``NodeName=...`` and one ``PartitionName=...`` a type (the first is the default partition).

    Raises:
        ValueError: a type name Slurm would not take as a partition name, or no types.
    """
    if not types:
        raise ValueError("the market has no resource types")
    for name, _ in types:
        if not PARTITION_NAME.match(name):
            raise ValueError(f"resource type {name!r} is not a valid Slurm partition name (letters, digits, _ and -)")
    cpus = max(node_cpus, sum(cap for _, cap in types))
    lines = [f"NodeName={node} CPUs={cpus} Sockets=1 CoresPerSocket={cpus} ThreadsPerCore=1 RealMemory={memory_mb} State=UNKNOWN"]
    for i, (name, cap) in enumerate(types):
        lines.append(f"PartitionName={name} Nodes={node} MaxCPUsPerNode={cap} Default={'YES' if i == 0 else 'NO'} "
                     "MaxTime=INFINITE State=UP OverSubscribe=NO")
    return lines


class Command(BaseCommand):
    help = "Print slurm.conf's node and partition lines from the market's resource types (make slurm-up uses it)."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("--market", default=None, help="The market's name (default: the first market).")
        parser.add_argument("--node", default=socket.gethostname().split(".")[0], help="The node's name (default: this host).")
        parser.add_argument("--node-cpus", type=int, default=64, help="CPUs the node claims (at least the capacities' sum).")

    def handle(self, *args, **opts):  # type: ignore[no-untyped-def]
        try:
            types = market_types(opts["market"])
        except DatabaseError:  # no database yet (not migrated): the demo's types
            types = None
        if types is None:
            if opts["market"]:
                raise CommandError(f"no market named {opts['market']!r}")
            self.stdout.write("# no market yet: the demo market's resource types (seed_demo)")
            types = demo_types()
        else:
            self.stdout.write(f"# from the market's resource types: {', '.join(f'{n} {c}' for n, c in types)}")
        try:
            lines = config_lines(types, node=opts["node"], node_cpus=opts["node_cpus"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write("\n".join(lines))
