"""The integer master over the LP's own patterns: price-and-branch's last step.

Column generation leaves a pool of patterns, every one a host can hold; the rounding takes the LP's solution over
them whole and dives, and where the plan that gives is still above the bound, an integer cover may hide in the same
pool. HiGHS's MILP over every pattern the master was given (each pattern's counts cut to the demand, its copies
integer; the root node only, where HiGHS's feasibility jump and the root's own LP find the covers)
looks for one of fewer hosts than the best plan in hand. Only patterns that can be in such a cover are its columns: at
the pool LP's optimal duals ``y``, a cover of at most ``T`` hosts uses only patterns of reduced cost ``1 - y·a`` at most
``T`` less the pool LP's value (summing the reduced costs of a cover's copies gives its hosts less ``y``'s value, at
most ``T`` less the LP's; every reduced cost is at least 0). Where those are more than POOL_IP_SIZE columns times
rows it does not run: the MILP's root can cost seconds there (tuning 43 and 96 at 10,000 tasks, 2.4-2.7 s for no
cover), and the cap gives up tuning 24's one host in 4,855 (docs/planning.md). HiGHS 1.16 has no deterministic work
limit within the root, so the MILP is limited by its nodes and its size, never by seconds: the plan is the same on
every machine."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from .highs import found_solution, new_highs, run_highs
from .model import HostSpec, Item, Pattern, Solution
from .patterns import _restrict, _topped

POOL_IP_SIZE = 10_000  # the MILP's columns times its rows at most (its columns those the reduced costs leave)

Column = tuple[tuple[int, int], ...]  # (item, tasks) of each item a pattern holds, no more than the item's demand


def whole_copies(
    patterns: Sequence[Pattern],
    x: Sequence[float],
    items: Sequence[Item],
    host: HostSpec,
    hosts: list[tuple[Pattern, int]],
    left: list[int],
) -> tuple[list[int], bool]:
    """Each of ``patterns`` as many times as ``x`` uses it whole (those used most first), added to ``hosts``; a
    pattern cut down to what is ``left`` of its items (``_restrict``) is filled from the rest (``_topped``) before it
    is taken. What is left then, and whether a host was taken."""
    taken = False
    for j in sorted(range(len(x)), key=lambda j: (-x[j], j)):
        copies = math.floor(x[j] + 1e-9)
        while copies > 0:
            p = _restrict(patterns[j], left, items)
            if not any(p.counts):
                break
            if p is not patterns[j]:  # cut down to what is left: its room filled from the rest
                p = _topped(items, host, p, left)
            k = min([copies, *(left[i] // a for i, a in enumerate(p.counts) if a)])
            if k <= 0:
                break
            hosts.append((p, k))
            left = [n - a * k for n, a in zip(left, p.counts, strict=True)]
            copies -= k
            taken = True
    return left, taken


def with_integer_master(
    pool: Sequence[Pattern],
    items: Sequence[Item],
    host: HostSpec,
    solution: Solution,
    least: int,
    beat: int,
    finish: Callable[[list[tuple[Pattern, int]], list[int]], int],
) -> None:
    """Where the best of ``solution``'s roundings, finished by the caller's packings (or the caller's plan of ``beat``
    hosts), is above ``least``, a lower bound: the integer master over ``pool``, its cover added to the roundings
    where it has fewer hosts (the caller keeps whichever it finishes on the fewest)."""
    roundings = [(solution.hosts, solution.rest), *solution.others] if solution.hosts else []
    best = min([beat or math.inf, *(sum(k for _, k in hosts) + finish(hosts, rest) for hosts, rest in roundings)])
    if best <= least or best == math.inf:
        return
    cover = integer_master(pool, items, host, int(best))
    if cover is None:
        return
    if solution.hosts:
        solution.others.append(cover)
    else:
        solution.hosts, solution.rest = cover


def integer_master(
    pool: Sequence[Pattern], items: Sequence[Item], host: HostSpec, below: int
) -> tuple[list[tuple[Pattern, int]], list[int]] | None:
    """Hosts of ``pool``'s patterns covering every item's demand, fewer than ``below`` of them (a copy that covers
    more than is left cut down to it, and filled from the rest: ``whole_copies``), and what they leave (nothing); None
    where HiGHS's root node finds no such cover, where the pool LP says there is none, or where the MILP is over
    POOL_IP_SIZE."""
    demand = [it.demand for it in items]
    columns: dict[Column, Pattern] = {}
    for p in pool:  # over the items each holds (``Pattern.held``): a host holds a few of a fleet's services
        columns.setdefault(tuple([(i, min(a, demand[i])) for i, a in p.held]), p)
    counts = list(columns)
    if not counts:
        return None
    target = below - 1  # the most hosts a cover worth having may use
    kept = cover_columns(counts, demand, target)
    if kept is None or len(kept) * len(demand) > POOL_IP_SIZE:
        return None
    h = _model([counts[j] for j in kept], demand, integer=True)
    h.setOptionValue("mip_max_nodes", 1)
    h.setOptionValue("objective_bound", target + 0.5)
    run_highs(h)
    if not found_solution(h) or h.getInfo().objective_function_value > target + 1e-6:
        return None
    x = [float(round(v)) for v in h.getSolution().col_value]
    hosts: list[tuple[Pattern, int]] = []
    left, _ = whole_copies([columns[counts[j]] for j in kept], x, items, host, hosts, list(demand))
    return hosts, left


def cover_columns(counts: Sequence[Column], demand: Sequence[int], target: int) -> list[int] | None:
    """The indexes of the columns ``counts`` ((item, tasks) of each item a column holds) that a cover of ``demand``
    by at most ``target`` copies can use: those of reduced cost at most ``target`` less the LP's value, at the optimal
    duals of the LP over all of them. None where that LP's value says no such cover exists."""
    duals = _pool_duals(counts, demand)
    if duals is None:
        return None
    value = sum(y * d for y, d in zip(duals, demand, strict=True))  # the LP's value, by its duals
    if math.ceil(value - 1e-6) > target:
        return None
    room = target - value + 1e-7
    return [j for j, c in enumerate(counts) if 1 - sum(duals[i] * a for i, a in c) <= room]


def _model(counts: Sequence[Column], demand: Sequence[int], integer: bool):  # type: ignore[no-untyped-def]
    """HiGHS's model of the fewest copies of ``counts`` covering ``demand`` (a row an item, a column a pattern)."""
    import highspy
    import numpy as np

    h = new_highs()
    inf = highspy.kHighsInf
    for d in demand:
        h.addRow(float(d), inf, 0, np.array([], dtype=np.int32), np.array([], dtype=float))
    for c in counts:
        h.addCol(1.0, 0.0, inf, len(c), np.array([i for i, _ in c], dtype=np.int32), np.array([float(a) for _, a in c]))
    if integer:
        h.changeColsIntegrality(
            len(counts), np.arange(len(counts), dtype=np.int32), np.array([highspy.HighsVarType.kInteger] * len(counts))
        )
    return h


def _pool_duals(counts: Sequence[Column], demand: Sequence[int]) -> list[float] | None:
    """The optimal duals of the LP over the pool's columns, a row an item (None where HiGHS finds no optimum)."""
    import highspy

    h = _model(counts, demand, integer=False)
    run_highs(h)
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return [max(y, 0.0) for y in h.getSolution().row_dual]
