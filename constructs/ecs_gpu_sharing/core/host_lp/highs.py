"""The LPs and MILPs HiGHS solves: the master, the pricing LP, the exact pricing on one-GPU hosts."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ..mps import MAX_CLIENTS_PER_GPU
from .model import (
    CLIMB,
    EXACT_ITEMS,
    EXACT_NODES,
    LAYOUT_CALLS,
    LAYOUT_ITEMS,
    MAX_COLUMNS,
    PURGE_TO,
    HostSpec,
    Item,
    Pattern,
    _capacity,
    _use,
    interfaces,
    per_host,
)
from .patterns import _build, _Builder, _candidates, _variants, _worth, largest_first

_BANNER_SHOWN = False
_THREADS = 1  # the threads each model asks for: 1, or 0 (the scheduler there) once HiGHS refused 1 (``run_highs``)


def new_highs():  # type: ignore[no-untyped-def]
    """A silent HiGHS of one thread (so that the process forks beside the plan, ``beside``, with no HiGHS thread to
    lose; ``run_highs`` where HiGHS refuses it), and serial (``parallel`` off: on a scheduler of more threads, one an
    app's own HiGHS made, its MILPs otherwise search in parallel and the plan differs from the same plan alone: tuning
    26 at 1,000 tasks, 1018 and 29029 at 10,000, one host apart on the two). HiGHS prints a banner to the process's
    standard output when the first model is made; that would corrupt ``plan --json``, so the first is made with file
    descriptor 1 pointed at /dev/null. Imported here, not at the top: HiGHS and numpy take 0.3 s to import, and most
    plans never need them."""
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
    h.setOptionValue("threads", _THREADS)
    h.setOptionValue("parallel", "off")
    return h


def run_highs(h) -> None:  # type: ignore[no-untyped-def]
    """Run ``h``, raising where HiGHS refuses to (its solution would be empty, read as zeros). HiGHS keeps one thread
    scheduler a process, made by the first model run (or the first after ``Highs.resetThreadScheduler``), and refuses a
    model that asks for another count (HighsStatus.kError, no solution: highspy 1.16). Where the caller's own HiGHS made
    it, this model and every later one take the scheduler there (``threads`` 0)."""
    global _THREADS
    import highspy

    if h.run() != highspy.HighsStatus.kError:
        return
    h.setOptionValue("threads", 0)
    if h.run() != highspy.HighsStatus.kError:
        _THREADS = 0
        return
    raise RuntimeError(
        f"HiGHS refused to run a model of the plan's LP (HighsStatus.kError, {h.getModelStatus()}), on one thread and "
        "on the thread scheduler another HiGHS in this process made: plan the fleet in a process of its own "
        "(ecs-gpu-sharing plan FLEET), or call highspy.Highs.resetThreadScheduler(True) before the synth; if it goes "
        "on, report it with the fleet"
    )


def small_milp(h) -> None:  # type: ignore[no-untyped-def]
    """HiGHS set for a small pricing MILP: its root work (presolve, symmetry, feasibility jump, heuristics) costs more
    than it saves there."""
    h.setOptionValue("presolve", "off")
    h.setOptionValue("mip_detect_symmetry", False)
    h.setOptionValue("mip_heuristic_run_feasibility_jump", False)
    h.setOptionValue("mip_heuristic_effort", 0.0)


def found_solution(h) -> bool:  # type: ignore[no-untyped-def]
    """Whether HiGHS's last run found a feasible solution (a MILP may stop at its node limit with none)."""
    import highspy

    return bool(h.getInfo().primal_solution_status == int(highspy.SolutionStatus.kSolutionStatusFeasible))


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
        run_highs(self.h)
        solution = self.h.getSolution()
        value = self.h.getInfo().objective_function_value
        return value, list(solution.col_value), [abs(y) for y in solution.row_dual]

    def rebound(self, caps: Sequence[int]) -> list[float]:
        """The prices of ``solve`` at the duals it was last given, with the items' caps now ``caps`` (the one-GPU
        search's bound asks for a few sets of caps at the same duals: only the bounds change, and HiGHS starts from the
        last basis)."""
        np = self.np
        self.h.changeColsBounds(
            self.n, np.arange(self.n, dtype=np.int32), np.zeros(self.n), np.array(caps, dtype=float)
        )
        run_highs(self.h)
        return [abs(y) for y in self.h.getSolution().row_dual]


def _promising(
    items: Sequence[Item],
    host: HostSpec,
    at: Sequence[float],
    caps: Sequence[int],
    pricing: _Pricing,
    most: int = EXACT_ITEMS,
) -> list[int]:
    """``caps`` for the ``most`` items whose worth at ``at`` is the least below what they take of the host at the
    pricing LP's prices (relative to their worth), 0 for the others: the MILP's cost grows fast with its items."""
    if len(items) <= most:
        return list(caps)
    _, _, prices = pricing.solve(at, caps)
    gain = [
        (d - sum(p * u for p, u in zip(prices, _use(it, host), strict=True))) / max(d, 1e-9)
        for it, d in zip(items, at, strict=True)
    ]
    kept = set(sorted(range(len(items)), key=lambda i: (-gain[i], i))[:most])
    return [c if i in kept else 0 for i, c in enumerate(caps)]


class _Exact:
    """The pricing problem as a MILP: a count of each item on each GPU (one isolation group per GPU, its memory and
    clients), whole-GPU tasks on GPUs of their own, the host's CPU, memory and interfaces. Solved by HiGHS within a
    node limit (deterministic): its best pattern, and its dual bound, an upper bound on every pattern's worth.
    ``improving``: HiGHS keeps each solution that improved on the last during a search (``improved``)."""

    def __init__(
        self, items: Sequence[Item], host: HostSpec, improving: bool = False, pooled: bool = True, first: bool = False
    ) -> None:
        import highspy
        import numpy as np

        self.np = np
        self.items = items
        self.host = host
        self.h = new_highs()
        self.h.setOptionValue("mip_max_nodes", EXACT_NODES)
        self.h.setOptionValue("mip_rel_gap", 1e-4)
        small_milp(self.h)
        self.h.setOptionValue("mip_improving_solution_save", improving)
        self.h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        inf = highspy.kHighsInf
        n, gpus = len(items), host.gpus
        groups = sorted({it.group for it in items if it.size and not it.whole})
        mps = [i for i, it in enumerate(items) if it.size and not it.whole]
        self.compact = gpus == 1 and len(groups) <= 1  # one GPU, one group: the counts alone say it all
        self.pooled = gpus > 1 and pooled
        columns: list[tuple[str, int, int]] = [("x", i, -1) for i in range(n)]
        if not self.compact and not self.pooled:
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

        self.first, self.infeasible = first, highspy.HighsModelStatus.kInfeasible
        if first:  # a row of the pattern's worth, its coefficients the duals of each solve: more than a host
            self.h.addRow(1 + 1e-6, inf, n, np.arange(n, dtype=np.int32), np.ones(n))
            self.h.setOptionValue("mip_max_improving_sols", 1)
        row({x[i]: it.cpu for i, it in enumerate(items)}, -inf, host.cpu)
        row({x[i]: it.mem for i, it in enumerate(items)}, -inf, host.mem)
        row({x[i]: it.enis for i, it in enumerate(items)}, -inf, interfaces(host))
        if self.compact:
            whole_gpu = {x[i]: host.usable for i, it in enumerate(items) if it.whole}
            row({**{x[i]: items[i].size for i in mps}, **whole_gpu}, -inf, host.usable)
            row({x[i]: items[i].clients for i in mps}, -inf, MAX_CLIENTS_PER_GPU)
            return
        if self.pooled:
            self._pooled_rows(row, x, mps)
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

    def _pooled_rows(
        self, row: Callable[[Mapping[int, float], float, float], None], x: Mapping[int, int], mps: Sequence[int]
    ) -> None:
        """A host's GPUs pooled: their memory and clients summed, tightened by two families of valid cuts."""
        items, host = self.items, self.host
        u, gpus, inf = host.usable, host.gpus, 1e30
        whole = {x[i]: it.whole for i, it in enumerate(items) if it.whole}
        row({**{x[i]: items[i].size for i in mps}, **{j: w * u for j, w in whole.items()}}, -inf, gpus * u)
        row(
            {**{x[i]: items[i].clients for i in mps}, **{j: w * MAX_CLIENTS_PER_GPU for j, w in whole.items()}},
            -inf,
            gpus * MAX_CLIENTS_PER_GPU,
        )
        for k in range(2, 6):  # a GPU holds at most k tasks larger than 1/(k+1) of it
            big = {x[i]: 1.0 for i in mps if items[i].size * (k + 1) > u}
            if big:
                row({**big, **{j: w * k for j, w in whole.items()}}, -inf, k * gpus)
        sizes = sorted({items[i].size for i in mps if 2 * items[i].size <= u})
        step = max(1, len(sizes) // 16)
        for eps in sizes[::step]:  # Martello and Toth's dual feasible function at each threshold
            coef = {}
            for i in mps:
                s = items[i].size
                if s > u - eps:
                    coef[x[i]] = float(u)
                elif s >= eps:
                    coef[x[i]] = float(s)
            row({**coef, **{j: w * u for j, w in whole.items()}}, -inf, gpus * u)

    def solve(
        self, duals: Sequence[float], caps: Sequence[int], nodes: int = EXACT_NODES
    ) -> tuple[Pattern | None, float]:
        np = self.np
        self.h.setOptionValue("mip_max_nodes", nodes)
        # HiGHS's sub-MIP heuristics at the root (RINS, RENS) only in the longer searches for a bound: in a pricing of
        # EXACT_NODES they took two thirds of its time where the search had passed its node limit (held-out 1000 and
        # 1018 at 10,000 tasks), for no plan or bound on the held-out fleets measured (docs/planning.md)
        self.h.setOptionValue("mip_heuristic_run_rins", nodes > EXACT_NODES)
        self.h.setOptionValue("mip_heuristic_run_rens", nodes > EXACT_NODES)
        index = np.arange(self.n, dtype=np.int32)
        self.h.changeColsCost(self.n, index, np.array([float(d) for d in duals]))
        self.h.changeColsBounds(self.n, index, np.zeros(self.n), np.array([float(c) for c in caps]))
        for i, d in enumerate(duals) if self.first else ():
            self.h.changeCoeff(0, i, float(d))
        run_highs(self.h)
        info = self.h.getInfo()
        if self.first and self.h.getModelStatus() == self.infeasible:
            return None, 1.0  # no pattern is worth more than a host
        if not found_solution(self.h):
            return None, max(0.0, info.mip_dual_bound)
        return self._pattern(self.h.getSolution().col_value), info.mip_dual_bound

    def improved(self) -> list[Pattern]:
        """The patterns the last search found before its best, each better than the one before (none unless the
        model was made ``improving``): patterns worth nearly as much, for column generation to take several a call."""
        return [self._pattern(s.col_value) for s in self.h.getSavedMipSolutions()[:-1]]

    def _pattern(self, values: Sequence[float]) -> Pattern:
        b = _Builder(self.items, self.host)
        for g in range(0 if self.compact or self.pooled else self.host.gpus):
            for i in range(self.n):
                j = self.index.get(("y", i, g))
                if j is not None and round(values[j]):
                    b.add(i, round(values[j]), only=g)
        for i in largest_first(self.items):  # any the layout above left out
            b.add(i, round(values[self.index[("x", i, -1)]]) - b.counts[i])
        return b.pattern()


class _Layout:
    """On a host of several GPUs, where every other pricing found nothing: HiGHS's MILP over each item's tasks on each
    GPU, LAYOUT_ITEMS of the most promising items, stopped at the first pattern worth more than a host (LAYOUT_CALLS
    in one column generation). The pooled MILP's best may not lay out on the GPUs: at held-out 11032's last duals
    (1,000 tasks, four L40S a host) it laid out to a pattern worth 0.93, where one worth 1.08 stood and column
    generation had stopped at 192.6 over an LP of 187.8 (docs/planning.md)."""

    def __init__(self, items: Sequence[Item], host: HostSpec) -> None:
        self.items, self.host, self.calls = items, host, LAYOUT_CALLS
        self.milp: _Exact | None = None

    def price(self, at: Sequence[float], caps: Sequence[int], pricing: _Pricing) -> tuple[Pattern | None, float | None]:
        """The first pattern found worth more than a host at ``at`` (or None), and where every item was weighed, a
        bound on every pattern's worth (1.0 where none is worth more than a host)."""
        self.calls -= 1
        self.milp = self.milp or _Exact(self.items, self.host, pooled=False, first=True)
        pattern, bound = self.milp.solve(at, _promising(self.items, self.host, at, caps, pricing, LAYOUT_ITEMS))
        return pattern, bound if len(self.items) <= LAYOUT_ITEMS else None


def _built_worth(
    items: Sequence[Item], host: HostSpec, duals: Sequence[float], caps: Sequence[int], pricing: _Pricing
) -> float:
    """The most a pattern the greedy builds at ``duals`` is worth there: no more than the most any pattern is."""
    _, counts, prices = pricing.solve(duals, caps)
    return max((_worth(duals, p) for p in _candidates(items, host, duals, caps, counts, prices, CLIMB)), default=0.0)


class _Master:
    """min sum(x) with sum(x_p * counts_p) >= demand: one HiGHS model, a column per pattern."""

    def __init__(self, demand: Sequence[int]) -> None:
        import highspy
        import numpy as np

        self.np = np
        self.inf = highspy.kHighsInf
        self.h = new_highs()
        self.patterns: list[Pattern] = []
        self.protected = 0  # the first patterns, never purged: each item alone, so any demand is met
        self.reduced: Sequence[float] = ()  # each pattern's reduced cost at the last solve
        self.seen: set[tuple[int, ...]] = set()
        self.pool: dict[tuple[int, ...], Pattern] = {}  # every pattern ever added, purged or not (``integer``)
        for d in demand:
            self.h.addRow(float(d), self.inf, 0, np.array([], dtype=np.int32), np.array([], dtype=float))

    def add(self, p: Pattern) -> bool:
        if p.counts in self.seen or not any(p.counts):
            return False
        self.seen.add(p.counts)
        self.pool.setdefault(p.counts, p)
        self.patterns.append(p)
        held = p.held  # (item, tasks), in the items' order
        self.h.addCol(
            1.0,
            0.0,
            self.inf,
            len(held),
            self.np.array([i for i, _ in held], dtype=self.np.int32),
            self.np.array([float(k) for _, k in held]),
        )
        return True

    def add_worth_a_host(self, duals: Sequence[float], patterns: Sequence[Pattern]) -> bool:
        """Each of ``patterns`` worth more than a host at the master's ``duals``: whether one was new."""
        added = False
        for p in patterns:
            if _worth(duals, p) > 1 + 1e-7:
                added |= self.add(p)
        return added

    def add_priced(
        self,
        items: Sequence[Item],
        host: HostSpec,
        found: Pattern,
        at: Sequence[float],
        duals: Sequence[float],
        caps: Sequence[int],
        runners: Sequence[Pattern] = (),
    ) -> bool:
        """An exact pricing's pattern (found at ``at``), with its neighbours (``_variants``) and the ``runners`` that
        are worth more than a host at the master's ``duals``: whether the pattern was new."""
        added = self.add(found)
        self.add_worth_a_host(duals, [*_variants(items, host, found, at, caps), *runners])
        return added

    def room(self, purge: bool = False) -> bool:
        """Whether the master takes more patterns: under MAX_COLUMNS, or, with ``purge``, once the patterns its last
        solution leaves out of its basis are dropped (``purge``), where any were."""
        return len(self.patterns) < MAX_COLUMNS or (purge and self.purge(PURGE_TO))

    def purge(self, keep: int) -> bool:
        """Drop the patterns past the first ``protected`` that the master's last solution left out of its basis, those
        of the highest reduced cost there (worth least at its duals) first, until ``keep`` patterns are left: whether
        any went. Its basis stays (only patterns out of it go, and none added since its last solve), so its value never
        rises; a pattern dropped may come back."""
        import highspy

        reduced = self.reduced  # the last solve's: HiGHS drops its solution once a column is added
        status = self.h.getBasis().col_status
        solved = min(len(reduced), len(status), len(self.patterns))
        basic = highspy.HighsBasisStatus.kBasic
        out = [j for j in range(self.protected, solved) if status[j] != basic]
        out.sort(key=lambda j: (-reduced[j], j))
        out = sorted(out[: max(len(self.patterns) - keep, 0)])
        if not out:
            return False
        self.h.deleteCols(len(out), self.np.array(out, dtype=self.np.int32))
        gone = set(out)
        for j in out:
            self.seen.discard(self.patterns[j].counts)
        self.patterns = [p for j, p in enumerate(self.patterns) if j not in gone]
        return True

    def demand(self, demand: Sequence[int]) -> None:
        for r, d in enumerate(demand):
            self.h.changeRowBounds(r, float(d), self.inf)

    def solve(self) -> tuple[float, list[float], list[float]]:
        run_highs(self.h)
        solution = self.h.getSolution()
        self.reduced = list(solution.col_dual)
        return self.h.getInfo().objective_function_value, list(solution.row_dual), list(solution.col_value)


def _first_master(items: Sequence[Item], host: HostSpec) -> _Master:
    """The master over every item's demand, with each item alone as its first patterns (as many as a host takes)."""
    master = _Master([it.demand for it in items])
    for i, it in enumerate(items):
        caps = [0] * len(items)
        caps[i] = min(it.demand, per_host(it, host))
        master.add(_build(items, host, [i], caps))
    master.protected = len(master.patterns)
    return master
