#!/usr/bin/env python3
"""Arrival orders the replays of ECS's placement (core.placement) do not draw: how many instances they need at a
rollout's peak against the need the plan derives from its own replays, the figure that sets ``ORDER_HEADROOM_PERCENT``.

Usage: python benchmarks/placement_orders.py [--sizes 200,600,1000,2500] [--seeds 7,8] [--draws 20]

For each workload, size, seed and capacity replayed whole (up to ``WHOLE_TASKS`` tasks): the need (the worst of the
plan's replays), then ``--draws`` replays under a GPU rule and an order (the shuffle of whole services, or the
interleave of every task) drawn at random, each seeded from 1,000 on (the plan's replays use seeds below ``SHUFFLES``);
the worst of the draws over the need, how many draws needed more than the need, and how many more than the need with
its headroom (``with_headroom``). The last line counts the capacities where any draw needed more.
"""

from __future__ import annotations

import argparse
import random

from plan_benchmark import WORKLOADS

from ecs_gpu_sharing.core import headroom, placement, replay


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200,600,1000,2500")
    parser.add_argument("--seeds", default="7,8")
    parser.add_argument("--draws", type=int, default=20)
    args = parser.parse_args()
    print("| seed | workload | tasks | capacity | need | worst draw | worst / need | draws over | over with headroom |")
    print("| ---: | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    rows = []
    for seed in (int(s) for s in args.seeds.split(",")):
        for name in WORKLOADS:
            for size in (int(s) for s in args.sizes.split(",")):
                caps, services = WORKLOADS[name](size, seed)
                for cap in caps:
                    mine = sorted((s for s in services if s.capacity == cap.name and s.tasks), key=lambda s: s.name)
                    tasks = sum(s.tasks for s in mine)
                    if not mine or tasks > placement.WHOLE_TASKS:
                        continue
                    need = placement.place_capacity(cap, mine).needed
                    rng = random.Random(seed * 7919 + size)
                    rules = replay.GPU_RULES if cap.gpus_per_instance > 1 else replay.GPU_RULES[:1]
                    peaks = [
                        replay.replay(
                            cap, mine, rng.choice(rules), rng.choice(("shuffled", "interleaved")), 1 << 30, k
                        ).peak
                        for k in range(1000, 1000 + args.draws)
                    ]
                    over = sum(p > need for p in peaks)
                    past = sum(p > headroom.with_headroom(need) for p in peaks)
                    rows.append((max(peaks) / max(need, 1), over, past))
                    print(
                        f"| {seed} | {name} | {tasks:,} | {cap.instance_type} | {need:,} | {max(peaks):,} | "
                        f"{rows[-1][0]:.3f} | {over} | {past} |",
                        flush=True,
                    )
    print()
    print(
        f"{len(rows)} capacities: a draw needed more than the need on {sum(r[1] > 0 for r in rows)} (worst "
        f"{max(r[0] for r in rows):.3f}), more than the need with {headroom.ORDER_HEADROOM_PERCENT}% headroom on "
        f"{sum(r[2] > 0 for r in rows)}"
    )


if __name__ == "__main__":
    main()
