"""The GPU stage as an exact integer program: Valério de Carvalho's arc-flow model over GPU memory.

Column generation (``cutting_stock``) gives the LP's bound on the GPUs and a plan from its rounding, and where the
bound is met that is the end of it. Where a plan stays a GPU or more above the bound, either the bound or the packing
is short, and on eight-GPU hosts one GPU may be one host. The arc-flow model decides it: the nodes are the units of
GPU memory (the sizes' greatest common divisor) from 0 to the GPU's, an arc of a size from a node to the node that
size further on, a loss arc from each node to the next, and a GPU is a path from 0 to the end. It is exact over GPU
memory (every GPU's contents are a path, and every path fits a GPU), so its integer optimum is the fewest GPUs by
memory, and its MILP's dual bound is a bound on the GPUs any placement needs; MPS's client limit is left out, which
keeps it a bound (a path past the limit is not kept as a GPU's contents, and the ordinary fills place what it held).
Arcs of a size start only where sizes at least as large reach (the model's own symmetry cut), which keeps a GPU of 87
units and 34 sizes at about 1,400 arcs. The MILP is HiGHS's, within a node limit, so the result is deterministic.
"""

from __future__ import annotations

import itertools
import math

from .cutting_stock import Solution

MAX_UNITS = 512  # GPU memory in units of the sizes' gcd above which the model is not built
MAX_ARCS = 6_000  # arcs above which the model is not solved
NODES = 2_000  # branch-and-bound nodes HiGHS may spend (a limit of work, not of time: the same answer every run)


def arcs(weights: list[int], demand: list[int], units: int) -> list[tuple[int, int, int]]:
    """The arcs (tail, head, item; -1 for a loss arc) of the model for items of ``weights`` (units, any order) and
    ``demand`` on a GPU of ``units``: items are taken largest first (ties by position), and an item's arcs join two
    nodes that it and the items before it reach from 0 within their demand; the loss arcs join each node so reached
    to the next, the last to ``units``. Every GPU's contents, largest first, are a path."""
    order = sorted(range(len(weights)), key=lambda i: (-weights[i], i))
    reached = {0}
    out: list[tuple[int, int, int]] = []
    for i in order:
        w = weights[i]
        layer = set(reached)
        for _ in range(demand[i]):
            layer = {a + w for a in layer if a + w <= units} - reached
            if not layer:
                break
            reached |= layer
        out.extend((a, a + w, i) for a in sorted(reached) if a + w in reached)
    nodes = sorted(reached | {units})
    out.extend((a, b, -1) for a, b in itertools.pairwise(nodes))
    return out


def paths(arc_list: list[tuple[int, int, int]], flow: list[int], items: int, units: int) -> dict[tuple[int, ...], int]:
    """The integer ``flow`` on ``arc_list`` split into paths from 0 to ``units``, each as the copies of each item on
    it (a GPU's contents), counted. Flow is conserved at every node between, so each walk from 0 reaches the end."""
    left = list(flow)
    leaving: dict[int, list[int]] = {}
    for index, (a, _, _) in enumerate(arc_list):
        leaving.setdefault(a, []).append(index)
    counted: dict[tuple[int, ...], int] = {}
    while True:
        arc = next((j for j in leaving.get(0, []) if left[j] > 0), None)
        if arc is None:
            return counted
        pattern = [0] * items
        while arc is not None:
            left[arc] -= 1
            _, head, item = arc_list[arc]
            if item >= 0:
                pattern[item] += 1
            arc = None if head == units else next(k for k in leaving[head] if left[k] > 0)
        key = tuple(pattern)
        counted[key] = counted.get(key, 0) + 1


def solve(sizes: list[int], clients: list[int], demand: list[int], capacity: int, max_clients: int) -> Solution | None:
    """The fewest GPUs of ``capacity`` MiB by memory for ``demand`` tasks of each of ``sizes`` (MiB): the MILP's
    bound, and its GPUs as patterns (copies of each size; those within ``max_clients`` only). ``None`` where the
    model is too large (MAX_UNITS, MAX_ARCS)."""
    step = 0
    for size in sizes:
        step = math.gcd(step, size)
    if not sizes or step == 0:
        return None
    units = capacity // step
    if units > MAX_UNITS:
        return None
    weights = [size // step for size in sizes]
    arc_list = arcs(weights, demand, units)
    if len(arc_list) > MAX_ARCS:
        return None
    bound, flow = _milp(arc_list, demand, units)
    if flow is None:
        return Solution(bound, [])
    counted = paths(arc_list, flow, len(sizes), units)
    patterns = [
        (pattern, float(count))
        for pattern, count in sorted(counted.items())
        if sum(k * c for k, c in zip(pattern, clients, strict=True)) <= max_clients
    ]
    return Solution(bound, patterns)


def _milp(arc_list: list[tuple[int, int, int]], demand: list[int], units: int) -> tuple[int, list[int] | None]:
    """min GPUs (the flow out of node 0) with flow conserved and each item's arcs carrying its demand: the MILP's
    bound rounded up, and its integer flows (None where it found no solution within NODES)."""
    import highspy
    import numpy as np

    from .host_lp import new_highs

    h = new_highs()  # type: ignore[no-untyped-call]
    h.setOptionValue("mip_max_nodes", NODES)
    h.setOptionValue("presolve", "off")  # its aggregation of the flow rows took 4.5 s of 4.6 on a model of 1,464 arcs
    n = len(arc_list)
    gpus = n  # the last column: GPUs, the flow out of 0 and into the end
    h.addVars(n + 1, np.zeros(n + 1), np.full(n + 1, highspy.kHighsInf))
    h.changeColCost(gpus, 1.0)
    h.changeColsIntegrality(
        n + 1, np.arange(n + 1, dtype=np.int32), np.full(n + 1, highspy.HighsVarType.kInteger, dtype=np.uint8)
    )
    rows: dict[int, list[tuple[int, float]]] = {}
    for j, (a, b, _) in enumerate(arc_list):
        rows.setdefault(a, []).append((j, 1.0))
        rows.setdefault(b, []).append((j, -1.0))
    rows[0].append((gpus, -1.0))
    rows[units].append((gpus, 1.0))
    for node in sorted(rows):
        _add_row(h, np, rows[node], 0.0, 0.0)
    for i, d in enumerate(demand):
        _add_row(h, np, [(j, 1.0) for j, (_, _, item) in enumerate(arc_list) if item == i], float(d), float(d))
    h.run()
    info = h.getInfo()
    bound = max(0, math.ceil(info.mip_dual_bound - 1e-6))
    if info.primal_solution_status != 2:  # 2: a feasible solution
        return bound, None
    values = h.getSolution().col_value
    return bound, [round(v) for v in values[:n]]


def _add_row(h: object, np: object, entries: list[tuple[int, float]], low: float, high: float) -> None:
    h.addRow(  # type: ignore[attr-defined]
        low,
        high,
        len(entries),
        np.array([j for j, _ in entries], dtype=np.int32),  # type: ignore[attr-defined]
        np.array([v for _, v in entries], dtype=float),  # type: ignore[attr-defined]
    )
