"""The fleet fit checks (pure): one case that passes, one per error and warning."""

from __future__ import annotations

import datetime
from dataclasses import replace

import pytest

from ecs_gpu_sharing.core.allocation import AllocationNote, Evidence
from ecs_gpu_sharing.core.capacity_facts import (
    AMI_LOG_DRIVERS,
    RESERVED_HOST_PORTS,
    host_facts,
    log_drivers_in_user_data,
    reserved_memory_in_user_data,
    reserved_ports_in_user_data,
)
from ecs_gpu_sharing.core.headroom import with_headroom
from ecs_gpu_sharing.core.plan_inputs import capacity_input
from ecs_gpu_sharing.core.planner import CapacityInput, CapacityPlan, ServiceInput
from ecs_gpu_sharing.core.rules import (
    CLIENT_LIMIT_WARNING,
    CONSTRAINT_NOT_PLANNED,
    DISTINCT_INSTANCE_PACKED,
    FRACTION_WARNING,
    HOST_PORT_TWICE,
    OUTSIDE_PLAN_WARNING,
    RULES,
    RULES_BY_ID,
    SURGE_WARNING,
    Level,
    NameClash,
    OutsideService,
    assess,
    surge_factor,
)
from ecs_gpu_sharing.core.shape import TaskShape
from ecs_gpu_sharing.core.task_rules import (
    TASK_CONSTRAINT_MATCHES_NO_HOST,
    TASK_LOG_DRIVER_NOT_ON_HOSTS,
    TASK_MAPS_RESERVED_HOST_PORT,
)

L4 = capacity_input("l4", host_facts(["g6.xlarge"]))  # 22307 usable, 4096 units, 15401 MiB


# A budget with evidence behind it, so the rule tests here see only the rule they are about (not BudgetIsAGuess).
MEASURED = AllocationNote(
    residency_mib=0,
    peak_working_mib=0,
    shared_failure="fails until ECS restarts it",
    evidence=Evidence(peak_mib=0, measured_on=datetime.date(2026, 11, 1), source="load-test"),
)


def svc(count: int, mib: int, *, cpu: int = 512, mem: int = 1024, name: str = "emb") -> ServiceInput:
    return ServiceInput(name, "l4", TaskShape(cpu, mem, (mib,)), count, allocation=MEASURED)


def test_a_fleet_that_fits_has_no_findings_and_derives_max_for_the_surge() -> None:
    result = assess([L4], [svc(4, 6000)])  # 3 per GPU: 2 instances steady, 8 tasks = 3 instances at surge
    assert result.findings == ()
    assert len(result.steady.capacity("l4").instances) == 2 and result.placement["l4"].needed == 3
    assert result.max_instances == {"l4": 4}  # ECS's need, and ORDER_HEADROOM_PERCENT of it rounded up


def test_error_task_larger_than_a_gpu() -> None:
    (finding,) = assess([L4], [svc(1, 23000)]).errors
    assert finding.subject == "emb" and "23000 MiB of GPU memory on one GPU, more than the 22307 MiB" in finding.message
    assert "move the service to a capacity with larger GPUs" in finding.message


def test_error_task_larger_than_a_host() -> None:
    errors = assess([L4], [svc(1, 1000, cpu=8192, mem=20000)]).errors
    assert [e.message.split(",")[0] for e in errors] == [
        "one task needs 8192 CPU units",
        "one task needs 20000 MiB of host memory",
    ]


def test_error_desired_counts_past_max_instances() -> None:
    (finding,) = assess([replace(L4, max_instances=1)], [svc(4, 6000)]).errors
    assert finding.about == "capacity" and finding.subject == "l4"
    assert (
        "(emb 4 (desired count)) need 2 instances of g6.xlarge, more than max_instances 1 (1 task left unplaced)"
        in finding.message
    )


def test_a_capacity_of_many_services_names_the_largest_few_and_counts_the_rest() -> None:
    """A capacity of hundreds of services over its max_instances: the message names the five services with the largest
    counts (largest first) and says how many more there are, so it stays readable on a terminal."""
    services = [svc(4 + i % 3, 6000, name=f"s{i:02d}") for i in range(12)]
    (error,) = assess([replace(L4, max_instances=2)], services).errors
    assert "(s02 6 (desired count), s05 6 (desired count), s08 6 (desired count), s11 6 (desired count), s01 5 " in (
        error.message
    )
    assert "(desired count) and 7 more) need" in error.message and "s00" not in error.message
    (warning,) = [f for f in assess([replace(L4, max_instances=20)], services).findings if f.rule_id == SURGE_WARNING]
    assert "/ 100: s02 12, s05 12, s08 12, s11 12, s01 10 and 7 more) needs" in warning.message
    few = assess([replace(L4, max_instances=1)], [svc(4, 6000, name="a"), svc(2, 6000, name="b")]).errors[0]
    assert "(a 4 (desired count), b 2 (desired count)) need" in few.message  # five or fewer: every one


def test_warning_surge_past_max_instances() -> None:
    (finding,) = assess([replace(L4, max_instances=2)], [svc(4, 6000)]).findings
    assert not finding.error and finding.rule_id == SURGE_WARNING and "emb 8) needs 3 instances" in finding.message


def test_warning_more_than_48_clients_possible() -> None:
    (finding,) = assess([L4], [svc(2, 256)]).findings
    assert finding.rule_id == CLIENT_LIMIT_WARNING and "87 of them on one 22307 MiB GPU" in finding.message
    assert "at least 465 MiB" in finding.message
    assert assess([L4], [svc(2, 465)]).findings == ()


def _ported(count: int, *ports: tuple[int, str], name: str = "emb", mib: int = 4000) -> ServiceInput:
    return ServiceInput(name, "l4", TaskShape(512, 1024, (mib,), host_ports=ports), count, allocation=MEASURED)


def test_error_two_tasks_holding_one_static_host_port_on_a_host() -> None:
    """ECS places a task only on a container instance whose ports it needs are free ("Use strategies to define
    Amazon ECS task placement": CPU, GPU, memory and port requirements): the plan, which packs by GPU memory, CPU and
    memory, would put five such tasks on one L4."""
    (finding,) = [f for f in assess([L4], [_ported(5, (8080, "tcp"))]).errors]
    assert finding.rule_id == HOST_PORT_TWICE and finding.subject == "emb"
    assert "5 tasks that map host port 8080/tcp on one host (emb x5)" in finding.message
    assert "at its largest counts" in finding.message and "host port 0" in finding.message
    # One task holds the port alone, but a rolling deployment starts its replacement before stopping it, and the
    # surge plan packs both on one host, where ECS cannot place the second.
    (surge,) = assess([L4], [_ported(1, (8080, "tcp"))]).errors
    assert surge.rule_id == HOST_PORT_TWICE and "2 tasks that map host port 8080/tcp" in surge.message
    assert "at a deployment's surge" in surge.message
    # dynamic ports (none fixed) share a host freely
    assert not assess([L4], [_ported(5), _ported(3, name="c")]).errors


def test_error_two_services_holding_one_static_host_port_on_a_host() -> None:
    errors = assess([L4], [_ported(1, (9000, "tcp"), name="a"), _ported(1, (9000, "tcp"), name="b")]).errors
    assert {e.subject for e in errors} == {"a", "b"} and {e.rule_id for e in errors} == {HOST_PORT_TWICE}
    assert "2 tasks that map host port 9000/tcp on one host (a, b) at its largest counts" in errors[0].message
    # another protocol is another port
    udp = assess([L4], [_ported(1, (9000, "tcp"), name="a"), _ported(1, (9000, "udp"), name="b")]).errors
    assert all("(a, b)" not in e.message for e in udp)


def test_error_a_distinct_instance_service_packed_on_one_host() -> None:
    """distinctInstance keeps each task of the service's group on a different container instance (Amazon ECS API
    Reference, PlacementConstraint); the old and the new tasks of a rolling deployment are one group, so the surge needs a
    host for each too."""
    distinct = replace(svc(3, 4000), distinct_instance=True)
    (finding,) = assess([L4], [distinct]).errors
    assert finding.rule_id == DISTINCT_INSTANCE_PACKED and finding.subject == "emb"
    assert (
        "3 of its tasks on one host at its largest counts" in finding.message and "distinctInstance" in finding.message
    )
    (surge,) = assess([L4], [replace(svc(1, 4000), distinct_instance=True)]).errors
    assert "2 of its tasks on one host at a deployment's surge" in surge.message
    assert not assess([L4], [svc(3, 4000)]).errors  # without the constraint, three share a host


def test_warning_a_member_of_expression_the_plan_does_not_model() -> None:
    """memberOf narrows the hosts ECS may use; the plan counts every host of the capacity as a candidate."""
    zone = "attribute:ecs.availability-zone == us-east-1a"
    (finding,) = assess([L4], [replace(svc(2, 4000), constraints_not_planned=(zone,))]).findings
    assert finding.rule_id == CONSTRAINT_NOT_PLANNED and finding.level is Level.WARNING
    assert repr(zone) in finding.message and "a capacity of its own" in finding.message
    assert assess([L4], [svc(2, 4000)]).findings == ()


@pytest.mark.parametrize(
    ("expression", "never"),
    [
        ("attribute:ecs.instance-type == p5.48xlarge", True),
        ("attribute:ecs.instance-type in [p5.48xlarge, p4d.24xlarge]", True),
        ("attribute:ecs.availability-zone in [us-east-1a] and attribute:ecs.instance-type == p5.48xlarge", True),
        ("attribute:ecs.instance-type == g6.xlarge", False),  # the capacity's own type: a warning only
        ("attribute:ecs.instance-type in [g6.xlarge, p5.48xlarge]", False),
        ("attribute:ecs.instance-type == p5.48xlarge or attribute:ecs.instance-type == g6.xlarge", False),
        ("attribute:ecs.instance-type =~ p5.*", False),  # a pattern: not read here
    ],
)
def test_error_a_member_of_expression_no_host_of_the_capacity_matches(expression: str, never: bool) -> None:
    """ECS places a task only on a host its memberOf expression matches ("Amazon ECS task placement constraints"):
    one naming instance types the capacity has none of leaves every task waiting."""
    errors = assess([L4], [replace(svc(2, 4000), constraints_not_planned=(expression,))]).errors
    found = [e for e in errors if e.rule_id == TASK_CONSTRAINT_MATCHES_NO_HOST]
    assert bool(found) is never, errors
    if never:
        assert "matches no host of the capacity (g6.xlarge)" in found[0].message


@pytest.mark.parametrize("port", [22, 2375, 2376, 51678, 51679])
def test_error_a_host_port_the_agent_reserves(port: int) -> None:
    (finding,) = assess([L4], [_ported(1, (port, "tcp"))]).errors
    assert finding.rule_id == TASK_MAPS_RESERVED_HOST_PORT and f"host port {port}/tcp" in finding.message
    udp = assess([L4], [_ported(1, (port, "udp"))]).errors  # the agent reserves no UDP port by default
    assert TASK_MAPS_RESERVED_HOST_PORT not in {e.rule_id for e in udp}


def test_the_host_ports_the_hosts_user_data_reserves_replace_the_agents() -> None:
    """ECS_RESERVED_PORTS takes the place of the agent's defaults (amazon-ecs-agent, agent/config/config.go, Merge)."""
    user_data = "echo 'ECS_RESERVED_PORTS=[22, 8080]' >> /etc/ecs/ecs.config"
    reserved = reserved_ports_in_user_data(user_data)
    assert reserved == (22, 8080)
    l4 = replace(L4, reserved_ports=reserved)
    (finding,) = assess([l4], [_ported(1, (8080, "tcp"))]).errors
    assert (
        finding.rule_id == TASK_MAPS_RESERVED_HOST_PORT and "ECS_RESERVED_PORTS in their user data" in finding.message
    )
    for cap, port in ((l4, 2375), (L4, 8080)):  # 2375 no longer reserved there; 8080 not by default
        assert TASK_MAPS_RESERVED_HOST_PORT not in {
            e.rule_id for e in assess([cap], [_ported(1, (port, "tcp"))]).errors
        }


@pytest.mark.parametrize("value", ["", "$PORTS", "[true]", "not json", "[]"])
def test_reserved_ports_the_synth_cannot_read_keep_the_agents_defaults(value: str) -> None:
    assert reserved_ports_in_user_data(f"echo ECS_RESERVED_PORTS={value} >> /etc/ecs/ecs.config") == RESERVED_HOST_PORTS


def _logged(*drivers: str) -> ServiceInput:
    return ServiceInput("emb", "l4", TaskShape(512, 1024, (4000,), log_drivers=drivers), 1, allocation=MEASURED)


def test_error_a_log_driver_the_hosts_do_not_register() -> None:
    """A container's log driver needs the host attribute com.amazonaws.ecs.capability.logging-driver.<driver>, which
    the agent registers only for ECS_AVAILABLE_LOGGING_DRIVERS (ECS API Reference, LogConfiguration); the AMI's
    ecs-init sets it to json-file, syslog, awslogs, fluentd and none, and the agent adds awsfirelens."""
    for fine in [(), ("awslogs",), ("awsfirelens", "awslogs"), ("json-file", "none", "syslog", "fluentd")]:
        assert not assess([L4], [_logged(*fine)]).errors, fine
    (finding,) = assess([L4], [_logged("awslogs", "splunk", "gelf")]).errors
    assert finding.rule_id == TASK_LOG_DRIVER_NOT_ON_HOSTS and finding.subject == "emb"
    assert "log drivers gelf, splunk" in finding.message and "logging-driver.gelf" in finding.message
    assert "ECS never places it" in finding.message and "awsfirelens" in finding.message
    # hosts whose user data registers the driver take it; hosts whose drivers are not known are not judged
    splunk_hosts = replace(L4, log_drivers=(*AMI_LOG_DRIVERS, "splunk", "gelf"))
    assert not assess([splunk_hosts], [_logged("splunk", "gelf")]).errors
    assert not assess([replace(L4, log_drivers=())], [_logged("splunk")]).errors


@pytest.mark.parametrize(
    ("user_data", "drivers"),
    [
        ("#!/bin/bash\necho ECS_ENABLE_GPU_SUPPORT=true >> /etc/ecs/ecs.config", AMI_LOG_DRIVERS),
        (
            'echo \'ECS_AVAILABLE_LOGGING_DRIVERS=["json-file","splunk"]\' >> /etc/ecs/ecs.config',
            ("json-file", "splunk", "awsfirelens"),
        ),
        (
            "echo ECS_AVAILABLE_LOGGING_DRIVERS='[\"awslogs\"]' >> /etc/ecs/ecs.config\n"
            "echo 'ECS_AVAILABLE_LOGGING_DRIVERS=[ \"gelf\" ]' >> /etc/ecs/ecs.config",
            ("gelf", "awsfirelens"),  # the agent reads the file's last setting
        ),
        ('echo "ECS_AVAILABLE_LOGGING_DRIVERS=[\\"journald\\"]" >> /etc/ecs/ecs.config', ("journald", "awsfirelens")),
        ("echo ECS_AVAILABLE_LOGGING_DRIVERS=$DRIVERS >> /etc/ecs/ecs.config", ()),  # not readable: not judged
    ],
)
def test_log_drivers_read_from_the_hosts_user_data(user_data: str, drivers: tuple[str, ...]) -> None:
    assert log_drivers_in_user_data(user_data) == drivers


@pytest.mark.parametrize(
    ("user_data", "reserved"),
    [
        ("echo ECS_ENABLE_GPU_SUPPORT=true >> /etc/ecs/ecs.config", 0),
        ("echo ECS_RESERVED_MEMORY=1024 >> /etc/ecs/ecs.config\necho ECS_RESERVED_MEMORY=256 >> x", 256),
        ("echo 'ECS_RESERVED_MEMORY=512' >> /etc/ecs/ecs.config", 512),
        ("echo ECS_RESERVED_MEMORY=$RESERVE >> /etc/ecs/ecs.config", 0),  # not readable at synth
    ],
)
def test_memory_the_agent_reserves_read_from_the_hosts_user_data(user_data: str, reserved: int) -> None:
    assert reserved_memory_in_user_data(user_data) == reserved


def test_warning_a_memory_fraction_of_the_whole_gpu_past_the_budget() -> None:
    """docs/gpu-measured.md: a client under an MPS limit is told the whole GPU as its total, and vLLM asks for
    --gpu-memory-utilization times that total (vllm/v1/worker/gpu_worker.py: requested_memory = total_memory *
    gpu_memory_utilization, refused at startup when free memory is less)."""

    def asking(fraction: float, budget: int = 8192) -> ServiceInput:
        shape = TaskShape(512, 1024, (budget,), memory_fractions=(("--gpu-memory-utilization", fraction, budget),))
        return ServiceInput("llm", "l4", shape, 1, allocation=MEASURED)

    (finding,) = assess([L4], [asking(0.9)]).findings
    assert finding.rule_id == FRACTION_WARNING and not finding.error
    assert "--gpu-memory-utilization 0.9 asks for 20306 MiB" in finding.message  # 0.9 of the L4's 22563
    assert "of the whole GPU (22563 MiB as ECS registers it), not of its budget of 8192 MiB" in finding.message
    assert "set it at most 0.31" in finding.message  # (8192 - 1024) / 22563
    assert assess([L4], [asking(0.31)]).findings == ()
    assert assess([L4], [asking(0.36)]).findings == ()  # 8122 MiB: inside the budget, if with little to spare
    # A budget that leaves nothing past the context and libraries: no fraction fits, so the advice is a larger budget.
    (small,) = assess([L4], [asking(0.1, budget=1024)]).findings
    assert "set it at most" not in small.message
    assert "raise the GPU budget to at least 1250 MiB" in small.message  # 1024 + a hundredth of 22563, rounded up
    assert "or give the size in bytes" in small.message
    (edge,) = assess([L4], [asking(0.1, budget=1249)]).findings
    assert "raise the GPU budget to at least 1250 MiB" in edge.message
    (enough,) = assess([L4], [asking(0.1, budget=1250)]).findings
    assert "set it at most 0.01" in enough.message


# --- the rule table ----------------------------------------------------------------------------------------


def test_every_rule_has_a_unique_id_a_level_and_an_explanation() -> None:
    ids = [rule.rule_id for rule in RULES]
    assert len(ids) == len(set(ids)) and all(i.startswith("ecs-gpu-sharing:") for i in ids)
    assert all(rule.explanation and rule.level in (Level.ERROR, Level.WARNING) for rule in RULES)
    assert all(f.rule_id in RULES_BY_ID for f in assess([replace(L4, max_instances=1)], [svc(4, 6000)]).findings)


def test_a_service_outside_the_plan_warns_and_blocks_a_derived_max() -> None:
    outside = OutsideService("param", "l4", "its desired count is a CDK token", "state a count")
    result = assess([L4], [], outside=[outside])
    assert [(f.rule_id, f.level, f.subject) for f in result.findings] == [
        ("ecs-gpu-sharing:MaxInstancesUnknown", Level.ERROR, "l4"),
        (OUTSIDE_PLAN_WARNING, Level.WARNING, "param"),
    ]
    assert [f.rule_id for f in assess([replace(L4, max_instances=2)], [], outside=[outside]).findings] == [
        OUTSIDE_PLAN_WARNING
    ]
    # The synth stops at this error before any warning is shown: it carries the reason and the fix itself.
    (error,) = [f for f in result.findings if f.level is Level.ERROR]
    assert "param cannot be counted (its desired count is a CDK token: state a count)" in error.message


def test_name_clashes_and_unreadable_shapes_are_errors_with_ids() -> None:
    result = assess(
        [L4],
        [],
        clashes=[NameClash("service", "emb", ("A/emb", "B/emb"))],
        shape_errors=[("emb", "A/emb: container m cpu is a CDK token")],
    )
    assert sorted(f.rule_id for f in result.errors) == [
        "ecs-gpu-sharing:ServiceNameClash",
        "ecs-gpu-sharing:TaskShapeNotLiteral",
    ]


# --- the surge's packing: the host-level LP only where a finding reads it ---------------------------------------


def _lp_pair(monkeypatch: pytest.MonkeyPatch, b_percent: int = 150) -> tuple[CapacityInput, list[ServiceInput]]:
    """A fleet the host-level LP packs tighter than the other strategies (the small-fleet search off): steady 2 hosts
    against 3; at the surge (a 12, b 6: b's maximum percent 150, so the surge is not the steady fleet repeated) 4
    against 5, its lower bound 4. With ``b_percent`` 200 (a 12, b 8), the same figures."""
    from ecs_gpu_sharing.core.plan_inputs import service_input
    from ecs_gpu_sharing.core.planner import search

    monkeypatch.setattr(search, "SEARCH_TASKS", 0)
    l40s = capacity_input("l40s", host_facts(["g6e.2xlarge"]))
    shapes = {"a": (6, TaskShape(2048, 11648, (2176, 2176))), "b": (4, TaskShape(512, 12800, (1024,)))}
    services = [
        replace(
            service_input(name, "l40s", shape, n, count_source="desired count"),
            allocation=MEASURED,
            max_percent=200 if name == "a" else b_percent,
        )
        for name, (n, shape) in shapes.items()
    ]
    return l40s, services


def test_the_surge_is_packed_without_the_host_level_lp_where_max_instances_is_derived(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """#32: the LP is the plan's costliest strategy, and where max_instances is left to the plan the surge's packing
    decides nothing (ECS's own placement needs more, and sets it): there the surge costs no LP."""
    l40s, services = _lp_pair(monkeypatch)
    result = assess([l40s], services)
    surge = result.surge.capacity("l40s")
    assert (surge.instance_count, surge.instances_without_lp, surge.instance_lower_bound) == (5, 5, 4)
    assert result.steady.capacity("l40s").instance_count == 2  # the steady plan keeps its LP
    assert result.max_instances == {"l40s": with_headroom(result.placement["l40s"].needed)} and not result.errors


def test_the_surge_is_packed_with_the_host_level_lp_where_a_finding_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A given max_instances is compared with the surge's packing (SurgeDoesNotFit): the LP packs it, the same figure
    whatever max_instances is given, and the warning fires only where the LP's packing does not fit either (4 holds
    it, 3 does not). A derived max_instances past the cluster quota is read the same way."""
    from ecs_gpu_sharing.core import quotas

    l40s, services = _lp_pair(monkeypatch)
    for max_instances in (3, 4, 5, 9):
        result = assess([replace(l40s, max_instances=max_instances)], services)
        assert result.surge.capacity("l40s").instance_count == 4
        warnings = [f for f in result.findings if f.rule_id == SURGE_WARNING]
        assert len(warnings) == (max_instances < 4) and all("needs 4 instances" in w.message for w in warnings)
    monkeypatch.setattr(quotas, "INSTANCES_PER_CLUSTER", replace(quotas.INSTANCES_PER_CLUSTER, number=4))
    assert assess([l40s], services).surge.capacity("l40s").instance_count == 4  # 5 would pass the quota of 4
    monkeypatch.setattr(quotas, "INSTANCES_PER_CLUSTER", replace(quotas.INSTANCES_PER_CLUSTER, number=3))
    over = assess([l40s], services)
    assert over.surge.capacity("l40s").instance_count == 4
    assert [f for f in over.errors if f.rule_id == quotas.INSTANCES_PER_CLUSTER.rule_id]


def _surge_plans(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Filled as ``assess`` plans each surge: whether that plan had the host-level LP."""
    from ecs_gpu_sharing.core import rules

    surges: list[bool] = []
    planned = rules.plan

    def counted(*args: object, **kwargs: object) -> object:
        if kwargs.get("surge"):
            surges.append(bool(kwargs.get("host_lp", True)))
        return planned(*args, **kwargs)

    monkeypatch.setattr(rules, "plan", counted)
    return surges


def test_the_surge_factor_is_a_maximum_percent_shared_by_every_service_over_100() -> None:
    def on(*percents: int) -> list[ServiceInput]:
        return [replace(svc(2, 4096, name=f"s{i}"), max_percent=p) for i, p in enumerate(percents)]

    assert [surge_factor(on(*p)) for p in ((200, 200), (100,), (300, 300, 300))] == [2, 1, 3]
    assert [surge_factor(on(*p)) for p in ((200, 150), (250,), (150, 150))] == [None, None, None]
    assert surge_factor([*on(200), replace(svc(0, 4096, name="idle"), max_percent=150)]) == 2  # no tasks, no surge


def _counts_held(result: CapacityPlan) -> dict[str, int]:
    held: dict[str, int] = {}
    for group in result.instances:
        for gpu in group.gpus:
            for name, n in gpu.tasks:
                held[name] = held.get(name, 0) + n * group.count
        for name, n in group.tasks_without_gpu:
            held[name] = held.get(name, 0) + n * group.count
    return held


def test_a_surge_of_k_times_every_count_is_the_steady_plans_hosts_k_times_over(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where every service on a capacity surges by the same whole factor k (ECS's default maximum percent of 200: k =
    2), k copies of each of the steady plan's hosts hold the surge. That is the LP's packing without a second LP: 4
    instances where the other strategies need 5, the same figure whatever max_instances is given, or left to the plan.
    Given a max_instances, the LP plans the surge where that packing is above the surge's bound and does not fit it
    (then the LP decides the warning), or is more than HOST_LP_GAP above the bound."""
    surges = _surge_plans(monkeypatch)
    for percent, surge_hosts in ((200, 4), (300, 6)):
        l40s, services = _lp_pair(monkeypatch, b_percent=percent)
        services = [replace(s, max_percent=percent) for s in services]
        for max_instances in (None, surge_hosts, 9):
            surges.clear()
            result = assess([replace(l40s, max_instances=max_instances)], services)
            surge = result.surge.capacity("l40s")
            assert surges == [False] and result.steady.capacity("l40s").instance_count == 2
            assert surge.instance_count == surge_hosts and surge.instances_without_lp > surge_hosts
            assert _counts_held(surge) == {s.name: s.surge_count() for s in services}
            assert not [f for f in result.findings if f.rule_id == SURGE_WARNING]
        surges.clear()  # a max_instances the repeated hosts do not fit: they are at the surge's bound, so no LP
        short = assess([replace(l40s, max_instances=surge_hosts - 1)], services)
        assert surges == [False] and short.surge.capacity("l40s").instance_count == surge_hosts
        (warning,) = [f for f in short.findings if f.rule_id == SURGE_WARNING]
        assert f"needs {surge_hosts} instances" in warning.message
    # a 9 and b 8: the steady plan's 4 hosts twice over are 8, where the others need 9 and the LP packs the surge on
    # its bound of 7. Left to the plan, 8 without a second LP. Given, 8 is more than HOST_LP_GAP above the bound of
    # 7: the LP packs the surge (7), for 9 as for 7; within a gap of 8/7 it does only where 8 does not fit (7).
    from ecs_gpu_sharing.core.planner import packing

    l40s, services = _lp_pair(monkeypatch, b_percent=200)
    services = [replace(s, tasks=n) for s, n in zip(services, (9, 8), strict=True)]
    for gap, max_instances, hosts, lp in (
        (packing.HOST_LP_GAP, None, 8, False),
        (packing.HOST_LP_GAP, 9, 7, True),
        (packing.HOST_LP_GAP, 7, 7, True),
        (8 / 7, 9, 8, False),
        (8 / 7, 7, 7, True),
    ):
        monkeypatch.setattr(packing, "HOST_LP_GAP", gap)
        surges.clear()
        result = assess([replace(l40s, max_instances=max_instances)], services)
        assert result.steady.capacity("l40s").instance_count == 4
        assert surges == [False, *([True] if lp else [])] and result.surge.capacity("l40s").instance_count == hosts
        assert result.surge.capacity("l40s").instance_lower_bound == 7
        assert not [f for f in result.findings if f.rule_id == SURGE_WARNING]


def test_a_derived_max_instances_is_held_to_the_cluster_quota_where_ecs_placement_sets_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The quota error reads the max_instances the plan derives: the larger of the surge's packing and what ECS's own
    placement needs. Here the surge packs into 4 instances and ECS's placement needs 5: a quota of 4 is passed. The
    headroom for orders the replays did not draw (6) stops at a quota of 5 without an error."""
    from ecs_gpu_sharing.core import quotas

    l40s, services = _lp_pair(monkeypatch)
    quota = quotas.INSTANCES_PER_CLUSTER
    monkeypatch.setattr(quotas, "INSTANCES_PER_CLUSTER", replace(quota, number=5))
    fits = assess([l40s], services)
    assert fits.max_instances == {"l40s": 5} and not fits.errors
    monkeypatch.setattr(quotas, "INSTANCES_PER_CLUSTER", replace(quota, number=4))
    over = assess([l40s], services)
    assert over.surge.capacity("l40s").instance_count == 4 and over.placement["l40s"].needed == 5
    (error,) = over.errors
    assert error.rule_id == quota.rule_id and "derived as 5" in error.message
    assert "ECS's own placement needs 5 at the peak of a fleet-wide rollout" in error.message


def test_the_surge_is_not_planned_again_where_the_lp_would_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """A given max_instances reads the surge's count, but past the LP's tasks (HOST_LP_TASKS) and services
    (HOST_LP_SERVICES) the LP does not run where the surge is within HOST_LP_GAP of its bound: a second plan would be
    the same, and at 100,000 tasks it cost a tenth of the command's time. Past the tasks but within the services it
    runs, and past both where the surge is further above its bound."""
    from ecs_gpu_sharing.core.planner import packing

    l40s, services = _lp_pair(monkeypatch)
    surges = _surge_plans(monkeypatch)
    assert assess([replace(l40s, max_instances=9)], services).surge.capacity("l40s").instance_count == 4
    assert surges == [False, True]  # without the LP, then with it
    surges.clear()
    monkeypatch.setattr(packing, "HOST_LP_TASKS", 17)  # the surge is 18 tasks; the steady plan's 10 keep the LP
    assert assess([replace(l40s, max_instances=9)], services).surge.capacity("l40s").instance_count == 4
    assert surges == [False, True]  # two services: within HOST_LP_SERVICES, the surge's LP runs all the same
    surges.clear()
    monkeypatch.setattr(packing, "HOST_LP_SERVICES", 1)  # past both: the surge's 5 hosts are far above its bound of 4
    assert assess([replace(l40s, max_instances=9)], services).surge.capacity("l40s").instance_count == 4
    assert surges == [False, True]
    surges.clear()
    monkeypatch.setattr(packing, "HOST_LP_GAP", 5 / 4)  # ... but not more than this
    result = assess([replace(l40s, max_instances=9)], services)
    assert surges == [False] and result.surge.capacity("l40s").instance_count == 5
    assert result.steady.capacity("l40s").instance_count == 2
