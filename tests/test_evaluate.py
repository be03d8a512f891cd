"""``ecs-gpu-sharing evaluate`` (#15 section 3): verdicts from measured figures, a re-plan with the suggested
budgets, and ``--write`` editing the fleet file in place with its comments intact. AWS is moto (CloudWatch
GetMetricData, ECS services and tags) or botocore's Stubber (task details moto does not model)."""

from __future__ import annotations

import datetime
import json
import tomllib
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from ecs_gpu_sharing import AwsOperationError, FleetSpecError
from ecs_gpu_sharing.cli import main
from ecs_gpu_sharing.core import fleet, fleet_edit, right_size
from ecs_gpu_sharing.core.fleet import SERVICE_TAG
from ecs_gpu_sharing.core.right_size import FITS, NO_DATA, TOO_LOOSE, TOO_TIGHT, Measured
from ecs_gpu_sharing.operations import evaluate

FLEET = """#:schema ./fleet.schema.json
# The team's fleet: comments like this one must survive --write.
name = "models"

[capacity.l4]
instance_types = ["g6.2xlarge"]   # one L4

[service.embedder]
capacity = "l4"
image = "repo/embedder:1"
desired_count = 4
cpu_units = 1024
memory_mib = 2048
gpu_budget_mib = 6144             # generous, from the first guess
acknowledge = { "ecs-gpu-sharing:MutableImageTag" = "test" }

[service.embedder.allocation]
residency_mib = 1024
peak_working_mib = 1024
shared_failure = "callers retry"  # what happens on an MPS restart

[service.reranker]
capacity = "l4"
image = "repo/reranker:1"
desired_count = 2
cpu_units = 1024
memory_mib = 2048
gpu_budget_mib = 3072

[service.idle]
capacity = "l4"
image = "repo/idle:1"
desired_count = 1
cpu_units = 512
memory_mib = 1024
gpu_budget_mib = 2048
"""


def _spec(text: str = FLEET) -> fleet.FleetSpec:
    return fleet.parse(tomllib.loads(text), source="fleet.toml")


# --- verdicts -------------------------------------------------------------------------------------------------


def test_verdicts_and_suggestions() -> None:
    spec = _spec()
    measured = {
        "embedder": Measured("embedder", "e", peak_mib=2300, p99_mib=2100),  # far below 6144: too loose
        "reranker": Measured("reranker", "r", peak_mib=3000, p99_mib=2900, oom_stops=2),  # OOM: too tight
    }
    verdicts = {v.service: v for v in right_size.judge(spec, measured, margin_percent=10)}
    assert (verdicts["embedder"].verdict, verdicts["embedder"].suggested_mib) == (TOO_LOOSE, 2560)  # 2530 -> 64s
    assert verdicts["embedder"].headroom_mib == 6144 - 2300
    assert (verdicts["reranker"].verdict, verdicts["reranker"].suggested_mib) == (TOO_TIGHT, 3392)  # budget + 10%
    assert "2 tasks stopped for memory" in verdicts["reranker"].why
    assert (verdicts["idle"].verdict, verdicts["idle"].suggested_mib) == (NO_DATA, 2048)  # unchanged


def test_a_suggestion_never_goes_below_the_notes_need_and_fits_keeps_the_budget() -> None:
    spec = _spec()
    low = right_size.judge(spec, {"embedder": Measured("embedder", "e", peak_mib=500)})
    assert low[0].suggested_mib == 2048  # the note's 1024 + 1024
    near = right_size.judge(spec, {"embedder": Measured("embedder", "e", peak_mib=5000)})
    assert (near[0].verdict, near[0].suggested_mib) == (FITS, 6144)
    tight = right_size.judge(spec, {"embedder": Measured("embedder", "e", peak_mib=5900)})
    assert tight[0].verdict == TOO_TIGHT


def test_the_replan_shows_what_right_sizing_saves() -> None:
    text = FLEET.replace("desired_count = 4", "desired_count = 12")
    spec = _spec(text)
    verdicts = right_size.judge(spec, {"embedder": Measured("embedder", "e", peak_mib=1500)})
    before, after = right_size.replan(spec, verdicts)
    assert after.steady.gpus < before.steady.gpus


# --- --write keeps the file -------------------------------------------------------------------------------------


def test_write_round_trips_the_fleet_file_with_comments_intact() -> None:
    day = datetime.date(2026, 11, 30)
    changes = {
        "embedder": fleet_edit.Change(
            2560,
            {
                "measured_peak_mib": 2300,
                "measured_p99_mib": 2100,
                "measured_on": day,
                "measured_image": "repo/embedder@sha256:" + "a" * 64,
                "evidence_source": "evaluate",
            },
        ),
        "reranker": fleet_edit.Change(3392, {"measured_peak_mib": 3000, "measured_on": day}),
    }
    edited, notes = fleet_edit.apply(FLEET, changes, source="fleet.toml")
    assert "gpu_budget_mib = 2560             # generous, from the first guess" in edited
    for comment in ("# The team's fleet", "# one L4", "# what happens on an MPS restart"):
        assert comment in edited
    spec = _spec(edited)
    note = spec.services["embedder"].note
    assert note is not None and note.evidence is not None
    assert (note.evidence.peak_mib, note.evidence.measured_on, note.evidence.source) == (2300, day, "evaluate")
    assert spec.services["reranker"].gpu_budget_mib == 3392
    assert notes == [
        "service.reranker: no [service.reranker.allocation] table, so the evidence is not recorded; add one "
        "(residency_mib, peak_working_mib, shared_failure) as a table of its own and run again"
    ]
    # Everything else is as it was.
    before, after = tomllib.loads(FLEET), tomllib.loads(edited)
    for doc in (before, after):
        for name in ("embedder", "reranker"):
            doc["service"][name].pop("gpu_budget_mib")
        doc["service"]["embedder"]["allocation"] = {
            k: v
            for k, v in doc["service"]["embedder"]["allocation"].items()
            if not k.startswith(("measured", "evidence"))
        }
    assert before == after


def test_write_refuses_a_service_it_cannot_find_as_a_table() -> None:
    inline = FLEET.replace("[service.idle]\ncapacity", 'service.x = { capacity = "l4" }\n[service.idle]\ncapacity')
    with pytest.raises(FleetSpecError, match=r"no \[service.x\] table"):
        fleet_edit.apply(inline, {"x": fleet_edit.Change(1024, {})})


@pytest.mark.parametrize(("since", "seconds"), [("7d", 604800), ("12h", 43200), ("90m", 5400)])
def test_the_window(since: str, seconds: int) -> None:
    assert evaluate.window_seconds(since) == seconds


@pytest.mark.parametrize("since", ["7", "d", "-1d", "30m", "64d", "1w"])
def test_a_bad_window_is_refused(since: str) -> None:
    with pytest.raises(ValueError, match="--since"):
        evaluate.window_seconds(since)


# --- against moto ---------------------------------------------------------------------------------------------


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Any:
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)
    with mock_aws():
        ecs = boto3.client("ecs")
        ecs.create_cluster(clusterName="models")
        ecs.register_task_definition(family="t", containerDefinitions=[{"name": "model", "image": "x", "memory": 64}])
        for name in ("embedder", "reranker"):
            ecs.create_service(
                cluster="models",
                serviceName=f"models-{name}-AbC123",
                taskDefinition="t",
                desiredCount=0,
                tags=[{"key": SERVICE_TAG, "value": name}],
            )
        cloudwatch = boto3.client("cloudwatch")
        now = datetime.datetime.now(datetime.UTC)
        for name, peak, p99, util in (("embedder", 2300, 2100, 30), ("reranker", 3000, 2950, 70)):
            dims = [{"Name": "Cluster", "Value": "models"}, {"Name": "Service", "Value": f"models-{name}-AbC123"}]
            cloudwatch.put_metric_data(
                Namespace="EcsGpuSharing",
                MetricData=[
                    {
                        "MetricName": "GpuMemoryPeakMiB",
                        "Dimensions": dims,
                        "Value": peak,
                        "Timestamp": now - datetime.timedelta(hours=2),
                    },
                    {
                        "MetricName": "GpuMemoryPeakMiB",
                        "Dimensions": dims,
                        "Value": peak - 400,
                        "Timestamp": now - datetime.timedelta(hours=1),
                    },
                    {
                        "MetricName": "GpuMemoryP99MiB",
                        "Dimensions": dims,
                        "Value": p99,
                        "Timestamp": now - datetime.timedelta(hours=2),
                    },
                    {
                        "MetricName": "GpuUtilizationPercent",
                        "Dimensions": dims,
                        "Value": util,
                        "Timestamp": now - datetime.timedelta(hours=2),
                    },
                ],
            )
        cloudwatch.put_metric_data(
            Namespace="EcsGpuSharing",
            MetricData=[
                {
                    "MetricName": "OomStops",
                    "Dimensions": [{"Name": "Group", "Value": "service:models-reranker-AbC123"}],
                    "Value": 1,
                    "Timestamp": now - datetime.timedelta(hours=3),
                }
            ],
        )
        yield


def test_evaluate_judges_replans_and_writes(aws: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text(FLEET)
    code = main(["evaluate", "--cluster", "models", "--fleet", str(path), "--json", "--write"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1  # a service is too tight
    by = {s["service"]: s for s in doc["services"]}
    assert (by["embedder"]["peak_mib"], by["embedder"]["p99_mib"], by["embedder"]["verdict"]) == (2300, 2100, TOO_LOOSE)
    assert by["embedder"]["ecs_service"] == "models-embedder-AbC123"
    assert (by["reranker"]["oom_stops"], by["reranker"]["verdict"], by["reranker"]["suggested_mib"]) == (
        1,
        TOO_TIGHT,
        3392,
    )
    assert by["idle"]["verdict"] == NO_DATA  # not deployed
    assert (doc["written"] == str(path) and "GPUs" in doc["replan"]["diff"]) or doc["replan"]["diff"]
    written = _spec(path.read_text())
    assert written.services["embedder"].gpu_budget_mib == 2560 and written.services["reranker"].gpu_budget_mib == 3392
    evidence = written.services["embedder"].note.evidence  # type: ignore[union-attr]
    assert evidence is not None and evidence.peak_mib == 2300 and evidence.source == "evaluate"
    assert "# The team's fleet" in path.read_text()


def test_evaluate_prints_a_table_without_writing(aws: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text(FLEET)
    main(["evaluate", "--cluster", "models", "--fleet", str(path), "--since", "1d"])
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == [
        "service",
        "budget",
        "peak",
        "p99",
        "headroom",
        "OOM/MPS/crash",
        "stops",
        "util",
        "%",
        "verdict",
        "suggested",
    ]
    assert "embedder  6144" in out and "too loose" in out
    assert path.read_text() == FLEET


def test_an_aws_failure_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    ecs = boto3.client("ecs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(ecs)
    stub.add_client_error("list_container_instances", "AccessDeniedException", "not allowed")
    with stub, pytest.raises(AwsOperationError) as error:
        evaluate.measure(ecs, None, "models", _spec(), seconds=3600, now=datetime.datetime.now(datetime.UTC))
    assert str(error.value).count("\n") == 0 and "AccessDeniedException: not allowed" in str(error.value)


def test_the_running_image_and_recent_stops_come_from_ecs() -> None:
    tasks = [
        {
            "containers": [
                {"name": "metrics", "image": "otel:1", "imageDigest": "sha256:" + "f" * 64},
                {"name": "model", "image": "repo/embedder:1", "imageDigest": "sha256:" + "a" * 64},
            ]
        }
    ]
    assert evaluate._running_image(tasks) == "repo/embedder@sha256:" + "a" * 64
    assert evaluate._running_image([{"containers": [{"name": "model", "image": "x:1"}]}]) is None


def test_an_allocation_written_as_dotted_keys_gets_the_budget_and_a_note_not_a_refusal() -> None:
    dotted = FLEET.replace("[service.embedder.allocation]\nresidency_mib", "[service.embedder.x]\nresidency_mib")
    dotted = dotted.replace(
        "[service.embedder.x]\nresidency_mib = 1024\npeak_working_mib = 1024\n",
        "",
    ).replace('shared_failure = "callers retry"  # what happens on an MPS restart\n', "")
    dotted = dotted.replace(
        'acknowledge = { "ecs-gpu-sharing:MutableImageTag" = "test" }\n',
        'acknowledge = { "ecs-gpu-sharing:MutableImageTag" = "test" }\nallocation.residency_mib = 1024\n'
        'allocation.peak_working_mib = 1024\nallocation.shared_failure = "callers retry"\n',
    )
    assert _spec(dotted).services["embedder"].note is not None
    edited, notes = fleet_edit.apply(dotted, {"embedder": fleet_edit.Change(2560, {"measured_peak_mib": 2300})})
    assert _spec(edited).services["embedder"].gpu_budget_mib == 2560 and "as a table of its own" in notes[0]
