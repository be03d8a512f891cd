#!/usr/bin/env python3
"""The model of ECS's own placement (core.placement) over the benchmark's workloads: what ECS needs at a rollout's peak
and keeps after it, against the plan's packing, and how long the replays take.

Usage: python benchmarks/placement_benchmark.py [--sizes 200,1000,2000,5000,10000] [--seed 7] [--presets]

For each workload and size, per capacity: the packing's surge instances, the instances ECS's placement needs at the
peak of a fleet-wide rollout (the worst replay), their ratio; the packing's steady instances, the instances ECS is
expected to keep after the rollout (the median replay), their ratio; and the seconds ``place_capacity`` took (past
``REPLAYED_TASKS`` tasks a capacity is replayed scaled down). The last lines time ``assess`` (the packing, both plans
and the model) on the same fleets. With ``--presets``, instead: the seconds of ``replayed`` (every replay without an
instance limit) on each workload's capacities with every service given each of the fleet file's placement presets in
turn, and a reference run of fixed work (``generated_benchmark.reference_seconds``) before and after.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

from plan_benchmark import WORKLOADS

from ecs_gpu_sharing.core.placement import place_capacity, replayed
from ecs_gpu_sharing.core.placement_strategies import PRESETS
from ecs_gpu_sharing.core.planner import plan
from ecs_gpu_sharing.core.rules import assess


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200,1000,2000,5000,10000")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workloads", default="mixed,four-l4,cpu-bound,memory-bound,embedders,llms")
    parser.add_argument("--presets", action="store_true", help="the replays' seconds under each placement preset")
    args = parser.parse_args()
    if args.presets:
        _presets(args.workloads.split(","), [int(s) for s in args.sizes.split(",")], args.seed)
        return
    print(
        "| workload | tasks | capacity | surge packed | ECS peak | peak / packed | steady packed | ECS after | "
        "after / packed | model s |"
    )
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    peaks: list[float] = []
    afters: list[float] = []
    timings: list[tuple[str, int, float]] = []
    for name in args.workloads.split(","):
        for size in (int(s) for s in args.sizes.split(",")):
            caps, services = WORKLOADS[name](size, args.seed)
            steady, surge = plan(caps, services), plan(caps, services, surge=True)
            for cap in caps:
                mine = [s for s in services if s.capacity == cap.name]
                if not mine:
                    continue
                packed = (surge.capacity(cap.name), steady.capacity(cap.name))
                started = time.perf_counter()
                found = place_capacity(cap, mine, packed)
                seconds = time.perf_counter() - started
                counts = (packed[0].instance_count, packed[1].instance_count)
                peak, after = found.needed / max(counts[0], 1), found.expected_after_rollout / max(counts[1], 1)
                peaks.append(peak)
                afters.append(after)
                print(
                    f"| {name} | {sum(s.tasks for s in mine):,} | {cap.instance_type} | {counts[0]:,} | "
                    f"{found.needed:,} | {peak:.2f} | {counts[1]:,} | {found.expected_after_rollout:,} | {after:.2f} | "
                    f"{seconds:.2f} |"
                )
            started = time.perf_counter()
            assess(caps, services)
            timings.append((name, size, time.perf_counter() - started))
    print()
    print(
        f"ECS peak / packed surge: median {statistics.median(peaks):.2f}, worst {max(peaks):.2f}; "
        f"ECS after / packed steady: median {statistics.median(afters):.2f}, worst {max(afters):.2f}"
    )
    for name, size, seconds in timings:
        print(f"assess {name} at {size:,} tasks: {seconds:.2f} s")


def _presets(workloads: list[str], sizes: list[int], seed: int) -> None:
    """The replays' seconds (``replayed``, every capacity of the workload) with every service under each preset."""
    from generated_benchmark import reference_seconds

    print(f"reference run: {reference_seconds():.3f} s")
    print("| workload | tasks | " + " | ".join(PRESETS) + " |")
    print("| --- | ---: |" + " ---: |" * len(PRESETS))
    for name in workloads:
        for size in sizes:
            caps, services = WORKLOADS[name](size, seed)
            row = []
            for strategy in PRESETS.values():
                mine = [replace(s, placement=strategy) for s in services]
                started = time.perf_counter()
                for cap in caps:
                    replayed(cap, mine)
                row.append(f"{time.perf_counter() - started:.2f}")
            print(f"| {name} | {size:,} | " + " | ".join(row) + " |", flush=True)
    print(f"reference run: {reference_seconds():.3f} s")


if __name__ == "__main__":
    main()
