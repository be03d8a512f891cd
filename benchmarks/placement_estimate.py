#!/usr/bin/env python3
"""How far the scaled estimate of ECS's placement (core.placement, past ``WHOLE_TASKS``) falls from replaying the
whole fleet: the figure that sets ``REPLAYED_TASKS``, ``headroom.ESTIMATE_HEADROOM`` and ``headroom.FAR_HEADROOM``.

Usage: python benchmarks/placement_estimate.py [--sizes 3200,3600,5000,10000] [--seeds 7,8] [--scaled 500,1000]
                                               [--cache FILE] [--jobs 2] [--generated SEEDS [--hosts TYPES]]

For each workload, size, seed and capacity: the instances every whole replay needs at a rollout's peak (the worst
replay) and keeps after (the median), then the estimate of each ``--scaled`` size, before its headroom, as a ratio of
the whole figure; and, per scaled size, the worst shortfall, how many fell short, and the seconds the estimates took.
The whole replays take minutes (1 to 17 s a capacity at 5,000 to 10,000 tasks): ``--cache`` keeps them in a JSON
file between runs. With ``--generated``, the generated benchmark's fleets of those seeds too (``fleet_generator``; on
each of ``--hosts``, by default those of eight GPUs), each as the fleet file ``generated_benchmark.py --command``
times (``fitting_fleet_file``) and as ``plan`` reads it: at 100,000 tasks (``--sizes 100000 --workloads ""``) a
whole replay takes 1 to 2 minutes, nine a fleet file.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import time
import tomllib
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

from fleet_generator import HOSTS, fitting_fleet_file, generate
from plan_benchmark import WORKLOADS

from ecs_gpu_sharing.core import fleet, headroom, placement, plan_inputs
from ecs_gpu_sharing.core.planner import CapacityInput, ServiceInput, plan

Case = tuple[str, int, int, str]  # workload, tasks, seed, capacity


GENERATED = "generated on "  # a workload of the generated benchmark: the rest of its name is the instance type


@functools.cache
def _inputs(name: str, size: int, seed: int) -> tuple[list[CapacityInput], list[ServiceInput]]:
    """The workload's capacities and services; a generated fleet's as ``plan`` reads its fleet file."""
    if not name.startswith(GENERATED):
        return WORKLOADS[name](size, seed)
    text, _ = fitting_fleet_file(generate(seed, size, name.removeprefix(GENERATED)))
    return plan_inputs.from_fleet(fleet.parse(tomllib.loads(text)))


def _fleet(case: Case) -> tuple[CapacityInput, list[ServiceInput]]:
    name, size, seed, cap_name = case
    caps, services = _inputs(name, size, seed)
    (cap,) = [c for c in caps if c.name == cap_name]
    free = replace(cap, max_instances=None, min_instances=0)
    return free, sorted((s for s in services if s.capacity == cap_name and s.tasks), key=lambda s: s.name)


def _whole(case: Case) -> tuple[int, int]:
    cap, mine = _fleet(case)
    found = placement._replayed(cap, mine, sum(s.tasks for s in mine))
    return found.needed, found.expected_after_rollout


def _estimates(case: Case, sizes: list[int]) -> list[tuple[int, int, float]]:
    """(needed before the headroom, expected after, seconds) of the scaled estimate at each size."""
    cap, mine = _fleet(case)
    # As ``rules.assess`` packs them: the surge without the host-level LP, whose packing without it is the ratio's
    # (with the LP the plan's ``instances_without_lp`` has the GPU LP over many sizes too, a tighter packer)
    packed = (plan([cap], mine, surge=True, host_lp=False).capacity(cap.name), plan([cap], mine).capacity(cap.name))
    out = []
    near, far, replayed = headroom.ESTIMATE_HEADROOM, headroom.FAR_HEADROOM, placement.REPLAYED_TASKS
    try:
        headroom.ESTIMATE_HEADROOM = headroom.FAR_HEADROOM = 0.0
        for size in sizes:
            placement.REPLAYED_TASKS = size
            started = time.perf_counter()
            total = sum(s.tasks for s in mine)
            found = placement._scaled(
                cap, mine, total, packed, placement.replayed(cap, mine), placement.scaled_instances(cap, mine)
            )
            out.append((found.needed, found.expected_after_rollout, time.perf_counter() - started))
    finally:
        headroom.ESTIMATE_HEADROOM, headroom.FAR_HEADROOM, placement.REPLAYED_TASKS = near, far, replayed
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="3200,3600,5000,10000")
    parser.add_argument("--seeds", default="7,8")
    parser.add_argument("--workloads", default="mixed,four-l4,cpu-bound,memory-bound,embedders,llms")
    parser.add_argument("--scaled", default="500,700,1000")
    parser.add_argument("--cache", type=Path, help="a JSON file keeping the whole replays between runs")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--generated", default="", help="the generated benchmark's fleets of these seeds too")
    parser.add_argument("--hosts", default=",".join(HOSTS[8]), help="with --generated: on these instance types")
    args = parser.parse_args()
    cases: list[Case] = []
    workloads = [name for name in args.workloads.split(",") if name]
    workloads += [GENERATED + host for host in args.hosts.split(",")] if args.generated else []
    for name in workloads:
        for size in (int(s) for s in args.sizes.split(",")):
            for seed in (int(s) for s in (args.generated if name.startswith(GENERATED) else args.seeds).split(",")):
                caps, services = _inputs(name, size, seed)
                for cap in caps:  # only capacities the plan estimates: past WHOLE_TASKS
                    if sum(s.tasks for s in services if s.capacity == cap.name) > placement.WHOLE_TASKS:
                        cases.append((name, size, seed, cap.name))
    cache = json.loads(args.cache.read_text()) if args.cache and args.cache.exists() else {}
    todo = [c for c in cases if json.dumps(c) not in cache]
    with ProcessPoolExecutor(args.jobs) as pool:
        for case, figures in zip(todo, pool.map(_whole, todo), strict=True):
            cache[json.dumps(case)] = figures
            if args.cache:
                args.cache.write_text(json.dumps(cache))
        scaled = [int(s) for s in args.scaled.split(",")]
        estimates = list(pool.map(_estimates, cases, [scaled] * len(cases)))
    print(
        "| workload | tasks | seed | capacity | whole needed | whole after | "
        + " | ".join(f"{n:,}" for n in scaled)
        + " |"
    )
    print("| --- | ---: | ---: | --- | ---: | ---: |" + " ---: |" * len(scaled))
    for case, found in zip(cases, estimates, strict=True):
        needed, after = cache[json.dumps(case)]
        cells = " | ".join(f"{e[0]:,} ({e[0] / needed:.3f}), {e[1]:,}" for e in found)
        print(f"| {case[0]} | {case[1]:,} | {case[2]} | {case[3]} | {needed:,} | {after:,} | {cells} |")
    print()
    for i, size in enumerate(scaled):
        ratios = [found[i][0] / cache[json.dumps(case)][0] for case, found in zip(cases, estimates, strict=True)]
        afters = [found[i][1] / cache[json.dumps(case)][1] for case, found in zip(cases, estimates, strict=True)]
        seconds = [found[i][2] for found in estimates]
        print(
            f"scaled to {size:,}: needed / whole: worst {min(ratios):.3f}, short on {sum(r < 1 for r in ratios)} of "
            f"{len(ratios)}, median {statistics.median(ratios):.3f}; after / whole: {min(afters):.3f} to "
            f"{max(afters):.3f}; seconds a capacity: median {statistics.median(seconds):.2f}, worst {max(seconds):.2f}"
        )


if __name__ == "__main__":
    main()
