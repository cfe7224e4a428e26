"""A lab run's cluster given as VM pools (paper 004, Sec. III: pools of VM types).

A study may describe its cluster as pools, ``"c2:10, c8:4"`` (ten 2-vCPU VMs and
four 8-vCPU ones, the VM types of ``simulator.cura.workload.CURA_VM_TYPES``: ``c2``
to ``c12``, 2 to 12 vCPUs, paper 004 Sec. IV-A's six types), instead of slot counts.
The market's cluster model counts slots per resource type, so the pools become
capacities: one resource type (SWF processors, ERA units) gets one slot per vCPU;
two (map, reduce) get one map slot per vCPU and one reduce slot per two vCPUs
(rounded down, at least one per VM), the lab's default cluster's 2:1 ratio
(100 map and 50 reduce slots). Our rule, stated where it is used; paper 004 runs
whole MapReduce clusters on the VMs and gives no slot rule.
"""

from __future__ import annotations

from simulator.cura.workload import CURA_VM_TYPES

MAX_VMS = 100_000


def parse_pools(text: str) -> dict[str, int]:
    """``"c2:10, c8:4"`` -> ``{"c2": 10, "c8": 4}`` (a type named twice adds up).

    Raises:
        ValueError: ``"vm_pools: ..."`` on an unknown type, a count that is not a
            whole number >= 0, more than ``MAX_VMS`` VMs, or no VM at all.
    """
    known = {t.name: t for t in CURA_VM_TYPES}
    pools: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, count = (x.strip() for x in part.partition(":"))
        if not sep or name not in known:
            raise ValueError(f"vm_pools: write TYPE:COUNT with TYPE one of {', '.join(known)} (got {part!r})")
        if not count.isdigit():
            raise ValueError(f"vm_pools: the count of {name} must be a whole number >= 0 (got {count!r})")
        pools[name] = pools.get(name, 0) + int(count)
    total = sum(pools.values())
    if total == 0:
        raise ValueError("vm_pools: give at least one VM")
    if total > MAX_VMS:
        raise ValueError(f"vm_pools: at most {MAX_VMS:,} VMs")
    return pools


def pool_capacity(text: str, m: int) -> list[int]:
    """Slots per resource type of the pools ``text`` for ``m`` types (module docstring).

    Raises:
        ValueError: see :func:`parse_pools`; ``m`` not 1 or 2.
    """
    if m not in (1, 2):
        raise ValueError(f"vm_pools: VM pools make clusters of 1 or 2 resource types, not {m}")
    vcpus = {t.name: int(t.vcpus) for t in CURA_VM_TYPES}
    pools = parse_pools(text)
    slots = sum(vcpus[name] * n for name, n in pools.items())
    if m == 1:
        return [slots]
    return [slots, sum(max(1, vcpus[name] // 2) * n for name, n in pools.items())]
