"""The placement strategies a service can name, as the replay of ECS's placement (``placement``) reads them, and the
fleet file's names for them. Pure Python.

Sources (Amazon ECS Developer Guide unless named): "Amazon ECS task placement strategies" (binpack on memory or cpu,
spread over instanceId or an attribute such as the Availability Zone, random; each breaks the previous one's ties);
Amazon ECS API Reference, CreateService (with no strategy the service scheduler spreads over zones, then instances).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from .shape import camel_keys

ZONE_ATTRIBUTE = "attribute:ecs.availability-zone"
SPREAD_ZONE = f"spread({ZONE_ATTRIBUTE})"
SPREAD_INSTANCE = "spread(instanceId)"
BINPACK_MEMORY = "binpack(memory)"
BINPACK_CPU = "binpack(cpu)"
RANDOM = "random"

LIBRARY_STRATEGY: tuple[str, ...] = (SPREAD_ZONE, BINPACK_MEMORY)
"""What the library sets on every shared-GPU service unless told otherwise: AWS's own example of spreading for
availability and packing for density ("Example Amazon ECS task placement strategies")."""

ECS_DEFAULT_STRATEGY: tuple[str, ...] = (SPREAD_ZONE, SPREAD_INSTANCE)
"""What ECS does for a service with no strategy (CreateService: the service scheduler's default logic)."""

PRESETS: dict[str, tuple[str, ...]] = {
    "spread-zones-binpack-memory": LIBRARY_STRATEGY,
    "binpack-memory": (BINPACK_MEMORY,),
    "spread-zones-binpack-cpu": (SPREAD_ZONE, BINPACK_CPU),
    "spread-instances": (SPREAD_ZONE, SPREAD_INSTANCE),
    "ecs-default": (),
    "random": (RANDOM,),
}
"""The fleet file's ``placement`` names; ``ecs-default`` sets no strategy (ECS spreads over zones, then instances)."""
DEFAULT_PRESET = "spread-zones-binpack-memory"


def from_cloudformation(strategies: object) -> tuple[str, ...]:
    """A service's resolved ``PlacementStrategies`` (camel- or Pascal-case keys) as the model's parts, in order."""
    out = []
    for item in strategies if isinstance(strategies, list) else []:
        entry = camel_keys(item)
        kind, on = str(entry.get("type", "")), str(entry.get("field", ""))
        if kind == "random":
            out.append(RANDOM)
        elif kind == "spread" and on.lower() in ("instanceid", "host"):
            out.append(SPREAD_INSTANCE)
        elif kind == "binpack":
            out.append(BINPACK_CPU if on.lower() == "cpu" else BINPACK_MEMORY)
        else:
            out.append(f"{kind}({on})")
    return tuple(out)


def strategy_label(strategy: Sequence[str]) -> str:
    """How a plan shows a strategy: its parts in order, or ECS's default when it has none."""
    return ", ".join(strategy) if strategy else "none (ECS default: " + ", ".join(ECS_DEFAULT_STRATEGY) + ")"


def scatters(strategy: Sequence[str]) -> bool:
    """Whether a strategy leaves tasks spread over more instances than they need: its last word, after the zones are
    balanced, is not a binpack (ECS's default spreads over instances; random places anywhere)."""
    effective = tuple(strategy) or ECS_DEFAULT_STRATEGY
    packing = [part for part in effective if part != SPREAD_ZONE]
    return not packing or not packing[0].startswith("binpack(")


class Placed(Protocol):
    """What a strategy reads of a host in a replay (``replay._Host``)."""

    zone: int
    cpu: int
    mem: int
    count: dict[str, int]


def host_keys(parts: tuple[str, ...], name: str, per_zone: list[int], hosts: Sequence[Placed]) -> list[Any]:
    """Each host's key under the strategies ``parts`` (those before any random one), for a task of service ``name``
    (``per_zone``: its tasks in each zone), in an order whose least wins. The two common cases (the library's strategy
    and ECS's default) are one int a host, the zone's count above bit 32 and the host's figure below it (MiB of a host
    and tasks on it are far below 2**32): they order as the tuples ``host_key`` builds, and a replay spends much of its
    time here (docs/planning.md)."""
    if parts == LIBRARY_STRATEGY:
        return [per_zone[h.zone] << 32 | h.mem for h in hosts]
    if parts == ECS_DEFAULT_STRATEGY:
        return [per_zone[h.zone] << 32 | h.count.get(name, 0) for h in hosts]
    return list(map(host_key(parts, name, per_zone), hosts))


def host_key(parts: tuple[str, ...], name: str, per_zone: list[int]) -> Callable[[Placed], tuple[int, ...]]:
    """A host's key under any strategies (those without a random one)."""

    def key(h: Placed) -> tuple[int, ...]:
        out = []
        for part in parts:
            if part == SPREAD_ZONE:
                out.append(per_zone[h.zone])
            elif part == SPREAD_INSTANCE:
                out.append(h.count.get(name, 0))
            elif part == BINPACK_MEMORY:
                out.append(h.mem)
            elif part == BINPACK_CPU:
                out.append(h.cpu)
            # a spread over another attribute (an instance type, say) has one value on a capacity: no effect
        return tuple(out)

    return key
