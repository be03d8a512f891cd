"""The GPU stage over an exact model: Valério de Carvalho's arc-flow LP over GPU memory, and its rounding.

Column generation (``cutting_stock``) gives the LP's bound on the GPUs and a plan from its rounding, and where the
bound is met that is the end of it. Where a plan stays a GPU or more above the bound, either the bound or the packing
is short, and on eight-GPU hosts one GPU may be one host. The arc-flow model looks again: the nodes are the units of
GPU memory (the sizes' greatest common divisor) from 0 to the GPU's, an arc of a size from a node to the node that
size further on, a loss arc from each node to the next, and a GPU is a path from 0 to the end. Every GPU's contents
are a path and every path fits a GPU, so its LP's value, rounded up, bounds the GPUs any placement needs (MPS's client
limit is left out, which keeps it a bound), and its flow, split into paths, is a fractional plan of whole GPUs for
``pack_gpus_lp`` to round (a path past the client limit is dropped; the ordinary fills place what it held).
Arcs of a size start only where sizes at least as large reach (the model's own symmetry cut), which keeps a GPU of 87
units and 34 sizes at about 1,400 arcs.

The LP, not its integer program: HiGHS's MILP over the same model found the same GPUs on every fleet it improved, but
its root cuts and a sub-MIP took 50 s on held-out 6004 at 10,000 tasks (4,677 arcs), where the LP takes 0.08 s. The
simplex is deterministic, so the plan is the same every run (docs/planning.md).
"""

from __future__ import annotations

import itertools
import math

from .cutting_stock import Solution

MAX_UNITS = 512  # GPU memory in units of the sizes' gcd above which the model is not built
MAX_ARCS = 6_000  # arcs above which the model is not solved
FLOW_EPSILON = 1e-7  # flow below which a path is the LP's rounding error, not a GPU's share


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


def paths(
    arc_list: list[tuple[int, int, int]], flow: list[float], items: int, units: int
) -> dict[tuple[int, ...], float]:
    """The ``flow`` on ``arc_list`` (an LP's, fractional or whole) split into paths from 0 to ``units``, each as the
    copies of each item on it (a GPU's contents) with the flow it carries, summed by contents. Each walk takes, at
    every node, the arc with the most flow left (the first of them), and carries the least flow left on its arcs,
    which empties that arc: at most one walk an arc. Flow is conserved at every node between, so each walk reaches the
    end; a walk that would carry next to nothing (the LP's rounding error) ends the split."""
    left = list(flow)
    leaving: dict[int, list[int]] = {}
    for index, (a, _, _) in enumerate(arc_list):
        leaving.setdefault(a, []).append(index)
    counted: dict[tuple[int, ...], float] = {}
    for _ in range(len(arc_list)):
        route = [max(leaving.get(0, []), key=left.__getitem__, default=-1)]
        while route[-1] >= 0 and arc_list[route[-1]][1] != units:
            route.append(max(leaving[arc_list[route[-1]][1]], key=left.__getitem__))
        carried = min(left[j] for j in route) if route[0] >= 0 else 0.0
        if carried < FLOW_EPSILON:
            break
        pattern = [0] * items
        for j in route:
            left[j] -= carried
            if arc_list[j][2] >= 0:
                pattern[arc_list[j][2]] += 1
        key = tuple(pattern)
        counted[key] = counted.get(key, 0.0) + carried
    return counted


def solve(sizes: list[int], clients: list[int], demand: list[int], capacity: int, max_clients: int) -> Solution | None:
    """GPUs of ``capacity`` MiB for ``demand`` tasks of each of ``sizes`` (MiB) by the arc-flow LP: its value rounded
    up (a bound on the GPUs by memory), and its flow as patterns (copies of each size) with the GPUs each carries,
    fractional; those within ``max_clients`` only. ``None`` where the model is too large (MAX_UNITS, MAX_ARCS), or
    HiGHS does not solve its LP to optimality (the planner then goes on without it)."""
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
    solved = _lp(arc_list, demand, units)
    if solved is None:
        return None
    value, flow = solved
    patterns = [
        (pattern, float(round(count)) if abs(count - round(count)) < FLOW_EPSILON else count)  # 2.9999999 is 3 GPUs
        for pattern, count in sorted(paths(arc_list, flow, len(sizes), units).items())
        if sum(k * c for k, c in zip(pattern, clients, strict=True)) <= max_clients
    ]
    return Solution(max(0, math.ceil(value - 1e-6)), patterns)


def _lp(arc_list: list[tuple[int, int, int]], demand: list[int], units: int) -> tuple[float, list[float]] | None:
    """min GPUs (the flow out of node 0) with flow conserved and each item's arcs carrying its demand, relaxed: the
    LP's value and each arc's flow (None where HiGHS does not report it optimal: no bound or plan is read from it)."""
    import highspy
    import numpy as np

    from .host_lp import new_highs, run_highs

    h = new_highs()  # type: ignore[no-untyped-call]
    n = len(arc_list)
    gpus = n  # the last column: GPUs, the flow out of 0 and into the end
    h.addVars(n + 1, np.zeros(n + 1), np.full(n + 1, highspy.kHighsInf))
    h.changeColCost(gpus, 1.0)
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
    run_highs(h)
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return h.getInfo().objective_function_value, list(h.getSolution().col_value[:n])


def _add_row(h: object, np: object, entries: list[tuple[int, float]], low: float, high: float) -> None:
    h.addRow(  # type: ignore[attr-defined]
        low,
        high,
        len(entries),
        np.array([j for j, _ in entries], dtype=np.int32),  # type: ignore[attr-defined]
        np.array([v for _, v in entries], dtype=float),  # type: ignore[attr-defined]
    )
