#!/usr/bin/env python3
"""Plans synthetic fleets of mixed sizes and prints time, instances and GPUs against their lower bounds.

Usage: python benchmarks/plan_benchmark.py [--sizes 100,1000,10000,100000] [--seed 7]

Each fleet is drawn from a fixed seed (see ``fleet``) onto two capacities: g6.2xlarge (1 x L4) and
g6e.12xlarge (4 x L40S). Lower bounds: GPUs, Martello-Toth's L2 bin-packing bound on task GPU memory (and
MPS clients); instances, the largest of GPUs / GPUs per instance, CPU and host memory.
"""

from __future__ import annotations

import argparse
import math
import random
import time

from ecs_gpu_sharing.core.capacity_facts import host_facts
from ecs_gpu_sharing.core.planner import CapacityInput, ServiceInput, plan
from ecs_gpu_sharing.core.shape import TaskShape


def capacity(name: str, instance_type: str) -> CapacityInput:
    return CapacityInput.from_facts(name, host_facts([instance_type]))


def fleet(tasks: int, seed: int) -> list[ServiceInput]:
    """Services whose counts add up to ``tasks``; task shapes drawn from a fixed seed.

    A task has 1-3 MPS containers of 0.5-12 GiB each (log-uniform, in 256 MiB steps); its host memory is a
    third to two thirds of its GPU memory and its CPU 0.25-1 vCPU, as model servers tend to be GPU-bound.
    Tasks up to 16 GiB go to L4 hosts (g6.2xlarge) seven times in ten, larger ones always to L40S hosts
    (g6e.12xlarge, 4 GPUs).
    """
    rng = random.Random(seed)
    services = []
    remaining = tasks
    i = 0
    while remaining > 0:
        count = min(remaining, rng.randint(1, max(1, tasks // 20)))
        remaining -= count
        containers = tuple(
            int(math.exp(rng.uniform(math.log(512), math.log(12288)))) // 256 * 256 for _ in range(rng.randint(1, 3))
        )
        gpu = sum(containers)
        cap = "l40s" if gpu > 16384 or rng.random() < 0.3 else "l4"
        services.append(
            ServiceInput(
                name=f"svc{i:05d}",
                capacity=cap,
                shape=TaskShape(
                    cpu_units=rng.choice([256, 512, 1024]),
                    memory_mib=int(gpu * rng.uniform(1 / 3, 2 / 3)) // 128 * 128,
                    gpu_budgets_mib=containers,
                ),
                tasks=count,
            )
        )
        i += 1
    return services


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000,100000")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    caps = [capacity("l4", "g6.2xlarge"), capacity("l40s", "g6e.12xlarge")]
    print("| tasks | services | seconds | instances | instance lower bound | ratio | GPUs | GPU lower bound | ratio |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for size in (int(s) for s in args.sizes.split(",")):
        services = fleet(size, args.seed)
        start = time.perf_counter()
        result = plan(caps, services)
        seconds = time.perf_counter() - start
        assert result.fits, "benchmark fleets must fit"
        inst = result.instances
        inst_lb = sum(c.instance_lower_bound for c in result.capacities)
        print(
            f"| {size:,} | {len(services)} | {seconds:.2f} | {inst} | {inst_lb} | {inst / inst_lb:.3f} "
            f"| {result.gpus} | {result.gpu_lower_bound} | {result.gpus / result.gpu_lower_bound:.3f} |"
        )


if __name__ == "__main__":
    main()
