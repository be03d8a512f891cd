"""plan diff: what changed between two plans, as a table or Markdown, and an exit status CI can act on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ecs_gpu_sharing.cli import main
from ecs_gpu_sharing.core import fleet
from ecs_gpu_sharing.core.plan_inputs import from_fleet
from ecs_gpu_sharing.core.plan_report import document
from ecs_gpu_sharing.core.rules import assess

from conftest import THREE_MODELS

EXAMPLE = THREE_MODELS.read_text()


def _plan(tmp_path: Path, name: str, text: str) -> Path:
    source = tmp_path / f"{name}.toml"
    source.write_text(text)
    spec = fleet.load(source)
    out = tmp_path / f"{name}.json"
    out.write_text(json.dumps(document(assess(*from_fleet(spec))).to_json()))
    return out


def _diff(tmp_path: Path, old: str, new: str, *extra: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["plan", "diff", str(_plan(tmp_path, "old", old)), str(_plan(tmp_path, "new", new)), *extra])
    return code, capsys.readouterr().out


def test_nothing_changed_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _diff(tmp_path, EXAMPLE, EXAMPLE, capsys=capsys)
    assert code == 0 and out.strip().endswith("grew: no")


def test_growth_exits_1_and_names_the_capacity_and_service(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bigger = EXAMPLE.replace("desired_count = 4", "desired_count = 12")
    code, out = _diff(tmp_path, EXAMPLE, bigger, capsys=capsys)
    assert code == 1
    l4 = next(line for line in out.splitlines() if line.startswith("l4 "))
    assert "2 -> 3 (+1)" in l4
    assert "service embedder: tasks 4 -> 12 (+8)" in out and "grew: yes" in out


def test_shrink_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    smaller = EXAMPLE.replace("desired_count = 4", "desired_count = 1")
    code, out = _diff(tmp_path, EXAMPLE, smaller, capsys=capsys)
    assert code == 0 and "tasks 4 -> 1 (-3)" in out and "grew: no" in out


def test_a_newly_failing_check_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bounded = EXAMPLE.replace("min_instances = 1\n", "min_instances = 1\nmax_instances = 1\n", 1)
    code, out = _diff(tmp_path, EXAMPLE, bounded, capsys=capsys)
    assert code == 1 and "newly failing: ecs-gpu-sharing:CountsExceedMaxInstances capacity l4" in out


def test_added_and_removed_services_as_markdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    renamed = EXAMPLE.replace("[service.reranker]", "[service.reranker-v2]")
    code, out = _diff(tmp_path, EXAMPLE, renamed, "--markdown", capsys=capsys)
    assert out.startswith("### GPU fleet plan: what changed\n\n| capacity | instances | GPUs | GPU MiB used |")
    assert "- services added: reranker-v2" in out and "- service reranker left the plan: not in the new plan" in out
    # A rename is a service leaving the plan: a reviewer looks.
    assert code == 1 and out.rstrip().endswith("please review.**")


def test_a_new_capacity_is_growth(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    only_l4 = EXAMPLE.replace('capacity = "l40s"', 'capacity = "l4"').replace("[capacity.l40s]", "[capacity.unused]")
    code, out = _diff(tmp_path, only_l4, EXAMPLE, capsys=capsys)
    assert code == 1 and "(new) " in next(line for line in out.splitlines() if line.startswith("l40s"))


def test_a_capacity_that_leaves_while_services_ran_on_it_asks_for_two_deploys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # l40s renamed, its service moved with it: CloudFormation would replace the capacity in one deploy.
    renamed = EXAMPLE.replace("[capacity.l40s]", "[capacity.l40s-v2]").replace(
        'capacity = "l40s"', 'capacity = "l40s-v2"'
    )
    code, out = _diff(tmp_path, EXAMPLE, renamed, capsys=capsys)
    assert code == 1
    assert (
        "capacity l40s leaves (removed) while services ran on it (small-llm): a deploy cannot take it off the cluster while "
        "their tasks run there; deploy in two steps, moving the services first" in out
    )
    # The first of the two deploys: the new capacity added and the service moved, the old one kept. Nothing leaves.
    both = renamed + EXAMPLE[EXAMPLE.index("[capacity.l40s]") :].split("\n\n", 1)[0] + "\n"
    _, out = _diff(tmp_path, EXAMPLE, both, capsys=capsys)
    assert "leaves" not in out
    # Another kind under the same name is replaced too: the new kind goes under another name.
    managed = EXAMPLE.replace(
        '[capacity.l40s]\ninstance_types = ["g6e.2xlarge"]     # 1 x NVIDIA L40S (45776 MiB), 8 vCPU, 64 GiB\n'
        "min_instances = 1\n",
        '[capacity.l40s]\nkind = "managed-instances"\ninstance_types = ["g6e.2xlarge"]\n',
    )
    assert managed != EXAMPLE
    _, out = _diff(tmp_path, EXAMPLE, managed, capsys=capsys)
    assert "capacity l40s leaves (now managed-instances) while services ran on it (small-llm)" in out
    assert "moving the services first, the new kind under another name" in out
    # A capacity of no service leaves without a word.
    code, out = _diff(tmp_path, both, renamed, capsys=capsys)
    assert "leaves" not in out and code == 0


def test_a_file_that_is_not_a_plan_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"x": 1}')
    assert main(["plan", "diff", str(bad), str(bad)]) == 1
    assert (
        capsys.readouterr().err.strip()
        == f"error: {bad}: not a fleet plan as the library writes it: capacities is missing; give a "
        "gpu-fleet-plan.json or plan --json output as the library wrote it, unedited"
    )


# --- what a reviewer must not miss (#24, section 4) ---------------------------------------------------------------


def _doc(tmp_path: Path, name: str, text: str) -> dict[str, object]:
    return dict(json.loads(_plan(tmp_path, name, text).read_text()))


def _diff_docs(
    tmp_path: Path, old: dict[str, object], new: dict[str, object], capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str]:
    (tmp_path / "a.json").write_text(json.dumps(old))
    (tmp_path / "b.json").write_text(json.dumps(new))
    code = main(["plan", "diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), *extra])
    return code, capsys.readouterr().out


def test_a_growing_maximum_exits_1_naming_the_capacity(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = _doc(tmp_path, "old", EXAMPLE)
    new = json.loads(json.dumps(old))
    new["capacities"][0]["max_instances"] += 1  # type: ignore[index]
    name = new["capacities"][0]["name"]  # type: ignore[index]
    code, out = _diff_docs(tmp_path, old, new, capsys)
    assert code == 1
    assert any(line.startswith(name) and "(+1)" in line for line in out.splitlines()), out
    assert "max instances" in out and "grew: yes" in out


def test_a_growing_surge_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = _doc(tmp_path, "old", EXAMPLE)
    new = json.loads(json.dumps(old))
    new["capacities"][0]["surge_instances"] += 2  # type: ignore[index]
    code, out = _diff_docs(tmp_path, old, new, capsys)
    assert code == 1 and "surge instances" in out and "(+2)" in out


def test_a_service_leaving_the_plan_exits_1_naming_it_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = _doc(tmp_path, "old", EXAMPLE)
    new = json.loads(json.dumps(old))
    gone = new["services"].pop(0)  # type: ignore[attr-defined]
    new["outside_plan"] = [{"name": gone["name"], "capacity": gone["capacity"], "reason": "its count is a token"}]
    code, out = _diff_docs(tmp_path, old, new, capsys, "--markdown")
    assert code == 1
    assert f"- service {gone['name']} left the plan: its count is a token" in out
    assert "Nothing grew" not in out and "please review" in out


def test_a_changed_budget_names_its_service(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = _doc(tmp_path, "old", EXAMPLE)
    new = json.loads(json.dumps(old))
    service = new["services"][0]  # type: ignore[index]
    before = list(service["task"]["gpu_budgets_mib"])
    service["task"]["gpu_budgets_mib"] = [b + 1024 for b in before]
    code, out = _diff_docs(tmp_path, old, new, capsys)
    after = [b + 1024 for b in before]
    assert f"service {service['name']}: GPU budgets (MiB) {before} -> {after}" in out
    assert code == 0  # a budget alone is not growth; the capacity figures say whether it grew


def test_the_text_table_keeps_its_columns_apart_however_wide_the_figures() -> None:
    """Each column is as wide as its widest cell: a GPU memory figure of nine digits changing, or a long capacity name,
    must not run into the next column."""
    from ecs_gpu_sharing.core.plan_diff import Change, PlanDiff, to_text

    d = PlanDiff()
    for name, old, new in (("l4", 2, 3), ("a-capacity-with-a-long-name", 1, 1)):
        d.capacities[name] = {
            "instances": Change(name, old, new),
            "GPUs": Change(name, old * 8, new * 8),
            "GPU MiB used": Change(name, 123_456_789 * old, 123_456_789 * new),
            "max instances": Change(name, None, 4),
            "surge instances": Change(name, old, None),
        }
    lines = to_text(d).splitlines()[:3]
    header = lines[0]
    starts = [header.index(label) for label in ("instances", "GPUs", "GPU MiB used", "max instances", "surge")]
    for line in lines[1:]:
        cells = [c for c in line.split("  ") if c.strip()]
        assert len(cells) == 6, line  # capacity and five figures, each apart from the next by two spaces at least
        assert [line.index(c.strip(), s) for c, s in zip(cells[1:], starts, strict=True)] == starts, line
