#!/usr/bin/env python3
"""The planner against the exact optimum on small random fleets (an assignment MILP, HiGHS: the benchmark's, not the
library's), and against first-fit decreasing.

Usage: python benchmarks/small_fleets.py [--fleets 400] [--seed 11]

Each fleet: one capacity (g6.xlarge: 1 x L4, 4 vCPU, 16 GiB; g6.12xlarge: 4 x L4; g6e.2xlarge: 1 x L40S), 1-4
services of 1-8 tasks, 1-2 MPS containers of 1-12 GiB in all, 0.25-2 vCPU, 1-16 GiB of host memory. The MILP places
every task on a GPU of a host (GPU memory and MPS clients per GPU, CPU and memory per host) with the fewest hosts; it
is solved to optimality (a fleet it cannot prove within the time limit is counted apart).
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence

import highspy
import numpy as np
from ffd import ffd
from fleet_generator import generate
from host_lp import Row, new_highs, set_rows

from ecs_gpu_sharing.core.capacity_facts import host_facts
from ecs_gpu_sharing.core.mps import MAX_CLIENTS_PER_GPU
from ecs_gpu_sharing.core.plan_inputs import capacity_input, service_input
from ecs_gpu_sharing.core.planner import CapacityInput, ServiceInput, plan
from ecs_gpu_sharing.core.shape import TaskShape

_INF = highspy.kHighsInf
TYPES = ("g6.xlarge", "g6.12xlarge", "g6e.2xlarge")


def fleet(rng: random.Random) -> tuple[CapacityInput, list[ServiceInput]]:
    cap = capacity_input("cap", host_facts([rng.choice(TYPES)]))
    services = []
    for i in range(rng.randint(1, 4)):
        containers = rng.randint(1, 2)
        total = rng.randint(4, 48) * 256
        budgets = (total,) if containers == 1 else (total // 2, total - total // 2)
        shape = TaskShape(rng.choice([256, 512, 1024, 2048]), rng.randint(8, 128) * 128, budgets)
        services.append(service_input(f"s{i}", "cap", shape, rng.randint(1, 8), count_source="benchmark"))
    return cap, services


def optimum(cap: CapacityInput, services: Sequence[ServiceInput], upper: int, seconds: float = 20.0) -> int | None:
    """The fewest hosts that hold every task (``upper``: hosts of a known plan), or None when not proven in time (or
    a task holds more than one GPU whole, which this model does not place)."""
    if any(s.whole_gpus > 1 for s in services):
        return None
    gpus = cap.gpus_per_instance
    cols: list[tuple[float, float, float, bool]] = []  # (cost, lower, upper, integer)
    key: dict[tuple[str, int, int, int], int] = {}

    def var(name: tuple[str, int, int, int], cost: float, hi: float) -> int:
        key[name] = len(cols)
        cols.append((cost, 0.0, hi, True))
        return key[name]

    for h in range(upper):
        var(("u", h, 0, 0), 1.0, 1.0)
        for g in range(gpus):
            var(("z", h, g, 0), 0.0, 1.0)
            for i, s in enumerate(services):
                var(("y", h, g, i), 0.0, float(s.tasks))
    rows: list[Row] = []
    for i, s in enumerate(services):  # every task placed
        rows.append(({key[("y", h, g, i)]: 1.0 for h in range(upper) for g in range(gpus)}, s.tasks, s.tasks))
    for h in range(upper):
        cpu = {key[("y", h, g, i)]: float(s.cpu_units) for g in range(gpus) for i, s in enumerate(services)}
        cpu[key[("u", h, 0, 0)]] = -float(cap.host_cpu_units)
        rows.append((cpu, -_INF, 0.0))
        mem = {key[("y", h, g, i)]: float(s.memory_mib) for g in range(gpus) for i, s in enumerate(services)}
        mem[key[("u", h, 0, 0)]] = -float(cap.host_memory_mib)
        rows.append((mem, -_INF, 0.0))
        for g in range(gpus):
            # A whole-GPU task (one GPU) takes all of its GPU's memory and clients: nothing else shares it.
            gpu = {
                key[("y", h, g, i)]: float(cap.usable_gpu_memory_mib if s.whole_gpus else s.task_gpu_budget_mib)
                for i, s in enumerate(services)
            }
            gpu[key[("z", h, g, 0)]] = -float(cap.usable_gpu_memory_mib)
            rows.append((gpu, -_INF, 0.0))
            clients = {
                key[("y", h, g, i)]: float(MAX_CLIENTS_PER_GPU if s.whole_gpus else s.clients)
                for i, s in enumerate(services)
            }
            clients[key[("z", h, g, 0)]] = -float(MAX_CLIENTS_PER_GPU)
            rows.append((clients, -_INF, 0.0))
            rows.append(({key[("z", h, g, 0)]: 1.0, key[("u", h, 0, 0)]: -1.0}, -_INF, 0.0))
        if h + 1 < upper:  # symmetry: hosts in use come first
            rows.append(({key[("u", h, 0, 0)]: 1.0, key[("u", h + 1, 0, 0)]: -1.0}, 0.0, _INF))
    lp = highspy.HighsLp()
    lp.num_col_ = len(cols)
    lp.col_cost_ = np.array([c[0] for c in cols])
    lp.col_lower_ = np.array([c[1] for c in cols])
    lp.col_upper_ = np.array([c[2] for c in cols])
    set_rows(lp, rows, len(cols))
    lp.integrality_ = [highspy.HighsVarType.kInteger] * len(cols)
    solver = new_highs()
    solver.setOptionValue("time_limit", seconds)
    solver.passModel(lp)
    solver.run()
    if solver.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return round(float(solver.getInfo().objective_function_value))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fleets", type=int, default=400)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--generated",
        action="store_true",
        help="fleets of 4-30 tasks from fleet_generator.py (held-out seeds 1000 on: 1, 4 and 8 GPUs a host, sidecars, "
        "whole GPUs, each resource binding)",
    )
    args = parser.parse_args()
    rng = random.Random(args.seed)
    judged = optimal = unproven = worse_than_ffd = better_than_ffd = 0
    worst = 1.0
    for n in range(args.fleets):
        if args.generated:
            drawn = generate(1000 + n, 4 + n % 27)
            cap, services = drawn.capacity, drawn.services
        else:
            cap, services = fleet(rng)
        planned = plan([cap], services)
        if not planned.fits:
            continue  # a task that fits no host: not a packing question
        judged += 1
        mine = planned.instances
        base = ffd(cap, services)[0]
        best = optimum(cap, services, min(mine, base))
        worse_than_ffd += mine > base
        better_than_ffd += mine < base
        if best is None:
            unproven += 1
            continue
        assert best <= mine and best >= planned.instance_lower_bound, "the MILP and the bound disagree"
        optimal += mine == best
        worst = max(worst, mine / best)
    proven = judged - unproven
    source = "generated, seeds 1000 on" if args.generated else f"seed {args.seed}"
    print(
        f"{judged} small fleets ({source}; {args.fleets - judged} drawn with a task no host holds left out): "
        f"the planner is optimal on {optimal} of the {proven} whose "
        f"optimum the MILP proved ({100 * optimal / max(proven, 1):.1f}%), at most {worst:.3f}x the optimum; "
        f"against first-fit decreasing: better on {better_than_ffd}, worse on {worse_than_ffd}",
        file=sys.stdout,
    )


if __name__ == "__main__":
    main()
