#!/usr/bin/env python3
"""The planner on generated fleets (``fleet_generator.py``): the distribution of planner / bound, next to FFD.

Usage: python benchmarks/generated_benchmark.py [--sizes 1000,10000] [--fleets 50] [--seeds held-out|tuning]
                                                 [--lp-bound] [--lp-seconds 20] [--timing] [--command]
                                                 [--copies K] [--budgets STEP] [--lp-cost [--most-services 150]]

For each size, plans ``--fleets`` fleets of the chosen seeds (tuning: 0-99, held out: 1000-1099; the planner's
figures are reported on the held-out ones) and prints the median, 95th percentile and worst of planner / bound and
FFD / bound, where the bound is the plan's own lower bound (Martello-Toth's L2 per resource and, where the host-level
LP ran, its Farley bound) or, with ``--lp-bound``, the larger of that and the benchmark's own host-level LP bound
(``host_lp.py``: exact pricing by a MILP; converged or Farley's, within ``--lp-seconds`` of pricing a fleet). Then
the planner's time per fleet (median, worst), as a ratio to a reference run of fixed work timed in the same run,
and the worst fleets. With ``--timing``, only the planner's time (no bound, no FFD baseline: those take minutes at
100,000 tasks): per size, the services and the seconds per fleet, median, 95th percentile and worst, as ratios to
the reference run too. A size of 40,000 tasks gives 400 to 2,000 services a fleet (1,000 services at the median). With
``--command``, the whole ``plan --json`` command's time instead, and its CPU seconds beside it, on each seed's fleet
drawn on each host of eight GPUs and written as a fleet file (``_command``). With ``--copies K``, each service of each
fleet is run as K alike services (``fleet_generator.copies``: one model a tenant), for the table of plans; with
``--budgets 64``, each MPS budget moved off the generator's 256 MiB grid in 64 MiB steps (as ``evaluate --write``
rounds), with ``--budgets 500`` rounded to 500 MiB (``fleet_generator.regrained``), for the table of plans too. With
``--lp-cost``, what the host-level LP adds to the plan's time (#32: at most 2 s at 10,000 tasks in 150 services): each
fleet of at most ``--most-services`` services planned without the LP (``host_lp=False``) and with it, one after the
other, and the difference's median, 95th percentile and worst (in seconds, and over the run's reference and over a
reference run just before each fleet), the fleets over 2 s, and the hosts the LP saved (``_lp_cost``).
"""

from __future__ import annotations

import argparse
import statistics
import time

from ffd import ffd
from fleet_generator import HELD_OUT, HOSTS, TUNING, Fleet, copies, fitting_fleet_file, generate, regrained

from ecs_gpu_sharing.core.planner import Plan, plan


def reference_seconds(runs: int = 3) -> float:
    """Fixed pure-Python work (sorting a million pseudo-random integers, best of ``runs``): timings divided by it can be
    compared across machines and runs."""
    best = float("inf")
    for _ in range(runs):
        values = [(i * 2_654_435_761) % 1_000_003 for i in range(1_000_000)]
        start = time.perf_counter()
        values.sort()
        best = min(best, time.perf_counter() - start)
    return best


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _planned(fleet: Fleet) -> tuple[Plan, float]:
    """The planner's plan of ``fleet`` (which must fit: the generator draws fleets a host can hold) and its seconds."""
    start = time.perf_counter()
    result = plan([fleet.capacity], fleet.services)
    seconds = time.perf_counter() - start
    assert result.fits, fleet.label
    return result, seconds


def _lp_bound(fleet: Fleet, seconds: float) -> int:
    from host_lp import host_bound  # HiGHS, exact pricing: the benchmark's own, written apart from the library's

    return host_bound(
        fleet.capacity, fleet.services, pricing_seconds=seconds / 10, total_seconds=seconds, ffd_hosts=0
    ).bound


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--fleets", type=int, default=50)
    parser.add_argument("--seeds", choices=("held-out", "tuning"), default="held-out")
    parser.add_argument("--lp-bound", action="store_true", help="also the benchmark's host-level LP bound (slow)")
    parser.add_argument(
        "--lp-seconds",
        type=float,
        default=20.0,
        help="the LP bound's pricing time a fleet in all (a tenth of it a call)",
    )
    parser.add_argument("--worst", type=int, default=3, help="worst fleets listed per size")
    parser.add_argument("--only", default="", help="these seeds only (comma-separated)")
    parser.add_argument("--timing", action="store_true", help="the planner's time only (no bound, no FFD)")
    parser.add_argument("--command", action="store_true", help="the whole plan command's time on fleet files")
    parser.add_argument("--copies", type=int, default=1, help="each service run as this many alike services")
    parser.add_argument(
        "--budgets",
        type=int,
        default=0,
        help="MPS budgets off the 256 MiB grid: 64 (moved in 64 MiB steps) or a round step",
    )
    parser.add_argument("--lp-cost", action="store_true", help="the seconds the host-level LP adds to a plan")
    parser.add_argument("--most-services", type=int, default=150, help="with --lp-cost: fleets of this many at most")
    args = parser.parse_args()
    seeds = list(HELD_OUT if args.seeds == "held-out" else TUNING)[: args.fleets]
    if args.only:
        seeds = [int(s) for s in args.only.split(",")]
    reference = reference_seconds()
    print(f"reference run: {reference:.3f} s; seeds {seeds[0]}-{seeds[-1]} ({args.seeds})\n")
    if args.timing:
        _timing(args.sizes, seeds, reference, args.worst)
        return
    if args.command:
        _command(args.sizes, seeds, reference, args.worst)
        return
    if args.lp_cost:
        _lp_cost(args.sizes, seeds, reference, args.worst, args.most_services)
        return
    print(
        "| tasks | fleets | planner/bound median | p95 | worst | FFD/bound median | p95 | worst | planner > FFD "
        "| optimal | plan s median | worst | worst / reference |"
    )
    print("| ---: " * 13 + "|")
    worst_rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        ratios, ffd_ratios, times, rows = [], [], [], []
        above_ffd = optimal = 0
        for seed in seeds:
            fleet = regrained(copies(generate(seed, size), args.copies), args.budgets)
            result, seconds = _planned(fleet)
            bound = result.instance_lower_bound
            if args.lp_bound and result.instances > bound:  # a plan at its own bound needs no other
                bound = max(bound, _lp_bound(fleet, args.lp_seconds))
            hosts, _ = ffd(fleet.capacity, fleet.services)
            ratios.append(result.instances / bound)
            ffd_ratios.append(hosts / bound)
            times.append(seconds)
            above_ffd += result.instances > hosts
            optimal += result.instances == bound
            rows.append((result.instances / bound, fleet.label, result.instances, bound, hosts, seconds))
        print(
            f"| {size:,} | {len(seeds)} | {statistics.median(ratios):.3f} | {_quantile(ratios, 0.95):.3f} "
            f"| {max(ratios):.3f} | {statistics.median(ffd_ratios):.3f} | {_quantile(ffd_ratios, 0.95):.3f} "
            f"| {max(ffd_ratios):.3f} | {above_ffd} | {optimal} | {statistics.median(times):.2f} | {max(times):.2f} "
            f"| {max(times) / reference:.0f} |",
            flush=True,
        )
        worst_rows += [(size, *row) for row in sorted(rows, reverse=True)[: args.worst]]
    print("\nworst fleets:")
    for size, ratio, label, hosts, bound, ffd_hosts, seconds in worst_rows:
        line = f"- {size:,} tasks, {label}: {hosts} instances, bound {bound} ({ratio:.3f}), FFD {ffd_hosts}"
        print(f"{line}, {seconds:.2f} s")


def _timing(sizes: str, seeds: list[int], reference: float, worst: int) -> None:
    print("| tasks | fleets | services | plan s median | p95 | worst | median / reference | worst / reference |")
    print("| ---: " * 8 + "|")
    slowest = []
    for size in (int(s) for s in sizes.split(",")):
        times, counts = [], []
        for seed in seeds:
            fleet = generate(seed, size)
            _, seconds = _planned(fleet)
            times.append(seconds)
            counts.append(len(fleet.services))
            slowest.append((seconds, size, fleet.label))
        print(f"| {size:,} | {len(seeds)} | {_times_row(times, counts, reference)}", flush=True)
    _slowest(slowest, worst)


def _times_row(times: list[float], counts: list[int], reference: float) -> str:
    """A timing table's last cells: the services, the seconds' median, 95th percentile and worst, and both as ratios."""
    median = statistics.median(times)
    return (
        f"{min(counts)}-{max(counts)} | {median:.2f} | {_quantile(times, 0.95):.2f} | {max(times):.2f} "
        f"| {median / reference:.1f} | {max(times) / reference:.1f} |"
    )


def _slowest(slowest: list[tuple[float, int, str]], worst: int) -> None:
    print("\nslowest fleets:")
    for seconds, size, label in sorted(slowest, reverse=True)[:worst]:
        print(f"- {size:,} tasks, {label}: {seconds:.2f} s")


LP_BUDGET_SECONDS = 2.0  # #32: what the host-level LP may add to a plan at 10,000 tasks in 150 services


def _lp_cost(sizes: str, seeds: list[int], reference: float, worst: int, most_services: int) -> None:
    """Per size, over the seeds' fleets of at most ``most_services`` services: the plan's seconds with the host-level
    LP less those without it (the same fleet, one plan after the other, in this process), as seconds and as ratios to
    the reference run; the same ratios to a reference run just before each fleet (best of two: this machine's speed
    moves by half within minutes, and a fleet's own reference follows it); the fleets where it adds more than
    LP_BUDGET_SECONDS; and the hosts it saves in all."""
    print(
        "| tasks | fleets | services | LP s median | p95 | worst | median / reference | worst / reference "
        "| own reference: median | p95 | worst "
        f"| over {LP_BUDGET_SECONDS:g} s | hosts without LP | with |"
    )
    print("| ---: " * 14 + "|")
    slowest = []
    for size in (int(s) for s in sizes.split(",")):
        extra, counts, over, units = [], [], 0, []
        without_hosts = with_hosts = 0
        for seed in seeds:
            fleet = generate(seed, size)
            if len(fleet.services) > most_services:
                continue
            own = reference_seconds(runs=2)
            start = time.perf_counter()
            without = plan([fleet.capacity], fleet.services, host_lp=False)
            base = time.perf_counter() - start
            result, seconds = _planned(fleet)
            extra.append(seconds - base)
            units.append((seconds - base) / own)
            counts.append(len(fleet.services))
            over += seconds - base > LP_BUDGET_SECONDS
            without_hosts += without.instances
            with_hosts += result.instances
            slowest.append((seconds - base, size, f"{fleet.label} ({units[-1]:.1f} times its reference)"))
        if not extra:
            print(f"| {size:,} | 0 | no fleet of {most_services} services or fewer |")
            continue
        print(
            f"| {size:,} | {len(extra)} | {_times_row(extra, counts, reference)} {statistics.median(units):.1f} "
            f"| {_quantile(units, 0.95):.1f} | {max(units):.1f} | {over} | {without_hosts:,} "
            f"| {with_hosts:,} |",
            flush=True,
        )
    _slowest(slowest, worst)


def _command(sizes: str, seeds: list[int], reference: float, worst: int) -> None:
    """The whole ``plan --json`` command (``plan_benchmark.command_seconds``) on each seed's fleet drawn on each host of
    eight GPUs (a fleet of 100,000 tasks on fewer GPUs a host needs more than ECS's 5,000 instances a cluster), written
    as a fleet file, its tasks halved in size until the command says it fits (``fleet_generator.fitting_fleet_file``).
    Beside the wall seconds, the median of the CPU seconds each command took (its processes together) and of their
    ratio to its wall seconds: the cores it kept busy."""
    from plan_benchmark import command_seconds

    print(
        "| tasks | host | fleets | services | command s median | p95 | worst | median / reference | worst / reference "
        "| CPU s median | CPU / wall median |"
    )
    print("| ---: | --- " + "| ---: " * 9 + "|")
    slowest = []
    for size in (int(s) for s in sizes.split(",")):
        for host in HOSTS[8]:
            times, counts, cpus = [], [], []
            for seed in seeds:
                fleet = generate(seed, size, host)
                text, scale = fitting_fleet_file(fleet)
                seconds, cpu = command_seconds(text)
                services = sum(line.startswith("[service.") for line in text.splitlines())
                times.append(seconds)
                counts.append(services)
                cpus.append(cpu)
                slowest.append((seconds, size, f"{fleet.label} ({services} in the file, tasks x {scale:g})"))
            busy = statistics.median(c / t for c, t in zip(cpus, times, strict=True))
            row = f"{_times_row(times, counts, reference)} {statistics.median(cpus):.2f} | {busy:.2f} |"
            print(f"| {size:,} | {host} | {len(seeds)} | {row}", flush=True)
    _slowest(slowest, worst)


if __name__ == "__main__":
    main()
