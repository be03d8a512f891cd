"""Candidate patterns (greedy in several orders, bounded knapsacks) and the most a pattern can be worth."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..cutting_stock import bounded_knapsack, knapsack_with_clients
from ..mps import MAX_CLIENTS_PER_GPU
from .model import (
    CLIENT_KNAPSACK_UNITS,
    CLIENTS_BIND,
    KNAPSACK_UNITS,
    HostSpec,
    Item,
    Pattern,
    _capacity,
    _use,
    per_host,
    shares,
    uses,
)


class _Builder:
    """One host filled in an order: each item as many times as the host and the cap take, best fit on the GPUs."""

    def __init__(self, items: Sequence[Item], host: HostSpec) -> None:
        self.items = items
        self.host = host
        self.room = [host.usable] * host.gpus
        self.top = max(self.room, default=0)  # the most room any GPU has: an MPS task larger fits nowhere
        self.clients = [MAX_CLIENTS_PER_GPU] * host.gpus
        self.group: list[str | None] = [None] * host.gpus
        self.whole = [False] * host.gpus
        self.load: list[dict[int, int]] = [{} for _ in range(host.gpus)]
        self.cpu, self.mem, self.enis = host.cpu, host.mem, host.enis
        self.counts = [0] * len(items)
        self.no_gpu: dict[int, int] = {}

    def add(self, i: int, most: int, only: int | None = None) -> None:
        """Up to ``most`` tasks of item ``i`` (on GPU ``only``, when given)."""
        it = self.items[i]
        k = most
        if it.cpu:
            k = min(k, self.cpu // it.cpu)
        if it.mem:
            k = min(k, self.mem // it.mem)
        if it.enis:
            k = min(k, self.enis // it.enis)
        if k <= 0:
            return
        placed = 0
        if it.whole:
            idle = [g for g in range(self.host.gpus) if self.group[g] is None]
            placed = min(k, len(idle) // it.whole)
            for g in idle[: placed * it.whole]:
                self.group[g], self.whole[g], self.room[g] = "", True, 0
                self.load[g][i] = 1
        elif it.size:
            if self.top < it.size:
                return  # no GPU has the room (a whole GPU's room is 0)
            # Best fit: GPUs of the item's group with the least room that fits first, then idle GPUs (their room
            # whole), each by its index. A GPU without the room (a whole-GPU task's has none) would take none.
            group, room = self.group, self.room
            gpus = range(self.host.gpus) if only is None else (only,)
            order = [g for g in gpus if group[g] == it.group and room[g] >= it.size]
            if len(order) > 1:
                order.sort(key=room.__getitem__)
            order += [g for g in gpus if group[g] is None]
            for g in order:
                if placed == k:
                    break
                fit = min(k - placed, self.room[g] // it.size, self.clients[g] // it.clients)
                if fit > 0:
                    self.group[g] = it.group
                    self.room[g] -= fit * it.size
                    self.clients[g] -= fit * it.clients
                    self.load[g][i] = self.load[g].get(i, 0) + fit
                    placed += fit
        else:
            placed = k
            self.no_gpu[i] = self.no_gpu.get(i, 0) + k
        if placed and (it.whole or it.size):
            self.top = max(self.room, default=0)
        self.counts[i] += placed
        self.cpu -= placed * it.cpu
        self.mem -= placed * it.mem
        self.enis -= placed * it.enis

    def fill(self, order: Sequence[int], most: Sequence[int]) -> None:
        """Each item of ``order`` in turn, up to ``most`` tasks of it in all (``add``). An item whose task the host's
        CPU or memory left, or the roomiest GPU, cannot take is passed over at once: once a host is nearly full most
        items are, and a call of ``add`` for each was most of the greedy's time (on tuning seed 43, 94% of those calls
        added nothing; with the GPUs' room looked at too, held-out 1048's calls fell from 451,817 to 159,100). So is an
        MPS task no GPU takes, by its room, its MPS clients and its isolation group together (``add``'s own test): where
        small tasks with sidecars fill GPUs' clients before their memory, 98% of the calls left added nothing
        (``shaped_fleets.py many`` 902 at 10,000 tasks: 2.28 million of 2.32 million)."""
        items, counts = self.items, self.counts
        room, clients, group, gpus = self.room, self.clients, self.group, range(self.host.gpus)
        floors = _floors(items)
        for i in order:
            it = items[i]
            if it.cpu > self.cpu or it.mem > self.mem or (it.size > self.top and not it.whole):
                continue
            k = most[i] - counts[i]
            if k <= 0:
                continue
            if it.size and not it.whole:
                size, need, own = it.size, it.clients, it.group
                for g in gpus:
                    if room[g] >= size and clients[g] >= need and (group[g] is None or group[g] == own):
                        break
                else:
                    continue  # no GPU takes a task of it: add would place none
            before = counts[i]
            self.add(i, k)
            if counts[i] != before and self._full(floors):
                return  # no task of any item fits what is left: the rest of the order would add nothing

    def _full(self, floors: tuple[tuple[int, ...] | None, ...]) -> bool:
        """Whether no task of any of the items can be added, by each kind's least needs (``_floors``): a task without a
        GPU, an MPS task or a whole-GPU task each needs at least its kind's least CPU, memory and interfaces, and an MPS
        task its least budget on one GPU and its least clients there, a whole-GPU task its least idle GPUs. A host's
        fill went on over hundreds of items after its last task (shaped many 907 at 10,000 tasks: 1.45 of 2.06 million
        items passed over with no kind fitting; docs/planning.md)."""
        bare, mps, whole = floors
        cpu, mem, enis = self.cpu, self.mem, self.enis
        if bare is not None and bare[0] <= cpu and bare[1] <= mem and bare[2] <= enis:
            return False
        if (
            mps is not None
            and mps[0] <= cpu
            and mps[1] <= mem
            and mps[2] <= enis
            and mps[3] <= self.top
            and mps[4] <= max(self.clients, default=0)
        ):
            return False
        return not (
            whole is not None
            and whole[0] <= cpu
            and whole[1] <= mem
            and whole[2] <= enis
            and whole[3] <= self.group.count(None)
        )

    def pattern(self) -> Pattern:
        gpus = tuple(
            (tuple(sorted(self.load[g].items())), self.whole[g]) for g in range(self.host.gpus) if self.load[g]
        )
        return Pattern(tuple(self.counts), gpus, tuple(sorted(self.no_gpu.items())))


class _Fixed:
    """What the greedy weighs that no dual changes, for one LP's items and host: each task's use of the pricing LP's
    rows, and per order of ``_orders`` each item's weight (at least 1e-12), the last its dominant share."""

    def __init__(self, items: Sequence[Item], host: HostSpec) -> None:
        self.items, self.host = items, host
        self.use = [_use(it, host) for it in items]
        shares_of = [shares(it, host) for it in items]
        used = [r for r in range(4) if any(s[r] for s in shares_of)]
        total = [sum(s[r] * it.demand for s, it in zip(shares_of, items, strict=True)) for r in range(4)]
        ways: list[tuple[float, ...]] = [tuple(1.0 if r == u else 0.0 for r in range(4)) for u in used]
        ways.append(tuple(1.0 if r in used else 0.0 for r in range(4)))
        ways.append(tuple(total))  # each resource by how much of it the fleet needs
        self.weights = [[max(sum(a * b for a, b in zip(s, w, strict=True)), 1e-12) for s in shares_of] for w in ways]
        self.dominant = [max(max(s), 1e-12) for s in shares_of]  # also the order _variants refills in
        self.weights.append(self.dominant)
        self.clients = _clients(items, host)
        import numpy as np  # the LP's: HiGHS has imported it

        # The same figures as arrays, for the greedy's sorts and sums over every item at once (``_orders``,
        # ``_candidates``): each element's arithmetic as the lists', in the same order, so the same floats
        self.use_columns = [np.array([u[r] for u in self.use]) for r in range(5)]
        self.weight_arrays = [np.array(w) for w in self.weights]


def _clients(items: Sequence[Item], host: HostSpec) -> list[int] | None:
    """Each item's MPS clients, for one GPU's knapsacks to keep to (``_knapsack``), where the tasks' clients need at
    least CLIENTS_BIND of the GPUs their memory needs; else None (the clients cannot bind: no generated benchmark
    fleet's need more than 0.37, and the knapsacks stay as they were there)."""
    mps = [it for it in items if it.size and not it.whole]
    clients = sum(it.clients * it.demand for it in mps) / MAX_CLIENTS_PER_GPU
    memory = sum(it.size * it.demand for it in mps) / host.usable if host.usable else 0.0
    return [it.clients for it in items] if clients >= CLIENTS_BIND * memory > 0 else None


_last: list[_Fixed] = []  # the last LP's: column generation asks for the same items and host hundreds of times


def _fixed(items: Sequence[Item], host: HostSpec) -> _Fixed:
    last = _last[0] if _last else None
    if last is None or last.items is not items or last.host != host:
        last = _Fixed(items, host)
        _last[:] = [last]
    return last


def _orders(items: Sequence[Item], host: HostSpec, duals: Sequence[float]) -> list[list[int]]:
    """Items with a positive price, by price over their weight, one order per way of weighing the host's resources:
    each resource alone, all summed, each by how much of it the fleet needs, and the largest share."""
    import numpy as np

    price = np.asarray(duals, dtype=float)
    live = (price > 1e-9).nonzero()[0]
    minus = -price[live]
    # Stable sorts of ``live`` (ascending): ties keep the index order, as a key of (price over weight, index) would
    return [
        live[np.argsort(minus / weight[live], kind="stable")].tolist() for weight in _fixed(items, host).weight_arrays
    ]


def largest_first(items: Sequence[Item]) -> tuple[int, ...]:
    """The order a pattern's tasks are laid out on its GPUs: whole-GPU tasks, then the largest first. Sorted once for
    an LP's items: column generation lays out thousands of patterns over the same ones."""
    if not _largest or _largest[0][0] is not items:
        _largest[:] = [(items, tuple(sorted(range(len(items)), key=lambda i: (-items[i].whole, -items[i].size, i))))]
    return _largest[0][1]


_largest: list[tuple[Sequence[Item], tuple[int, ...]]] = []  # the last LP's items and their order


def _floors(items: Sequence[Item]) -> tuple[tuple[int, ...] | None, ...]:
    """Per kind of task (without a GPU, MPS, whole-GPU), the least of each need among the items of that kind, or None
    where there are none: CPU, memory, interfaces, then an MPS task's budget and clients, a whole-GPU task's GPUs
    (``_Builder._full``). Kept for the last items asked, as ``largest_first`` keeps its order."""
    if not _least or _least[0][0] is not items:
        kinds: list[list[tuple[int, ...]]] = [[], [], []]
        for it in items:
            if it.whole:
                kinds[2].append((it.cpu, it.mem, it.enis, it.whole))
            elif it.size:
                kinds[1].append((it.cpu, it.mem, it.enis, it.size, it.clients))
            else:
                kinds[0].append((it.cpu, it.mem, it.enis))
        floors = tuple(tuple(min(column) for column in zip(*kind, strict=True)) if kind else None for kind in kinds)
        _least[:] = [(items, floors)]
    return _least[0][1]


_least: list[tuple[Sequence[Item], tuple[tuple[int, ...] | None, ...]]] = []  # the last items' floors


def _build(items: Sequence[Item], host: HostSpec, order: Sequence[int], caps: Sequence[int]) -> Pattern:
    b = _Builder(items, host)
    b.fill(order, caps)
    return b.pattern()


def _variants(
    items: Sequence[Item], host: HostSpec, p: Pattern, duals: Sequence[float], caps: Sequence[int]
) -> list[Pattern]:
    """Neighbours of ``p``: one task of an item it holds taken out, the room refilled by dual price over the task's
    dominant share of the host (largest first), each laid out afresh. An exact pricing's pattern and its neighbours
    are often all worth more than a host; adding them together saves rounds."""
    dominant = _fixed(items, host).dominant
    order = sorted((i for i, d in enumerate(duals) if d > 1e-9), key=lambda i: -duals[i] / dominant[i])  # stable
    held = [i for i in largest_first(items) if p.counts[i]]
    found = []
    for out in (i for i, a in enumerate(p.counts) if a):
        b = _Builder(items, host)
        for i in held:
            keep = p.counts[i] - (1 if i == out else 0)
            if keep > 0:
                b.add(i, keep)
        b.fill([i for i in order if i != out], caps)
        found.append(b.pattern())
    return found


def _restrict(p: Pattern, left: Sequence[int], items: Sequence[Item]) -> Pattern:
    """``p`` with no more of each item than ``left``: tasks dropped from the last GPUs first (a whole-GPU task with
    all its GPUs)."""
    if all(k <= left[i] for i, k in p.held):  # the items it does not hold: 0, never more than is left
        return p
    over = [max(0, c - n) * max(1, it.whole) for c, n, it in zip(p.counts, left, items, strict=True)]
    gpus = []
    for tasks, whole in reversed(p.gpus):
        kept = []
        for i, k in tasks:
            drop = min(k, over[i])
            over[i] -= drop
            if k > drop:
                kept.append((i, k - drop))
        if kept:
            gpus.append((tuple(kept), whole))
    gpus.reverse()
    no_gpu = []
    for i, k in p.no_gpu:
        drop = min(k, over[i])
        over[i] -= drop
        if k > drop:
            no_gpu.append((i, k - drop))
    return Pattern(tuple(min(c, n) for c, n in zip(p.counts, left, strict=True)), tuple(gpus), tuple(no_gpu))


def _topped(items: Sequence[Item], host: HostSpec, p: Pattern, left: Sequence[int]) -> Pattern:
    """``p``, a pattern cut down to what is left of its items (``_restrict``), laid out afresh and filled with more of
    what is left, items of the largest dominant share of the host first. The cut leaves room on the host, and the
    tasks that fill it would otherwise wait for later hosts: on held-out seeds 1050-1099 and 1000-1049 at 10,000 tasks,
    27 instances fewer, none more (docs/planning.md). ``p`` itself where, laid out afresh, it loses a task."""
    b = _Builder(items, host)
    for i in largest_first(items):
        if p.counts[i]:
            b.add(i, p.counts[i])
    if b.counts != list(p.counts):
        return p
    dominant = _fixed(items, host).dominant
    b.fill(sorted((i for i, n in enumerate(left) if n > b.counts[i]), key=lambda i: (-dominant[i], i)), left)
    return b.pattern()


def _worth(duals: Sequence[float], p: Pattern) -> float:
    """What a pattern is worth at ``duals``: its tasks' dual prices summed (a host is worth 1). Over the items it holds:
    the terms of the others are zeros, which change no partial sum, so this is the sum over every item, to the bit."""
    return sum(duals[i] * k for i, k in p.held)


def _climbed(
    items: Sequence[Item], host: HostSpec, duals: Sequence[float], caps: Sequence[int], found: list[Pattern], steps: int
) -> list[Pattern]:
    """From the most worth of ``found``, up to ``steps`` steps to its best neighbour (``_variants``: one task out, the
    room refilled) while that is worth more; the patterns stepped to. On a host of several GPUs, where every service
    binds its own resource, the greedy's orders each weigh the resources one way, and a pattern that mixes them well is
    often a swap away from one of them: column generation then falls further in its rounds (docs/planning.md)."""
    best = max(found, key=lambda p: _worth(duals, p))
    most = _worth(duals, best)
    out = []
    for _ in range(steps):
        step = max(_variants(items, host, best, duals, caps), key=lambda p: _worth(duals, p), default=None)
        if step is None or _worth(duals, step) <= most + 1e-9:
            break
        best, most = step, _worth(duals, step)
        out.append(step)
    return out


def _candidates(
    items: Sequence[Item],
    host: HostSpec,
    duals: Sequence[float],
    caps: Sequence[int],
    counts: Sequence[float],
    prices: Sequence[float],
    climb: int = 0,
) -> list[Pattern]:
    """Hosts the greedy builds at these duals: in each order of ``_orders``, in the order the pricing LP's host
    prices give, and the pricing LP's own counts rounded down, then filled in that order; then, on a host of several
    GPUs, up to ``climb`` steps up from the best of them (``_climbed``)."""
    import numpy as np

    live = [i for i, d in enumerate(duals) if d > 1e-9]
    fixed = _fixed(items, host)
    use = fixed.use
    at = np.array(live, dtype=np.intp)
    keys = -np.asarray(duals, dtype=float)[at] / np.maximum(_priced_use(fixed, prices)[at], 1e-12)
    priced = at[np.argsort(keys, kind="stable")].tolist()  # stable: ties by index
    found = [_build(items, host, order, caps) for order in [*_orders(items, host, duals), priced]]
    b = _Builder(items, host)
    for i in sorted(live, key=lambda i: -(counts[i] - math.floor(counts[i] + 1e-9))):  # stable: ties by index
        if counts[i] >= 1 - 1e-9:
            b.add(i, min(caps[i], math.floor(counts[i] + 1e-9)))
    b.fill(priced, caps)
    found.append(b.pattern())
    # Knapsacks: one GPU's memory (its contents then repeated on every GPU), the host's CPU, the host's memory; each
    # with the other rows at the pricing LP's prices, then repaired by the builder and filled in the priced order.
    worth = np.asarray(duals, dtype=float)
    for row in (0, 2, 3):
        lam = [p if r != row else 0.0 for r, p in enumerate(prices)]
        reduced = (worth - _priced_use(fixed, lam)).tolist()
        if row == 0:
            chosen = [i for i in live if items[i].size and not items[i].whole and reduced[i] > 0]
            sizes, room, copies = [items[i].size for i in chosen], host.usable, host.gpus
        else:
            chosen = [i for i in live if reduced[i] > 0 and use[i][row]]
            sizes = [int(use[i][row]) for i in chosen]
            room, copies = (host.cpu, host.mem)[row - 2], 1
        if not chosen or not copies:
            continue
        _, contents = _knapsack(
            [reduced[i] for i in chosen],
            sizes,
            [caps[i] for i in chosen],
            room,
            clients=[fixed.clients[i] for i in chosen] if row == 0 and fixed.clients else None,
        )
        b = _Builder(items, host)
        largest = sorted(range(len(chosen)), key=lambda j: -sizes[j])  # stable: ties by index, as chosen ascends
        for g in range(copies):
            for j in largest:
                i = chosen[j]
                if contents[j]:
                    b.add(i, min(contents[j], caps[i] - b.counts[i]), only=g if row == 0 else None)
        b.fill(priced, caps)
        found.append(b.pattern())
    if climb and host.gpus > 1 and found:
        found += _climbed(items, host, duals, caps, found, climb)
    return found


def _priced_use(fixed: _Fixed, prices: Sequence[float]) -> Any:
    """Each item's use of the host at the pricing LP's ``prices``, summed resource by resource in the rows' order, as
    ``sum()`` over each item's row would: the same floats."""
    columns = fixed.use_columns
    weight = prices[0] * columns[0]
    for r in range(1, 5):
        weight = weight + prices[r] * columns[r]
    return weight


def _knapsack(
    values: Sequence[float],
    sizes: Sequence[int],
    caps: Sequence[int],
    room: int,
    *,
    bound: bool = False,
    clients: Sequence[int] | None = None,
) -> tuple[float, list[int]]:
    """The counts of most value within ``room`` (a bounded knapsack, by binary splitting, on numpy), and that value.
    Sizes in units of their GCD, or of 1/KNAPSACK_UNITS of the room where that is too fine: rounded up, so the counts
    always fit; or, with ``bound``, rounded down, so the value bounds the true knapsack's from above. ``clients``: one
    GPU's knapsack, each task also taking that many of its MPS clients; where the counts over its memory alone take
    more clients than a GPU has, the knapsack over both (``_knapsack_with_clients``)."""
    value, counts = _knapsack_by_room(values, sizes, caps, room, bound=bound)
    if clients is None or sum(c * k for c, k in zip(clients, counts, strict=True)) <= MAX_CLIENTS_PER_GPU:
        return value, counts  # within the clients: the best over both too
    both, counts_both = _knapsack_with_clients(values, sizes, clients, caps, room, bound=bound)
    return (min(value, both), counts) if bound else (both, counts_both)


def _knapsack_with_clients(
    values: Sequence[float],
    sizes: Sequence[int],
    clients: Sequence[int],
    caps: Sequence[int],
    room: int,
    *,
    bound: bool = False,
) -> tuple[float, list[int]]:
    """One GPU's knapsack over its memory and its MPS clients: sizes in units of 1/CLIENT_KNAPSACK_UNITS of the room
    at most (the table is a row a client), rounded up so the counts fit, or with ``bound`` down, so the value bounds
    the true knapsack's from above. Where the clients bind with the memory (many small tasks, sidecars), the knapsack
    over memory alone fills a GPU with more tasks than its clients take: candidates a GPU cannot hold, and a bound
    that stays above every pattern a host holds (docs/planning.md)."""
    units, weights = _in_units(sizes, room, CLIENT_KNAPSACK_UNITS, bound)
    kept = [
        min(c, units // w if w else c, MAX_CLIENTS_PER_GPU // max(k, 1)) if v > 0 else 0
        for v, w, c, k in zip(values, weights, caps, clients, strict=True)
    ]
    return knapsack_with_clients(weights, list(clients), kept, list(values), units, MAX_CLIENTS_PER_GPU)


def _knapsack_by_room(
    values: Sequence[float], sizes: Sequence[int], caps: Sequence[int], room: int, *, bound: bool = False
) -> tuple[float, list[int]]:
    """``_knapsack`` over the room alone."""
    # a bound is computed every BOUND_EVERY rounds: finer, tighter
    units, weights = _in_units(sizes, room, KNAPSACK_UNITS * (2 if bound else 1), bound)
    free = 0.0  # items of no size (rounded down to nothing): each at its cap
    kept = [0] * len(sizes)  # copies offered to the knapsack: no more than the room takes
    for j, (v, w, c) in enumerate(zip(values, weights, caps, strict=True)):
        if v > 0 and c > 0:
            if w == 0:
                free += v * c
            else:
                kept[j] = min(c, units // w)
    value, counts = bounded_knapsack(weights, kept, list(values), units)
    return value + free, counts


def _in_units(sizes: Sequence[int], room: int, most: int, bound: bool) -> tuple[int, list[int]]:
    """The room and the sizes in units of the sizes' GCD, or of 1/``most`` of the room where that is too fine: sizes
    rounded up, so counts that fit the units fit the room; with ``bound``, rounded down (and the room up), so a value
    over the units is at least the true one."""
    step = 0
    for size in sizes:
        step = math.gcd(step, size)
    unit = step if step and room // step <= most else max(1, math.ceil(room / most))
    units = room // unit if not bound else math.ceil(room / unit)
    return units, [(size // unit if bound else math.ceil(size / unit)) for size in sizes]


def _most_worth(items: Sequence[Item], host: HostSpec, duals: Sequence[float], prices: Sequence[float]) -> float:
    """An upper bound on what one host's pattern is worth at ``duals``, by Lagrangian relaxation: every resource but
    one priced (at the pricing LP's prices), that one kept as an exact knapsack with sizes rounded down; the least of
    these. Kept whole: one GPU's memory (MPS tasks of any group, the clients kept to only where they can bind; the best
    GPU on every GPU, or a share of a whole-GPU task), the host's CPU, the host's memory."""
    import numpy as np

    caps = [per_host(it, host) for it in items]
    fixed = _fixed(items, host)
    use, clients = fixed.use, fixed.clients
    capacity = _capacity(host)
    best = math.inf
    for row in (0, 2, 3):
        lam = [p if r != row else 0.0 for r, p in enumerate(prices)]
        if row == 0:  # GPU memory kept per GPU: the whole-GPU row's price stays off, clients priced
            lam[0] = 0.0
        reduced = (np.asarray(duals, dtype=float) - _priced_use(fixed, lam)).tolist()  # each sum() in the rows' order
        priced = sum(a * c for a, c in zip(lam, capacity, strict=True))
        if row == 0:
            mps = [i for i, it in enumerate(items) if it.size and not it.whole]
            per_gpu = _knapsack(
                [reduced[i] for i in mps],
                [items[i].size for i in mps],
                [caps[i] for i in mps],
                host.usable,
                bound=True,
                clients=[clients[i] for i in mps] if clients else None,
            )[0]
            whole = max((reduced[i] / it.whole for i, it in enumerate(items) if it.whole), default=0.0)
            value = host.gpus * max(per_gpu, whole, 0.0)
            value += sum(max(0.0, reduced[i]) * caps[i] for i, it in enumerate(items) if not it.size and not it.whole)
        else:
            room = (host.cpu, host.mem)[row - 2]
            sizes = [int(u[row]) for u in use]
            value = _knapsack(reduced, sizes, caps, room, bound=True)[0]
        best = min(best, value + priced)
    return best


def _pattern(items: Sequence[Item], host: HostSpec, counts: Sequence[int]) -> Pattern:
    """``counts`` laid out on the host's GPUs."""
    return _build(items, host, largest_first(items), counts)


def _fill_rest(
    items: Sequence[Item], host: HostSpec, hosts: list[tuple[Pattern, int]], left: Sequence[int]
) -> tuple[list[tuple[Pattern, int]], list[int]]:
    """The rounding's hosts with the room their patterns leave filled from the rest (``_topped``), one host at a time
    while a host of a pattern takes more, before the rest goes to the planner's packings on hosts of their own; and
    what is left then. A host is laid out afresh only where some task left fits what its pattern leaves (``_room_for``):
    the rounding's hosts are mostly full, and on ``shaped_fleets.py many`` 907 at 10,000 tasks 6,337 of 6,341 layouts
    took nothing, a tenth of the plan's time (docs/planning.md)."""
    rest = list(left)
    wanted = [i for i, n in enumerate(rest) if n]
    out: list[tuple[Pattern, int]] = []
    for p, k in hosts:
        while k > 0 and wanted and _room_for(items, host, p, wanted):
            filled = _topped(items, host, p, [a + n for a, n in zip(p.counts, rest, strict=True)])
            if filled.counts == p.counts:
                break
            out.append((filled, 1))
            rest = [n - (b - a) for n, a, b in zip(rest, p.counts, filled.counts, strict=True)]
            wanted = [i for i, n in enumerate(rest) if n]
            k -= 1
        if k > 0:
            out.append((p, k))
    return out, rest


def _room_for(items: Sequence[Item], host: HostSpec, p: Pattern, wanted: Sequence[int]) -> bool:
    """Whether a task of some item of ``wanted`` fits what ``p`` leaves of the host: its CPU, memory and interfaces,
    and its GPUs' memory summed (an MPS task's budget, or a whole-GPU task's GPUs). Where none does, the builder's fill
    adds nothing to ``p`` laid out afresh (``_topped``), whose room is the same CPU, memory and interfaces and no more
    memory on any GPU: so the test is exact, never a host that would have taken more passed over."""
    cpu, mem, enis, gpu = host.cpu, host.mem, host.enis, host.gpus * host.usable
    for i, k in p.held:
        c, m, e, g, _ = uses(items[i], host)
        cpu, mem, enis, gpu = cpu - k * c, mem - k * m, enis - k * e, gpu - k * g
    for i in wanted:
        c, m, e, g, _ = uses(items[i], host)
        if c <= cpu and m <= mem and e <= enis and g <= gpu:
            return True
    return False
