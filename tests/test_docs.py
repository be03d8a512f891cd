"""The generated pages are what their tables say, and the plan JSON is what its contract says, both ways."""

from __future__ import annotations

import datetime
import importlib.util
from pathlib import Path

from ecs_gpu_sharing.core import plan_contract, plan_report
from ecs_gpu_sharing.core.allocation import AllocationNote, Evidence
from ecs_gpu_sharing.core.capacity_facts import host_facts
from ecs_gpu_sharing.core.cost import Prices
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


def _full_plan() -> dict[str, object]:
    """A plan with every part the contract names: costs, an allocation note with evidence, a task without a GPU, a
    whole-GPU task, a service outside the plan, findings."""
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
    deployed = {"emb": ("app-services-1", "embService1A2B3C4D")}
    return plan_report.to_json(
        assess(caps, services, outside=outside),
        prices,
        allowances=allowed,
        not_judged=not_judged,
        deployed_as=deployed,
    )


def test_the_plan_json_is_its_contract_both_ways() -> None:
    written = set(plan_contract.paths(_full_plan()))
    assert written - plan_contract.PATHS == set(), "fields the plan writes that the contract does not list"
    assert plan_contract.PATHS - written == set(), "fields the contract lists that the plan never writes"


def test_the_example_fleets_plan_writes_only_contract_fields() -> None:
    from ecs_gpu_sharing.core import fleet
    from ecs_gpu_sharing.core.plan_inputs import from_fleet

    doc = plan_report.to_json(assess(*from_fleet(fleet.load(REPO / "fleet.toml"))))
    assert set(plan_contract.paths(doc)) <= plan_contract.PATHS


def test_a_field_outside_the_contract_is_caught() -> None:
    doc = _full_plan()
    doc["summary"]["new_figure"] = 1  # type: ignore[index]
    assert set(plan_contract.paths(doc)) - plan_contract.PATHS == {"summary.new_figure"}


def test_docs_link_only_to_files_that_exist() -> None:
    import re

    for page in [REPO / "README.md", *(REPO / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).exists(), f"{page.name} links to {target}, which does not exist"


def test_the_docs_script_writes_into_docs(tmp_path: Path) -> None:
    pages = _docs_script().pages()  # type: ignore[attr-defined]
    assert {p.name for p in pages} == {"fleet-file.md", "rules.md", "aws-rules.md", "plan-json.md", "fleet.schema.json"}
