"""A host-level lower bound for the benchmark: the cutting-stock LP over whole-host patterns, by column generation.

A pattern is what one host can run at once: a count of each service's tasks such that the MPS tasks split over
the host's GPUs within each GPU's usable memory and NVIDIA's 48 clients, whole-GPU tasks take GPUs of their own,
and all the tasks' CPU units and memory fit the host. The master LP covers every service's count with the fewest
patterns; its dual prices a new pattern through a MILP (HiGHS, ``highspy``: in the benchmark, never in the library).
At convergence the LP's value, rounded up, bounds every placement from below; before it, Farley's bound (the LP's
value over the best pattern's dual value) does. Rounding the LP's patterns down and finishing the remainder with
first-fit decreasing gives a feasible plan, so the gap between planner and bound can be told from a loose bound.

Only capacities without isolation groups are bounded here (the benchmark's workloads have none).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import highspy
import numpy as np

from ecs_gpu_sharing.core.host_lp import new_highs as library_highs
from ecs_gpu_sharing.core.mps import MAX_CLIENTS_PER_GPU
from ecs_gpu_sharing.core.plan_inputs import service_input
from ecs_gpu_sharing.core.planner import CapacityInput, ServiceInput

_INF = highspy.kHighsInf


@dataclass(frozen=True)
class HostBound:
    bound: int  # no placement uses fewer hosts
    lp_value: float
    converged: bool
    columns: int
    rounded: int  # hosts of a feasible plan: the LP's patterns rounded down, the rest by first-fit decreasing


def new_highs() -> highspy.Highs:
    """A silent single-threaded HiGHS: the library's (its first model's banner kept off standard output)."""
    solver: highspy.Highs = library_highs()
    return solver


def _price(
    cap: CapacityInput, services: Sequence[ServiceInput], duals: Sequence[float], limit: float
) -> tuple[list[int], float]:
    """The host pattern of the highest dual value (a MILP): a count per service, and the most any pattern can be worth
    (the MILP's dual bound: the pattern's own value when it was solved to optimality)."""
    gpus = cap.gpus_per_instance
    h = new_highs()
    h.setOptionValue("time_limit", limit)
    h.setOptionValue("mip_rel_gap", 1e-6)
    n = len(services)
    mps = [i for i, s in enumerate(services) if s.clients]
    # Variables: x_i (tasks of service i on the host), y_(i,g) for MPS services (tasks of i on GPU g), z_g (GPU g
    # holds MPS tasks). x_i is the objective's.
    lp = highspy.HighsLp()
    names: list[tuple[str, int, int]] = []
    cost: list[float] = []
    lower: list[float] = []
    upper: list[float] = []
    for i, s in enumerate(services):
        names.append(("x", i, -1))
        cost.append(-duals[i])
        lower.append(0)
        upper.append(min(s.tasks, _cap_per_host(s, cap)))
    for i in mps:
        for g in range(gpus):
            names.append(("y", i, g))
            cost.append(0)
            lower.append(0)
            upper.append(_INF)
    for g in range(gpus):
        names.append(("z", -1, g))
        cost.append(0)
        lower.append(0)
        upper.append(1)
    index = {key: k for k, key in enumerate(names)}
    rows: list[Row] = []
    host_cpu = {index[("x", i, -1)]: float(s.cpu_units) for i, s in enumerate(services) if s.cpu_units}
    rows.append((host_cpu, -_INF, float(cap.host_cpu_units)))
    host_mem = {index[("x", i, -1)]: float(s.memory_mib) for i, s in enumerate(services) if s.memory_mib}
    rows.append((host_mem, -_INF, float(cap.host_memory_mib)))
    for i in mps:  # x_i = sum_g y_(i,g)
        row = {index[("x", i, -1)]: 1.0}
        for g in range(gpus):
            row[index[("y", i, g)]] = -1.0
        rows.append((row, 0.0, 0.0))
    for g in range(gpus):
        memory = {index[("y", i, g)]: float(services[i].task_gpu_budget_mib) for i in mps}
        memory[index[("z", -1, g)]] = -float(cap.usable_gpu_memory_mib)
        rows.append((memory, -_INF, 0.0))
        clients = {index[("y", i, g)]: float(services[i].clients) for i in mps}
        clients[index[("z", -1, g)]] = -float(MAX_CLIENTS_PER_GPU)
        rows.append((clients, -_INF, 0.0))
    whole = {index[("x", i, -1)]: float(s.whole_gpus) for i, s in enumerate(services) if s.whole_gpus}
    for g in range(gpus):
        whole[index[("z", -1, g)]] = 1.0
    rows.append((whole, -_INF, float(gpus)))
    for g in range(gpus - 1):  # symmetry: GPUs in use come first
        rows.append(({index[("z", -1, g)]: 1.0, index[("z", -1, g + 1)]: -1.0}, 0.0, _INF))
    lp.num_col_ = len(names)
    lp.col_cost_ = np.array(cost, dtype=float)
    lp.col_lower_ = np.array(lower, dtype=float)
    lp.col_upper_ = np.array(upper, dtype=float)
    set_rows(lp, rows, len(names))
    lp.integrality_ = [highspy.HighsVarType.kInteger] * len(names)
    h.passModel(lp)
    h.run()
    values = h.getSolution().col_value
    del n
    pattern = [round(values[index[("x", i, -1)]]) for i in range(len(services))]
    found = sum(d * a for d, a in zip(duals, pattern, strict=True))
    return pattern, max(found, -h.getInfo().mip_dual_bound)


Row = tuple[dict[int, float], float, float]  # (column -> coefficient, lower, upper)


def set_rows(lp: highspy.HighsLp, rows: list[Row], columns: int) -> None:
    """The rows of ``lp``, each a sparse map of its columns' coefficients with its bounds, as HiGHS's column-wise
    matrix."""
    lp.num_row_ = len(rows)
    lp.row_lower_ = np.array([float(r[1]) for r in rows])
    lp.row_upper_ = np.array([float(r[2]) for r in rows])
    by_col: list[list[tuple[int, float]]] = [[] for _ in range(columns)]
    for r, (row, _, _) in enumerate(rows):
        for c, v in row.items():
            by_col[c].append((r, v))
    starts, index, value = [0], [], []
    for col in by_col:
        for r, v in col:
            index.append(r)
            value.append(v)
        starts.append(len(index))
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.array(starts, dtype=np.int32)
    lp.a_matrix_.index_ = np.array(index, dtype=np.int32)
    lp.a_matrix_.value_ = np.array(value, dtype=float)


def _cap_per_host(s: ServiceInput, cap: CapacityInput) -> int:
    k = 1 << 30
    if s.cpu_units:
        k = min(k, cap.host_cpu_units // s.cpu_units)
    if s.memory_mib:
        k = min(k, cap.host_memory_mib // s.memory_mib)
    if s.clients:
        per_gpu = min(cap.usable_gpu_memory_mib // s.task_gpu_budget_mib, MAX_CLIENTS_PER_GPU // s.clients)
        k = min(k, per_gpu * cap.gpus_per_instance)
    if s.whole_gpus:
        k = min(k, cap.gpus_per_instance // s.whole_gpus)
    return k


class _Master:
    """The covering LP over host patterns, kept in one HiGHS model: each new pattern is one more column."""

    def __init__(self, demand: list[int]) -> None:
        self.h = new_highs()
        for d in demand:
            self.h.addRow(float(d), _INF, 0, np.array([], dtype=np.int32), np.array([], dtype=float))

    def add(self, pattern: list[int]) -> None:
        rows = [i for i, a in enumerate(pattern) if a]
        self.h.addCol(
            1.0, 0.0, _INF, len(rows), np.array(rows, dtype=np.int32), np.array([float(pattern[i]) for i in rows])
        )

    def solve(self) -> tuple[float, list[float], list[float]]:
        self.h.run()
        solution = self.h.getSolution()
        return self.h.getInfo().objective_function_value, list(solution.row_dual), list(solution.col_value)


def host_bound(
    cap: CapacityInput,
    services: Sequence[ServiceInput],
    *,
    max_columns: int = 3000,
    pricing_seconds: float = 5.0,
    total_seconds: float = math.inf,
    ffd_hosts: int | None = None,
) -> HostBound:
    """The host-level LP bound of one capacity's services (each at its ``tasks``): converged, or Farley's where the
    pricing stops short, the columns run out, or the pricings have taken ``total_seconds`` in all."""
    services = [s for s in services if s.tasks > 0]
    demand = [s.tasks for s in services]
    # Start from one-service patterns: each service's tasks alone, as many as fit a host.
    master = _Master(demand)
    patterns = []
    for i, s in enumerate(services):
        p = [0] * len(services)
        p[i] = max(1, min(s.tasks, _cap_per_host(s, cap)))
        patterns.append(p)
        master.add(p)
    value, duals, x = master.solve()
    converged = False
    farley = 0.0
    spent = 0.0
    while len(patterns) < max_columns and spent <= total_seconds:
        start = time.perf_counter()
        p, most = _price(cap, services, duals, pricing_seconds)
        spent += time.perf_counter() - start
        farley = max(farley, value / most) if most > 0 else farley
        if most <= 1 + 1e-7:  # no pattern prices out, proven: the LP is optimal
            converged = True
            break
        if p in patterns:
            break  # the pricing's best found is no improvement (it ran out of time): Farley's bound stands
        patterns.append(p)
        master.add(p)
        value, duals, x = master.solve()
    bound = math.ceil(value - 1e-6) if converged else math.ceil(farley - 1e-6)
    rounded = _round(patterns, x, services, cap) if ffd_hosts is None else ffd_hosts
    return HostBound(bound, value, converged, len(patterns), rounded)


def _round(patterns: list[list[int]], x: list[float], services: Sequence[ServiceInput], cap: CapacityInput) -> int:
    """Hosts of a feasible plan: each pattern used floor(x) times, the rest placed by first-fit decreasing."""
    from ffd import ffd  # the benchmark's own baseline

    left = [s.tasks for s in services]
    hosts = 0
    for p, v in zip(patterns, x, strict=True):
        k = math.floor(v + 1e-9)
        if k <= 0:
            continue
        k = min(k, *(left[i] // a for i, a in enumerate(p) if a))
        hosts += k
        for i, a in enumerate(p):
            left[i] -= a * k
    rest = [
        service_input(s.name, s.capacity, s.shape, n, count_source=s.count_source)
        for s, n in zip(services, left, strict=True)
        if n > 0
    ]
    return hosts + (ffd(cap, rest)[0] if rest else 0)
