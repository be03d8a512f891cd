"""The host-level LP past 20,000 tasks on fleets of few services (``packing.host_lp_runs``).

    python few_services_at_scale.py SEEDS SERVICES [TASKS [COPIES]]     (e.g. 2000,2001 8,12,16 100000)

Each generated fleet (``fleet_generator``, seed by seed) is cut to its first K services, their counts scaled back to
TASKS in all (100,000 by default), none past ECS's 5,000 tasks a service (so 16 services hold 80,000 at most). Each
line: the plan without the LP (``host_lp=False``), the plan with it, the plan's lower bound, the first over the
second, and the second plan's seconds. With COPIES, each service is run as that many alike services
(``fleet_generator.copies``: the services a line counts are the models, K). docs/planning.md says what it showed.
"""

import dataclasses
import sys
import time

from fleet_generator import copies, generate

from ecs_gpu_sharing.core.planner import packing, plan
from ecs_gpu_sharing.core.quotas import TASKS_PER_SERVICE


def main() -> None:
    seeds = [int(s) for s in sys.argv[1].split(",")]
    cuts = [int(k) for k in sys.argv[2].split(",")]
    tasks = int(sys.argv[3]) if len(sys.argv) > 3 else 100_000
    alike = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    kept = packing.HOST_LP_SERVICES
    print("seed gpus services tasks without with bound without/with seconds")
    for seed in seeds:
        fleet = generate(seed, tasks)
        for k in cuts:
            services = fleet.services[:k]
            total = sum(s.tasks for s in services)
            services = [
                dataclasses.replace(s, tasks=min(TASKS_PER_SERVICE.number, max(1, s.tasks * tasks // total)))
                for s in services
            ]
            services = copies(dataclasses.replace(fleet, services=services), alike).services
            without = plan([fleet.capacity], services, host_lp=False)
            packing.HOST_LP_SERVICES = max(kept, k)
            start = time.perf_counter()
            with_lp = plan([fleet.capacity], services)
            seconds = time.perf_counter() - start
            packing.HOST_LP_SERVICES = kept
            bound = with_lp.capacities[0].instance_lower_bound
            print(
                f"{seed} {fleet.capacity.gpus_per_instance} {k} {sum(s.tasks for s in services)}"
                f" {without.instances} {with_lp.instances} {bound}"
                f" {without.instances / with_lp.instances:.3f} {seconds:.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
