"""Fleets shaped unlike ``fleet_generator``'s, to try the planner on what it was not tuned on.

    python shaped_fleets.py FAMILIES SEEDS SIZE     (e.g. clients,iso 1,2,3 10000; OUT=file.json writes the figures)
    python shaped_fleets.py --command MIX [MIX ...]  (a MIX: FAMILY:SEED:SIZE, or several joined by +)

Families: ``triplets`` (GPU budgets around a third and a half of a GPU), ``few`` (two to eight services of thousands
of tasks), ``clients`` (tasks of 0.4-3% of a GPU with up to three sidecars: MPS's 48 clients a GPU bind with the
memory), ``eni`` (awsvpc tasks), ``whole`` (whole-GPU tasks of one to four GPUs beside MPS tasks), ``iso`` (isolation
groups, some keeping their hosts), ``cpu4l4`` (CPU-heavy embedders on four L4s), ``pairs`` (budgets around half a
GPU), ``skewed`` (one service of 60-90% of the tasks beside many small ones), ``many`` (hundreds to a thousand
services of a few tasks each), ``bimodal`` (LLMs of 55-85% of a GPU beside embedders of 2-15%, CPU and memory up to
2.5 times their GPU share) and ``gpuless`` (a fifth to a half of the services ask for no GPU: on the construct road
they run on the GPU hosts with a ``TaskTakesNoGpu`` warning; a fleet file cannot say them, so ``--command`` refuses
them). Each line: the plan's instances, its lower bound, their ratio, plain FFD (which knows
no isolation groups or interfaces, so it can be below the plan there) and the planner's time. docs/planning.md says
what they showed.

With ``--command``, each mix is written as one fleet file (``fleet_generator.fleet_file``: each fleet of the mix on a
capacity of its own, its isolation groups in its services' allocation tables) and the whole ``plan --json`` command
timed on it (``plan_benchmark.command_seconds``: the best of three runs, and its CPU seconds), with a reference run
before and after. A file the command refuses is reported with the first line of its error, not timed: many of these
fleets are more than a fleet file can say at 100,000 tasks (more than ECS's 5,000 instances a cluster, or isolation
groups on one capacity whose placement expressions pass ECS's 2,000 characters).
"""

import json
import math
import os
import random
import sys
import time
import zlib

from ffd import ffd

from ecs_gpu_sharing.core.allocation import AllocationNote
from ecs_gpu_sharing.core.capacity_facts import host_facts
from ecs_gpu_sharing.core.plan_inputs import capacity_input, service_input
from ecs_gpu_sharing.core.planner import CapacityInput, ServiceInput, plan
from ecs_gpu_sharing.core.shape import TaskShape


def counts(total: int, n: int, rng: random.Random, skew: bool = True) -> list[int]:
    w = [math.exp(rng.uniform(0, math.log(50 if skew else 2))) for _ in range(n)]
    c = [1 + int((total - n) * x / sum(w)) for x in w]
    for i in range(total - sum(c)):
        c[i % n] += 1
    return c


def mk(
    rng: random.Random,
    cap: CapacityInput,
    i: int,
    count: int,
    frac: float,
    cpu_share: float,
    mem_share: float,
    sidecars: int = 0,
    whole: int = 0,
    enis: int = 0,
    group: str | None = None,
    iso_host: bool = False,
    gpu: bool = True,
) -> ServiceInput:
    usable = cap.usable_gpu_memory_mib
    containers: tuple[int, ...] = ()
    if gpu and not whole:
        budget = max(256, int(usable * frac) // 256 * 256)
        side = [256 * rng.randint(1, 4) for _ in range(sidecars)]
        containers = (max(256, budget - sum(side)), *side)
    cpu = min(cap.host_cpu_units, max(128, round(cap.host_cpu_units * cpu_share / 128) * 128))
    mem = min(cap.host_memory_mib, max(256, round(cap.host_memory_mib * mem_share / 128) * 128))
    note = None
    if group is not None:
        note = AllocationNote(
            residency_mib=100,
            peak_working_mib=100,
            shared_failure="tasks restart",
            isolation_group=group,
            isolate_host=iso_host,
        )
    return service_input(
        f"s{i:04d}",
        cap.name,
        TaskShape(cpu, mem, containers, whole_gpus=whole, network_interfaces=enis),
        count,
        count_source="gen",
        allocation=note,
    )


def fleet(family: str, seed: int, size: int) -> tuple[CapacityInput, list[ServiceInput], str]:
    rng = random.Random(zlib.crc32(f"{family}/{seed}/{size}".encode()))
    R = rng.uniform
    if family == "triplets":
        t = rng.choice(["g6e.2xlarge", "g6e.12xlarge", "g6.2xlarge"])
    elif family in ("cpu4l4",):
        t = "g6.12xlarge"
    elif family in ("whole", "few"):
        t = rng.choice(["g6e.48xlarge", "p5.48xlarge", "g6.48xlarge", "g6e.12xlarge"])
    elif family == "eni":
        t = rng.choice(["g6.2xlarge", "g6e.2xlarge", "g6.12xlarge", "g6e.12xlarge"])
    else:
        t = rng.choice(
            ["g6.2xlarge", "g6e.2xlarge", "g6.12xlarge", "g6e.12xlarge", "g6e.48xlarge", "p5.48xlarge", "g6.48xlarge"]
        )
    cap = capacity_input("gpu", host_facts([t]))
    g = cap.gpus_per_instance
    out = []

    def shared(i: int, c: int, frac: float, low: float, high: float, sidecars: int | None = None) -> ServiceInput:
        """A service of ``frac`` of a GPU, its CPU and memory each that share of a host's times a draw in [low, high),
        and up to ``sidecars`` sidecars (drawn after, in the order the families always drew them)."""
        cpu, memory = frac / g * R(low, high), frac / g * R(low, high)
        return mk(rng, cap, i, c, frac, cpu, memory, sidecars=0 if sidecars is None else rng.randint(0, sidecars))

    if family == "triplets":
        n = rng.randint(8, 40) if size <= 1000 else rng.randint(30, 120)
        for i, c in enumerate(counts(size, n, rng)):
            frac = R(0.25, 0.36) if rng.random() < 0.7 else R(0.45, 0.6)
            out.append(shared(i, c, frac, 0.2, 0.6))
    elif family == "few":
        n = rng.randint(2, 8)
        for i, c in enumerate(counts(size, n, rng, skew=False)):
            frac = R(0.05, 0.9)
            out.append(shared(i, c, frac, 0.3, 1.6, 2))
    elif family == "clients":
        n = rng.randint(10, 40) if size <= 1000 else rng.randint(40, 150)
        for i, c in enumerate(counts(size, n, rng)):
            frac = R(0.004, 0.03)
            out.append(shared(i, c, frac, 0.2, 0.8, 3))
    elif family == "eni":
        n = rng.randint(10, 40) if size <= 1000 else rng.randint(40, 150)
        for i, c in enumerate(counts(size, n, rng)):
            frac = R(0.02, 0.3)
            out.append(
                mk(
                    rng,
                    cap,
                    i,
                    c,
                    frac,
                    frac / g * R(0.1, 0.5),
                    frac / g * R(0.1, 0.5),
                    enis=1 if rng.random() < 0.8 else 0,
                )
            )
    elif family == "whole":
        n = rng.randint(10, 40) if size <= 1000 else rng.randint(40, 150)
        for i, c in enumerate(counts(size, n, rng)):
            if rng.random() < 0.4:
                w = rng.choice([1, 1, 2, 4]) if g >= 4 else 1
                out.append(mk(rng, cap, i, c, 0, w / g * R(0.3, 1.2), w / g * R(0.3, 1.2), whole=w))
            else:
                frac = R(0.02, 0.7)
                out.append(shared(i, c, frac, 0.3, 1.2, 1))
    elif family == "iso":
        n = rng.randint(10, 40) if size <= 1000 else rng.randint(40, 150)
        groups = [f"g{k}" for k in range(rng.randint(3, 12))]
        iso = set(rng.sample(groups, k=rng.randint(0, 2)))
        for i, c in enumerate(counts(size, n, rng)):
            frac = R(0.02, 0.6)
            gr = rng.choice(groups)
            out.append(
                mk(rng, cap, i, c, frac, frac / g * R(0.3, 1.5), frac / g * R(0.3, 1.5), group=gr, iso_host=gr in iso)
            )
    elif family == "cpu4l4":
        n = rng.randint(10, 40) if size <= 1000 else rng.randint(40, 150)
        for i, c in enumerate(counts(size, n, rng)):
            frac = R(0.02, 0.2)
            out.append(mk(rng, cap, i, c, frac, frac / g * R(1.5, 4), frac / g * R(0.3, 1.2)))
    elif family == "skewed":
        n = rng.randint(10, 40) if size <= 1000 else rng.randint(40, 150)
        big = int(size * R(0.6, 0.9))
        for i, c in enumerate([big, *counts(size - big, n - 1, rng)]):
            frac = R(0.02, 0.9)
            out.append(shared(i, c, frac, 0.2, 1.2, 2))
    elif family == "many":
        n = min(size // 3, rng.randint(200, 600) if size <= 1000 else rng.randint(600, 1000))
        for i, c in enumerate(counts(size, n, rng, skew=False)):
            frac = R(0.02, 0.9) ** 1.5
            out.append(shared(i, c, frac, 0.2, 1.2, 2))
    elif family == "pairs":
        n = rng.randint(8, 40) if size <= 1000 else rng.randint(30, 120)
        for i, c in enumerate(counts(size, n, rng)):
            frac = R(0.4, 0.6) if rng.random() < 0.8 else R(0.05, 0.2)
            out.append(shared(i, c, frac, 0.2, 0.9))
    elif family == "bimodal":
        n = rng.randint(10, 40) if size <= 1000 else rng.randint(40, 150)
        for i, c in enumerate(counts(size, n, rng)):
            if rng.random() < 0.4:  # an LLM of most of a GPU, beside embedders that fill what it leaves
                frac = R(0.55, 0.85)
                out.append(shared(i, c, frac, 0.3, 1.2, 1))
            else:
                frac = R(0.02, 0.15)
                out.append(shared(i, c, frac, 0.3, 2.5, 2))
    elif family == "gpuless":
        n = rng.randint(10, 40) if size <= 1000 else rng.randint(40, 150)
        share = R(0.2, 0.5)  # of the services, those that ask for no GPU (a tokenizer, a gateway) on the GPU hosts
        for i, c in enumerate(counts(size, n, rng)):
            if rng.random() < share:
                out.append(mk(rng, cap, i, c, 0.0, R(0.01, 0.25), R(0.01, 0.25), gpu=False))
            else:
                frac = R(0.03, 0.6)
                out.append(shared(i, c, frac, 0.2, 1.0, 2))
    return cap, out, t


def command(mixes: list[str]) -> None:
    """The ``--command`` table (the module's docstring)."""
    from fleet_generator import Fleet, fleet_file
    from generated_benchmark import reference_seconds

    print(f"reference run: {reference_seconds():.3f} s")
    print("| mix | capacities | services | command s | CPU s |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for mix in mixes:
        parts = []
        try:
            for n, spec in enumerate(mix.split("+")):
                family, seed, size = spec.split(":")
                cap, svcs, _ = fleet(family, int(seed), int(size))
                drawn = Fleet(int(seed), int(size), cap, svcs, family, 0.0)
                parts.append(fleet_file(drawn, capacity=f"gpu{n}", prefix=f"c{n}", named=n == 0))
        except ValueError as error:  # a shape a fleet file cannot say (a service that asks for no GPU)
            print(f"| {mix} | | | not a fleet file: {error} | |", flush=True)
            continue
        print(_timed_row(mix, parts), flush=True)
    print(f"reference run: {reference_seconds():.3f} s")


def _timed_row(mix: str, parts: list[str]) -> str:
    """One row of the ``--command`` table: the mix's fleets (``parts``, a capacity each) as one fleet file, timed, or
    the first line of the command's refusal."""
    import subprocess
    import tempfile
    from pathlib import Path

    from plan_benchmark import command_seconds

    text = "".join(parts)
    services = sum(line.startswith("[service.") and line.count(".") == 1 for line in text.splitlines())
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fleet.toml"
        path.write_text(text)
        done = subprocess.run(
            [sys.executable, "-m", "ecs_gpu_sharing.cli", "plan", str(path)], capture_output=True, text=True
        )
    if done.returncode:
        error = (done.stderr or done.stdout).strip().splitlines()[0].replace(str(path) + ": ", "")
        return f"| {mix} | {len(parts)} | {services} | refused: {error[:160]} | |"
    seconds, cpu = command_seconds(text)
    return f"| {mix} | {len(parts)} | {services} | {seconds:.3f} | {cpu:.3f} |"


if __name__ == "__main__" and sys.argv[1:2] == ["--command"]:
    command(sys.argv[2:])
elif __name__ == "__main__":
    res = {}
    for fam in sys.argv[1].split(","):
        for seed in [int(s) for s in sys.argv[2].split(",")]:
            size = int(sys.argv[3])
            cap, svcs, t = fleet(fam, seed, size)
            t0 = time.perf_counter()
            try:
                r = plan([cap], svcs)
            except Exception as e:
                print(fam, seed, "ERROR", type(e).__name__, str(e)[:200], flush=True)
                continue
            dt = time.perf_counter() - t0
            c = r.capacities[0]
            try:
                f = ffd(cap, svcs)[0]
            except Exception:
                f = -1
            un = sum(u.tasks for u in c.unplaced) if c.unplaced else 0
            ratio = r.instances / max(c.instance_lower_bound, 1)
            flag = " <<<" if ratio > 1.02 or (f > 0 and r.instances > f) or un else ""
            print(
                f"{fam:9s} {seed:3d} {t:14s} svcs {len(svcs):3d} plan {r.instances:5d}"
                f" bound {c.instance_lower_bound:5d} {ratio:.3f} ffd {f:5d} unpl {un} {dt:.2f}s{flag}",
                flush=True,
            )
            res[f"{fam}/{seed}"] = dict(inst=r.instances, bound=c.instance_lower_bound, ffd=f, t=round(dt, 2))
    if os.environ.get("OUT"):
        with open(os.environ["OUT"], "w") as out:
            json.dump(res, out)
