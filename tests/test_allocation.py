"""Allocation notes (#15 section 1): what a budget must cover, the evidence behind it, and isolation groups.

Each rule: one case that passes and one per way it fails, in the pure core, in the fleet file and in the
constructs; isolation groups in the planner (GPUs, hosts) and as ECS placement expressions.
"""

from __future__ import annotations

import datetime
import tomllib
from typing import Any

import pytest
from aws_cdk import aws_ecs as ecs
from aws_cdk.assertions import Annotations, Match
from test_service import IMAGE, Fleet

from ecs_gpu_sharing import AllocationNote, Evidence, FleetPlan, FleetSpecError, GpuSharingError, ServiceError
from ecs_gpu_sharing.core import fleet, plan_report
from ecs_gpu_sharing.core.capacity_facts import host_facts
from ecs_gpu_sharing.core.plan_inputs import capacity_input, from_fleet
from ecs_gpu_sharing.core.planner import ServiceInput
from ecs_gpu_sharing.core.rules import assess
from ecs_gpu_sharing.core.shape import TaskShape

L4 = capacity_input("l4", host_facts(["g6.xlarge"]))  # one L4 per host
L4X4 = capacity_input("l4x4", host_facts(["g6.12xlarge"]))  # four L4s per host
DIGEST_A, DIGEST_B = "@sha256:" + "a" * 64, "@sha256:" + "b" * 64
DAY = datetime.date(2026, 11, 20)


def note(need: tuple[int, int] = (1000, 1000), evidence: Evidence | None = None, **kw: Any) -> AllocationNote:
    return AllocationNote(need[0], need[1], shared_failure="fails until ECS restarts it", evidence=evidence, **kw)


def measured(peak: int = 1500, image: str | None = None) -> Evidence:
    return Evidence(peak_mib=peak, measured_on=DAY, source="evaluate", image=image)


def svc(name: str, budget: int, count: int = 1, cap: str = "l4", **kw: Any) -> ServiceInput:
    return ServiceInput(name, cap, TaskShape(512, 1024, (budget,)), count, **kw)


def _ids(result: Any, level: str | None = None) -> list[tuple[str, str]]:
    return [(f.rule_id.split(":")[1], f.subject) for f in result.findings if level is None or str(f.level) == level]


# --- the note itself ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"residency_mib": -1}, "AllocationNote: residency_mib must be from 0 to 1048576, got -1"),
        ({"peak_working_mib": True}, r"peak_working_mib must be an integer, got True \(bool\)"),
        ({"peak_working_mib": "2048"}, "peak_working_mib must be an integer, got '2048'"),
        ({"shared_failure": " "}, "shared_failure must say what happens"),
        ({"shared_failure": 5}, "shared_failure must be a string, got 5"),
        ({"compute_percent": 101}, "compute_percent must be from 1 to 100, got 101"),
        ({"isolation_group": 5}, "isolation_group must be a string, got 5"),
        (
            {"isolation_group": "tenant a"},
            "isolation_group 'tenant a' is malformed \\(a letter, then letters, digits and dashes, 40 at most\\); "
            "write it like 'tenant-a'",
        ),
        ({"isolate_host": []}, r"isolate_host must be true or false, got \[\]"),
        ({"isolate_host": True}, "isolate_host needs an isolation_group"),
        ({"evidence": "measured"}, "evidence must be an Evidence, got 'measured'"),
    ],
)
def test_a_malformed_note_is_refused_where_it_is_made(kwargs: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {"residency_mib": 1, "peak_working_mib": 1, "shared_failure": "retries", **kwargs}
    with pytest.raises(GpuSharingError, match=message):
        AllocationNote(**args)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"peak_mib": "9000"}, "Evidence: peak_mib must be an integer, got '9000'"),
        ({"measured_on": "2026-11-01"}, "measured_on must be a date"),
        ({"measured_on": datetime.datetime(2026, 11, 1)}, "measured_on must be a date"),
        ({"source": "vibes"}, "source 'vibes' is malformed; write it like 'load-test'"),
        ({"p99_mib": -1}, "p99_mib must be from 0 to 1048576, got -1"),
        ({"image": "my-registry/embedder:1.4"}, "image 'my-registry/embedder:1.4' is malformed"),
    ],
)
def test_malformed_evidence_is_refused_where_it_is_made(kwargs: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {"peak_mib": 9000, "measured_on": datetime.date(2026, 11, 1), "source": "load-test"}
    with pytest.raises(GpuSharingError, match=message):
        Evidence(**{**args, **kwargs})
    assert Evidence(**args).peak_mib == 9000


# --- the rules ----------------------------------------------------------------------------------------------


def test_a_measured_budget_that_covers_its_need_has_no_finding() -> None:
    assert _ids(assess([L4], [svc("a", 2048, allocation=note(evidence=measured()))])) == []


def test_a_budget_below_residency_plus_peak_working_memory_is_an_error_with_the_numbers() -> None:
    (finding,) = assess([L4], [svc("a", 1536, allocation=note(evidence=measured()))]).errors
    assert finding.rule_id == "ecs-gpu-sharing:BudgetBelowNeed"
    assert "1536 MiB is below" in finding.message and "1000 MiB resident + 1000 MiB peak working memory = 2000" in (
        finding.message
    )


@pytest.mark.parametrize("given", [None, note()], ids=["no note", "no evidence"])
def test_a_budget_without_evidence_is_a_guess(given: AllocationNote | None) -> None:
    result = assess([L4], [svc("a", 2048, allocation=given)])
    assert _ids(result, "warning") == [("BudgetIsAGuess", "a")]


def test_a_guess_can_be_acknowledged_with_a_reason() -> None:
    result = assess([L4], [svc("a", 2048, acknowledged=(("ecs-gpu-sharing:BudgetIsAGuess", "new model"),))])
    (finding,) = result.findings
    assert finding.acknowledged == "new model" and result.warnings == []
    assert str(finding).startswith("acknowledged [ecs-gpu-sharing:BudgetIsAGuess]")


def test_evidence_from_another_image_is_a_warning() -> None:
    evidence = measured(image="repo/a" + DIGEST_A)
    same = assess([L4], [svc("a", 2048, allocation=note(evidence=evidence), image="repo/a" + DIGEST_A)])
    assert _ids(same) == []
    moved = assess([L4], [svc("a", 2048, allocation=note(evidence=evidence), image="repo/a" + DIGEST_B)])
    assert _ids(moved) == [("EvidenceOlderThanImage", "a")]
    tagged = assess([L4], [svc("a", 2048, allocation=note(evidence=evidence), image="repo/a:2.0")])
    assert _ids(tagged) == [("EvidenceOlderThanImage", "a")]


# --- isolation groups in the plan ---------------------------------------------------------------------------


def _gpus(result: Any, cap: str) -> list[set[str]]:
    return [
        {name for name, _ in gpu.tasks}
        for group in result.steady.capacity(cap).instances
        for _ in range(group.count)
        for gpu in group.gpus
        if gpu.tasks
    ]


def _hosts(result: Any, cap: str) -> list[set[str]]:
    return [
        {name for gpu in group.gpus for name, _ in gpu.tasks}
        for group in result.steady.capacity(cap).instances
        for _ in range(group.count)
    ]


def test_services_of_different_groups_never_share_a_gpu() -> None:
    shared = assess([L4], [svc("a", 4096, allocation=note()), svc("b", 4096, allocation=note())])
    assert _gpus(shared, "l4") == [{"a", "b"}]
    apart = assess([L4], [svc("a", 4096, allocation=note(isolation_group="x")), svc("b", 4096, allocation=note())])
    assert sorted(map(sorted, _gpus(apart, "l4"))) == [["a"], ["b"]]
    assert apart.steady.instances == 2  # one GPU per host: separate GPUs are separate hosts


def test_on_multi_gpu_hosts_groups_share_hosts_unless_isolate_host() -> None:
    caps = [L4X4]
    gpus = assess(caps, [svc("a", 4096, cap="l4x4", allocation=note(isolation_group="x")), svc("b", 4096, cap="l4x4")])
    assert sorted(map(sorted, _gpus(gpus, "l4x4"))) == [["a"], ["b"]] and _hosts(gpus, "l4x4") == [{"a", "b"}]
    assert ("IsolationNotEnforceable", "a") in _ids(gpus)  # ECS picks the GPU inside a host
    own_hosts = note(isolation_group="x", isolate_host=True)
    hosts = assess(
        caps, [svc("a", 4096, cap="l4x4", allocation=own_hosts, kept_apart=True), svc("b", 4096, cap="l4x4")]
    )
    assert sorted(map(sorted, _hosts(hosts, "l4x4"))) == [["a"], ["b"]]
    assert ("IsolationNotEnforceable", "a") not in _ids(hosts)
    # Hosts of its own are kept only when ECS is told: without the expression, the warning says so.
    untold = assess(caps, [svc("a", 4096, cap="l4x4", allocation=own_hosts), svc("b", 4096, cap="l4x4")])
    (finding,) = [f for f in untold.findings if f.rule_id.endswith("IsolationNotEnforceable")]
    assert "no placement expression that tells ECS" in finding.message


# --- the fleet file -----------------------------------------------------------------------------------------

BASE = """
name = "t"
[capacity.l4]
instance_types = ["g6.xlarge"]
[service.a]
capacity = "l4"
image = "repo/a@sha256:AAAA"
desired_count = 2
cpu_units = 512
memory_mib = 1024
gpu_budget_mib = 4096
[service.a.allocation]
residency_mib = 2048
peak_working_mib = 1024
shared_failure = "retries"
isolation_group = "x"
measured_peak_mib = 2900
measured_on = 2026-11-20
measured_image = "repo/a@sha256:AAAA"
[service.b]
capacity = "l4"
image = "repo/b:1"
desired_count = 1
cpu_units = 512
memory_mib = 1024
gpu_budget_mib = 2048
""".replace("AAAA", "a" * 64)


def _parse(text: str) -> fleet.FleetSpec:
    return fleet.parse(tomllib.loads(text), source="f.toml")


def test_the_fleet_file_carries_the_note_and_its_evidence() -> None:
    spec = _parse(BASE)
    a = spec.services["a"].allocation
    assert a is not None and a.need_mib == 3072 and a.isolation_group == "x"
    assert a.evidence == Evidence(2900, DAY, "evaluate", None, "repo/a@sha256:" + "a" * 64)
    doc = plan_report.document(assess(*from_fleet(spec)))
    (entry,) = [s for s in doc.services if s.name == "a"]
    assert entry.allocation is not None and entry.allocation.evidence is not None
    assert entry.allocation.headroom_mib == 1024 and entry.allocation.evidence.headroom_mib == 1196


def test_the_fleet_files_groups_become_placement_expressions_both_ways() -> None:
    spec = _parse(BASE)
    assert spec.host_isolation() == {
        "a": "not(task:group == service:t-b)",
        "b": "not(task:group == service:t-a)",
    }


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("gpu_budget_mib = 4096", "gpu_budget_mib = 3000"), "service.a.gpu_budget_mib: its GPU budget of 3000 MiB"),
        (("measured_on = 2026-11-20\n", ""), "measured_peak_mib and measured_on go together"),
        (('isolation_group = "x"', "isolate_host = true"), "isolate_host needs isolation_group"),
        (("measured_on = 2026-11-20", 'measured_on = "yesterday"'), "measured_on must be a date (2026-11-30)"),
        (("residency_mib = 2048\n", ""), "missing key service.a.allocation.residency_mib"),
        (
            ('measured_image = "repo/a@sha256:', 'measured_image = "repo/a:1" #'),
            "measured_image 'repo/a:1' is malformed",
        ),
    ],
)
def test_malformed_notes_are_refused_naming_the_key(edit: tuple[str, str], message: str) -> None:
    with pytest.raises(FleetSpecError) as error:
        _parse(BASE.replace(*edit))
    assert message in str(error.value), str(error.value)


# --- the constructs -----------------------------------------------------------------------------------------


def test_a_construct_budget_below_its_note_fails_synth() -> None:
    fleet_ = Fleet()
    fleet_.service("Emb", 1, 2048, allocation=note(evidence=measured()))
    fleet_.service("Big", 1, 1024, allocation=note(evidence=measured()))
    with pytest.raises(RuntimeError, match=r"\[ecs-gpu-sharing:BudgetBelowNeed\] its GPU budget of 1024 MiB"):
        fleet_.synth()


def test_a_construct_without_a_note_warns_that_its_budget_is_a_guess() -> None:
    fleet_ = Fleet()
    fleet_.service("Emb", 1, 2048, allocation=None)
    fleet_.synth()
    (warning,) = Annotations.from_stack(fleet_.stack).find_warning("*", Match.string_like_regexp("is a guess"))
    assert "ecs-gpu-sharing:BudgetIsAGuess" in str(warning.entry.data)


def test_set_allocation_takes_only_an_allocation_note() -> None:
    fleet_ = Fleet()
    service = fleet_.service("Emb", 1, 2048)
    with pytest.raises(ServiceError, match="allocation must be an AllocationNote"):
        FleetPlan.of(fleet_.stack).set_allocation(service, {"residency_mib": 1})  # type: ignore[arg-type]


def test_a_daemon_service_takes_its_share_of_every_host_from_the_plan() -> None:
    fleet_ = Fleet()
    fleet_.service("Emb", 1, 2048)
    daemon = ecs.Ec2TaskDefinition(fleet_.stack, "DaemonTask")
    daemon.add_container("d", image=IMAGE, cpu=256, memory_limit_mib=512)
    ecs.Ec2Service(fleet_.stack, "Daemon", cluster=fleet_.cluster, task_definition=daemon, daemon=True)
    fleet_.synth()
    (cap,) = FleetPlan.of(fleet_.stack).assessment.steady.capacities
    full = host_facts(["g6.xlarge"])
    assert cap.capacity.daemons == ("Daemon",)
    assert (cap.capacity.host_cpu_units, cap.capacity.host_memory_mib) == (
        full.host_cpu_units - 256,
        full.host_memory_mib - 512,
    )


def test_on_one_gpu_hosts_a_group_needs_a_placement_expression_for_ecs_to_keep_it_apart() -> None:
    grouped = note(isolation_group="x", evidence=measured())
    told = svc("a", 4096, allocation=grouped, kept_apart=True)
    untold = svc("a", 4096, allocation=grouped)
    other = svc("b", 4096, allocation=note(evidence=measured()))
    assert ("IsolationNotEnforceable", "a") in _ids(assess([L4], [untold, other]))
    assert _ids(assess([L4], [told, other])) == []
    spec = _parse(BASE)  # the fleet file's services carry the app's expressions
    assert [f for f in assess(*from_fleet(spec)).findings if "Isolation" in f.rule_id] == []
