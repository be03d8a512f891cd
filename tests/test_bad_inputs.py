"""Every bad input: one clear line naming the file and key (or option), fast, no traceback, nothing half-written."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ecs_gpu_sharing import GpuSharingError, MpsShare
from ecs_gpu_sharing.cli import main
from ecs_gpu_sharing.core import fleet
from ecs_gpu_sharing.core.ami_release import check_release
from ecs_gpu_sharing.core.plan_inputs import from_fleet

from conftest import REPO, THREE_MODELS

EXAMPLE = THREE_MODELS.read_text()


def _fleet(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fleet.toml"
    path.write_text(text)
    return path


def _plan_errors(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    path = _fleet(tmp_path, text)
    assert main(["plan", str(path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return [line.removeprefix(f"error: {path}: ") for line in err.splitlines()]


# --- huge numbers are refused fast, naming the quota -------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            ("desired_count = 4", "desired_count = 100000000"),
            'service.embedder.desired_count must be from 0 to 5000 (the ECS quota "tasks per service"), got 100000000',
        ),
        (
            ("min_instances = 1\n", "min_instances = 1000000000\n"),
            'capacity.l4.min_instances must be from 0 to 5000 (the ECS quota "container instances per cluster"), '
            "got 1000000000",
        ),
        (
            ("min_instances = 1\n", "min_instances = 1\nmax_instances = 9223372036854775807\n"),
            'capacity.l4.max_instances must be from 1 to 5000 (the ECS quota "container instances per cluster"), '
            "got 9223372036854775807",
        ),
    ],
)
def test_counts_past_an_aws_quota_are_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: tuple[str, str], message: str
) -> None:
    start = time.perf_counter()
    assert _plan_errors(tmp_path, EXAMPLE.replace(*edit, 1), capsys) == [message]
    assert time.perf_counter() - start < 1


def test_a_million_tasks_plan_in_well_under_a_second() -> None:
    from ecs_gpu_sharing.core.planner import CapacityInput, ServiceInput, plan
    from ecs_gpu_sharing.core.shape import TaskShape

    spec = fleet.parse(tomllib.loads(EXAMPLE))
    caps = from_fleet(spec)[0]
    services = [ServiceInput(f"s{i}", "l4", TaskShape(512, 1024, (1000 + 97 * i,)), 5000) for i in range(200)]
    start = time.perf_counter()
    result = plan([c for c in caps if c.name == "l4"] or list[CapacityInput](), services)
    assert result.fits and time.perf_counter() - start < 1


# --- every problem of a fleet file at once, file and key in each -----------------------------------------


def test_every_problem_is_reported_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (
        EXAMPLE.replace('image = "public.ecr.aws/docker/library/python:3.12-slim"', 'image = ""', 1)
        .replace('MODEL_ID = "BAAI/bge-small-en-v1.5"', '"" = "x", "A B" = "y", CUDA_VISIBLE_DEVICES = "1"', 1)
        .replace('ami_release = "20261113"', 'ami_release = "20991231"', 1)
    )
    errors = _plan_errors(tmp_path, text, capsys)
    assert errors == [
        "capacity.l4.ami_release: AMI release '20991231' is in the future: no AMI is published for it yet; use a "
        "published release, such as 20261113 (ecs-gpu-sharing ami verify --release checks one)",
        "service.embedder.image '' is malformed; write it like 'my-registry/embedder:1.4'",
        "service.embedder.environment key '' is not a usable variable name; use letters, digits and '_', not "
        "starting with a digit",
        "service.embedder.environment key 'A B' is not a usable variable name; use letters, digits and '_', not "
        "starting with a digit",
        "service.embedder.environment.CUDA_VISIBLE_DEVICES would steer the GPU: ECS sets NVIDIA_VISIBLE_DEVICES and "
        "the MPS limits (CUDA_MPS_*) for MPS containers from their budget; remove it",
    ]


@pytest.mark.parametrize(
    "name", ["NVIDIA_VISIBLE_DEVICES", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "NVIDIA_DRIVER_CAPABILITIES"]
)
def test_environment_that_steers_the_gpu_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    text = EXAMPLE.replace('MODEL_ID = "BAAI/bge-small-en-v1.5"', f'{name} = "all"', 1)
    (error,) = _plan_errors(tmp_path, text, capsys)
    assert error.startswith(f"service.embedder.environment.{name} would steer the GPU")


def test_an_image_with_spaces_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = EXAMPLE.replace('"public.ecr.aws/docker/library/python:3.12-slim"', '"my image:1"', 1)
    assert _plan_errors(tmp_path, text, capsys) == [
        "service.embedder.image 'my image:1' is malformed; write it like 'my-registry/embedder:1.4'"
    ]


def test_a_fleet_with_an_empty_service_table_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = 'name = "x"\n[capacity.l4]\ninstance_types = ["g6.xlarge"]\n[service]\n'
    assert _plan_errors(tmp_path, text, capsys) == [
        "no [service.<name>] table; a fleet needs at least one service to plan"
    ]


def test_a_budget_too_large_names_the_file_and_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (error,) = _plan_errors(tmp_path, EXAMPLE.replace("gpu_budget_mib = 18432", "gpu_budget_mib = 48000"), capsys)
    assert error.startswith("service.small-llm.gpu_budget_mib: one task needs 48000 MiB of GPU memory on one GPU")


def test_a_fleet_file_that_is_not_utf8_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "fleet.toml"
    path.write_bytes(b'name = "caf\xe9"\n')
    assert main(["plan", str(path)]) == 1
    assert capsys.readouterr().err == f"error: {path}: not UTF-8 text (byte 11); save the fleet file as UTF-8\n"


def test_a_folder_given_as_the_fleet_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(tmp_path)]) == 1
    assert (
        capsys.readouterr().err == f"error: {tmp_path}: is a folder, not a fleet file; give the path of a .toml file\n"
    )


def test_an_unknown_region_is_refused_when_an_account_is_given(tmp_path: Path) -> None:
    from stacks.fleet_app import build_app

    from conftest import new_app

    doc = tomllib.loads(
        EXAMPLE.replace('name = "models"', 'name = "models"\naccount = "123456789012"\nregion = "xx-nowhere-1"')
    )
    with pytest.raises(GpuSharingError, match=r"region 'xx-nowhere-1' is not an AWS region botocore knows"):
        build_app(new_app(), fleet.parse(doc, source="f.toml"))


# --- output paths are checked first; writes are whole ------------------------------------------------------


@pytest.mark.parametrize("target", ["missing/plan.svg", "."])
def test_plan_svg_into_a_missing_folder_or_onto_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str
) -> None:
    svg = tmp_path / target
    assert main(["plan", str(THREE_MODELS), "--svg", str(svg)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: --svg {svg}: ") and err.count("\n") == 1
    assert ("does not exist" in err) if target != "." else ("is a folder" in err)


@pytest.mark.parametrize("kind", ["folder", "missing", "not-a-catalog"])
def test_catalog_refresh_checks_its_output_before_any_aws_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "")  # no credentials: a call to AWS would fail differently
    output = {"folder": tmp_path, "missing": tmp_path / "none" / "c.json", "not-a-catalog": tmp_path / "c.json"}[kind]
    if kind == "not-a-catalog":
        output.write_text('{"some": "thing"}')
    start = time.perf_counter()
    assert main(["catalog", "refresh", "--region", "us-east-1", "--output", str(output)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: --output {output}: ") and err.count("\n") == 1 and time.perf_counter() - start < 2


# --- a broken AWS configuration is one line -------------------------------------------------------------------


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return subprocess.run(
        [sys.executable, "-m", "ecs_gpu_sharing.cli", *args],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"AWS_PROFILE": "no-such-profile"}, "The config profile (no-such-profile) could not be found"),
        ({"AWS_ENDPOINT_URL": "notaurl"}, "check AWS_ENDPOINT_URL"),
        ({"AWS_CONFIG_FILE": "{tmp}/config"}, "reading your AWS configuration"),
    ],
)
def test_aws_configuration_problems_are_one_line(tmp_path: Path, env: dict[str, str], expected: str) -> None:
    (tmp_path / "config").write_text("[default\nregion = us-east-1\n")  # malformed: no closing bracket
    env = {k: v.replace("{tmp}", str(tmp_path)) for k, v in env.items()}
    result = _cli("cluster", "status", "--cluster", "c", "--region", "us-east-1", **env)
    assert result.returncode == 1, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert expected in result.stderr


def test_usage_errors_exit_2() -> None:
    result = _cli("plan")
    assert result.returncode == 2 and "usage:" in result.stderr and "Traceback" not in result.stderr


# --- the JSON Schema cannot drift from the parser ---------------------------------------------------------


def test_the_committed_schema_is_the_generated_one_and_covers_every_key() -> None:
    committed = json.loads((REPO / "fleet.schema.json").read_text())
    assert committed == fleet.json_schema(), "regenerate: ecs-gpu-sharing fleet schema > fleet.schema.json"
    assert set(committed["properties"]) == {k.name for k in fleet.TOP}
    assert set(committed["properties"]["capacity"]["additionalProperties"]["properties"]) == {
        k.name for k in fleet.CAPACITY
    }
    assert set(committed["properties"]["service"]["additionalProperties"]["properties"]) == {
        k.name for k in fleet.SERVICE
    }
    assert (REPO / "fleet.toml").read_text().startswith("#:schema ./fleet.schema.json\n")


def test_the_schema_accepts_the_example_and_refuses_what_the_parser_refuses() -> None:
    schema = fleet.json_schema()
    jsonschema.validate(tomllib.loads(EXAMPLE), schema)
    for bad in (
        EXAMPLE.replace("desired_count = 4", "desired_count = 100000"),
        EXAMPLE.replace('MODEL_ID = "BAAI', 'CUDA_MPS_X = "BAAI', 1),
        EXAMPLE + "\nextra = 1\n",
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(tomllib.loads(bad), schema)
        with pytest.raises(GpuSharingError):
            fleet.parse(tomllib.loads(bad))


# --- property: nothing but the library's own errors escapes, each within a second -------------------------

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
_KEYS = [k.name for k in (*fleet.TOP, *fleet.CAPACITY, *fleet.SERVICE)]


def _mutate(doc: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    table = data.draw(st.sampled_from(["top", "capacity", "service"]))
    key = data.draw(st.sampled_from(_KEYS) | st.text(max_size=8))
    value = data.draw(values | st.integers(-(2**70), 2**70))
    inner = doc.get(table)
    if table == "top" or not isinstance(inner, dict) or not inner:
        doc[key] = value
    else:
        name = next(iter(inner))
        if isinstance(inner[name], dict):
            inner[name][key] = value
    return doc


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_fleet_documents_raise_only_library_errors_within_a_second(data: st.DataObject) -> None:
    doc = tomllib.loads(EXAMPLE)
    for _ in range(data.draw(st.integers(1, 4))):
        doc = _mutate(doc, data)
    start = time.perf_counter()
    try:
        fleet.parse(doc, source="random.toml")
    except GpuSharingError as error:
        assert str(error) and all(line.startswith("random.toml: ") for line in str(error).splitlines())
    assert time.perf_counter() - start < 1


@settings(max_examples=150, deadline=None)
@given(values | st.integers(-(2**70), 2**70), values | st.integers())
def test_random_budgets_raise_only_library_errors(memory: Any, percent: Any) -> None:
    try:
        MpsShare(memory, percent)
    except GpuSharingError as error:
        assert "\n" not in str(error)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=12) | st.integers() | st.none())
def test_random_ami_releases_raise_only_library_errors(release: Any) -> None:
    with contextlib.suppress(GpuSharingError):
        check_release(release)
