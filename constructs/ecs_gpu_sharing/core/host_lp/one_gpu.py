"""The exact pricing problem on a host of one GPU, by depth-first search: no solver, and fast where a host holds few
tasks.

On one GPU a pattern is only a count of each item: the GPU's memory and NVIDIA's clients, the host's CPU, memory and
network interfaces, and at most one isolation group on the GPU (a whole-GPU task takes all its memory). The search
takes the items in order of their dual price, largest first, and for each the most tasks that fit, then fewer. A
branch is cut where what it has plus a bound on what the items after it can add is no more than the best found. The
bound is the least of: every later task its cap allows; each resource's room at the best worth per unit any later
item gets from it; as many tasks as the room takes of the later items' least uses, each worth the largest later
dual; and, given the pricing LP (``prices_for``), its prices for the later items alone: the room at those prices, plus
each later item's worth over what its tasks take at them, times its cap (weak duality: any prices of the host's
resources bound every pattern so). The per-resource bounds are loose where several resources bind: at tuning seed 72's
duals in column generation, the search proved 52 of 177 pricings within 5,000 nodes without the LP's prices and 97
with them (docs/planning.md). Where a host holds a handful of tasks (hosts bound by their CPU or memory), this visits
hundreds of nodes where HiGHS's MILP takes 50-100 ms; where it holds dozens of small tasks it can visit millions, so
the search stops at a node limit and says so.

On a host of several GPUs the same search lays out a pattern GPU by GPU (``split_search``), each GPU on a share of what
the host has left: a heuristic pricing, where HiGHS's MILP, which pools the host's GPUs, finds nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..mps import MAX_CLIENTS_PER_GPU
from .model import HostSpec, Item, Pattern, interfaces, per_host, uses
from .patterns import _Builder

_INF = math.inf
_EPS = 1e-12
RUNNERS = 2  # of the patterns a search's best replaced, the last this many go to column generation beside it
MOST_ITEMS = 400  # the search recurses once per item a pattern holds: past this many priced items, it declines
# The suffixes of the search's order whose pricing LP is solved (when first needed), each item's bound taking the prices
# of the last of them at or before it: a few LPs a search (~0.1 ms each); one per item cost more than it proved
PRICED_FROM = frozenset((0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384))


@dataclass(frozen=True)
class Searched:
    counts: list[int] | None  # tasks of each item in the best pattern; None where the search passed its node limit
    # (or declined: more than MOST_ITEMS items priced)
    worth: float  # that pattern's worth at the duals (the best found, where the search stopped)
    nodes: int
    seen: list[int] | None = None  # the best pattern found, proved best or not (None where the search declined)
    runners: tuple[list[int], ...] = ()  # the last RUNNERS patterns the best replaced as it improved, latest first


class OneGpu:
    """The best pattern on a host of one GPU at given duals, exactly, within a node limit."""

    def __init__(self, items: Sequence[Item], host: HostSpec) -> None:
        if host.gpus != 1:
            raise ValueError(f"OneGpu prices hosts of one GPU, not {host.gpus}")
        self.uses = [uses(it, host) for it in items]
        self.groups = [it.group if it.size and not it.whole else None for it in items]
        self.room = (host.cpu, host.mem, interfaces(host), host.usable, MAX_CLIENTS_PER_GPU)

    def solve(
        self,
        duals: Sequence[float],
        caps: Sequence[int],
        limit: int,
        prices_for: Callable[[list[int]], Sequence[float]] | None = None,
    ) -> Searched:
        """The best pattern at ``duals`` within ``caps``, in ``limit`` nodes. ``prices_for``: given caps (0 for the
        items left out), prices per unit of the host's CPU, memory, interfaces, GPU memory and MPS clients (``uses``'
        order); the pricing LP's bind best, and any prices of 0 or more give a valid bound."""
        order = sorted((i for i, d in enumerate(duals) if d > _EPS and caps[i] > 0), key=lambda i: (-duals[i], i))
        n = len(order)
        if n > MOST_ITEMS:
            return Searched(None, 0.0, 0)  # deeper than Python's recursion limit allows, at worst
        d = [float(duals[i]) for i in order]
        a = [self.uses[i] for i in order]
        most = [caps[i] for i in order]
        group = [self.groups[i] for i in order]
        bound = _bounds(order, d, a, most, len(duals), prices_for)
        best_worth = 0.0
        best: list[int] = [0] * n
        replaced: list[list[int]] = []  # each best the search found before the one it ends with
        counts = [0] * n
        nodes = 0
        used = [tuple((r, u[r]) for r in range(5) if u[r]) for u in a]

        def search(rem: tuple[int, ...], start: int, worth: float, gpu_group: str | None, first: float) -> None:
            """Every count of the items from ``start`` on, within ``rem``; ``first``: bound(rem, start), known. The
            items are tried up to ``end``, the first whose bound cannot pass the best (``_first_cut``), found again
            where a deeper search has raised the best."""
            nonlocal best_worth, best, nodes
            nodes += 1

            def passes(j: int) -> bool:
                cut = best_worth + _EPS
                return worth + (first if j == start else bound(rem, j, worth, cut)) > cut

            end = _first_cut(passes, start, n)
            against = best_worth  # the best that end was found against
            for j in range(start, n):
                if best_worth != against:
                    end, against = _first_cut(passes, j, end), best_worth
                if nodes > limit or j >= end:
                    return
                g = group[j]
                if g is not None and gpu_group is not None and g != gpu_group:
                    continue  # one isolation group on the GPU
                u = a[j]
                k = most[j]
                for r, q in used[j]:
                    if rem[r] // q < k:
                        k = rem[r] // q
                while k > 0:
                    rest = (
                        rem[0] - k * u[0],
                        rem[1] - k * u[1],
                        rem[2] - k * u[2],
                        rem[3] - k * u[3],
                        rem[4] - k * u[4],
                    )
                    w = worth + k * d[j]
                    counts[j] = k
                    if w > best_worth + _EPS:
                        if best_worth > _EPS:
                            replaced.append(best)
                        best_worth, best = w, counts[:]
                    if j + 1 < n:
                        cut = best_worth + _EPS
                        later = bound(rest, j + 1, w, cut)
                        if w + later > cut:
                            search(rest, j + 1, w, gpu_group if g is None else g, later)
                    counts[j] = 0
                    k -= 1

        if n:
            search(self.room, 0, 0.0, None, bound(self.room, 0))

        def widened(found: list[int]) -> list[int]:  # a count per item, in the items' own order
            out = [0] * len(duals)
            for k, i in enumerate(order):
                out[i] = found[k]
            return out

        full = widened(best)
        runners = tuple(widened(c) for c in reversed(replaced[max(0, len(replaced) - RUNNERS) :]))
        return Searched(None if nodes > limit else full, best_worth, nodes, full, runners)


def _bounds(
    order: Sequence[int],
    d: Sequence[float],
    a: Sequence[tuple[int, ...]],
    most: Sequence[int],
    items: int,
    prices_for: Callable[[list[int]], Sequence[float]] | None,
) -> Callable[..., float]:
    """The search's bound (the module's docstring) on what the items from ``j`` of its order on can add within ``rem``:
    ``d``, ``a`` and ``most`` are their duals, uses and caps in that order, ``items`` all the LP's items."""
    n = len(order)
    limits = _suffix_bounds(d, a)
    capped = [0.0] * (n + 1)  # per suffix: every task its caps allow, at its dual
    for j in range(n - 1, -1, -1):
        capped[j] = capped[j + 1] + most[j] * d[j]
    priced_at = [0] * (n + 1)  # per suffix: the suffix of PRICED_FROM whose prices bound it
    for j in range(1, n + 1):
        priced_at[j] = j if j in PRICED_FROM else priced_at[j - 1]
    priced: dict[int, tuple[tuple[float, ...], list[float]]] = {}
    fetch = prices_for or (lambda _caps: (0.0,) * 5)  # called only with prices_for (bound below)

    def prices(s: int) -> tuple[tuple[float, ...], list[float]]:
        """The prices for the items from ``s`` on, and per suffix from there what the caps add to the room at
        those prices: each item's worth over its use there, times its cap."""
        if s not in priced:
            sub = [0] * items
            for k in range(s, n):
                sub[order[k]] = most[k]
            lam = tuple(max(0.0, q) for q in fetch(sub))
            over = [0.0] * (n + 1)
            for j in range(n - 1, s - 1, -1):
                u = a[j]  # what sum() over the five resources adds, in its order, without a generator
                gain = d[j] - (0 + lam[0] * u[0] + lam[1] * u[1] + lam[2] * u[2] + lam[3] * u[3] + lam[4] * u[4])
                over[j] = over[j + 1] + most[j] * max(0.0, gain)
            priced[s] = (lam, over)
        return priced[s]

    at_item: list[tuple[tuple[float, ...], list[float]] | None] = [None] * (n + 1)  # prices(priced_at[j]), by j

    def bound(rem: tuple[int, ...], j: int, worth: float = 0.0, cut: float = -_INF) -> float:
        """A million calls a search on some fleets. The prices' bound first (the tightest, mostly), then each
        resource read once. Where one part alone shows ``worth`` plus the bound is no more than ``cut``, that part is
        returned: the caller cuts there whichever part it gets, and the rest is not read."""
        known = at_item[j]
        if known is None and prices_for is not None:
            known = at_item[j] = prices(priced_at[j])
        if known is not None:
            lam, over = known
            b = over[j] + rem[0] * lam[0] + rem[1] * lam[1] + rem[2] * lam[2] + rem[3] * lam[3] + rem[4] * lam[4]
            b *= 1 + 1e-12  # a sum's rounding never cuts the best
            if worth + b <= cut:
                return b
            y = capped[j]
            if y < b:
                b = y
        else:
            b = capped[j]
        t = _INF
        for r, q, least in limits[j]:
            x = rem[r]
            y = x * q
            if y < b:
                b = y
            y = x // least
            if y < t:
                t = y
        if t < _INF:
            y = t * d[j]
            if y < b:
                b = y
        return b

    return bound


def _first_cut(passes: Callable[[int], bool], low: int, high: int) -> int:
    """The first index from ``low`` on, before ``high``, where ``passes`` is false (``high`` where none is); it must be
    true and then false along the indices. The search's bound only falls along its order, so a node's items end at the
    first whose bound cannot pass the best: galloping to it and then halving reads a few bounds, where reading each
    item's in turn was most of the search's time (44 bounds a node on tuning seed 28)."""
    if low >= high or not passes(low):
        return low
    step = 1
    while low + step < high:  # low passes
        if not passes(low + step):
            high = low + step
            break
        low += step
        step *= 2
    while high - low > 1:  # low passes; high does not, or is the end
        mid = (low + high) // 2
        if passes(mid):
            low = mid
        else:
            high = mid
    return high


def _suffix_bounds(d: Sequence[float], a: Sequence[tuple[int, ...]]) -> list[tuple[tuple[int, float, int], ...]]:
    """For each suffix of the order, each resource every item of it uses: (the resource, the best worth per unit any
    of them gets from it, the least use of it)."""
    n = len(d)
    ratio = [_INF] * 5
    least = [0] * 5
    limits: list[tuple[tuple[int, float, int], ...]] = [()] * (n + 1)
    uses_all = [True] * 5  # a resource some later item does not use bounds nothing at a rate
    for j in range(n - 1, -1, -1):
        for r in range(5):
            u = a[j][r]
            if u:
                ratio[r] = d[j] / u if ratio[r] == _INF else max(ratio[r], d[j] / u)
                least[r] = u if not least[r] else min(least[r], u)
            else:
                uses_all[r] = False
        limits[j] = tuple((r, ratio[r], least[r]) for r in range(5) if uses_all[r])
    return limits


def split_search(
    items: Sequence[Item], host: HostSpec, duals: Sequence[float], caps: Sequence[int], steps: int
) -> tuple[Pattern, int]:
    """A pattern for a host of several GPUs, built GPU by GPU: on each, the one-GPU search's best (or best seen) at
    ``duals`` within an equal share of the CPU, memory and interfaces the host has left (the last GPU gets all of it),
    the caps less what earlier GPUs took. Not exact: it prices where the pooled MILP found nothing (see
    ``host_lp._ExactPricing``). ``steps``: each GPU's search's work, in nodes times the items it prices (a node scans
    them: nodes alone made hundreds of items cost seconds). Returns the pattern and the work done."""
    b = _Builder(items, host)
    left = list(caps)
    work = 0
    for g in range(host.gpus):
        share = host.gpus - g
        sub = replace(host, gpus=1, cpu=b.cpu // share, mem=b.mem // share, enis=b.enis // share)
        sub_caps = [min(c, per_host(it, sub)) if c > 0 else 0 for it, c in zip(items, left, strict=True)]
        priced = sum(1 for c, d in zip(sub_caps, duals, strict=True) if c > 0 and d > _EPS)
        if not priced:
            break
        found = OneGpu(items, sub).solve(duals, sub_caps, max(1, steps // priced))
        work += found.nodes * priced
        counts = found.counts if found.counts is not None else found.seen
        if not counts or not any(counts):
            break
        for i, k in enumerate(counts):
            if k:
                before = b.counts[i]
                it = items[i]
                b.add(i, k, only=g if it.size and not it.whole else None)
                left[i] -= b.counts[i] - before
    return b.pattern(), work
