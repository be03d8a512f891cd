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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .mps import MAX_CLIENTS_PER_GPU

MAX_ROUNDS = 60  # column generation rounds in one LP
MAX_COLUMNS = 2500  # patterns in one master
RESOLVE_ROUNDS = 12  # pricing rounds after the first solve, per rounding pass
ROUNDING_PASSES = 6  # LP solves over what is left, before the rest goes to the planner's packings
BOUND_EVERY = 10  # pricing rounds between two computations of the bound (each a few knapsacks)
EXACT_NODES = 50  # branch-and-bound nodes of one exact pricing
EXACT_CALLS = 30  # exact pricings in the first column generation, on one-GPU hosts
KNAPSACK_UNITS = 2048  # units of a knapsack's room, at most (sizes rounded up for a candidate, down for a bound)


@dataclass(frozen=True)
class Item:
    """One service's tasks as the LP sees them."""

    name: str
    group: str  # isolation group: no GPU holds two
    size: int  # the task's GPU budget, MiB (0: no MPS)
    clients: int
    whole: int  # GPUs the task holds whole
    cpu: int
    mem: int
    enis: int
    demand: int


@dataclass(frozen=True)
class HostSpec:
    gpus: int
    usable: int  # GPU memory a GPU's MPS tasks may fill, MiB
    cpu: int
    mem: int
    enis: int  # awsvpc tasks one host takes


@dataclass(frozen=True)
class Pattern:
    counts: tuple[int, ...]  # tasks of each item
    gpus: tuple[tuple[tuple[tuple[int, int], ...], bool], ...]  # per GPU in use: ((item, tasks), ...), whole
    no_gpu: tuple[tuple[int, int], ...]  # (item, tasks) without a GPU


@dataclass
class Solution:
    bound: int  # no placement of the items uses fewer hosts
    lp_value: float
    hosts: list[tuple[Pattern, int]] = field(default_factory=list)  # (pattern, copies)
    rest: list[int] = field(default_factory=list)  # tasks of each item the patterns leave for the planner


def per_host(it: Item, host: HostSpec) -> int:
    """The most tasks of ``it`` one host takes."""
    k = 1 << 30
    if it.whole:
        k = host.gpus // it.whole
    elif it.size:
        k = min(host.usable // it.size, MAX_CLIENTS_PER_GPU // max(it.clients, 1)) * host.gpus
    if it.cpu:
        k = min(k, host.cpu // it.cpu)
    if it.mem:
        k = min(k, host.mem // it.mem)
    if it.enis:
        k = min(k, host.enis // it.enis)
    return max(k, 0)


def _use(it: Item, host: HostSpec) -> tuple[float, float, float, float, float]:
    """What one task takes of each row of the pricing LP: GPUs (a whole-GPU task's, or its share of one GPU's memory),
    GPUs by MPS clients, CPU units, memory, network interfaces."""
    gpu = it.whole if it.whole else it.size / host.usable
    clients = it.whole if it.whole else it.clients / MAX_CLIENTS_PER_GPU if it.size else 0.0
    return (gpu, clients, float(it.cpu), float(it.mem), float(it.enis))


def _capacity(host: HostSpec) -> tuple[float, float, float, float, float]:
    """What one host has of each row of the pricing LP (``_use``)."""
    return (float(host.gpus), float(host.gpus), float(host.cpu), float(host.mem), float(min(host.enis, 1 << 30)))


def _shares(it: Item, host: HostSpec) -> tuple[float, ...]:
    gpu = (it.whole / host.gpus) if it.whole else (it.size / (host.usable * host.gpus) if host.gpus else 0.0)
    return (gpu, it.cpu / host.cpu, it.mem / host.mem, it.enis / host.enis if host.enis else 0.0)


class _Builder:
    """One host filled in an order: each item as many times as the host and the cap take, best fit on the GPUs."""

    def __init__(self, items: Sequence[Item], host: HostSpec) -> None:
        self.items = items
        self.host = host
        self.room = [host.usable] * host.gpus
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
            # Best fit: GPUs of the item's group with the least room that fits first, then idle GPUs.
            order = sorted(
                (g for g in range(self.host.gpus) if self.group[g] in (it.group, None) and not self.whole[g]),
                key=lambda g: (self.group[g] is None, self.room[g]),
            )
            if only is not None:
                order = [g for g in order if g == only]
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
        self.counts[i] += placed
        self.cpu -= placed * it.cpu
        self.mem -= placed * it.mem
        self.enis -= placed * it.enis

    def pattern(self) -> Pattern:
        gpus = tuple(
            (tuple(sorted(self.load[g].items())), self.whole[g]) for g in range(self.host.gpus) if self.load[g]
        )
        return Pattern(tuple(self.counts), gpus, tuple(sorted(self.no_gpu.items())))


def _orders(items: Sequence[Item], host: HostSpec, duals: Sequence[float]) -> list[list[int]]:
    """Items with a positive price, by price over their weight, one order per way of weighing the host's resources."""
    shares = [_shares(it, host) for it in items]
    used = [r for r in range(4) if any(s[r] for s in shares)]
    total = [sum(s[r] * it.demand for s, it in zip(shares, items, strict=True)) for r in range(4)]
    ways: list[tuple[float, ...]] = [tuple(1.0 if r == u else 0.0 for r in range(4)) for u in used]
    ways.append(tuple(1.0 if r in used else 0.0 for r in range(4)))
    ways.append(tuple(total))  # each resource by how much of it the fleet needs
    live = [i for i, d in enumerate(duals) if d > 1e-9]
    orders = []
    for w in ways:
        weight = [sum(a * b for a, b in zip(s, w, strict=True)) for s in shares]
        orders.append(sorted(live, key=lambda i: (-duals[i] / max(weight[i], 1e-12), i)))
    orders.append(sorted(live, key=lambda i: (-duals[i] / max(max(shares[i]), 1e-12), i)))  # dominant share
    return orders


def _build(items: Sequence[Item], host: HostSpec, order: Sequence[int], caps: Sequence[int]) -> Pattern:
    b = _Builder(items, host)
    for i in order:
        if caps[i] > 0:
            b.add(i, caps[i])
    return b.pattern()


def _restrict(p: Pattern, left: Sequence[int], items: Sequence[Item]) -> Pattern:
    """``p`` with no more of each item than ``left``: tasks dropped from the last GPUs first (a whole-GPU task with
    all its GPUs)."""
    if all(c <= n for c, n in zip(p.counts, left, strict=True)):
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


_BANNER_SHOWN = False


def new_highs():  # type: ignore[no-untyped-def]
    """A silent HiGHS. HiGHS prints a banner to the process's standard output when the first model is made; that would
    corrupt ``plan --json``, so the first is made with file descriptor 1 pointed at /dev/null. Imported here, not at the
    top: HiGHS and numpy take 0.3 s to import, and most plans never need them."""
    global _BANNER_SHOWN
    import os
    import sys

    import highspy

    if _BANNER_SHOWN:
        h = highspy.Highs()
    else:
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 1)
                h = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        _BANNER_SHOWN = True
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    return h


class _Pricing:
    """The pricing problem's LP relaxation: the most a host is worth at the master's duals when its GPUs are pooled
    (GPU memory, clients and whole GPUs counted over the host) and tasks may be split. Its value bounds every pattern
    from above; its solution and its prices for the host's resources guide the greedy."""

    def __init__(self, items: Sequence[Item], host: HostSpec) -> None:
        import highspy
        import numpy as np

        self.np = np
        self.h = new_highs()
        self.h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        n = len(items)
        use = [_use(it, host) for it in items]
        rows = [([u[r] for u in use], cap) for r, cap in enumerate(_capacity(host))]
        for _ in range(n):
            self.h.addCol(0.0, 0.0, 0.0, 0, np.array([], dtype=np.int32), np.array([], dtype=float))
        for coefficients, cap in rows:
            index = [i for i, a in enumerate(coefficients) if a]
            self.h.addRow(
                -1e30, cap, len(index), np.array(index, dtype=np.int32), np.array([coefficients[i] for i in index])
            )
        self.n = n

    def solve(self, duals: Sequence[float], caps: Sequence[int]) -> tuple[float, list[float], list[float]]:
        """(value, each item's count, the prices of the host's GPUs, clients, CPU, memory and interfaces)."""
        np = self.np
        index = np.arange(self.n, dtype=np.int32)
        self.h.changeColsCost(self.n, index, np.array([float(d) for d in duals]))
        self.h.changeColsBounds(self.n, index, np.zeros(self.n), np.array([float(c) for c in caps]))
        self.h.run()
        solution = self.h.getSolution()
        value = self.h.getInfo().objective_function_value
        return value, list(solution.col_value), [abs(y) for y in solution.row_dual]


class _Exact:
    """The pricing problem as a MILP: a count of each item on each GPU (one isolation group per GPU, its memory and
    clients), whole-GPU tasks on GPUs of their own, the host's CPU, memory and interfaces. Solved by HiGHS within a
    node limit (deterministic): its best pattern, and its dual bound, an upper bound on every pattern's worth."""

    def __init__(self, items: Sequence[Item], host: HostSpec) -> None:
        import highspy
        import numpy as np

        self.np = np
        self.items = items
        self.host = host
        self.h = new_highs()
        self.h.setOptionValue("mip_max_nodes", EXACT_NODES)
        self.h.setOptionValue("mip_rel_gap", 1e-4)
        # A small knapsack: HiGHS's root work (presolve, symmetry, feasibility jump) costs more than it saves here.
        self.h.setOptionValue("presolve", "off")
        self.h.setOptionValue("mip_detect_symmetry", False)
        self.h.setOptionValue("mip_heuristic_run_feasibility_jump", False)
        self.h.setOptionValue("mip_heuristic_effort", 0.0)
        self.h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        inf = highspy.kHighsInf
        n, gpus = len(items), host.gpus
        groups = sorted({it.group for it in items if it.size and not it.whole})
        mps = [i for i, it in enumerate(items) if it.size and not it.whole]
        self.compact = gpus == 1 and len(groups) <= 1  # one GPU, one group: the counts alone say it all
        columns: list[tuple[str, int, int]] = [("x", i, -1) for i in range(n)]
        if not self.compact:
            columns += [("y", i, g) for i in mps for g in range(gpus)]
            columns += [("z", k, g) for k in range(len(groups)) for g in range(gpus)]
        self.index = {c: j for j, c in enumerate(columns)}
        self.n = n
        for kind, _, _ in columns:
            self.h.addVar(0.0, 1.0 if kind == "z" else inf)
        self.h.changeColsIntegrality(
            len(columns), np.arange(len(columns), dtype=np.int32), np.array([1] * len(columns), dtype=np.uint8)
        )
        x = {i: self.index[("x", i, -1)] for i in range(n)}

        def row(coefficients: Mapping[int, float], low: float, high: float) -> None:
            keys = [k for k, v in coefficients.items() if v]
            self.h.addRow(
                low, high, len(keys), np.array(keys, dtype=np.int32), np.array([coefficients[k] for k in keys])
            )

        row({x[i]: it.cpu for i, it in enumerate(items)}, -inf, host.cpu)
        row({x[i]: it.mem for i, it in enumerate(items)}, -inf, host.mem)
        row({x[i]: it.enis for i, it in enumerate(items)}, -inf, min(host.enis, 1 << 30))
        if self.compact:
            whole_gpu = {x[i]: host.usable for i, it in enumerate(items) if it.whole}
            row({**{x[i]: items[i].size for i in mps}, **whole_gpu}, -inf, host.usable)
            row({x[i]: items[i].clients for i in mps}, -inf, MAX_CLIENTS_PER_GPU)
            return
        for i in mps:
            row({x[i]: 1.0, **{self.index[("y", i, g)]: -1.0 for g in range(gpus)}}, 0.0, 0.0)
        for g in range(gpus):
            for k, group in enumerate(groups):
                z = self.index[("z", k, g)]
                members = [i for i in mps if items[i].group == group]
                row({**{self.index[("y", i, g)]: items[i].size for i in members}, z: -host.usable}, -inf, 0.0)
                row(
                    {**{self.index[("y", i, g)]: items[i].clients for i in members}, z: -MAX_CLIENTS_PER_GPU},
                    -inf,
                    0.0,
                )
        whole: dict[int, float] = {x[i]: it.whole for i, it in enumerate(items) if it.whole}
        for k in range(len(groups)):
            for g in range(gpus):
                whole[self.index[("z", k, g)]] = 1.0
        row(whole, -inf, gpus)
        for g in range(gpus - 1):  # GPUs in use come first: fewer symmetric solutions to search
            used = {self.index[("z", k, g)]: 1.0 for k in range(len(groups))}
            used.update({self.index[("z", k, g + 1)]: -1.0 for k in range(len(groups))})
            row(used, 0.0, inf)

    def solve(self, duals: Sequence[float], caps: Sequence[int]) -> tuple[Pattern | None, float]:
        np = self.np
        index = np.arange(self.n, dtype=np.int32)
        self.h.changeColsCost(self.n, index, np.array([float(d) for d in duals]))
        self.h.changeColsBounds(self.n, index, np.zeros(self.n), np.array([float(c) for c in caps]))
        self.h.run()
        info = self.h.getInfo()
        if info.primal_solution_status != 2:  # no feasible solution found
            return None, max(0.0, info.mip_dual_bound)
        values = self.h.getSolution().col_value
        b = _Builder(self.items, self.host)
        for g in range(0 if self.compact else self.host.gpus):
            for i in range(self.n):
                j = self.index.get(("y", i, g))
                if j is not None and round(values[j]):
                    b.add(i, round(values[j]), only=g)
        for i in range(self.n):  # whole-GPU tasks and tasks without a GPU, and any the layout above left out
            b.add(i, round(values[self.index[("x", i, -1)]]) - b.counts[i])
        return b.pattern(), info.mip_dual_bound


class _Master:
    """min sum(x) with sum(x_p * counts_p) >= demand: one HiGHS model, a column per pattern."""

    def __init__(self, demand: Sequence[int]) -> None:
        import highspy
        import numpy as np

        self.np = np
        self.inf = highspy.kHighsInf
        self.h = new_highs()
        self.patterns: list[Pattern] = []
        self.seen: set[tuple[int, ...]] = set()
        for d in demand:
            self.h.addRow(float(d), self.inf, 0, np.array([], dtype=np.int32), np.array([], dtype=float))

    def add(self, p: Pattern) -> bool:
        if p.counts in self.seen or not any(p.counts):
            return False
        self.seen.add(p.counts)
        self.patterns.append(p)
        rows = [i for i, a in enumerate(p.counts) if a]
        self.h.addCol(
            1.0,
            0.0,
            self.inf,
            len(rows),
            self.np.array(rows, dtype=self.np.int32),
            self.np.array([float(p.counts[i]) for i in rows]),
        )
        return True

    def demand(self, demand: Sequence[int]) -> None:
        for r, d in enumerate(demand):
            self.h.changeRowBounds(r, float(d), self.inf)

    def solve(self) -> tuple[float, list[float], list[float]]:
        self.h.run()
        solution = self.h.getSolution()
        return self.h.getInfo().objective_function_value, list(solution.row_dual), list(solution.col_value)


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


def _candidates(
    items: Sequence[Item],
    host: HostSpec,
    duals: Sequence[float],
    caps: Sequence[int],
    counts: Sequence[float],
    prices: Sequence[float],
) -> list[Pattern]:
    """Hosts the greedy builds at these duals: in each order of ``_orders``, in the order the pricing LP's host
    prices give, and the pricing LP's own counts rounded down, then filled in that order."""
    live = [i for i, d in enumerate(duals) if d > 1e-9]
    use = [_use(it, host) for it in items]
    weight = [sum(p * u for p, u in zip(prices, row, strict=True)) for row in use]
    priced = sorted(live, key=lambda i: (-duals[i] / max(weight[i], 1e-12), i))
    found = [_build(items, host, order, caps) for order in [*_orders(items, host, duals), priced]]
    b = _Builder(items, host)
    for i in sorted(live, key=lambda i: (-(counts[i] - math.floor(counts[i] + 1e-9)), i)):
        if counts[i] >= 1 - 1e-9:
            b.add(i, min(caps[i], math.floor(counts[i] + 1e-9)))
    for i in priced:
        b.add(i, caps[i] - b.counts[i])
    found.append(b.pattern())
    # Knapsacks: one GPU's memory (its contents then repeated on every GPU), the host's CPU, the host's memory; each
    # with the other rows at the pricing LP's prices, then repaired by the builder and filled in the priced order.
    for row in (0, 2, 3):
        rest = [p if r != row else 0.0 for r, p in enumerate(prices)]
        reduced = [d - sum(p * u for p, u in zip(rest, use[i], strict=True)) for i, d in enumerate(duals)]
        if row == 0:
            chosen = [i for i in live if items[i].size and not items[i].whole and reduced[i] > 0]
            sizes, room, copies = [items[i].size for i in chosen], host.usable, host.gpus
        else:
            chosen = [i for i in live if reduced[i] > 0 and use[i][row]]
            sizes = [int(use[i][row]) for i in chosen]
            room, copies = (host.cpu, host.mem)[row - 2], 1
        if not chosen or not copies:
            continue
        _, contents = _knapsack([reduced[i] for i in chosen], sizes, [caps[i] for i in chosen], room)
        b = _Builder(items, host)
        for g in range(copies):
            for j in sorted(range(len(chosen)), key=lambda j: (-sizes[j], chosen[j])):
                i = chosen[j]
                if contents[j]:
                    b.add(i, min(contents[j], caps[i] - b.counts[i]), only=g if row == 0 else None)
        for i in priced:
            b.add(i, caps[i] - b.counts[i])
        found.append(b.pattern())
    return found


def _knapsack(
    values: Sequence[float], sizes: Sequence[int], caps: Sequence[int], room: int, *, bound: bool = False
) -> tuple[float, list[int]]:
    """The counts of most value within ``room`` (a bounded knapsack, by binary splitting, on numpy), and that value.
    Sizes in units of their GCD, or of 1/KNAPSACK_UNITS of the room where that is too fine: rounded up, so the counts
    always fit; or, with ``bound``, rounded down, so the value bounds the true knapsack's from above."""
    import numpy as np

    step = 0
    for size in sizes:
        step = math.gcd(step, size)
    most = KNAPSACK_UNITS * (2 if bound else 1)  # a bound is computed every BOUND_EVERY rounds: finer, tighter
    unit = step if step and room // step <= most else max(1, math.ceil(room / most))
    units = room // unit if not bound else math.ceil(room / unit)
    weights = [(size // unit if bound else math.ceil(size / unit)) for size in sizes]
    best = np.zeros(units + 1)
    pieces: list[tuple[int, int]] = []
    taken: list[np.ndarray] = []
    free = 0.0  # items of no size (rounded down to nothing): each at its cap
    for j, (v, w, c) in enumerate(zip(values, weights, caps, strict=True)):
        if v <= 0 or c <= 0:
            continue
        if w == 0:
            free += v * c
            continue
        c = min(c, units // w)
        chunk = 1
        while c > 0:
            take = min(chunk, c)
            weight, value = w * take, v * take
            candidate = best[:-weight] + value
            better = np.zeros(units + 1, dtype=bool)
            better[weight:] = candidate > best[weight:] + 1e-12
            best = np.where(better, np.concatenate([np.zeros(weight), candidate]), best)
            pieces.append((j, take))
            taken.append(better)
            c -= take
            chunk *= 2
    counts = [0] * len(sizes)
    r = int(np.argmax(best))
    value = float(best[r]) + free
    for (j, take), better in zip(reversed(pieces), reversed(taken), strict=True):
        if better[r]:
            counts[j] += take
            r -= weights[j] * take
    return value, counts


def _most_worth(items: Sequence[Item], host: HostSpec, duals: Sequence[float], prices: Sequence[float]) -> float:
    """An upper bound on what one host's pattern is worth at ``duals``, by Lagrangian relaxation: every resource but
    one priced (at the pricing LP's prices), that one kept as an exact knapsack with sizes rounded down; the least of
    these. Kept whole: one GPU's memory (MPS tasks of any group, no client limit; the best GPU on every GPU, or a share
    of a whole-GPU task), the host's CPU, the host's memory."""
    caps = [per_host(it, host) for it in items]
    use = [_use(it, host) for it in items]
    capacity = _capacity(host)
    best = math.inf
    for row in (0, 2, 3):
        lam = [p if r != row else 0.0 for r, p in enumerate(prices)]
        if row == 0:  # GPU memory kept per GPU: the whole-GPU row's price stays off, clients priced
            lam[0] = 0.0
        reduced = [d - sum(a * u for a, u in zip(lam, use[i], strict=True)) for i, d in enumerate(duals)]
        priced = sum(a * c for a, c in zip(lam, capacity, strict=True))
        if row == 0:
            mps = [i for i, it in enumerate(items) if it.size and not it.whole]
            per_gpu = _knapsack(
                [reduced[i] for i in mps], [items[i].size for i in mps], [caps[i] for i in mps], host.usable, bound=True
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
