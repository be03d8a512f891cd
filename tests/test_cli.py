"""The command line."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

import pytest

from ecs_gpu_sharing.cli import main

from conftest import THREE_MODELS


def test_catalog_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "show", "g6.xlarge"]) == 0
    assert "1 x NVIDIA L4, 22888 MiB per GPU" in capsys.readouterr().out


def test_catalog_show_unknown_type_is_one_line_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "show", "m5.large"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'m5.large' is not in the GPU catalog" in err


def test_catalog_list_hides_unsupported_unless_asked(capsys: pytest.CaptureFixture[str]) -> None:
    main(["catalog", "list"])
    usable = capsys.readouterr().out
    main(["catalog", "list", "--all"])
    everything = capsys.readouterr().out
    assert "g6.xlarge" in usable and "g6f.large" not in usable and "g6f.large" in everything


# --- plan -----------------------------------------------------------------------------------------------

EXAMPLE = str(THREE_MODELS)


def test_plan_prints_a_table_for_the_example_fleet(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", EXAMPLE]) == 0
    out = capsys.readouterr().out
    assert "l4 (g6.2xlarge): 2 instances" in out and "fits: yes" in out
    assert "reranker x2, embedder x3" in out and "small-llm x2" in out and "(optimal)" in out


def test_plan_json_follows_the_contract(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", EXAMPLE, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"capacities", "services", "outside_plan", "findings", "summary"}
    assert set(doc["summary"]) == {
        "instances",
        "instance_lower_bound",
        "gpus",
        "gpu_lower_bound",
        "whole_gpu_gpus",
        "fits",
        "cost",  # null without a prices file
        "cost_note",  # what the cost is based on, or how to get prices
    }
    cap = doc["capacities"][0]
    assert set(cap) == {
        "name",
        "kind",
        "instance_type",
        "instance_types",
        "gpus_per_instance",
        "ec2_gpu_memory_mib",
        "ecs_gpu_memory_mib",
        "gpu_margin_mib",
        "gpu_memory_basis",
        "gpu_memory_source",
        "daemons",
        "usable_gpu_memory_mib",
        "host_cpu_units",
        "host_memory_mib",
        "min_instances",
        "max_instances",
        "surge_instances",
        "instance_lower_bound",
        "gpu_lower_bound",
        "optimal",
        "instances",
    }
    assert set(cap["instances"][0]) == {"count", "gpus", "cpu_units_used", "memory_mib_used", "tasks_without_gpu"}
    assert set(cap["instances"][0]["gpus"][0]) == {"tasks", "used_gpu_memory_mib", "whole"}
    assert set(cap["instances"][0]["gpus"][0]["tasks"][0]) == {"service", "tasks", "gpu_budget_mib", "containers"}
    assert set(doc["services"][0]) == {
        "name",
        "capacity",
        "tasks",
        "count_source",
        "max_percent",
        "surge_tasks",
        "placed",
        "task",
        "allocation",
    }
    assert all(s["allocation"] is None for s in doc["services"])  # this fleet has no allocation notes
    assert {s["name"]: (s["tasks"], s["placed"]) for s in doc["services"]} == {
        "embedder": (4, 4),
        "reranker": (2, 2),
        "small-llm": (2, 2),
    }
    placed = sum(
        h["count"] * t["tasks"]
        for c in doc["capacities"]
        for h in c["instances"]
        for g in h["gpus"]
        for t in g["tasks"]
    )
    assert placed == 8 and doc["summary"]["fits"] is True


def test_plan_svg_draws_every_gpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    svg = tmp_path / "plan.svg"
    assert main(["plan", EXAMPLE, "--svg", str(svg)]) == 0
    root = ElementTree.fromstring(svg.read_text())
    texts = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert sum(1 for t in texts if t.startswith("instance ")) == 3
    titles = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert len(titles) == 8 and titles.count("embedder: 3072 MiB") == 4
    assert {"embedder", "reranker", "small-llm"} <= set(texts)  # the legend


def test_plan_exits_1_with_the_reason_when_the_fleet_does_not_fit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(THREE_MODELS.read_text().replace("gpu_budget_mib = 18432", "gpu_budget_mib = 48000"))
    assert main(["plan", str(fleet)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {fleet}: service.small-llm.gpu_budget_mib: one task needs 48000 MiB of GPU memory")


def test_plan_refuses_a_malformed_fleet_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fleet = tmp_path / "fleet.toml"
    fleet.write_text('name = "x"\n[capacity.a]\ninstance_types = ["g6.xlarge"]\n[service]\n[extra]\n')
    assert main(["plan", str(fleet)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"error: {fleet}: unknown key extra; the keys here are: name, account, region, vpc_id, "
        "service_connect_namespace, telemetry, prices, capacity, service, load_balancer",
        f"error: {fleet}: no [service.<name>] table; a fleet needs at least one service to plan",
    ]


def test_a_reader_that_leaves_early_gets_no_traceback() -> None:
    """`plan --json | head -1` on a wide fleet: the pipe closes while the plan is printed."""
    import subprocess
    import sys

    from conftest import REPO

    run = subprocess.run(
        f"{sys.executable} -m ecs_gpu_sharing.cli plan {REPO / 'tests' / 'fleets' / 'wide.toml'} --json | head -1",
        shell=True,
        capture_output=True,
        text=True,
        executable="/bin/bash",
    )
    assert run.stdout.strip() == "{" and "Traceback" not in run.stderr and "BrokenPipe" not in run.stderr, run.stderr
