"""GPUs filled by HiGHS's MILP over memory and MPS clients together, where the clients bind.

The GPU stage's LPs (``cutting_stock``, ``arc_flow``) weigh GPU memory; the arc-flow model leaves MPS's 48 clients a
GPU out altogether, and drops the paths past them. Where a fleet's small tasks with sidecars take as many clients as
memory, a packing on as few GPUs as the clients allow may need every GPU filled to its 48 clients and within its
memory at once, which neither model's rounding finds (``shaped_fleets.py clients`` seed 943 at 1,000 tasks: 2,304
clients, 48 GPUs' worth, on eight L4s a host; the planner had 49 GPUs, seven hosts). This asks whether ``gpus`` GPUs
hold the tasks: a count of each (size, clients) on each GPU, each GPU within its memory and its clients, each count
met. Only where the clients can bind (they need at least CLIENTS_BIND of the GPUs the memory needs, as for the
host-level LP's knapsacks) and the model is small (MILP_CELLS GPUs times sizes), within MILP_NODES branch-and-bound
nodes: counted, not timed, so the plan is the same on every machine (docs/planning.md)."""

from __future__ import annotations

from collections import Counter

from .cutting_stock import Solution
from .host_lp.model import CLIENTS_BIND

MILP_CELLS = 1_000  # GPUs times sizes above which the model is not built
MILP_NODES = 50  # branch-and-bound nodes HiGHS may spend looking for a packing


def fill(
    sizes: list[int], clients: list[int], demand: list[int], capacity: int, max_clients: int, gpus: int
) -> Solution | None:
    """``demand`` tasks of each of ``sizes`` (MiB) and ``clients`` on ``gpus`` GPUs of ``capacity`` MiB and
    ``max_clients`` clients: the GPUs' contents as patterns (copies of each size) with how many GPUs hold each, and
    ``gpus`` as the bound; None where the clients cannot bind, the model is too large, or HiGHS finds no packing
    within its nodes (there may still be one)."""
    if gpus <= 0 or not sizes or gpus * len(sizes) > MILP_CELLS:
        return None
    memory = sum(s * d for s, d in zip(sizes, demand, strict=True)) / capacity
    if sum(c * d for c, d in zip(clients, demand, strict=True)) / max_clients < CLIENTS_BIND * memory:
        return None  # the clients cannot bind: the arc-flow model is exact over what can
    import highspy
    import numpy as np

    from .host_lp import new_highs, run_highs

    n = len(sizes)
    h = new_highs()  # type: ignore[no-untyped-call]
    h.setOptionValue("mip_max_nodes", MILP_NODES)
    most = [  # the most tasks of each size one GPU takes
        min(d, capacity // s if s else d, max_clients // c if c else d)
        for s, c, d in zip(sizes, clients, demand, strict=True)
    ]
    h.addVars(gpus * n, np.zeros(gpus * n), np.array([float(m) for m in most] * gpus))
    h.changeColsIntegrality(gpus * n, np.arange(gpus * n, dtype=np.int32), np.ones(gpus * n, dtype=np.uint8))
    for g in range(gpus):
        columns = np.arange(g * n, (g + 1) * n, dtype=np.int32)
        h.addRow(-highspy.kHighsInf, float(capacity), n, columns, np.array(sizes, dtype=float))
        h.addRow(-highspy.kHighsInf, float(max_clients), n, columns, np.array(clients, dtype=float))
    for k, d in enumerate(demand):
        h.addRow(float(d), float(d), gpus, np.arange(k, gpus * n, n, dtype=np.int32), np.ones(gpus))
    run_highs(h)
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None  # no packing found within the nodes (or none exists): the plan keeps what it has
    values = h.getSolution().col_value
    held = Counter(tuple(round(values[g * n + k]) for k in range(n)) for g in range(gpus))
    return Solution(gpus, sorted((pattern, float(count)) for pattern, count in held.items() if any(pattern)))
