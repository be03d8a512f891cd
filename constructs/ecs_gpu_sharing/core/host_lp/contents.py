"""The exact pricing on a host of several GPUs where every GPU's possible contents can be listed.

A pattern on a host of G GPUs is what each GPU holds (its contents: MPS tasks of one isolation group within its usable
memory and NVIDIA's 48 clients), whole-GPU tasks and tasks without a GPU, within the host's CPU, memory and interfaces.
Where the items are few or large, the contents one GPU can hold are few: five services of a quarter of a GPU each
make 125. Then the pricing problem is a small integer program, exactly: how many GPUs hold each contents (and how
many whole-GPU tasks and tasks without a GPU), within G GPUs, the host's rows and each item's cap. HiGHS solves it
within CONTENTS_NODES nodes; where it proves its optimum, its pattern is the best there is and its bound the most any
pattern is worth.

The other pricings on such hosts are the pooled MILP (the GPUs' memory summed: its patterns may not lay out), the
decomposition over the GPUs (``per_gpu``: its contents are those its own LP asked for) and the split search. On a fleet
of five services on eight H100s a host (``shaped_fleets.py few 25 10000``) they stopped with the LP at 447.6 where its
optimum is 442.6. This one prices after the pooled MILP where that finds nothing worth a host (``_ExactPricing``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..mps import MAX_CLIENTS_PER_GPU
from .highs import found_solution, new_highs, run_highs, small_milp
from .model import HostSpec, Item, Pattern, interfaces
from .per_gpu import Contents, laid_out

CONTENTS_LIMIT = 400  # one GPU's contents listed at most; past them this pricing is not used
CONTENTS_NODES = 300  # branch-and-bound nodes of one pricing (HiGHS's, deterministic)
CONTENTS_CALLS = 30  # pricings over the contents in one column generation, besides the search for the bound


def gpu_contents(items: Sequence[Item], host: HostSpec, limit: int = CONTENTS_LIMIT) -> list[Contents] | None:
    """Every non-empty contents one GPU can hold (MPS tasks of one isolation group, within its usable memory and its
    clients, no more of an item than the host's CPU and memory take), or None where there are more than ``limit``."""
    out: list[Contents] = []
    by_group: dict[str, list[int]] = {}
    for i, it in enumerate(items):
        if it.size and not it.whole:
            by_group.setdefault(it.group, []).append(i)
    for group in sorted(by_group):
        if not _walk(items, host, by_group[group], (), host.usable, MAX_CLIENTS_PER_GPU, out, limit):
            return None
    return out


def _walk(
    items: Sequence[Item],
    host: HostSpec,
    members: Sequence[int],
    taken: Contents,
    room: int,
    clients: int,
    out: list[Contents],
    limit: int,
) -> bool:
    """``taken`` extended by each count of each of ``members`` in turn, every one that fits listed into ``out``: False
    once more than ``limit`` are."""
    for j, i in enumerate(members):
        it = items[i]
        most = min(room // it.size, clients // max(it.clients, 1))
        if it.cpu:
            most = min(most, host.cpu // it.cpu)
        if it.mem:
            most = min(most, host.mem // it.mem)
        for k in range(1, most + 1):
            out.append((*taken, (i, k)))
            if len(out) > limit:
                return False
            if not _walk(
                items, host, members[j + 1 :], out[-1], room - k * it.size, clients - k * it.clients, out, limit
            ):
                return False
    return True


class ContentsPricing:
    """The pricing problem over every GPU contents (``gpu_contents``), as HiGHS's MILP: an integer count of GPUs per
    contents, of whole-GPU tasks and of tasks without a GPU, within the host's GPUs, CPU, memory and interfaces and
    each item's cap (a row per item, its bounds the caps of each call)."""

    def __init__(self, items: Sequence[Item], host: HostSpec, contents: Sequence[Contents]) -> None:
        import highspy
        import numpy as np

        self.np, self.items, self.host = np, items, host
        self.columns: list[tuple[str, Contents]] = [("gpu", c) for c in contents]
        for i, it in enumerate(items):
            if it.whole:
                self.columns.append(("whole", ((i, 1),)))
            elif not it.size:
                self.columns.append(("free", ((i, 1),)))
        h = self.h = new_highs()
        h.setOptionValue("mip_max_nodes", CONTENTS_NODES)
        h.setOptionValue("mip_rel_gap", 1e-6)
        small_milp(h)
        # HiGHS's root heuristics took half of each call, its strong branching half of each node's time
        for heuristic in ("rins", "rens", "root_reduced_cost", "zi_round", "shifting"):
            h.setOptionValue(f"mip_heuristic_run_{heuristic}", False)
        h.setOptionValue("mip_pscost_minreliable", 0)
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        inf = self.inf = highspy.kHighsInf
        n = len(items)
        # rows: the host's GPUs, CPU, memory and interfaces, then one per item (its cap)
        for room in (host.gpus, host.cpu, host.mem, interfaces(host)):
            h.addRow(-inf, float(room), 0, np.array([], dtype=np.int32), np.array([], dtype=float))
        for _ in range(n):
            h.addRow(-inf, 0.0, 0, np.array([], dtype=np.int32), np.array([], dtype=float))
        for kind, tasks in self.columns:
            gpus = 1 if kind == "gpu" else items[tasks[0][0]].whole  # a task without a GPU: 0
            coef = {0: float(gpus), 1: 0.0, 2: 0.0, 3: 0.0}
            for i, k in tasks:
                coef[1] += items[i].cpu * k
                coef[2] += items[i].mem * k
                coef[3] += items[i].enis * k
                coef[4 + i] = float(k)
            rows = sorted(r for r, v in coef.items() if v)
            h.addCol(0.0, 0.0, inf, len(rows), np.array(rows, dtype=np.int32), np.array([coef[r] for r in rows]))
        m = len(self.columns)
        h.changeColsIntegrality(m, np.arange(m, dtype=np.int32), np.ones(m, dtype=np.uint8))

    def price(self, duals: Sequence[float], caps: Sequence[int]) -> tuple[Pattern | None, float]:
        """The best pattern at ``duals`` within ``caps`` (None where nothing is worth anything) and HiGHS's bound on
        every pattern's worth there (its optimum where it proved one)."""
        np, items, n = self.np, self.items, len(self.items)
        cost = [sum(duals[i] * k for i, k in tasks) for _, tasks in self.columns]
        m = len(self.columns)
        self.h.changeColsCost(m, np.arange(m, dtype=np.int32), np.array(cost, dtype=float))
        rows = np.arange(4, 4 + n, dtype=np.int32)
        self.h.changeRowsBounds(n, rows, np.full(n, -self.inf), np.array(caps, dtype=float))
        run_highs(self.h)
        info = self.h.getInfo()
        bound = max(0.0, info.mip_dual_bound)
        if not found_solution(self.h):
            return None, bound
        values = self.h.getSolution().col_value
        chosen = [(kind, tasks, round(v)) for (kind, tasks), v in zip(self.columns, values, strict=True) if round(v)]
        p = laid_out(items, self.host, chosen)
        return (p if any(p.counts) else None), bound
