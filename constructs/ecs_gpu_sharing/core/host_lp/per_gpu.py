"""The pricing problem on a host of several GPUs, by Dantzig-Wolfe decomposition over its GPUs.

A pattern on a host of G GPUs is a choice of what each GPU holds (a GPU's contents: MPS tasks of one isolation group
within its usable memory and NVIDIA's 48 clients), whole-GPU tasks on GPUs of their own and tasks without a GPU, all
within the host's CPU, memory and interfaces and each item's cap. The host's rows couple the GPUs; without them each
GPU is the same knapsack. So the pricing problem is itself a small master: how many GPUs hold each of a few contents,
within G GPUs, the host's rows and the caps. Its LP is solved by column generation whose own pricing is one GPU's
knapsack over its memory, the host's rows and the caps at the small master's prices; the small master is then solved
in integers over the contents it generated (``_combine``). Not exact: the integer optimum may want contents the LP
never asked for. On seed 2019 of the generator (four L40S a host, 50 services, each binding its own resource), at the
duals where the planner's column generation had stopped, the greedy's best pattern was worth 0.997 hosts and HiGHS's
pooled MILP found none worth more than one; this finds 1.059, the optimum (an exact per-GPU MILP took 3 s to prove
it), in 7 rounds and 4 ms: two contents, each on two GPUs.

Any prices of the host's rows and the caps also bound every pattern's worth (Lagrangian relaxation): the rows at those
prices, plus G times the best one GPU can be worth (a knapsack over its memory with sizes rounded down, over its clients
too where they can bind, or its share of a whole-GPU task), plus every task without a GPU worth more than its price, to
its cap. The least of these over the rounds is the bound returned.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from ..mps import MAX_CLIENTS_PER_GPU
from .model import HostSpec, Item, Pattern, interfaces
from .patterns import _Builder, _clients, _knapsack

PER_GPU_ROUNDS = 30  # column generation rounds of the small master at most, per pricing
PER_GPU_NODES = 2000  # nodes of its integer search: at 200, where column generation stopped on seed 2013 it found a
# pattern worth 0.88 hosts, at 2,000 one worth 1.16 (and HiGHS's MILP over the same columns no better)
PER_GPU_CONTENTS = 400  # contents kept from earlier pricings, as the small master's first columns
PER_GPU_COLUMNS = 300  # columns the integer search weighs at most, the best worth per GPU first
PER_GPU_WORK = 400  # small-master rounds in one column generation, in all

Contents = tuple[tuple[int, int], ...]  # (item, tasks) on one GPU


class Column(NamedTuple):
    """A column of the small master: a GPU's contents ("gpu"), or one whole-GPU task or task without a GPU."""

    kind: str
    tasks: Contents
    use: tuple[int, int, int, int]  # GPUs, CPU units, memory, interfaces


def column(items: Sequence[Item], kind: str, gpus: int, tasks: Contents) -> Column:
    """``tasks`` as a column, with what it takes of the host's rows."""
    use = [gpus, 0, 0, 0]
    for i, k in tasks:
        use[1] += items[i].cpu * k
        use[2] += items[i].mem * k
        use[3] += items[i].enis * k
    return Column(kind, tasks, (use[0], use[1], use[2], use[3]))


def laid_out(items: Sequence[Item], host: HostSpec, chosen: Sequence[tuple[str, Contents, int]]) -> Pattern:
    """A host's pattern from how many GPUs hold each contents ("gpu": each copy on a GPU of its own) and how many
    whole-GPU tasks and tasks without a GPU it takes (any other kind: the one item, that many times)."""
    b = _Builder(items, host)
    gpu = 0
    for kind, what, copies in chosen:
        if kind == "gpu":
            for _ in range(copies):
                for i, k in what:
                    b.add(i, k, only=gpu)
                gpu += 1
    for kind, what, copies in chosen:
        if kind != "gpu":
            b.add(what[0][0], copies)
    return b.pattern()


class PerGpu:
    """The pricing problem on a host of several GPUs: its best pattern found and a bound on every pattern's worth."""

    def __init__(self, items: Sequence[Item], host: HostSpec) -> None:
        self.items, self.host = items, host
        mps = [i for i, it in enumerate(items) if it.size and not it.whole]
        self.groups = sorted({items[i].group for i in mps})
        # one GPU's most tasks of each MPS item, by its memory and its clients
        self.fit = {i: min(host.usable // items[i].size, MAX_CLIENTS_PER_GPU // max(items[i].clients, 1)) for i in mps}
        self.clients = _clients(items, host)  # where the clients can bind, the GPU's knapsack keeps to them
        self.kept: list[Contents] = []
        self.rounds = 0  # small-master rounds run, in all (the work done)

    def price(self, duals: Sequence[float], caps: Sequence[int]) -> tuple[Pattern | None, float]:
        """The best pattern found at ``duals`` within ``caps``, laid out on the GPUs (None where no column is worth
        anything), and a bound on every pattern's worth there. The small master starts from the contents earlier
        pricings generated (PER_GPU_CONTENTS, the latest), and its whole-GPU tasks and tasks without a GPU."""
        import highspy
        import numpy as np

        from .highs import new_highs, run_highs

        items, host = self.items, self.host
        inf = highspy.kHighsInf
        live = [i for i, d in enumerate(duals) if d > 1e-9 and caps[i] > 0]
        row_of = {i: 4 + k for k, i in enumerate(live)}
        h = new_highs()
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        for room in (host.gpus, host.cpu, host.mem, interfaces(host), *(caps[i] for i in live)):
            h.addRow(-inf, float(room), 0, np.array([], dtype=np.int32), np.array([], dtype=float))
        columns: list[Column] = []
        seen: set[Contents] = set()

        def add(kind: str, gpus: int, tasks: Contents) -> None:
            col = column(items, kind, gpus, tasks)
            coef = {r: float(u) for r, u in enumerate(col.use) if u}
            coef.update((row_of[i], float(k)) for i, k in tasks)
            rows = sorted(coef)
            h.addCol(
                sum(duals[i] * k for i, k in tasks),
                0.0,
                inf,
                len(rows),
                np.array(rows, dtype=np.int32),
                np.array([coef[r] for r in rows]),
            )
            columns.append(col)

        for i in live:
            if items[i].whole:
                add("whole", items[i].whole, ((i, 1),))
            elif not items[i].size:
                add("free", 0, ((i, 1),))
        for c in self.kept:
            if c not in seen and all(i in row_of and k <= caps[i] for i, k in c):
                seen.add(c)
                add("gpu", 1, c)
        best = math.inf
        for _ in range(PER_GPU_ROUNDS):
            self.rounds += 1
            if columns:
                run_highs(h)
                y = [abs(v) for v in h.getSolution().row_dual]
            else:
                y = [0.0] * (4 + len(live))
            reduced = [0.0] * len(items)
            for i in live:
                it = items[i]
                reduced[i] = duals[i] - y[1] * it.cpu - y[2] * it.mem - y[3] * it.enis - y[row_of[i]]
            found, worth, most = self._gpu(reduced, caps, live)
            whole = max((reduced[i] / items[i].whole for i in live if items[i].whole), default=0.0)
            bound = y[1] * host.cpu + y[2] * host.mem + y[3] * interfaces(host)
            bound += sum(y[row_of[i]] * caps[i] for i in live)
            bound += host.gpus * max(0.0, most, whole)
            bound += sum(max(0.0, reduced[i]) * caps[i] for i in live if not items[i].size and not items[i].whole)
            best = min(best, bound)
            if found is None or found in seen or worth <= y[0] + 1e-9:
                break
            seen.add(found)
            add("gpu", 1, found)
            self.kept.append(found)
        del self.kept[: max(0, len(self.kept) - PER_GPU_CONTENTS)]
        chosen = _combine(host, duals, caps, columns, PER_GPU_NODES)
        if not chosen:
            return None, max(best, 0.0)
        return laid_out(items, host, chosen), max(best, 0.0)

    def _gpu(
        self, reduced: Sequence[float], caps: Sequence[int], live: Sequence[int]
    ) -> tuple[Contents | None, float, float]:
        """One GPU's best contents at ``reduced`` (a knapsack over its memory per isolation group, sizes rounded up so
        they fit; over its clients too where they can bind), its reduced worth, and a bound on any GPU's (sizes rounded
        down, the clients counted only where they can bind)."""
        items = self.items
        found: Contents | None = None
        worth = 0.0
        most = 0.0
        for group in self.groups:
            chosen = [i for i in live if i in self.fit and items[i].group == group and reduced[i] > 1e-12]
            if not chosen:
                continue
            values = [reduced[i] for i in chosen]
            sizes = [items[i].size for i in chosen]
            tops = [min(caps[i], self.fit[i]) for i in chosen]
            clients = [self.clients[i] for i in chosen] if self.clients else None
            most = max(most, _knapsack(values, sizes, tops, self.host.usable, bound=True, clients=clients)[0])
            _, counts = _knapsack(values, sizes, tops, self.host.usable, clients=clients)
            contents = tuple((i, k) for i, k in zip(chosen, counts, strict=True) if k)
            value = sum(reduced[i] * k for i, k in contents)
            if contents and value > worth:
                found, worth = contents, value
        return found, worth, most


def _combine(
    host: HostSpec, duals: Sequence[float], caps: Sequence[int], columns: Sequence[Column], limit: int
) -> list[tuple[str, Contents, int]]:
    """The small master in integers, by depth-first search within ``limit`` nodes: how many GPUs hold each contents
    (and how many whole-GPU tasks and tasks without a GPU), within the host's GPUs, CPU, memory and interfaces and the
    caps, of the most worth at ``duals``. Columns in order of worth per GPU (tasks without a GPU last); a branch is cut
    where its worth plus the GPUs left at the best worth per GPU after it cannot pass the best found."""
    cols = []
    for kind, tasks, use in columns:
        worth = sum(duals[i] * k for i, k in tasks)
        if worth > 1e-12:
            cols.append((kind, tasks, use, worth))
    cols.sort(key=lambda c: (c[2][0] == 0, -c[3] / max(c[2][0], 1), c[1]))
    del cols[PER_GPU_COLUMNS:]  # the search recurses once per column a pattern takes
    rate = [0.0] * (len(cols) + 1)  # per suffix: the best worth per GPU
    free = [0.0] * (len(cols) + 1)  # per suffix: the worth of every task without a GPU, each to its cap
    for j in range(len(cols) - 1, -1, -1):
        kind, tasks, use, worth = cols[j]
        rate[j] = max(rate[j + 1], worth / use[0]) if use[0] else rate[j + 1]
        free[j] = free[j + 1] + (worth * caps[tasks[0][0]] if not use[0] else 0.0)
    room = [host.gpus, host.cpu, host.mem, interfaces(host)]
    left = list(caps)
    counts = [0] * len(cols)
    # Per column, read once: the host's rows it uses and the items it takes, each (index, amount), and its worth. A
    # node reads every column from its start until the bound cuts, and most take none of what is left: on shaped `iso`
    # 334 at 100,000 tasks, building a list for min() at each of 680,000 reads was 0.8 s of a 2.3 s plan.
    takes = [(tuple((r, u) for r, u in enumerate(use) if u), tasks, worth) for _, tasks, use, worth in cols]
    best: list[int] = []
    best_worth = 0.0
    nodes = 0

    def search(start: int, worth: float) -> None:
        nonlocal best, best_worth, nodes
        nodes += 1
        if worth > best_worth + 1e-12:
            best, best_worth = counts[:], worth
        for j in range(start, len(cols)):
            if nodes > limit or worth + room[0] * rate[j] + free[j] <= best_worth + 1e-12:
                return  # the bound only falls along the order
            rows, tasks, w = takes[j]
            k = -1  # the most copies that fit: the least over its rows and its items (a column uses one at least)
            for r, u in rows:
                q = room[r] // u
                if k < 0 or q < k:
                    k = q
            for i, a in tasks:
                q = left[i] // a
                if k < 0 or q < k:
                    k = q
            for take in range(k, 0, -1):
                for r, u in rows:
                    room[r] -= take * u
                for i, a in tasks:
                    left[i] -= take * a
                counts[j] = take
                search(j + 1, worth + take * w)
                counts[j] = 0
                for r, u in rows:
                    room[r] += take * u
                for i, a in tasks:
                    left[i] += take * a

    search(0, 0.0)
    return [(cols[j][0], cols[j][1], k) for j, k in enumerate(best) if k]
