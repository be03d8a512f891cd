"""The host-level cutting-stock LP: a plan from whole-host patterns, and a lower bound on the hosts any plan needs.

A pattern is what one host runs at once: a count of each service's tasks, laid out on the host's GPUs (MPS tasks
of one isolation group per GPU within its usable memory and NVIDIA's 48 clients, whole-GPU tasks on GPUs of their
own) within the host's CPU units, memory and network interfaces. The master LP covers every service's count with
the fewest patterns (Gilmore and Gomory's column generation). Its dual prices ask for a pattern worth more than one
host; a greedy builds candidates in several orders (services by dual price over their share of the host, each
resource weighed on its own, summed and at its largest), best fit onto the GPUs.

Plan: the LP's patterns rounded down, the LP solved again over what is left (new patterns priced for it), again,
until the rest is small; the planner places that rest with its own packings. Bound: any dual solution scaled by the
most a pattern can be worth is feasible for the full LP (weak duality; Farley's bound), and that most is bounded from
above by a Lagrangian relaxation: the host's CPU, memory and interfaces priced, each GPU a knapsack over its memory.
So the bound holds however far the greedy got.

HiGHS (``highspy``, MIT) solves the LPs; it is imported only when this runs. Work is counted in rounds and patterns,
never in seconds, so a plan is the same on every machine.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .highs import _Exact, _Master, _Pricing, new_highs
from .model import (
    BOUND_EVERY,
    EXACT_CALLS,
    EXACT_NODES,
    KNAPSACK_UNITS,
    MAX_COLUMNS,
    MAX_ROUNDS,
    RESOLVE_ROUNDS,
    ROUNDING_PASSES,
    HostSpec,
    Item,
    Pattern,
    Solution,
    per_host,
)
from .patterns import _build, _candidates, _most_worth, _restrict


def _generate(
    master: _Master, items: Sequence[Item], host: HostSpec, left: Sequence[int], rounds: int, exact_calls: int = 0
) -> tuple[float, list[float], float]:
    """Column generation for ``left`` tasks of each item: new patterns from the greedy, guided by the pricing LP, until
    none is worth more than a host or the rounds run out. Returns the master's value and solution, and the best lower
    bound on the LP's value seen on the way (Farley's: the master's value over the most a pattern can be worth)."""
    caps = [min(n, per_host(it, host)) for it, n in zip(items, left, strict=True)]
    pricing = _Pricing(items, host)
    exact: _Exact | None = None
    calls = 0
    value, duals, x = master.solve()
    farley = 0.0
    for r in range(rounds + 1):
        worth, counts, prices = pricing.solve(duals, caps)
        last = worth <= 1 + 1e-7 or r == rounds or len(master.patterns) >= MAX_COLUMNS
        if last or r % BOUND_EVERY == 0:
            most = min(worth, _most_worth(items, host, duals, prices))
            farley = max(farley, value / max(most, 1.0))
            last = last or most <= 1 + 1e-7 or math.ceil(farley - 1e-6) >= math.ceil(value - 1e-6)
        else:
            most = worth
        if last:
            break  # no pattern is worth more than a host, or the bound is the LP's value rounded up: the LP is done
        added = False
        for p in _candidates(items, host, duals, caps, counts, prices):
            if sum(d * a for d, a in zip(duals, p.counts, strict=True)) > 1 + 1e-7:
                added |= master.add(p)
        if not added and calls < exact_calls:
            # The greedy found nothing worth a host: ask the MILP, whose dual bound also tightens Farley's.
            exact = exact or _Exact(items, host)
            calls += 1
            found, bound = exact.solve(duals, caps)
            farley = max(farley, value / max(min(most, bound), 1.0))
            if found is not None and sum(d * a for d, a in zip(duals, found.counts, strict=True)) > 1 + 1e-7:
                added = master.add(found)
        if not added:
            most = min(worth, _most_worth(items, host, duals, prices))
            farley = max(farley, value / max(most, 1.0))
            break
        value, duals, x = master.solve()
    return value, x, farley


def solve(items: Sequence[Item], host: HostSpec, *, beat: int = 0, exact_calls: int | None = None) -> Solution:
    """A plan of whole-host patterns for ``items`` (the rest left to the caller) and the LP's lower bound. ``beat``:
    the hosts of a plan the caller has; where the LP's value already needs as many, no plan is rounded from it (a
    rounding never does better than the LP it rounds). ``exact_calls``: MILP pricings when the greedy finds no pattern
    (by default EXACT_CALLS on one-GPU hosts, where the MILP is small and the greedy weakest, and none on others)."""
    if exact_calls is None:
        exact_calls = EXACT_CALLS if host.gpus == 1 else 0
    demand = [it.demand for it in items]
    if not items or not any(demand) or any(per_host(it, host) == 0 for it in items if it.demand):
        return Solution(0, 0.0, [], list(demand))
    master = _Master(demand)
    for i, it in enumerate(items):  # each item alone, as many as a host takes
        caps = [0] * len(items)
        caps[i] = min(it.demand, per_host(it, host))
        master.add(_build(items, host, [i], caps))
    value, x, farley = _generate(master, items, host, demand, MAX_ROUNDS, exact_calls)
    bound = math.ceil(farley - 1e-6)
    left = list(demand)
    hosts: list[tuple[Pattern, int]] = []
    if beat and math.ceil(value - 1e-6) >= beat:
        return Solution(bound, value, hosts, left)
    for _ in range(ROUNDING_PASSES):
        taken = False
        for j in sorted(range(len(x)), key=lambda j: (-x[j], j)):
            copies = math.floor(x[j] + 1e-9)
            while copies > 0:
                p = _restrict(master.patterns[j], left, items)
                if not any(p.counts):
                    break
                k = min([copies, *(left[i] // a for i, a in enumerate(p.counts) if a)])
                if k <= 0:
                    break
                hosts.append((p, k))
                left = [n - a * k for n, a in zip(left, p.counts, strict=True)]
                copies -= k
                taken = True
        if not any(left) or not taken:
            break
        master.demand(left)
        value, x, _ = _generate(master, items, host, left, RESOLVE_ROUNDS)
    return Solution(bound, value, hosts, left)


__all__ = [
    "BOUND_EVERY",
    "EXACT_CALLS",
    "EXACT_NODES",
    "KNAPSACK_UNITS",
    "MAX_COLUMNS",
    "MAX_ROUNDS",
    "RESOLVE_ROUNDS",
    "ROUNDING_PASSES",
    "HostSpec",
    "Item",
    "Pattern",
    "Solution",
    "new_highs",
    "per_host",
    "solve",
]
