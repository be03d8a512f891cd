"""The generated pages are what their tables say, and the plan JSON is what its contract says, both ways."""

from __future__ import annotations

import dataclasses
import datetime
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ecs_gpu_sharing.core import plan_document, plan_report
from ecs_gpu_sharing.core.allocation import AllocationNote, Evidence
from ecs_gpu_sharing.core.capacity_facts import host_facts
from ecs_gpu_sharing.core.cost import Prices
from ecs_gpu_sharing.core.errors import PlanError
from ecs_gpu_sharing.core.plan_inputs import capacity_input, service_input
from ecs_gpu_sharing.core.rules import OutsideService, assess
from ecs_gpu_sharing.core.shape import TaskShape

from conftest import REPO


def _docs_script() -> object:
    spec = importlib.util.spec_from_file_location("docs_script", REPO / "scripts" / "docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_generated_page_is_committed_as_generated() -> None:
    pages = _docs_script().pages()  # type: ignore[attr-defined]
    stale = [str(p.relative_to(REPO)) for p, text in pages.items() if p.read_text(encoding="utf-8") != text]
    assert stale == [], "run `make docs` and commit the pages"


def _full_plan() -> plan_document.PlanDocument:
    """A plan with every part the document declares: costs, an allocation note with evidence, a task without a GPU,
    a whole-GPU task, a service outside the plan, findings."""
    caps = [capacity_input("l4", host_facts(["g6.12xlarge"]), max_instances=3)]
    note = AllocationNote(
        residency_mib=1024,
        peak_working_mib=512,
        shared_failure="requests fail until ECS restarts it",
        evidence=Evidence(peak_mib=1400, measured_on=datetime.date(2026, 11, 1), source="load-test", p99_mib=1300),
    )
    services = [
        service_input("emb", "l4", TaskShape(512, 1024, (2048,)), 4, count_source="desired count", allocation=note),
        service_input("cpu", "l4", TaskShape(256, 512, ()), 2, count_source="desired count"),
        service_input("whole", "l4", TaskShape(1024, 2048, (), whole_gpus=1), 1, count_source="desired count"),
    ]
    outside = [OutsideService("x", "l4", "its count is a parameter", "state a count")]
    prices = Prices("us-east-1", datetime.date(2026, 12, 1), "USD", {"g6.12xlarge": 4.6}, "test")
    allowed = [("app/Telemetry/Task/Resource", "ecs-gpu-sharing:HostPathMounted", "the daemon reads /proc")]
    not_judged = [("app/Svc/Service", "its task definition arn:... is not in the app's templates")]
    deployed = {
        "emb": plan_document.DeployedAs(
            stack="app-services-1", logical_id="embService1A2B3C4D", nested_stacks=("ModelsNestedStackResource1A2B",)
        )
    }
    return plan_report.document(
        assess(caps, services, outside=outside),
        prices,
        allowances=allowed,
        not_judged=not_judged,
        deployed_as=deployed,
    )


def _paths(doc: Any, prefix: str = "") -> Iterator[str]:
    """Every field path a JSON document holds, ``[]`` stepping into a list's items."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            yield path
            yield from _paths(value, path)
    elif isinstance(doc, list):
        for item in doc:
            yield from _paths(item, f"{prefix}[]")


def test_a_full_plan_writes_every_declared_field_and_reads_back_the_same() -> None:
    plan = _full_plan()
    doc = json.loads(json.dumps(plan.to_json()))
    declared = {path for path, *_ in plan_document.fields()}
    assert declared - set(_paths(doc)) == set(), "fields declared that even a full plan never fills"
    assert plan_document.load(doc, source="full.json") == plan
    assert plan_document.load(doc, source="full.json").to_json() == doc

    def plain(value: object) -> object:  # what to_json writes, by its definition: each field by name, in order
        if dataclasses.is_dataclass(value):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return [plain(v) for v in value] if isinstance(value, tuple) else value

    assert json.dumps(plan.to_json()) == json.dumps(plain(plan))


def test_every_field_says_what_it_is_and_means() -> None:
    for path, kind, meaning, _ in plan_document.fields():
        assert kind and meaning, path
    page = plan_document.markdown()
    assert "| `capacities[].usable_gpu_memory_mib` | whole number from 1 |" in page
    assert (
        "| `capacities[].ecs_placement_instances` | whole number from 0, or null |" in page and "(*optional*)" in page
    )


def _edited(doc: dict[str, Any], path: tuple[Any, ...], value: Any = ..., *, delete: bool = False) -> dict[str, Any]:
    edited = json.loads(json.dumps(doc))
    target = edited
    for step in path[:-1]:
        target = target[step]
    if delete:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return dict(edited)


def test_the_reader_refuses_each_kind_of_wrong_field_in_one_line_naming_it() -> None:
    doc = _full_plan().to_json()
    emb = [s["name"] for s in doc["services"]].index("emb")
    cases = [
        (
            ("capacities", 0, "usable_gpu_memory_mib"),
            0,
            "capacities[].usable_gpu_memory_mib is 0, not a whole number from 1",
        ),
        (("capacities", 0, "instances", 0, "count"), -1, "instances[].count is -1, not a whole number from 0"),
        (("services", 0, "tasks"), True, "services[].tasks is True, not a whole number"),
        (("services", 0, "task", "gpu_budgets_mib"), "2048", "gpu_budgets_mib is '2048', not a list"),
        (("services", emb, "task", "gpu_budgets_mib", 0), 1e300, "gpu_budgets_mib[] is 1e+300, not a whole number"),
        (("summary", "fits"), "yes", "summary.fits is 'yes', not true or false"),
        (("summary", "cost", "per_hour"), "1", "summary.cost.per_hour is '1', not a number"),
        (("findings", 0, "message"), None, "findings[].message is None, not text"),
        (("summary",), [], "summary is [], not an object"),
    ]
    for path, value, said in cases:
        with pytest.raises(PlanError) as caught:
            plan_document.load(_edited(doc, path, value), source="p.json")
        message = str(caught.value)
        assert message.startswith("p.json: not a fleet plan") and said in message and "\n" not in message, message
    with pytest.raises(PlanError, match=r"p.json: .*capacities\[\]\.gpus_per_instance is missing"):
        plan_document.load(_edited(doc, ("capacities", 0, "gpus_per_instance"), delete=True), source="p.json")
    with pytest.raises(PlanError, match="the document is 'x', not an object"):
        plan_document.load("x", source="p.json")


def test_the_reader_takes_an_older_plan_and_a_newer_one() -> None:
    doc = _full_plan().to_json()
    older = _edited(
        _edited(doc, ("capacities", 0, "ecs_placement_instances"), delete=True), ("allowances",), delete=True
    )
    read = plan_document.load(older, source="old.json")
    assert read.capacities[0].ecs_placement_instances is None and read.allowances == ()
    newer = _edited(doc, ("summary", "new_figure"), 1)
    assert plan_document.load(newer, source="new.json") == _full_plan()


def test_the_example_fleets_plan_reads_back_the_same() -> None:
    from ecs_gpu_sharing.core import fleet
    from ecs_gpu_sharing.core.plan_inputs import from_fleet

    doc = plan_report.document(assess(*from_fleet(fleet.load(REPO / "fleet.toml")))).to_json()
    assert plan_document.load(doc, source="example").to_json() == doc


def test_docs_link_only_to_files_that_exist() -> None:
    import re

    for page in [REPO / "README.md", *(REPO / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).exists(), f"{page.name} links to {target}, which does not exist"


def test_the_docs_script_writes_into_docs(tmp_path: Path) -> None:
    pages = _docs_script().pages()  # type: ignore[attr-defined]
    assert {p.name for p in pages} == {
        "fleet-file.md",
        "rules.md",
        "aws-rules.md",
        "plan-json.md",
        "fleet.schema.json",
        "options.py",
    }
