#!/usr/bin/env python3
"""Plans synthetic fleets and prints, in one table, this planner against plain first-fit decreasing.

Usage: python benchmarks/plan_benchmark.py [--sizes 1000,10000,100000] [--seed 7] [--no-ffd] [--no-cli] [--no-lp]

Workloads (fixed seeds, see ``mixed`` and ``four_l4``):

- ``mixed``: 1-3 MPS containers of 0.5-12 GiB per task (log-uniform, 256 MiB steps), host memory a third to two
  thirds of the GPU budget, 0.25-1 vCPU; tasks up to 16 GiB go to g6.2xlarge (1 x L4) seven times in ten, the
  rest to g6e.12xlarge (4 x L40S).
- ``four-l4``: g6.12xlarge (4 x L4) hosts; services of 1-20 replicas, one container of 1-16 GiB (256 MiB steps),
  0.25-2 vCPU, 1-16 GiB of host memory.
- ``one-shape`` and ``tiny``: cases a lower bound settles (one task shape; 128-MiB tasks bound by MPS's 48 clients).
- ``cpu-bound``, ``memory-bound``, ``embedders``, ``llms``: the regimes of issue #24, where host CPU, host memory,
  small GPU budgets or large ones bind (see each function).

Lower bounds: GPUs, Martello-Toth's L2 on GPU memory and the client limit; instances, the largest of GPUs per
instance, L2 on host CPU and on host memory, and for one task shape its count over the most that fit a host. For the
realistic regimes (cpu-bound, memory-bound, embedders, llms) the benchmark also computes an independent host-level
bound, the cutting-stock LP over whole-host patterns (``host_lp.py``, HiGHS), and the hosts of a feasible plan its
rounding gives; "vs best bound" is the planner's instances over the larger of the two bounds. The last line times the
whole ``ecs-gpu-sharing plan --json`` command on a 100,000-task, 200-service fleet file.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ffd import ffd

from ecs_gpu_sharing.core.capacity_facts import host_facts
from ecs_gpu_sharing.core.plan_inputs import capacity_input, service_input
from ecs_gpu_sharing.core.planner import CapacityInput, ServiceInput, plan
from ecs_gpu_sharing.core.shape import TaskShape


def capacity(name: str, instance_type: str) -> CapacityInput:
    return capacity_input(name, host_facts([instance_type]))


def _counts(tasks: int, rng: random.Random, low: int, high: int) -> list[int]:
    counts = []
    while tasks > 0:
        n = min(tasks, rng.randint(low, high))
        counts.append(n)
        tasks -= n
    return counts


def mixed(tasks: int, seed: int) -> tuple[list[CapacityInput], list[ServiceInput]]:
    rng = random.Random(seed)
    services = []
    for i, count in enumerate(_counts(tasks, rng, 1, max(1, tasks // 20))):
        containers = tuple(
            int(math.exp(rng.uniform(math.log(512), math.log(12288)))) // 256 * 256 for _ in range(rng.randint(1, 3))
        )
        gpu = sum(containers)
        cap = "l40s" if gpu > 16384 or rng.random() < 0.3 else "l4"
        shape = TaskShape(rng.choice([256, 512, 1024]), int(gpu * rng.uniform(1 / 3, 2 / 3)) // 128 * 128, containers)
        services.append(service_input(f"svc{i:05d}", cap, shape, count, count_source="benchmark"))
    return [capacity("l4", "g6.2xlarge"), capacity("l40s", "g6e.12xlarge")], services


def four_l4(tasks: int, seed: int) -> tuple[list[CapacityInput], list[ServiceInput]]:
    rng = random.Random(seed)
    services = []
    for i, count in enumerate(_counts(tasks, rng, 1, 20) if tasks < 4000 else _counts(tasks, rng, 1, tasks // 100)):
        budget = rng.randint(4, 64) * 256  # 1-16 GiB
        shape = TaskShape(rng.choice([256, 512, 1024, 2048]), rng.randint(8, 128) * 128, (budget,))
        services.append(service_input(f"svc{i:05d}", "l4x4", shape, count, count_source="benchmark"))
    return [capacity("l4x4", "g6.12xlarge")], services


def one_shape(tasks: int, seed: int) -> tuple[list[CapacityInput], list[ServiceInput]]:
    shape = TaskShape(3000, 4096, (5000,))
    return [capacity("l4", "g6.2xlarge")], [service_input("only", "l4", shape, tasks, count_source="benchmark")]


def tiny(tasks: int, seed: int) -> tuple[list[CapacityInput], list[ServiceInput]]:
    shape = TaskShape(64, 64, (128,))
    return [capacity("l4x4", "g6.12xlarge")], [service_input("tiny", "l4x4", shape, tasks, count_source="benchmark")]


def _services(
    tasks: int, seed: int, cap: str, draw: Callable[[random.Random], TaskShape], per: tuple[int, int] = (10, 100)
) -> list[ServiceInput]:
    rng = random.Random(seed)
    return [
        service_input(f"svc{i:05d}", cap, draw(rng), count, count_source="benchmark")
        for i, count in enumerate(_counts(tasks, rng, max(per[0], tasks // 400), max(per[1], tasks // 100)))
    ]


def cpu_bound(tasks: int, seed: int) -> tuple[list[CapacityInput], list[ServiceInput]]:
    """Services whose tasks want 2-6 vCPU and small GPU budgets, on g6.12xlarge (4 x L4, 48 vCPU): CPU binds."""
    return [capacity("l4x4", "g6.12xlarge")], _services(
        tasks,
        seed,
        "l4x4",
        lambda r: TaskShape(r.randint(8, 24) * 256, r.randint(8, 32) * 256, (r.randint(2, 12) * 256,)),
    )


def memory_bound(tasks: int, seed: int) -> tuple[list[CapacityInput], list[ServiceInput]]:
    """Services whose tasks want 8-40 GiB of host memory and 2-8 GiB of GPU memory, on g6e.2xlarge (1 x L40S)."""
    return [capacity("l40s", "g6e.2xlarge")], _services(
        tasks,
        seed,
        "l40s",
        lambda r: TaskShape(r.choice([512, 1024]), r.randint(64, 320) * 128, (r.randint(8, 32) * 256,)),
    )


def embedders(tasks: int, seed: int) -> tuple[list[CapacityInput], list[ServiceInput]]:
    """Embedding models: 1-4 GiB GPU budgets, 0.25-1 vCPU, 1-4 GiB of host memory, on g6.12xlarge (4 x L4)."""
    return [capacity("l4x4", "g6.12xlarge")], _services(
        tasks,
        seed,
        "l4x4",
        lambda r: TaskShape(r.choice([256, 512, 1024]), r.randint(8, 32) * 128, (r.randint(4, 16) * 256,)),
    )


def llms(tasks: int, seed: int) -> tuple[list[CapacityInput], list[ServiceInput]]:
    """LLMs: 10-36 GiB GPU budgets, 1-4 vCPU, 8-32 GiB of host memory, on g6e.12xlarge (4 x L40S)."""
    return [capacity("l40s4", "g6e.12xlarge")], _services(
        tasks,
        seed,
        "l40s4",
        lambda r: TaskShape(r.randint(4, 16) * 256, r.randint(64, 256) * 128, (r.randint(40, 144) * 256,)),
    )


REALISTIC = ("cpu-bound", "memory-bound", "embedders", "llms")


def _highs() -> bool:
    """Whether HiGHS is installed (a dev dependency: make setup installs it)."""
    try:
        import highspy  # noqa: F401
    except ImportError:
        print("no host-level LP bound: highspy is not installed (make setup installs it)", file=sys.stderr)
        return False
    return True


WORKLOADS: dict[str, Callable[[int, int], tuple[list[CapacityInput], list[ServiceInput]]]] = {
    "mixed": mixed,
    "four-l4": four_l4,
    "one-shape": one_shape,
    "tiny": tiny,
    "cpu-bound": cpu_bound,
    "memory-bound": memory_bound,
    "embedders": embedders,
    "llms": llms,
}


def _fleet_file(tasks: int, services: int, seed: int) -> str:
    rng = random.Random(seed)
    # Eight L4s a host, so 100,000 tasks stay within ECS's 5,000 container instances per cluster.
    # max_instances is given: a deployment's surge would need more hosts than a cluster holds (a warning then).
    lines = ['name = "bench"', "[capacity.l4x4]", 'instance_types = ["g6.48xlarge"]', "max_instances = 5000"]
    per = tasks // services
    for i in range(services):
        lines += [
            f"[service.s{i:03d}]",
            'capacity = "l4x4"',
            'image = "public.ecr.aws/docker/library/python:3.12-slim"',
            f"desired_count = {per}",
            f"cpu_units = {rng.choice([256, 512, 1024])}",
            f"memory_mib = {rng.randint(8, 64) * 128}",
            f"gpu_budget_mib = {rng.randint(4, 64) * 256}",
        ]
    return "\n".join(lines) + "\n"


def time_cli(tasks: int, services: int, seed: int) -> float:
    """Seconds for the whole ``ecs-gpu-sharing plan --json`` command on this benchmark's fleet file
    (``time_command``)."""
    return time_command(_fleet_file(tasks, services, seed))


def time_command(fleet_text: str) -> float:
    """Seconds for the whole ``ecs-gpu-sharing plan --json`` command on a fleet file of ``fleet_text`` (best of three,
    interpreter start included): ``command_seconds``' wall time."""
    return command_seconds(fleet_text)[0]


def command_seconds(fleet_text: str) -> tuple[float, float]:
    """The whole ``ecs-gpu-sharing plan --json`` command on a fleet file of ``fleet_text``, three runs: the best run's
    wall seconds and the CPU seconds (user and system) of that run's processes, the command's and the children it forks
    beside its plans (``core/beside.py``; the kernel counts a reaped child's time to its parent's children). On two
    cores a command whose CPU seconds are about twice its wall seconds, less what it does before it forks, had both
    cores busy throughout: only less work makes it faster there (docs/planning.md).

    pip compiles an installed package's bytecode, so a team's command loads it; an environment that sets
    PYTHONDONTWRITEBYTECODE (this project's build machines do) would compile the package from source on every run,
    twice the import's time. The runs here may write and read bytecode, as an installed package does."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as tmp:
        fleet = Path(tmp) / "fleet.toml"
        fleet.write_text(fleet_text)
        best = (math.inf, math.inf)
        for _ in range(3):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "ecs_gpu_sharing.cli", "plan", str(fleet), "--json"],
                check=True,
                stdout=subprocess.DEVNULL,
                env=env,
            )
            wall = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            best = min(best, (wall, cpu))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--no-ffd", action="store_true", help="skip the first-fit-decreasing baseline")
    parser.add_argument("--no-cli", action="store_true", help="skip timing the whole command")
    parser.add_argument("--no-lp", action="store_true", help="skip the host-level LP bound (HiGHS; minutes at 10,000)")
    args = parser.parse_args()
    print(
        "| workload | tasks | services | seconds | instances | bound | ratio | GPUs | GPU bound | ratio "
        "| FFD seconds | FFD instances | FFD ratio | FFD GPUs | host LP bound | LP-rounded plan | vs best bound |"
    )
    print("| --- " + "| ---: " * 16 + "|")
    for name in args.workloads.split(","):
        for size in (int(s) for s in args.sizes.split(",")):
            caps, services = WORKLOADS[name](size, args.seed)
            start = time.perf_counter()
            result = plan(caps, services)
            seconds = time.perf_counter() - start
            assert result.fits, "benchmark fleets must fit"
            bound = result.instance_lower_bound
            row = (
                f"| {name} | {size:,} | {len(services)} | {seconds:.3f} | {result.instances} | {bound} "
                f"| {result.instances / bound:.3f} | {result.gpus} | {result.gpu_lower_bound} "
                f"| {result.gpus / result.gpu_lower_bound:.3f} |"
            )
            if args.no_ffd:
                row += " - | - | - | - |"
            else:
                start = time.perf_counter()
                base = [ffd(c, [s for s in services if s.capacity == c.name]) for c in caps]
                ffd_seconds = time.perf_counter() - start
                hosts, gpus = sum(h for h, _ in base), sum(g for _, g in base)
                row += f" {ffd_seconds:.3f} | {hosts} | {hosts / bound:.3f} | {gpus} |"
            if args.no_lp or name not in REALISTIC or not _highs():
                row += " - | - | - |"
            else:
                from host_lp import host_bound  # HiGHS: the benchmark's, not the library's

                lp = [host_bound(c, [s for s in services if s.capacity == c.name]) for c in caps]
                lp_bound = sum(r.bound for r in lp)
                best = max(bound, lp_bound)
                exact = "" if all(r.converged for r in lp) else " (Farley)"
                row += f" {lp_bound}{exact} | {sum(r.rounded for r in lp)} | {result.instances / best:.3f} |"
            print(row, flush=True)
    if not args.no_cli:
        print(f"\nwhole command, 100,000 tasks in 200 services: {time_cli(100_000, 200, args.seed):.2f} s (best of 3)")


if __name__ == "__main__":
    main()
