"""The model of ECS's own placement (core.placement): hand-computed cases, the rules built on it, and how the plan and
the templates carry the services' placement strategies (#30)."""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk.assertions import Match, Template
from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_gpu_sharing import FleetSpecError
from ecs_gpu_sharing.core import headroom as H
from ecs_gpu_sharing.core import placement as P
from ecs_gpu_sharing.core import placement_strategies as S
from ecs_gpu_sharing.core import replay as R
from ecs_gpu_sharing.core.allocation import AllocationNote
from ecs_gpu_sharing.core.capacity_facts import host_facts
from ecs_gpu_sharing.core.constraints import zone_rebalancing
from ecs_gpu_sharing.core.fleet import load
from ecs_gpu_sharing.core.plan_inputs import capacity_input, from_fleet
from ecs_gpu_sharing.core.planner import ServiceInput, plan
from ecs_gpu_sharing.core.rules import (
    DEPLOYMENT_CANNOT_START,
    PLACEMENT_NEEDS_MORE,
    PLACEMENT_SCATTERS,
    ZONE_REBALANCING_NOT_REPLAYED,
    assess,
)
from ecs_gpu_sharing.core.shape import TaskShape

from conftest import benchmarks_on_path, cdk_json_context, new_app

L4X4 = capacity_input("l4x4", host_facts(["g6.12xlarge"]))  # 4 GPUs of 22307 usable MiB
L4 = capacity_input("l4", host_facts(["g6.2xlarge"]))  # 1 GPU


def svc(name: str, tasks: int, budget: int, cap: str = "l4x4", **kw: Any) -> ServiceInput:
    return ServiceInput(name, cap, TaskShape(256, 1024, (budget,)), tasks, placement=S.LIBRARY_STRATEGY, **kw)


def test_worst_fit_gpu_choice_needs_one_more_host_than_the_packing() -> None:
    """8 small tasks (1000 MiB) arrive before 2 large ones (21000 MiB). Packed, each large task shares a GPU with a
    small one and the rest share a third GPU: one host. A GPU chosen worst-fit (most room first) takes the small
    tasks two to a GPU on all four, leaving 20307 MiB on each: no GPU takes a large task, and ECS launches a host."""
    services = [svc("small", 8, 1000, max_percent=100), svc("large", 2, 21000, max_percent=100)]
    assert plan([L4X4], services).capacity("l4x4").instance_count == 1
    assert P.replay(L4X4, services, "first-fit", "smallest-first", 1 << 30).peak == 1
    assert P.replay(L4X4, services, "worst-fit", "smallest-first", 1 << 30).peak == 2
    found = P.place_capacity(L4X4, services)
    assert found.needed == 2  # the worst of the plausible GPU rules: AWS does not say which GPU it picks


def test_a_one_service_deployment_is_blocked_at_a_tight_max_size() -> None:
    """Two tasks that each need a whole L4's memory on two one-GPU hosts: at max_instances 2 a deployment finds no
    room for one new task, and with minimum healthy 100% it never stops an old one first."""
    cap = replace(L4, max_instances=2)
    services = [svc("llm", 2, 20000, cap="l4")]
    found = P.place_capacity(cap, services)
    assert found.blocked == ("llm",) and found.needed == 4
    assessment = assess([cap], services)
    ids = {f.rule_id for f in assessment.findings}
    assert DEPLOYMENT_CANNOT_START in ids
    assert PLACEMENT_NEEDS_MORE not in ids  # the packing's surge does not fit either: SurgeDoesNotFit says so
    assert "ecs-gpu-sharing:SurgeDoesNotFit" in ids
    roomy = P.place_capacity(replace(L4, max_instances=3), services)
    assert roomy.blocked == ()  # one host of room: the deployment moves, one task at a time


def test_a_given_max_between_the_packing_and_ecs_warns_with_the_figure() -> None:
    services = [svc("small", 8, 1000, max_percent=100), svc("large", 2, 21000, max_percent=100)]
    tight = assess([replace(L4X4, max_instances=1)], services)
    (finding,) = [f for f in tight.findings if f.rule_id == PLACEMENT_NEEDS_MORE]
    assert "needs 2 instances" in finding.message and "raise max_instances to 2" in finding.message
    assert tight.placement["l4x4"].waiting_at_max > 0
    roomy = assess([replace(L4X4, max_instances=2)], services)
    assert PLACEMENT_NEEDS_MORE not in {f.rule_id for f in roomy.findings}


def test_a_derived_max_holds_what_ecs_needs_and_nothing_waits_there() -> None:
    services = [svc("small", 8, 1000), svc("large", 2, 21000), svc("mid", 5, 9000)]
    assessment = assess([L4X4], services)
    derived = assessment.max_instances["l4x4"]
    assert derived >= assessment.placement["l4x4"].needed >= assessment.surge.capacity("l4x4").instance_count
    at_derived = P.place_capacity(replace(L4X4, max_instances=derived), services)
    assert at_derived.waiting_at_max == 0 and at_derived.blocked == ()


def test_a_derived_max_holds_arrival_orders_the_replays_did_not_draw() -> None:
    """The need is the worst of a sample of arrival orders. The benchmark's LLMs at 200 tasks (seed 9, four L40S a
    host): all 33 replays need 61 instances, but the interleave drawn from other seeds needs 62 on 19 of 52 draws
    under worst-fit. The derived max_instances adds ORDER_HEADROOM_PERCENT of the need, rounded up: 65."""
    with benchmarks_on_path():
        from plan_benchmark import WORKLOADS

        caps, services = WORKLOADS["llms"](200, 9)
    cap = caps[0]
    mine = [s for s in services if s.capacity == cap.name]
    assert P.place_capacity(cap, mine).needed == 61
    assert P.replay(cap, mine, "worst-fit", "interleaved", 1 << 30, 8).peak == 62
    assessment = assess([cap], mine)
    assert assessment.max_instances[cap.name] == 65 > assessment.surge.capacity(cap.name).instance_count
    from ecs_gpu_sharing.core.plan_report import sizing_line

    assert "61 as ECS places it (65 with 5% headroom" in sizing_line(assessment, cap.name, 65)
    assert PLACEMENT_NEEDS_MORE not in {f.rule_id for f in assess([replace(cap, max_instances=61)], mine).findings}


def test_the_order_headroom_is_a_share_rounded_up_to_ecss_instances_a_cluster() -> None:
    """The headroom is a margin, not a measured need: 5% of the need rounded up (so at least one instance: the
    benchmark's mixed fleet at 200 tasks, seed 10, needs 5 on four L40S, and 3 of 396 draws needed 6), taking a
    derived max_instances up to ECS's 5,000 container instances a cluster and no further; a need past 5,000 is the
    error it was."""
    needs = (0, 1, 5, 50, 100, 101, 4_760, 4_800, 5_000, 5_001)
    assert [H.with_headroom(n) for n in needs] == [0, 2, 6, 53, 105, 107, 4_998, 5_000, 5_000, 5_001]


def test_a_strategy_that_scatters_warns_and_keeps_more_instances() -> None:
    small = [ServiceInput(f"s{i}", "l4", TaskShape(256, 1024, (2000,)), 6, placement=()) for i in range(4)]
    packing = [replace(s, placement=S.LIBRARY_STRATEGY) for s in small]
    scattering = assess([L4], small)  # no strategy: ECS's default spreads over instances
    packed = assess([L4], packing)
    assert {f.subject for f in scattering.findings if f.rule_id == PLACEMENT_SCATTERS} == {s.name for s in small}
    assert not [f for f in packed.findings if f.rule_id == PLACEMENT_SCATTERS]
    assert (
        scattering.placement["l4"].expected_after_rollout
        >= packed.placement["l4"].expected_after_rollout
        >= packed.steady.capacity("l4").instance_count
    )


@pytest.mark.parametrize(
    ("strategy", "scatters"),
    [
        (S.LIBRARY_STRATEGY, False),
        ((S.BINPACK_MEMORY,), False),
        ((S.SPREAD_ZONE, S.BINPACK_CPU), False),
        ((), True),
        ((S.SPREAD_ZONE, S.SPREAD_INSTANCE), True),
        ((S.RANDOM,), True),
        ((S.SPREAD_ZONE,), True),
    ],
)
def test_which_strategies_scatter(strategy: tuple[str, ...], scatters: bool) -> None:
    assert S.scatters(strategy) is scatters


def test_spread_over_zones_balances_a_service_over_two_zones() -> None:
    """With spread over zones first, a service's tasks alternate between the zones of the hosts running (ECS spreads
    over the instances it has; it does not launch one to balance), even when one host could take them all."""
    services = [svc("s", 4, 2000, cap="l4", max_percent=100)]
    run = R._Replay(replace(L4, min_instances=2), services, "first-fit", random.Random(0), 1 << 30)
    for _ in range(4):
        run.place(services[0])
    assert run.zone_tasks["s"] == [2, 2] and len(run.hosts) == 2
    alone = R._Replay(L4, services, "first-fit", random.Random(0), 1 << 30)
    for _ in range(4):
        alone.place(services[0])
    assert alone.zone_tasks["s"] == [4, 0] and len(alone.hosts) == 1


def test_spread_over_zones_spreads_over_as_many_zones_as_the_capacity_has() -> None:
    """Three zones, a host in each: six tasks of a service go two to a zone, where two zones would take three each."""
    services = [svc("s", 6, 2000, cap="l4", max_percent=100)]
    three = R._Replay(replace(L4, min_instances=3, zones=3), services, "first-fit", random.Random(0), 1 << 30)
    two = R._Replay(replace(L4, min_instances=2), services, "first-fit", random.Random(0), 1 << 30)
    for _ in range(6):
        three.place(services[0])
        two.place(services[0])
    assert three.zone_tasks["s"] == [2, 2, 2] and [h.zone for h in three.hosts] == [0, 1, 2]
    assert two.zone_tasks["s"] == [3, 3] and L4.zones == 2


def test_a_capacity_over_three_zones_can_need_an_instance_more_than_over_two() -> None:
    """The benchmark's services on four L4s a host at 200 tasks: over two zones ECS's placement needs 42 instances at a
    rollout's peak, over three 43, and at 42 a replay over three zones leaves tasks waiting."""
    with benchmarks_on_path():
        from plan_benchmark import WORKLOADS

        caps, services = WORKLOADS["four-l4"](200, 7)
    cap = caps[0]
    mine = [s for s in services if s.capacity == cap.name]
    two, three = P.place_capacity(cap, mine), P.place_capacity(replace(cap, zones=3), mine)
    assert (two.needed, three.needed) == (42, 43)
    assert P.place_capacity(replace(cap, zones=3, max_instances=42), mine).waiting_at_max > 0


def test_a_gpu_capacity_plans_over_the_zones_of_its_subnets(tmp_path: Path) -> None:
    """A VPC of three Availability Zones (an environment's stack: CDK's lookup stands in three zones offline): the
    capacity's placement is replayed over three, and the plan says so; over two subnets' zones, two."""
    import json

    def planned_zones(max_azs: int, out: Path) -> int:
        app = cdk.App(outdir=str(out), context=cdk_json_context())
        stack = cdk.Stack(app, "S", env=cdk.Environment(account="111111111111", region="us-east-1"))
        _shared_service(stack, max_azs)
        app.synth()
        plan_doc = json.loads((out / "gpu-fleet-plan.json").read_text())
        return int(plan_doc["capacities"][0]["availability_zones"])

    assert planned_zones(3, tmp_path / "three") == 3
    assert planned_zones(2, tmp_path / "two") == 2


def test_the_shuffle_of_whole_services_is_sampled_several_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark's LLMs on four L40S a host, 200 tasks: one shuffle of the services' order needs 84 instances at the
    rollouts' peak, the worst of SHUFFLES of them 85; 6 of 40 shuffles and interleaves drawn from other seeds needed 85
    (docs/placement.md)."""
    with benchmarks_on_path():
        from plan_benchmark import WORKLOADS

        caps, services = WORKLOADS["llms"](200, 7)
    cap = caps[0]
    mine = [s for s in services if s.capacity == cap.name]
    assert P.SHUFFLES > 1 and P.place_capacity(cap, mine).needed == 85
    monkeypatch.setattr(P, "SHUFFLES", 1)
    assert P.place_capacity(cap, mine).needed == 84
    runs = P._runs(200, 4)
    assert len(runs) == 3 * 4 and {k for _, o, k in runs if o == "shuffled"} == {0}


def test_past_a_thousand_tasks_the_interleaved_order_is_still_replayed() -> None:
    """The benchmark's CPU-bound services on four L4s a host, 5,000 tasks: the interleave of every service's tasks needs
    842 instances at a rollout's peak, the orders of whole services 838 at most; the figure is the interleave's."""
    with benchmarks_on_path():
        from plan_benchmark import WORKLOADS

        caps, services = WORKLOADS["cpu-bound"](5000, 7)
    cap = caps[0]
    mine = sorted((s for s in services if s.capacity == cap.name), key=lambda s: s.name)
    by_order = {o: max(P.replay(cap, mine, r, o, 1 << 30).peak for r in P.GPU_RULES) for o in P.ORDERS}
    assert by_order["interleaved"] > max(by_order["smallest-first"], by_order["host-memory-first"])
    assert P._replayed(cap, mine, 5000).needed == max(by_order.values()) == by_order["interleaved"]


def test_later_rollouts_start_from_the_hosts_the_last_one_left_and_can_need_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The benchmark's services on four L4s a host, 1,000 tasks: the first fleet-wide rollout from a fresh placement
    needs 277 instances at its peak; each later one starts from the hosts scale-in left, fuller and more scattered,
    and the figure over ROLLOUTS of them is 296. At 277, the later rollouts leave tasks waiting."""
    with benchmarks_on_path():
        from plan_benchmark import WORKLOADS

        caps, services = WORKLOADS["four-l4"](1000, 7)
    cap = caps[0]
    mine = [s for s in services if s.capacity == cap.name]
    repeated = P.place_capacity(cap, mine)
    assert R.ROLLOUTS > 1 and repeated.needed == 296
    assert P.place_capacity(replace(cap, max_instances=277), mine).waiting_at_max > 0
    monkeypatch.setattr(R, "ROLLOUTS", 1)
    assert P.place_capacity(cap, mine).needed == 277


def test_scale_in_after_a_rollout_removes_empty_hosts_down_to_the_minimum() -> None:
    services = [svc("s", 2, 2000, cap="l4")]
    run = R._Replay(replace(L4, min_instances=3), services, "first-fit", random.Random(0), 1 << 30)
    for _ in range(2):
        run.place(services[0])
    run._launch()  # a fourth host, empty
    assert len(run.hosts) == 4 and sum(1 for h in run.hosts if not h.tasks) == 2  # the two tasks spread over zones
    run.remove_empty()
    assert len(run.hosts) == 3 and sum(run.zone_hosts) == 3 and all(h in run.hosts for h in run.open)
    assert sum(1 for h in run.hosts if h.tasks) == 2
    for _ in list(run.live["s"]):
        run.stop(services[0])
    run.remove_empty()
    assert len(run.hosts) == 3  # never below min_instances
    assert run.peak == 4  # the most that ran at once stays


def test_a_large_capacity_is_replayed_scaled_down_and_says_so() -> None:
    """Past WHOLE_TASKS tasks the replays run on the fleet in proportion; the ratios scale the full packing, with its
    headroom added (``estimate_headroom``: past FAR_TASKS, FAR_HEADROOM), and the synth's line says the figure is an
    estimate and what was added."""
    from ecs_gpu_sharing.core.plan_report import sizing_line

    services = [svc("a", 6000, 3000), svc("b", 4000, 7000), svc("c", 2000, 15000)]
    assessment = assess([L4X4], services)
    found = assessment.placement["l4x4"]
    assert found.scaled_from == 12000
    assert found.needed >= assessment.surge.capacity("l4x4").instance_count
    assert found.expected_after_rollout >= assessment.steady.capacity("l4x4").instance_count
    line = sizing_line(assessment, "l4x4", assessment.max_instances["l4x4"])
    assert "estimated from replays of the fleet scaled from 12,000 tasks to 1,000, 4% headroom added" in line
    fewer = [replace(s, tasks=s.tasks * 3 // 4) for s in services]  # 9,000 tasks
    assessment = assess([L4X4], fewer)
    line = sizing_line(assessment, "l4x4", assessment.max_instances["l4x4"])
    assert "estimated from replays of the fleet scaled from 9,000 tasks to 1,000, 2% headroom added" in line
    small = [replace(s, tasks=s.tasks // 4) for s in services]
    assert P.place_capacity(L4X4, small).scaled_from == 0  # 3,000 tasks: replayed whole
    assert P.WHOLE_TASKS == 3000


def test_past_whole_tasks_the_headroom_keeps_the_estimate_at_or_above_the_whole_replay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The benchmark's embedders on four L4s a host, 3,600 tasks: replays of the fleet scaled down to REPLAYED_TASKS
    estimate 217 instances, and the whole fleet, replayed, needs 220. With ESTIMATE_HEADROOM the figure is above it."""
    with benchmarks_on_path():
        from plan_benchmark import WORKLOADS

        caps, services = WORKLOADS["embedders"](3600, 7)
    cap = caps[0]
    mine = sorted((s for s in services if s.capacity == cap.name), key=lambda s: s.name)
    total = sum(s.tasks for s in mine)
    assert total > P.WHOLE_TASKS
    whole = P._replayed(cap, mine, total).needed
    found = P.place_capacity(cap, mine)
    assert found.scaled_from == total and found.needed >= whole == 220
    monkeypatch.setattr(H, "ESTIMATE_HEADROOM", 0.0)
    assert P.place_capacity(cap, mine).needed == 217  # the estimate alone falls short


def test_the_estimate_benchmark_reads_a_generated_fleet_as_plan_reads_its_file() -> None:
    """``placement_estimate.py --generated``: a fleet of the generated benchmark as the fleet file that
    ``generated_benchmark.py --command`` times (``fitting_fleet_file``: at 1,000 tasks on eight L4s a host it fits at
    full size) and as ``plan`` reads it, its one capacity named ``gpu``; a workload of the plan benchmark as before."""
    with benchmarks_on_path():
        import placement_estimate
        from fleet_generator import fitting_fleet_file, generate

        text, scale = fitting_fleet_file(generate(1003, 1000, "g6.48xlarge"))
        caps, services = placement_estimate._inputs(placement_estimate.GENERATED + "g6.48xlarge", 1000, 1003)
        workload = placement_estimate._inputs("embedders", 3600, 7)
    assert scale == 1.0 and [(c.name, c.gpus_per_instance) for c in caps] == [("gpu", 8)]
    assert sum(s.tasks for s in services) == 1000 and len(services) == text.count("\n[service.")
    assert [c.name for c in workload[0]] == ["l4x4"] and sum(s.tasks for s in workload[1]) == 3600


def test_a_scaled_estimate_runs_the_replays_the_whole_fleet_would(monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark's mixed fleet of 3,200 tasks (seed 8) puts 1,706 on one-L4 hosts. Replayed whole, past LARGE_TASKS:
    the three orders of LARGE_ORDERS, the instances kept after the rollouts 1,092 at the median. Estimated from 600
    tasks, the scaled fleet must run those same replays: a fleet of 600 tasks replayed as its own size would add the
    shuffle 8 times, whose replays keep about half as many, and the median fell to 751."""
    with benchmarks_on_path():
        from plan_benchmark import WORKLOADS

        caps, services = WORKLOADS["mixed"](3200, 8)
    (cap,) = [c for c in caps if c.name == "l4"]
    mine = sorted((s for s in services if s.capacity == cap.name), key=lambda s: s.name)
    total = sum(s.tasks for s in mine)
    whole = P._replayed(cap, mine, total)
    monkeypatch.setattr(P, "WHOLE_TASKS", 1000)
    monkeypatch.setattr(P, "REPLAYED_TASKS", 600)
    found = P.place_capacity(cap, mine)
    assert found.scaled_from == total == 1706 and found.replays == whole.replays == 3
    assert whole.expected_after_rollout == 1092 and abs(found.expected_after_rollout - 1092) <= 1092 * 0.02


def test_past_whole_tasks_a_deployment_that_cannot_start_is_still_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """12,000 tasks on four L4s a host, estimated from a scaled fleet. At a max_instances a little above the steady
    packing, the full fleet placed leaves some services no room for one new task: DeploymentCannotStart names them,
    as it does below WHOLE_TASKS. At ECS's own need they all move. Past BLOCKED_TASKS the full fleet is not placed
    for it (known-unknowns)."""
    services = [svc("a", 6000, 3000), svc("b", 4000, 7000), svc("c", 2000, 15000)]
    steady = plan([L4X4], services).capacity("l4x4").instance_count
    tight = replace(L4X4, max_instances=steady + 5)
    found = P.place_capacity(tight, services)
    assert found.scaled_from == 12000 and found.blocked and found.needed > tight.max_instances
    assessment = assess([tight], services)
    assert {f.subject for f in assessment.findings if f.rule_id == DEPLOYMENT_CANNOT_START} == set(found.blocked)
    roomy = P.place_capacity(replace(L4X4, max_instances=found.needed), services)
    assert roomy.blocked == ()
    monkeypatch.setattr(P, "BLOCKED_TASKS", 10_000)
    assert P.place_capacity(tight, services).blocked == ()


def test_at_a_tight_max_the_figures_are_what_that_max_size_lets_ecs_do() -> None:
    """120 tasks on four L4s a host pack into 9 instances; ECS needs 21 at a rollout's peak and, unbounded, keeps 15
    after. At max_instances 10, the waiting figure counts tasks waiting at once: at most the 120 new tasks of a rollout
    (it counted every retry of every wave, 1,830), and no more than 10 instances can be kept after the rollouts. The
    same past WHOLE_TASKS, where the figures are estimated."""
    for k in (1, 100):
        services = [svc("a", 60 * k, 3000), svc("b", 40 * k, 7000), svc("c", 20 * k, 15000)]
        steady = plan([L4X4], services).capacity("l4x4").instance_count
        free = P.place_capacity(L4X4, services)
        tight = P.place_capacity(replace(L4X4, max_instances=steady + 1), services)
        assert free.expected_after_rollout > steady + 1 and free.needed > steady + 1
        assert steady <= tight.expected_after_rollout <= steady + 1
        assert 0 < tight.waiting_at_max <= sum(s.surge_count() for s in services)
        assert tight.scaled_from == (0 if k == 1 else 12000)


def test_past_whole_tasks_the_tasks_waiting_at_a_tight_max_are_those_past_the_limit_at_the_peak(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """1,200 tasks on four L4s a host, estimated from 600 (WHOLE_TASKS lowered to 1,000). At the worst replay's peak ECS
    runs every surge task on the instances it needs; at a lower max_instances the tasks on the instances past it wait.
    That share of the 2,400 surge tasks is at or above what whole replays at the limit leave waiting (1,200 and 478),
    where every surge task was said before."""
    services = [svc("a", 600, 3000), svc("b", 400, 7000), svc("c", 200, 15000)]
    surge = sum(s.surge_count() for s in services)
    steady = plan([L4X4], services).capacity("l4x4").instance_count
    need = P._replayed(L4X4, services, 1200).needed
    whole = [P._replayed(replace(L4X4, max_instances=m), services, 1200) for m in (steady + 2, (steady + need) // 2)]
    assert [w.waiting_at_max for w in whole] == [1200, 478]
    monkeypatch.setattr(P, "WHOLE_TASKS", 1000)
    monkeypatch.setattr(P, "REPLAYED_TASKS", 600)
    for w, m in zip(whole, (steady + 2, (steady + need) // 2), strict=True):
        found = P.place_capacity(replace(L4X4, max_instances=m), services)
        assert found.scaled_from == 1200
        assert w.waiting_at_max <= found.waiting_at_max == math.ceil((found.needed - m) / found.needed * surge) < surge


def test_at_a_max_at_or_above_the_need_the_replays_are_not_run_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay at a limit it never reaches is the replay without one (the same launches, the same draws): at a
    max_instances of ECS's need or more the figures are those without a limit, from one replay a run, not two."""
    services = [svc("a", 60, 3000), svc("b", 40, 7000), svc("c", 20, 15000)]
    free = P.place_capacity(L4X4, services)
    calls = []
    replay = P.replay
    monkeypatch.setattr(P, "replay", lambda *a, **k: calls.append(a[4]) or replay(*a, **k))
    roomy = P.place_capacity(replace(L4X4, max_instances=free.needed), services)
    assert len(calls) == free.replays and set(calls) == {1 << 30}
    assert (roomy.needed, roomy.expected_after_rollout, roomy.waiting_at_max) == (
        free.needed,
        free.expected_after_rollout,
        0,
    )
    tight = P.place_capacity(replace(L4X4, max_instances=free.needed - 1), services)
    assert len(calls) == 3 * free.replays and tight.waiting_at_max > 0


def test_a_scaled_estimate_has_its_headroom(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scaled estimate's need raised by ESTIMATE_HEADROOM up to FAR_TASKS tasks (it fell up to 1.4% short of the
    whole replays at 3,200-10,000 tasks) and by FAR_HEADROOM past them (up to 3.1% short at 100,000 tasks)."""
    assert [H.estimate_headroom(n) for n in (3_001, 10_000, 10_001, 100_000)] == [0.02, 0.02, 0.04, 0.04]
    for tasks, headroom in ((12_000, 0.04), (9_000, 0.02)):
        services = [svc("a", tasks // 2, 3000), svc("b", tasks // 3, 7000), svc("c", tasks // 6, 15000)]
        surge, steady = plan([L4X4], services, surge=True), plan([L4X4], services)
        packed = (surge.capacity("l4x4"), steady.capacity("l4x4"))
        with_headroom = P.place_capacity(L4X4, services, packed).needed
        with monkeypatch.context() as m:
            m.setattr(H, "ESTIMATE_HEADROOM", 0.0)
            m.setattr(H, "FAR_HEADROOM", 0.0)
            without = P.place_capacity(L4X4, services, packed).needed
        assert math.ceil(without * (1 + headroom)) - 1 <= with_headroom <= math.ceil(without * (1 + headroom)) + 1


def test_a_scaled_down_replay_takes_its_ratio_over_the_packer_without_the_host_level_lp(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The scaled fleet's packing only stands in for its size in hosts: it is planned without the host-level LP (which
    cost seconds a packing on fleets of many services), and the ratio multiplies the full fleet's packing by the same
    packer (``instances_without_lp``), so the LP winning on the full fleet does not shrink ECS's estimate."""
    from ecs_gpu_sharing.core import host_lp

    services = [svc("a", 6000, 3000), svc("b", 4000, 7000), svc("c", 2000, 15000)]
    surge, steady = plan([L4X4], services, surge=True), plan([L4X4], services)
    packed = (surge.capacity("l4x4"), steady.capacity("l4x4"))
    monkeypatch.setattr(host_lp, "solve", lambda *a, **k: pytest.fail("the LP ran on the scaled fleet"))
    found = P.place_capacity(L4X4, services, packed)
    # The LP found fewer hosts for the full fleet than the packer without it: the estimate is over the latter.
    fewer = tuple(replace(p, instances=p.instances[1:]) for p in packed)
    assert fewer[0].instance_count < fewer[0].instances_without_lp
    assert P.place_capacity(L4X4, services, (fewer[0], fewer[1])) == found
    more = tuple(replace(p, instances_without_lp=2 * p.instances_without_lp) for p in packed)
    doubled = P.place_capacity(L4X4, services, (more[0], more[1]))
    assert (
        doubled.needed >= 2 * found.needed - 1
        and doubled.expected_after_rollout >= 2 * found.expected_after_rollout - 1
    )


def _generated_outcomes() -> list[object]:
    """Replays of generated fleets of one, four and eight GPUs a host, under every rule and order, at no limit and at
    a limit, and the services blocked at a limit."""
    with benchmarks_on_path():
        import fleet_generator
    out: list[object] = []
    for seed in (3, 5, 6, 13, 24):
        fleet = fleet_generator.generate(seed, 400)
        for rule in P.GPU_RULES:
            for order in P.ORDERS:
                free = P.replay(fleet.capacity, fleet.services, rule, order, 1 << 30)
                out += [free, P.replay(fleet.capacity, fleet.services, rule, order, max(1, free.peak - 3))]
        out.append(R.blocked_services(fleet.capacity, fleet.services, max(1, free.peak - 2)))
    # Tiny tasks run out of MPS clients (48 a GPU) before GPU memory, CPU or memory, among larger ones.
    tiny = ServiceInput("tiny", "l4x4", TaskShape(64, 256, (100,)), 700, placement=S.LIBRARY_STRATEGY, max_percent=150)
    mixed = [tiny, svc("mid", 40, 3000), replace(svc("big", 12, 15000), placement=())]
    for rule in P.GPU_RULES:
        for order in P.ORDERS:
            free = P.replay(L4X4, mixed, rule, order, 1 << 30)
            out += [free, P.replay(L4X4, mixed, rule, order, max(1, free.peak - 1))]
    return out


def test_the_rough_filter_kept_between_tasks_places_as_one_read_afresh_for_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """place keeps the hosts its rough filter passed for one need and mends them by the host a task went to (and one
    launched for it); a stop drops them. Every replay, at a limit or not, and every blocked service must be what
    reading the open hosts afresh for every task gives."""
    kept = _generated_outcomes()
    place = R._Replay.place

    def afresh(self: R._Replay, s: ServiceInput) -> bool:
        self.rough_for = None
        return place(self, s)

    monkeypatch.setattr(R._Replay, "place", afresh)
    assert _generated_outcomes() == kept


def _ranked(self: R._Replay, rough: list[R._Host], s: ServiceInput, need: R._Need) -> R._Host | None:
    """_choose as the strategies define it: with a random one, a draw among every host that fits at the least key;
    else every host ranked by (key, place from the seeded start), the first that fits."""
    strategy = s.placement or S.ECS_DEFAULT_STRATEGY
    cut = strategy.index(S.RANDOM) if S.RANDOM in strategy else len(strategy)
    key = S.host_key(strategy[:cut], s.name, self.zone_tasks[s.name])
    if cut < len(strategy):
        fitting = [h for h in rough if self._fits(h, need)]
        if not fitting:
            return None
        low = min(key(h) for h in fitting)
        return self.rng.choice([h for h in fitting if key(h) == low])
    n = len(rough)
    start = self.rng.randrange(n) if n > 1 else 0
    for _, at in sorted((key(h), (i - start) % n) for i, h in enumerate(rough)):
        if self._fits(rough[(at + start) % n], need):
            return rough[(at + start) % n]
    return None


def test_the_least_key_is_found_as_a_sort_of_every_host_finds_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """_choose finds the least key's first host from the seeded starting point with min and index, and sorts only
    when that host does not fit. Every replay must be what ranking every host by (key, place from the start) gives,
    with the general keys (tuples, one figure a strategy) where _choose reads the common strategies' ints."""
    fast = _generated_outcomes()
    monkeypatch.setattr(R._Replay, "_choose", _ranked)
    assert _generated_outcomes() == fast


def test_a_random_strategy_draws_among_the_hosts_every_fit_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a random strategy _choose draws among the hosts that fit, asking _fits only where the rough filter and
    the roomiest GPU's clients do not already say so. Every replay, of MPS tasks that run out of clients, whole-GPU
    tasks, tasks without a GPU and an isolation group, at random alone and after a spread over zones, must be what
    asking _fits of every host gives."""

    def outcomes() -> list[object]:
        tiny = ServiceInput("tiny", "l4x4", TaskShape(64, 256, (100,)), 300, max_percent=150)
        apart = AllocationNote(4000, 4000, shared_failure="fails", isolation_group="a", isolate_host=True)
        services = [
            tiny,
            svc("mid", 30, 3000),
            ServiceInput("whole", "l4x4", TaskShape(512, 2048, whole_gpus=2), 6),
            ServiceInput("cpu", "l4x4", TaskShape(1024, 4096), 20),
            svc("kept", 8, 5000, allocation=apart, kept_apart=True),
        ]
        out: list[object] = []
        for placement in ((S.RANDOM,), (S.SPREAD_ZONE, S.RANDOM)):
            mixed = [replace(s, placement=placement) for s in services]
            for rule in P.GPU_RULES:
                for order in P.ORDERS:
                    free = P.replay(L4X4, mixed, rule, order, 1 << 30)
                    out += [free, P.replay(L4X4, mixed, rule, order, max(1, free.peak - 1))]
        return out

    drawn = outcomes()
    monkeypatch.setattr(R._Replay, "_choose", _ranked)
    assert outcomes() == drawn


def _columned_outcomes() -> list[object]:
    """Replays the columns serve: each strategy of zones and a figure (memory, CPU, a service's tasks), and each figure
    alone, over two zones and over three (where two may tie and not the third), at no limit and at a limit."""
    with benchmarks_on_path():
        import fleet_generator
    out: list[object] = []
    for seed, zones in ((7, 2), (8, 3)):
        fleet = fleet_generator.generate(seed, 400)
        cap = replace(fleet.capacity, zones=zones)
        for placement in R._COLUMNED:
            services = [replace(s, placement=placement) for s in fleet.services]
            for rule in P.GPU_RULES if cap.gpus_per_instance > 1 else P.GPU_RULES[:1]:
                for order in P.ORDERS:
                    free = P.replay(cap, services, rule, order, 1 << 30)
                    out += [free, P.replay(cap, services, rule, order, max(1, free.peak - 2))]
    return out


def test_the_columns_find_the_host_the_keys_find(monkeypatch: pytest.MonkeyPatch) -> None:
    """From a rough filter's second use, _choose finds the least key's first host in a column of the hosts' figure (their
    memory, their CPU, or the service's tasks on each; their zone's column, or every zone's), not in a key a host.
    Every replay must be what the keys give, and the columns must have served most of the tasks."""
    served: list[bool] = []
    column = R._Replay._column

    def counted(self: R._Replay, strategy: tuple[str, ...], *args: Any) -> list[int] | None:
        found = column(self, strategy, *args)
        served.append(found is not None)
        return found

    monkeypatch.setattr(R._Replay, "_column", counted)
    columned = _columned_outcomes()
    assert sum(served) > len(served) / 2
    monkeypatch.setattr(R._Replay, "_column", lambda self, *args: None)
    assert _columned_outcomes() == columned


def test_the_gpu_rules_and_the_fit_are_their_plain_definitions(monkeypatch: pytest.MonkeyPatch) -> None:
    """_gpus stops at the first GPU with room under first-fit, and _fits asks the roomiest GPU first. Every replay must
    be what listing every GPU with room, and checking each, gives."""
    fast = _generated_outcomes()

    def gpus(self: R._Replay, host: R._Host, need: R._Need) -> tuple[int, ...] | None:
        if need.whole:
            idle = [i for i, free in enumerate(host.idle) if free]
            return tuple(idle[: need.whole]) if len(idle) >= need.whole else None
        if not need.clients:
            return ()
        fitting = [i for i, room in enumerate(host.room) if room >= need.size and host.clients[i] >= need.clients]
        if not fitting:
            return None
        rank = {
            "first-fit": lambda i: i,
            "best-fit": lambda i: (host.room[i], i),
            "worst-fit": lambda i: (-host.room[i], i),
        }
        return (min(fitting, key=rank[self.rule]),)

    def fits(self: R._Replay, host: R._Host, need: R._Need) -> bool:
        if host.cpu < need.cpu or host.mem < need.mem or host.eni < need.eni:
            return False
        if need.apart and any(g != need.group for g, n in host.groups.items() if n):
            return False
        return gpus(self, host, need) is not None

    monkeypatch.setattr(R._Replay, "_gpus", gpus)
    monkeypatch.setattr(R._Replay, "_fits", fits)
    assert _generated_outcomes() == fast


@given(
    rooms=st.lists(st.sampled_from([0, 1000, 5000, 5000, 9000, 22307]), min_size=4, max_size=4),
    left=st.lists(st.integers(0, 3), min_size=4, max_size=4),
    size=st.sampled_from([500, 1000, 5000, 9000]),
    clients=st.integers(1, 2),
    rule=st.sampled_from(P.GPU_RULES),
)
@settings(max_examples=300, deadline=None)
def test_the_gpu_each_rule_picks_is_its_plain_definition(
    rooms: list[int], left: list[int], size: int, clients: int, rule: str
) -> None:
    """Best-fit takes the GPU with the least room that fits, worst-fit the most, first-fit the first; ties go to the
    first GPU. _gpus reads the GPUs once: on drawn rooms (many equal), it must pick as ranking every fitting GPU does."""
    run = R._Replay(L4X4, [svc("x", 1, size)], rule, random.Random(0), 1 << 30)
    host = run._launch()
    host.room, host.clients, host.largest_room = list(rooms), list(left), max(rooms)  # _take keeps the most room
    need = replace(run.needs["x"], size=size, clients=clients)
    fitting = [i for i, r in enumerate(rooms) if r >= size and left[i] >= clients]
    rank = {"first-fit": lambda i: i, "best-fit": lambda i: (rooms[i], i), "worst-fit": lambda i: (-rooms[i], i)}
    assert run._gpus(host, need) == ((min(fitting, key=rank[rule]),) if fitting else None)


def test_stopping_every_task_leaves_every_host_as_launched() -> None:
    """A task's stop gives back what its placement took: CPU, memory, interfaces, GPU memory, MPS clients, whole GPUs.
    After a mix of MPS, whole-GPU, no-GPU and awsvpc tasks is placed and stopped, each host reads as a new one."""
    services = [
        replace(svc("tiny", 60, 100), shape=TaskShape(64, 256, (100, 50))),
        svc("mid", 9, 7000),
        ServiceInput("whole", "l4x4", TaskShape(512, 2048, whole_gpus=2), 3, placement=S.LIBRARY_STRATEGY),
        ServiceInput("cpu", "l4x4", TaskShape(1024, 4096), 5, placement=()),
        ServiceInput("vpc", "l4x4", TaskShape(256, 1024, (2000,), network_interfaces=1), 4, placement=()),
    ]
    run = R._Replay(L4X4, services, "best-fit", random.Random(0), 1 << 30)
    fresh = run._launch()
    for s in services:
        for _ in range(s.tasks):
            assert run.place(s)
    assert any(h.clients != fresh.clients for h in run.hosts) and any(not all(h.idle) for h in run.hosts)
    for s in services:
        for _ in range(s.tasks):
            run.stop(s)
    figures = ("cpu", "mem", "eni", "room", "clients", "idle", "tasks", "largest_room")
    for h in run.hosts:
        assert [getattr(h, f) for f in figures] == [getattr(fresh, f) for f in figures]


def test_the_model_is_deterministic() -> None:
    services = [svc("a", 7, 3000), svc("b", 5, 7000), svc("c", 3, 15000)]
    assert P.place_capacity(L4X4, services) == P.place_capacity(L4X4, list(reversed(services)))


def test_strategies_read_from_cloudformation() -> None:
    written = [
        {"Type": "spread", "Field": "attribute:ecs.availability-zone"},
        {"type": "binpack", "field": "MEMORY"},
        {"Type": "spread", "Field": "instanceId"},
        {"Type": "random"},
        {"Type": "binpack", "Field": "CPU"},
    ]
    assert S.from_cloudformation(written) == (
        S.SPREAD_ZONE,
        S.BINPACK_MEMORY,
        S.SPREAD_INSTANCE,
        S.RANDOM,
        S.BINPACK_CPU,
    )
    assert S.from_cloudformation(None) == ()


# --- the fleet file and the templates -------------------------------------------------------------------------------

FLEET = """
name = "p"
[capacity.l4]
instance_types = ["g6.2xlarge"]
[service.a]
capacity = "l4"
image = "public.ecr.aws/x/a:1"
desired_count = 2
cpu_units = 512
memory_mib = 2048
gpu_budget_mib = 4096
"""


def _fleet(tmp_path: Path, text: str) -> Any:
    path = tmp_path / "f.toml"
    path.write_text(text)
    return load(path)


def test_the_fleet_file_names_a_preset_and_the_plan_carries_it(tmp_path: Path) -> None:
    default = _fleet(tmp_path, FLEET)
    assert default.services["a"].placement_strategy == S.LIBRARY_STRATEGY
    _, services = from_fleet(_fleet(tmp_path, FLEET + 'placement = "ecs-default"\n'))
    assert services[0].placement == ()
    with pytest.raises(FleetSpecError, match=r"service\.a\.placement"):
        _fleet(tmp_path, FLEET + 'placement = "tightest"\n')


def _small_task_on_l4(stack: cdk.Stack, max_azs: int = 2) -> tuple[ecs.Cluster, Any, Any]:
    """A cluster in a VPC of ``max_azs`` zones, an L4 capacity, and a task definition of one small MPS container."""
    from ecs_gpu_sharing import GpuCapacity, MpsShare, SharedGpuTaskDefinition

    cluster = ecs.Cluster(stack, "C", vpc=ec2.Vpc(stack, "V", max_azs=max_azs, nat_gateways=1))
    capacity = GpuCapacity(stack, "L4", cluster=cluster, instance_types=["g6.2xlarge"])
    task = SharedGpuTaskDefinition(stack, "T")
    task.add_container(
        "m",
        image=ecs.ContainerImage.from_registry("r/m@sha256:" + "0" * 64),
        memory_limit_mib=1024,
        gpu=MpsShare(2048),
        user="1000",
        readonly_root_filesystem=True,
    )
    return cluster, capacity, task


def _shared_service(stack: cdk.Stack, max_azs: int = 2, **kwargs: Any) -> None:
    """A SharedGpuService of two small MPS tasks on an L4 capacity, in a VPC of ``max_azs`` zones."""
    from ecs_gpu_sharing import SharedGpuService

    cluster, capacity, task = _small_task_on_l4(stack, max_azs)
    SharedGpuService(stack, "Svc", cluster=cluster, capacity=capacity, task_definition=task, desired_count=2, **kwargs)


def _service_template(**kwargs: Any) -> Template:
    app = new_app()
    stack = cdk.Stack(app, "S")
    _shared_service(stack, **kwargs)
    app.synth()
    return Template.from_stack(stack)


def test_a_shared_gpu_service_spreads_over_zones_then_packs_by_memory() -> None:
    _service_template().has_resource_properties(
        "AWS::ECS::Service",
        {
            "PlacementStrategies": [
                {"Type": "spread", "Field": "attribute:ecs.availability-zone"},
                {"Type": "binpack", "Field": "MEMORY"},
            ]
        },
    )


def test_the_strategies_can_be_overridden() -> None:
    _service_template(placement_strategies=[ecs.PlacementStrategy.packed_by_cpu()]).has_resource_properties(
        "AWS::ECS::Service", {"PlacementStrategies": [{"Type": "binpack", "Field": "CPU"}]}
    )
    _service_template(placement_strategies=[]).has_resource_properties(
        "AWS::ECS::Service",
        {"PlacementStrategies": Match.exact([])},  # none: ECS's default, and a warning
    )


@pytest.mark.parametrize(
    ("value", "strategy", "max_percent", "rebalances"),
    [
        (None, S.LIBRARY_STRATEGY, 200, True),  # ECS's default on a new service whose first strategy spreads by zone
        (None, (), 200, True),  # no strategy: ECS's default balances zones
        (None, (S.BINPACK_MEMORY,), 200, False),  # not spread over zones first: ECS cannot rebalance it
        (None, (S.SPREAD_INSTANCE, S.SPREAD_ZONE), 200, False),
        (None, S.LIBRARY_STRATEGY, 100, False),  # a maximum of 100%: no room to start a task before one stops
        ("DISABLED", S.LIBRARY_STRATEGY, 200, False),
        ("ENABLED", S.LIBRARY_STRATEGY, 200, True),
        ("enabled", (S.BINPACK_MEMORY,), 200, True),  # asked for: ECS refuses or runs it, either way not replayed
        ({"Ref": "Param"}, S.LIBRARY_STRATEGY, 200, True),  # not known at synth: taken as on
    ],
)
def test_when_ecs_rebalances_a_service_over_zones(
    value: object, strategy: tuple[str, ...], max_percent: int, rebalances: bool
) -> None:
    assert zone_rebalancing(value, strategy, max_percent) is rebalances


def test_a_service_held_to_zones_by_a_constraint_is_not_rebalanced_unless_asked() -> None:
    """A memberOf expression on the zone attribute is one of the limits (aws-cdk's Ec2Service refuses ENABLED with it)."""
    zoned = ("attribute:ecs.availability-zone in [us-east-1a]",)
    assert not zone_rebalancing(None, S.LIBRARY_STRATEGY, 200, zoned)
    assert zone_rebalancing(None, S.LIBRARY_STRATEGY, 200, ("attribute:ecs.instance-type == g6.xlarge",))
    assert zone_rebalancing("ENABLED", S.LIBRARY_STRATEGY, 200, zoned)


def test_zone_rebalancing_the_replay_does_not_model_warns_on_a_gpu_capacity() -> None:
    """A plain aws-ecs service on a GPU capacity is created with ECS's zone rebalancing on; SharedGpuService turns it
    off, and one that turns it back on is warned too."""
    from ecs_gpu_sharing import SharedGpuService

    app = new_app()
    stack = cdk.Stack(app, "S")
    cluster, capacity, task = _small_task_on_l4(stack)
    on = ecs.AvailabilityZoneRebalancing.ENABLED
    common: dict[str, Any] = {"cluster": cluster, "task_definition": task, "desired_count": 1}
    SharedGpuService(stack, "On", capacity=capacity, availability_zone_rebalancing=on, **common)
    SharedGpuService(stack, "Off", capacity=capacity, **common)
    plain = ecs.Ec2Service(
        stack, "Plain", capacity_provider_strategies=capacity.capacity_provider_strategies(), **common
    )
    plain.node.add_dependency(cluster)  # after the provider's association (ServiceAfterItsProviderIsAssociated)
    messages = app.synth().get_stack_by_name("S").messages
    warned = {m.id.split("/")[2] for m in messages if ZONE_REBALANCING_NOT_REPLAYED in str(m.entry.data)}
    assert warned == {"On", "Plain"}


def test_the_host_binpack_prefers_is_passed_over_when_its_gpu_has_no_client_left() -> None:
    """Binpack by memory prefers the host with the least memory left. Here that host's one GPU has memory to spare
    but no MPS client left (48 tasks of 100 MiB), so the next task goes to the other host, not to a new one."""
    tiny = ServiceInput("tiny", "l4", TaskShape(64, 256, (100,)), 48, placement=(S.BINPACK_MEMORY,))
    other = ServiceInput("other", "l4", TaskShape(64, 256, (1000,)), 1, placement=(S.BINPACK_MEMORY,))
    run = R._Replay(replace(L4, min_instances=2), [tiny, other], "first-fit", random.Random(0), 1 << 30)
    assert all(run.place(tiny) for _ in range(48))
    (full,) = [h for h in run.hosts if h.tasks]
    assert full.clients == [0] and full.room[0] > 1000 and full.mem < run.hosts[1 - run.hosts.index(full)].mem
    assert run.place(other)
    assert len(run.hosts) == 2 and run.live["other"][0][0] is not full  # (host, GPUs)


def test_the_fit_is_its_plain_definition_while_tasks_come_and_go() -> None:
    """_fits keeps, per host, the roomiest GPU with an MPS client left until the host changes, and _take the most room
    on one GPU without reading every GPU. Through random places and stops of tasks that run out of clients (one and
    two containers) among larger ones, on hosts of four GPUs, every host's fit for every service, and its most room,
    must be what reading its GPUs afresh gives."""
    services = [
        replace(svc("one", 400, 100), placement=(S.BINPACK_MEMORY,)),
        replace(svc("two", 300, 0), shape=TaskShape(64, 256, (150, 60)), placement=(S.BINPACK_MEMORY,)),
        svc("mid", 40, 3000),
        svc("big", 20, 15000),
    ]
    rng = random.Random(7)
    run = R._Replay(replace(L4X4, min_instances=2), services, "worst-fit", random.Random(0), 1 << 30)
    needs = [run.needs[s.name] for s in services]

    def plain(h: R._Host, need: R._Need) -> bool:
        return (
            h.cpu >= need.cpu
            and h.mem >= need.mem
            and any(r >= need.size and c >= need.clients for r, c in zip(h.room, h.clients, strict=True))
        )

    checked = kept = 0
    for step in range(3000):
        s = rng.choice(services)
        if run.live[s.name] and rng.random() < 0.45:
            run.stop(s) if rng.random() < 0.5 else run.stop(s, newest=True)
        else:
            run.place(s)
        if step % 2 == 0:
            for h in run.hosts:
                assert h.largest_room == max(h.room), (step, h.room)
                for need in needs:
                    assert run._fits(h, need) == plain(h, need), (step, h.room, h.clients, need)
                    checked += 1
                    # the case the kept figure is for: the roomiest GPU has the memory but no client left
                    kept += max(h.room) >= need.size and h.clients[h.room.index(max(h.room))] < need.clients
    assert checked > 1000 and kept > 100


def test_a_gpu_with_one_client_left_still_takes_a_task_when_the_roomiest_has_none() -> None:
    """The roomiest GPU is out of clients, one GPU has one client and room left, the others nearly no room: a task of
    one client fits there (up to exactly its room), one of two clients does not, and once a task stops on the roomiest
    GPU it fits again."""
    one, mid, big = svc("one", 99, 100), svc("mid", 4, 3000), svc("big", 2, 15000)
    two = replace(svc("two", 30, 0), shape=TaskShape(64, 256, (150, 60)))  # two MPS clients
    exact = svc("exact", 1, 22307 - 23 * 210 - 100)
    run = R._Replay(L4X4, [one, two, mid, big, exact], "first-fit", random.Random(0), 1 << 30)
    host = run._launch()

    def take(s: ServiceInput, gpu: int, k: int) -> None:
        for _ in range(k):
            run._take(host, s.name, run.needs[s.name], (gpu,))
            run.live[s.name].append((host, (gpu,)))

    take(one, 0, 48)  # 17,507 MiB left, no client
    take(two, 1, 23)
    take(one, 1, 1)  # 17,377 MiB and one client left
    for g in (2, 3):
        take(big, g, 1)
        take(mid, g, 2)
        take(one, g, 13)  # 7 MiB left
    assert host.clients[:2] == [0, 1] and host.room[0] == max(host.room) and max(host.room[2:]) < 100
    assert run._fits(host, run.needs["one"]) and run._fits(host, run.needs["exact"])
    assert not run._fits(host, run.needs["two"])
    take(one, 1, 1)  # the one client left taken
    assert not run._fits(host, run.needs["one"]) and not run._fits(host, run.needs["mid"])
    run.stop(one)  # the oldest task of one stops: a client back on the roomiest GPU
    assert run._fits(host, run.needs["one"]) and run._fits(host, run.needs["mid"])


def test_the_common_strategies_keys_order_hosts_as_the_general_ones() -> None:
    """The library's strategy and ECS's default have keys written out as one int a host; on hosts of a replay in
    progress every pair of hosts must compare as the general builder's tuples compare."""
    services = [svc("a", 9, 3000), replace(svc("b", 6, 7000), placement=()), svc("c", 4, 15000)]  # b: ECS's default
    run = R._Replay(replace(L4X4, min_instances=3), services, "first-fit", random.Random(0), 1 << 30)
    for s in services:
        for _ in range(s.tasks):
            assert run.place(s)
    assert len({h.count.get("b", 0) for h in run.hosts}) > 1  # a spread over instances: tasks by service are kept
    for parts in (S.LIBRARY_STRATEGY, S.ECS_DEFAULT_STRATEGY):
        for s in services:
            fast = S.host_keys(parts, s.name, run.zone_tasks[s.name], run.hosts)
            general = list(map(S.host_key(parts, s.name, run.zone_tasks[s.name]), run.hosts))
            for i, j in itertools.product(range(len(run.hosts)), repeat=2):
                assert (fast[i] < fast[j], fast[i] == fast[j]) == (general[i] < general[j], general[i] == general[j])
    assert len(set(S.host_keys(S.LIBRARY_STRATEGY, "a", run.zone_tasks["a"], run.hosts))) > 1


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.integers(1, 9), st.sampled_from(["library", "ecs", "spread-instance"])),
        min_size=2,
        max_size=10,
    ),
    st.sampled_from(P.GPU_RULES),
    st.sampled_from(P.ORDERS),
)
def test_a_replay_keeps_its_rough_filter_across_services_of_one_shape_with_the_same_outcome(
    drawn: list[tuple[int, int, str]], rule: str, order: str
) -> None:
    """The hosts that pass the rough filter are kept while the next task has the same figures, of whichever service
    (many services share a shape); a replay that reads them again before every task places every task alike."""
    shapes = [TaskShape(256, 1024, (6000,)), TaskShape(1024, 4096, (6000,)), TaskShape(256, 1024, (3000,))]
    strategies = {"library": S.LIBRARY_STRATEGY, "ecs": S.ECS_DEFAULT_STRATEGY, "spread-instance": (S.SPREAD_INSTANCE,)}
    services = [
        ServiceInput(f"s{i}", "l4x4", shapes[shape], tasks, placement=strategies[kind])
        for i, (shape, tasks, kind) in enumerate(drawn)
    ]

    def placed(read_again: bool) -> list[tuple[Any, ...]]:
        rng = random.Random(3)
        run = R._Replay(L4X4, services, rule, rng, 1 << 30)
        for s in R._arrivals([(s, s.tasks) for s in services], order, rng):
            if read_again:
                run.rough_for = None
            run.place(s)
        R._rollout(run, services, order, rng)
        return [(h.zone, h.cpu, h.mem, tuple(h.room), tuple(h.clients), h.tasks) for h in run.hosts]

    assert placed(read_again=False) == placed(read_again=True)
