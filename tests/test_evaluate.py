"""``ecs-gpu-sharing evaluate`` (#15 section 3): verdicts from measured figures, a re-plan with the suggested
budgets, and ``--write`` editing the fleet file in place with its comments intact. AWS is moto (CloudWatch
GetMetricData, ECS services and tags) or botocore's Stubber (task details moto does not model)."""

from __future__ import annotations

import contextlib
import datetime
import importlib.util
import json
import tomllib
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from ecs_gpu_sharing import AwsOperationError, FleetSpecError, GpuSharingError
from ecs_gpu_sharing.cli import main
from ecs_gpu_sharing.core import fleet, fleet_edit, plan_document, right_size
from ecs_gpu_sharing.core.fleet import CONTAINER_NAME, SERVICE_TAG
from ecs_gpu_sharing.core.right_size import FITS, NO_DATA, TOO_LOOSE, TOO_TIGHT, Measured
from ecs_gpu_sharing.core.telemetry import METRIC_NAMESPACE as NAMESPACE
from ecs_gpu_sharing.operations import evaluate
from ecs_gpu_sharing.operations.telemetry.sampling import Owner, Window, window_records

from conftest import REPO

CONSUMER = REPO / "examples" / "consumer"

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
        "reranker": Measured("reranker", "r", peak_mib=3000, p99_mib=2900),  # 98% of its budget: too tight
    }
    verdicts = {v.service: v for v in right_size.judge(spec, measured, margin_percent=10)}
    assert (verdicts["embedder"].verdict, verdicts["embedder"].suggested_mib) == (TOO_LOOSE, 2560)  # 2530 -> 64s
    assert verdicts["embedder"].headroom_mib == 6144 - 2300
    assert (verdicts["reranker"].verdict, verdicts["reranker"].suggested_mib) == (TOO_TIGHT, 3392)  # budget + 10%
    assert "98% of the 3072 MiB budget" in verdicts["reranker"].why
    assert (verdicts["idle"].verdict, verdicts["idle"].suggested_mib) == (NO_DATA, 2048)  # unchanged


def test_a_host_memory_kill_advises_memory_mib_and_never_raises_the_gpu_budget() -> None:
    spec = _spec()
    calm = Measured("reranker", "r", peak_mib=2500, p99_mib=2400)
    killed = Measured("reranker", "r", peak_mib=2500, p99_mib=2400, host_memory_stops=3)
    (without,) = [v for v in right_size.judge(spec, {"reranker": calm}) if v.service == "reranker"]
    (with_kills,) = [v for v in right_size.judge(spec, {"reranker": killed}) if v.service == "reranker"]
    assert (with_kills.verdict, with_kills.suggested_mib) == (without.verdict, without.suggested_mib) == (FITS, 3072)
    assert without.memory_advice is None
    assert with_kills.memory_advice is not None
    assert "3 tasks killed at the container's memory limit" in with_kills.memory_advice
    assert "raise memory_mib above its 2048 MiB" in with_kills.memory_advice


def test_a_suggestion_never_goes_below_the_notes_need_and_fits_keeps_the_budget() -> None:
    spec = _spec()
    low = right_size.judge(spec, {"embedder": Measured("embedder", "e", peak_mib=500)})
    assert low[0].suggested_mib == 2048  # the note's 1024 + 1024
    near = right_size.judge(spec, {"embedder": Measured("embedder", "e", peak_mib=5000)})
    assert (near[0].verdict, near[0].suggested_mib) == (FITS, 6144)
    tight = right_size.judge(spec, {"embedder": Measured("embedder", "e", peak_mib=5900)})
    assert tight[0].verdict == TOO_TIGHT


def test_a_peak_above_the_budget_is_a_broken_limit_not_a_raise() -> None:
    spec = _spec()
    (broken,) = [
        v
        for v in right_size.judge(spec, {"reranker": Measured("reranker", "r", peak_mib=9000)})
        if v.service == "reranker"
    ]
    assert (broken.verdict, broken.suggested_mib) == (right_size.LIMIT_BROKEN, 3072)
    assert "did not hold" in broken.why
    assert evaluate.changes([broken], datetime.date(2026, 12, 1)) == {}


def test_a_peak_a_few_mib_above_the_budget_is_the_limit_reached_not_broken() -> None:
    """docs/gpu-measured.md: NVML counts an MPS client's CUDA context 2 MiB above what its pinned limit counts (516 and
    514 MiB on an H200), so a task that fills its budget reads a little above it while the limit holds."""
    one = {"llm": right_size.Subject("llm", 16384)}
    (reached,) = right_size.judge(one, {"llm": Measured("llm", "l", peak_mib=16386)})
    assert reached.verdict == TOO_TIGHT and "the limit held" in reached.why
    (broken,) = right_size.judge(one, {"llm": Measured("llm", "l", peak_mib=16384 + 33)})
    assert broken.verdict == right_size.LIMIT_BROKEN
    two = {"llm": right_size.Subject("llm", 16384, sidecars=(("proxy", 1024),))}  # 32 MiB a GPU container
    (with_sidecar,) = right_size.judge(two, {"llm": Measured("llm", "l", peak_mib=16384 + 64)})
    assert with_sidecar.verdict == TOO_TIGHT


def test_no_suggestion_goes_above_one_gpus_usable_memory() -> None:
    subject = right_size.Subject("llm", 22000, usable_mib=22307)
    (v,) = right_size.judge({"llm": subject}, {"llm": Measured("llm", "l", peak_mib=21900)})
    assert v.verdict == TOO_TIGHT and v.suggested_mib == 22307


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
    note = spec.services["embedder"].allocation
    assert note is not None and note.evidence is not None
    assert (note.evidence.peak_mib, note.evidence.measured_on, note.evidence.source) == (2300, day, "evaluate")
    assert spec.services["reranker"].gpu_budget_mib == 3392
    # A service without an allocation note gets its evidence in a table of its own: no longer a guess, and what
    # evaluate cannot know (the note) is said, not invented.
    reranker = spec.services["reranker"]
    assert reranker.allocation is None and reranker.evidence is not None
    assert (reranker.evidence.peak_mib, reranker.evidence.measured_on) == (3000, day)
    (note_line,) = notes
    assert note_line.startswith("service.reranker: the evidence is recorded in [service.reranker.evidence]")
    assert "left unset" in note_line
    from ecs_gpu_sharing.core.plan_inputs import from_fleet
    from ecs_gpu_sharing.core.rules import assess

    guesses = [f.subject for f in assess(*from_fleet(spec)).findings if f.rule_id.endswith("BudgetIsAGuess")]
    assert "reranker" not in guesses and "embedder" not in guesses
    # Everything else is as it was.
    before, after = tomllib.loads(FLEET), tomllib.loads(edited)
    after["service"]["reranker"].pop("evidence")
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


CID = "a" * 64


def _evidence_lines(figures: dict[str, tuple[int, int, int]], cluster: str = "models") -> list[str]:
    """The daemon's own records for one window, made by the daemon's code: ECS service -> (peak, p99, util)."""
    windows = {
        Owner(service, CONTAINER_NAME, f"arn:task/{service}"): Window([p99] * 99 + [peak], [util] * 100)
        for service, (peak, p99, util) in figures.items()
    }
    return [json.dumps(r) for r in window_records(0, cluster, "i-0abc", windows, [], True, namespace=NAMESPACE)]


def _put(logs: Any, group: str, stream: str, messages: list[str], when: datetime.datetime) -> None:
    with contextlib.suppress(logs.exceptions.ResourceAlreadyExistsException):
        logs.create_log_group(logGroupName=group)
    logs.create_log_stream(logGroupName=group, logStreamName=stream)
    stamp = int(when.timestamp() * 1000)
    logs.put_log_events(
        logGroupName=group, logStreamName=stream, logEvents=[{"timestamp": stamp, "message": m} for m in messages]
    )


def _stopped(
    service: str, reason: str, container_reason: str = "", code: str = "TaskFailedToStart", *, cluster: str = ""
) -> str:
    cluster = cluster or service.split("-", 1)[0]
    detail = {
        "clusterArn": f"arn:aws:ecs:us-east-1:123456789012:cluster/{cluster}",
        "group": f"service:{service}",
        "lastStatus": "STOPPED",
        "stoppedReason": reason,
        "stopCode": code,
        "containers": [{"name": "model", "reason": container_reason}],
    }
    return json.dumps({"detail-type": "ECS Task State Change", "source": "aws.ecs", "detail": detail})


@pytest.fixture
def aws(fake_credentials: None) -> Any:
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
        logs = boto3.client("logs")
        now = datetime.datetime.now(datetime.UTC)
        evidence = "/ecs-gpu-sharing/evidence/models"
        earlier = _evidence_lines(
            {"models-embedder-AbC123": (2300, 2100, 30), "models-reranker-AbC123": (3000, 2950, 70)}
        )
        later = _evidence_lines({"models-embedder-AbC123": (1900, 1800, 30)})
        _put(logs, evidence, "i-0abc/task1", earlier, now - datetime.timedelta(hours=2))
        _put(logs, evidence, "i-0def/task2", later, now - datetime.timedelta(hours=1))
        _put(
            logs,
            "/aws/events/ecs-gpu-sharing/models/stopped-tasks",
            "events",
            [
                _stopped(
                    "models-reranker-AbC123",
                    "Essential container in task exited",
                    "OutOfMemoryError: Container killed due to memory usage",
                    "EssentialContainerExited",
                ),
                _stopped("models-embedder-AbC123", "Scaling activity initiated by deployment"),
            ],
            now - datetime.timedelta(hours=3),
        )
        yield {"logs": logs, "now": now}


def test_evaluate_judges_replans_and_writes(aws: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text(FLEET)
    code = main(["evaluate", "--cluster", "models", "--fleet", str(path), "--json", "--write"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1  # a service is too tight
    by = {s["service"]: s for s in doc["services"]}
    assert (by["embedder"]["peak_mib"], by["embedder"]["p99_mib"], by["embedder"]["verdict"]) == (2300, 2100, TOO_LOOSE)
    assert by["embedder"]["ecs_service"] == "models-embedder-AbC123"
    assert (by["reranker"]["host_memory_stops"], by["reranker"]["verdict"], by["reranker"]["suggested_mib"]) == (
        1,
        TOO_TIGHT,  # by its peak (98% of the budget), not by the host-memory kill
        3392,
    )
    assert by["reranker"]["crash_stops"] == 1 and "raise memory_mib" in by["reranker"]["memory_advice"]
    assert by["embedder"]["host_memory_stops"] == 0 and by["embedder"]["memory_advice"] is None
    assert by["idle"]["verdict"] == NO_DATA  # not deployed
    assert (doc["written"] == str(path) and "GPUs" in doc["replan"]["diff"]) or doc["replan"]["diff"]
    written = _spec(path.read_text())
    assert written.services["embedder"].gpu_budget_mib == 2560 and written.services["reranker"].gpu_budget_mib == 3392
    evidence = written.services["embedder"].allocation.evidence  # type: ignore[union-attr]
    assert evidence is not None and evidence.peak_mib == 2300 and evidence.source == "evaluate"
    assert "# The team's fleet" in path.read_text()


def test_evaluate_prints_a_table_without_writing(aws: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text(FLEET)
    main(["evaluate", "--cluster", "models", "--fleet", str(path), "--since", "1d"])
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"judged: fleet file {path}"
    assert out.splitlines()[1].split() == [
        "service",
        "budget",
        "peak",
        "p99",
        "headroom",
        "host-mem/MPS/crash",
        "stops",
        "util",
        "%",
        "verdict",
        "suggested",
    ]
    assert "embedder  6144" in out and "too loose" in out
    assert path.read_text() == FLEET


def test_an_aws_failure_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    logs = boto3.client("logs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(logs)
    stub.add_client_error("filter_log_events", "AccessDeniedException", "not allowed")
    with stub, pytest.raises(AwsOperationError) as error:
        evaluate.measure(None, logs, "models", {"e": "e"}, seconds=3600, now=datetime.datetime.now(datetime.UTC))
    assert str(error.value).count("\n") == 0 and "AccessDeniedException: not allowed" in str(error.value)
    assert "/ecs-gpu-sharing/evidence/models" in str(error.value)


def test_a_cluster_without_telemetry_says_what_to_deploy(aws: Any) -> None:
    with pytest.raises(GpuSharingError, match="has no evidence log group /ecs-gpu-sharing/evidence/other: deploy"):
        evaluate.measure(boto3.client("ecs"), aws["logs"], "other", {}, seconds=3600, now=aws["now"])


def test_a_tenants_forged_figures_do_not_move_what_evaluate_reads(aws: Any) -> None:
    """Any container can log an embedded-metric-format line (CloudWatch extracts it from any log group) or, with a
    careless role, put a metric into the namespace; evaluate reads neither."""
    ecs, logs, now = boto3.client("ecs"), aws["logs"], aws["now"]
    names = {"embedder": "models-embedder-AbC123", "reranker": "models-reranker-AbC123"}
    before = evaluate.measure(ecs, logs, "models", names, seconds=86400, now=now)
    forged = _evidence_lines({"models-embedder-AbC123": (60000, 60000, 100)})
    forged.append(_stopped("models-embedder-AbC123", "x", "OutOfMemoryError: forged", "EssentialContainerExited"))
    _put(logs, "/ecs/models-embedder", "model/model/abc", forged, now - datetime.timedelta(minutes=30))
    boto3.client("cloudwatch").put_metric_data(
        Namespace=NAMESPACE,
        MetricData=[
            {
                "MetricName": "GpuMemoryPeakMiB",
                "Dimensions": [
                    {"Name": "Cluster", "Value": "models"},
                    {"Name": "Service", "Value": "models-embedder-AbC123"},
                ],
                "Value": 60000,
            }
        ],
    )
    after = evaluate.measure(ecs, logs, "models", names, seconds=86400, now=now)
    assert after == before
    assert (before["embedder"].peak_mib, before["embedder"].p99_mib, before["embedder"].host_memory_stops) == (
        2300,
        2100,
        0,
    )
    # A record for another cluster in the evidence group is not this cluster's either.
    _put(
        logs,
        "/ecs-gpu-sharing/evidence/models",
        "x/y",
        _evidence_lines({"models-embedder-AbC123": (9, 9, 9)}, "other"),
        now,
    )
    assert evaluate.measure(ecs, logs, "models", names, seconds=86400, now=now) == before


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
    assert _spec(dotted).services["embedder"].allocation is not None
    edited, notes = fleet_edit.apply(dotted, {"embedder": fleet_edit.Change(2560, {"measured_peak_mib": 2300})})
    assert _spec(edited).services["embedder"].gpu_budget_mib == 2560 and "as a table of its own" in notes[0]
    assert _spec(edited).services["embedder"].evidence is None


# --- a construct-built app: --plan, and the task definitions themselves ------------------------------------------


@pytest.fixture(scope="module")
def consumer(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The example consumer app (examples/consumer), synthesized as its team would: its plan file and template."""
    spec = importlib.util.spec_from_file_location("consumer_models_stack", CONSUMER / "models_stack.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path_factory.mktemp("consumer-out")
    app = cdk.App(outdir=str(out))
    module.ModelsStack(app, "Models")
    template = app.synth().get_stack_by_name("Models").template
    return {"plan": out / "gpu-fleet-plan.json", "template": template}


def _deploy_like_cloudformation(consumer: dict[str, Any]) -> str:
    """The consumer's service as CloudFormation would create it in moto: its generated name and its tags."""
    ((logical, service),) = [
        (k, r)
        for k, r in consumer["template"]["Resources"].items()
        if r["Type"] == "AWS::ECS::Service" and r["Properties"].get("SchedulingStrategy") != "DAEMON"
    ]
    tags = service["Properties"]["Tags"]
    assert {"Key": SERVICE_TAG, "Value": "embedder"} in tags  # the plan's name, set by the library at synth
    ecs = boto3.client("ecs")
    ecs.create_cluster(clusterName="consumer")
    ecs.register_task_definition(
        family="emb",
        containerDefinitions=[
            {
                "name": "model",
                "image": "x",
                "memory": 4096,
                "resourceRequirements": [{"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": 4096}}}],
            }
        ],
        memory="4096",
    )
    # Deployed by CloudFormation, in a stack of the template's name: the stack records the service's ARN, which
    # evaluate --plan reads (services[].deployed_as) instead of trusting the tag alone.
    body = {
        "Resources": {
            logical: {
                "Type": "AWS::ECS::Service",
                "Properties": {"Cluster": "consumer", "TaskDefinition": "emb", "DesiredCount": 0, "Tags": tags},
            }
        }
    }
    cfn = boto3.client("cloudformation")
    cfn.create_stack(StackName="Models", TemplateBody=json.dumps(body))
    arn = cfn.describe_stack_resource(StackName="Models", LogicalResourceId=logical)["StackResourceDetail"][
        "PhysicalResourceId"
    ]
    name = arn.rsplit("/", 1)[-1]
    held = ecs.describe_services(cluster="consumer", services=[name], include=["TAGS"])["services"][0]
    if not held.get("tags"):  # moto's CloudFormation may leave the tags out: as ECS would have them
        ecs.tag_resource(resourceArn=held["serviceArn"], tags=[{"key": t["Key"], "value": t["Value"]} for t in tags])
    now = datetime.datetime.now(datetime.UTC)
    _put(
        boto3.client("logs"),
        "/ecs-gpu-sharing/evidence/consumer",
        "i-0abc/task1",
        _evidence_lines({name: (1500, 1400, 20)}, "consumer"),
        now - datetime.timedelta(hours=1),
    )
    return name


def test_a_construct_app_is_judged_from_its_synth_plan(
    aws: Any, consumer: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    name = _deploy_like_cloudformation(consumer)
    code = main(["evaluate", "--cluster", "consumer", "--plan", str(consumer["plan"]), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["source"] == f"synth plan {consumer['plan']}" and doc["replan"] is None
    (embedder,) = doc["services"]
    assert (embedder["service"], embedder["ecs_service"], embedder["budget_mib"]) == ("embedder", name, 4096)
    assert (embedder["peak_mib"], embedder["verdict"], embedder["suggested_mib"]) == (1500, TOO_LOOSE, 1664)


def test_a_service_claiming_a_plan_name_it_was_not_deployed_as_is_refused(
    aws: Any, consumer: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """The plan's service is found by what its stack recorded; a look-alike carrying its tag, with the real service's
    tag removed (as ecs:UntagResource outside the app could), is named and refused, not judged in its place."""
    name = _deploy_like_cloudformation(consumer)
    ecs = boto3.client("ecs")
    real = ecs.describe_services(cluster="consumer", services=[name])["services"][0]["serviceArn"]
    ecs.untag_resource(resourceArn=real, tagKeys=[SERVICE_TAG])
    ecs.create_service(
        cluster="consumer",
        serviceName="lookalike",
        taskDefinition="emb",
        desiredCount=0,
        tags=[{"key": SERVICE_TAG, "value": "embedder"}],
    )
    assert main(["evaluate", "--cluster", "consumer", "--plan", str(consumer["plan"])]) == 1
    err = capsys.readouterr().err
    assert f"service lookalike carries {SERVICE_TAG}=embedder, but stack Models deployed embedder as {name}" in err


def test_a_construct_app_is_judged_from_its_task_definitions_without_a_plan(
    aws: Any, consumer: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    _deploy_like_cloudformation(consumer)
    main(["evaluate", "--cluster", "consumer"])
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "judged: the task definitions of cluster consumer"
    assert "embedder  4096    1500" in out and "too loose" in out  # named by its tag, budget from the task definition
    assert "re-plan: only for a fleet file" in out


def test_write_needs_a_fleet_file_and_one_source(
    aws: Any, consumer: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["evaluate", "--cluster", "consumer", "--plan", str(consumer["plan"]), "--write"]) == 1
    assert "--write edits a fleet file: give --fleet" in capsys.readouterr().err
    assert main(["evaluate", "--cluster", "consumer", "--plan", "p.json", "--fleet", "f.toml"]) == 1
    assert "give --fleet or --plan, not both" in capsys.readouterr().err


def test_a_plan_that_is_not_a_synth_plan_is_one_line(
    aws: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "plan.json"
    bad.write_text('{"services": [{"task": 1}]}')
    assert main(["evaluate", "--cluster", "models", "--plan", str(bad)]) == 1
    assert "not a fleet plan as the library writes it: capacities is missing" in capsys.readouterr().err
    bad.write_text("[")
    assert main(["evaluate", "--cluster", "models", "--plan", str(bad)]) == 1
    assert "not JSON" in capsys.readouterr().err


def test_a_host_memory_kill_changes_neither_the_written_budget_nor_the_exit_status(
    aws: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same fleet and figures, once with a host-memory kill of the idle service and once without: the same
    exit status and the same file; the kill only adds a line about memory_mib."""
    ecs, logs = boto3.client("ecs"), aws["logs"]
    ecs.create_cluster(clusterName="calm")
    ecs.create_service(
        cluster="calm", serviceName="calm-idle", taskDefinition="t", tags=[{"key": SERVICE_TAG, "value": "idle"}]
    )
    _put(
        logs,
        "/ecs-gpu-sharing/evidence/calm",
        "h/t",
        _evidence_lines({"calm-idle": (1800, 1700, 5)}, "calm"),
        aws["now"],
    )
    runs = []
    for killed in (False, True):
        if killed:
            kill = _stopped("calm-idle", "Essential container in task exited", "OutOfMemoryError: Container killed")
            _put(logs, "/aws/events/ecs-gpu-sharing/calm/stopped-tasks", "e", [kill], aws["now"])
        path = tmp_path / f"fleet-{killed}.toml"
        path.write_text(FLEET)
        code = main(["evaluate", "--cluster", "calm", "--fleet", str(path), "--write"])
        runs.append((code, path.read_text(), capsys.readouterr().out))
    (code0, text0, out0), (code1, text1, out1) = runs
    assert (code0, text0) == (code1, text1) and code0 == 0
    assert "idle: 1 task killed at the container's memory limit" in out1 and "memory_mib" not in out0


def test_only_ecs_events_of_the_cluster_count_as_stops(aws: Any) -> None:
    """A line in the stopped-task group that ECS did not write for this cluster is not a stop."""
    ecs, logs, now = boto3.client("ecs"), aws["logs"], aws["now"]
    names = {"embedder": "models-embedder-AbC123"}
    before = evaluate.measure(ecs, logs, "models", names, seconds=86400, now=now)["embedder"]
    kill = ("models-embedder-AbC123", "x", "OutOfMemoryError: Container killed", "EssentialContainerExited")
    other_cluster = _stopped(*kill, cluster="elsewhere")
    not_ecs = json.loads(_stopped(*kill))
    not_ecs["source"] = "tenant.forged"
    group = "/aws/events/ecs-gpu-sharing/models/stopped-tasks"
    _put(logs, group, "forged", [other_cluster, json.dumps(not_ecs)], now - datetime.timedelta(minutes=20))
    after = evaluate.measure(ecs, logs, "models", names, seconds=86400, now=now)["embedder"]
    assert after.host_memory_stops == before.host_memory_stops
    _put(logs, group, "real", [_stopped(*kill)], now - datetime.timedelta(minutes=10))
    counted = evaluate.measure(ecs, logs, "models", names, seconds=86400, now=now)["embedder"]
    assert counted.host_memory_stops == before.host_memory_stops + 1


def test_two_services_claiming_one_plan_name_are_refused(aws: Any) -> None:
    ecs = boto3.client("ecs")
    ecs.create_service(
        cluster="models",
        serviceName="tenant-lookalike",
        taskDefinition="t",
        desiredCount=0,
        tags=[{"key": SERVICE_TAG, "value": "embedder"}],
    )
    with pytest.raises(GpuSharingError, match="models-embedder-AbC123 and tenant-lookalike both carry"):
        evaluate.service_names(ecs, "models")


@pytest.mark.parametrize(
    ("table", "refusal"),
    [
        ("[service.reranker.evidence]\nmeasured_p99_mib = 2000\n", "measured_peak_mib and measured_on go together"),
        ("[service.embedder.evidence]\nmeasured_peak_mib = 2000\nmeasured_on = 2026-11-30\n", "move it there"),
    ],
)
def test_an_evidence_table_needs_its_peak_and_day_and_no_note_beside_it(table: str, refusal: str) -> None:
    with pytest.raises(FleetSpecError, match=refusal):
        _spec(FLEET + "\n" + table)


# --- one budget: a task with GPU sidecars is judged by its task's sum on every road (#34) ---------------------

SIDECAR_FLEET = """name = "models"

[capacity.l4]
instance_types = ["g6.2xlarge"]

[service.chat]
capacity = "l4"
image = "repo/chat@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
desired_count = 2
cpu_units = 1024
memory_mib = 4096
gpu_budget_mib = 6144

[[service.chat.sidecar]]
name = "guard"
image = "repo/guard@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
cpu_units = 512
memory_mib = 2048
gpu_budget_mib = 2048
"""


def _chat_task_definition(ecs: Any) -> None:
    """The chat service as ECS runs it: two MPS containers on one GPU, tagged with the plan's name."""
    ecs.register_task_definition(
        family="chat",
        containerDefinitions=[
            {
                "name": name,
                "image": "x",
                "memory": memory,
                "resourceRequirements": [{"type": "GPU", "sharingStrategy": {"nvidiaMps": {"memory": budget}}}],
            }
            for name, memory, budget in ((CONTAINER_NAME, 4096, 6144), ("guard", 2048, 2048))
        ],
    )
    ecs.create_service(
        cluster="models",
        serviceName="models-chat-XyZ",
        taskDefinition="chat",
        desiredCount=0,
        tags=[{"key": SERVICE_TAG, "value": "chat"}],
    )


def test_a_task_with_a_gpu_sidecar_gets_one_verdict_from_the_fleet_the_plan_and_the_task_definition(
    aws: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The daemon measures the task (model and sidecar together): a 7,200 MiB peak of an 8,192 MiB task fits, on
    every road. Judged by the model container's 6,144 it would read as a broken limit."""
    fleet_file = tmp_path / "fleet.toml"
    fleet_file.write_text(SIDECAR_FLEET)
    main(["plan", str(fleet_file), "--json"])
    plan_doc = json.loads(capsys.readouterr().out)
    _chat_task_definition(boto3.client("ecs"))
    by_task_definition, _ = evaluate.task_definition_subjects(boto3.client("ecs"), "models")
    roads = {
        "fleet": right_size.fleet_subjects(_spec(SIDECAR_FLEET))["chat"],
        "plan": right_size.plan_subjects(plan_document.load(plan_doc, source="plan"))["chat"],
        "task definition": by_task_definition["chat"],
    }
    measured = {"chat": Measured("chat", "models-chat-XyZ", peak_mib=7200, p99_mib=7000)}
    verdicts = {road: right_size.judge({"chat": s}, measured)[0] for road, s in roads.items()}
    assert {road: s.budget_mib for road, s in roads.items()} == dict.fromkeys(roads, 8192)
    assert {(v.verdict, v.budget_mib) for v in verdicts.values()} == {(FITS, 8192)}, verdicts


def _chat_measured(model: int, guard: int | None) -> Measured:
    containers = ((CONTAINER_NAME, model),) + ((("guard", guard),) if guard is not None else ())
    return Measured("chat", "models-chat-XyZ", peak_mib=model + (guard or 0), containers=containers)


def test_write_splits_a_sidecar_tasks_suggestion_by_container() -> None:
    """Model 3,000 MiB and sidecar 1,000 MiB of 6,144 + 2,048: the model's own peak plus the margin is written for
    the model container; the sidecar keeps its budget (--write edits only the model's)."""
    spec = _spec(SIDECAR_FLEET)
    (v,) = right_size.judge(spec, {"chat": _chat_measured(3000, 1000)})
    assert (v.verdict, v.budget_mib, v.suggested_mib) == (TOO_LOOSE, 8192, 3328 + 2048)
    assert (v.write_mib, v.refusal) == (3328, None)
    assert evaluate.changes([v], datetime.date(2026, 12, 1))["chat"].gpu_budget_mib == 3328
    after = right_size.resized(spec, [v]).services["chat"]
    assert (after.gpu_budget_mib, after.sidecars[0].gpu_budget_mib) == (3328, 2048)


@pytest.mark.parametrize(
    ("guard", "refusal"),
    [
        (None, "the evidence has no peak of its own for guard"),  # records without the container: cannot split
        (2000, "sidecar guard peaked at 2000 MiB of its 2048 MiB budget"),  # the sidecar itself is tight
    ],
)
def test_write_refuses_a_sidecar_task_it_cannot_split_and_names_the_sidecar(guard: int | None, refusal: str) -> None:
    (v,) = right_size.judge(_spec(SIDECAR_FLEET), {"chat": _chat_measured(3000, guard)})
    assert v.write_mib is None and v.refusal is not None and refusal in v.refusal
    assert "guard" in v.refusal
    assert evaluate.changes([v], datetime.date(2026, 12, 1)) == {}


def test_the_daemons_records_give_each_containers_peak_and_the_tasks_sum() -> None:
    from ecs_gpu_sharing.core.telemetry import service_figures

    windows = {
        Owner("models-chat-XyZ", CONTAINER_NAME, "arn:task/1"): Window([2900] * 99 + [3000], [40] * 100),
        Owner("models-chat-XyZ", "guard", "arn:task/1"): Window([900] * 99 + [1000], [40] * 100),
    }
    lines = [json.dumps(r) for r in window_records(0, "models", "i-0abc", windows, [], True, namespace=NAMESPACE)]
    figures = service_figures(lines, "models")["models-chat-XyZ"]
    assert figures.peak_mib == 4000 and dict(figures.containers) == {CONTAINER_NAME: 3000, "guard": 1000}


def test_evidence_in_a_fleet_file_is_held_to_the_tasks_budget_with_its_sidecars() -> None:
    ok = SIDECAR_FLEET.replace(
        "gpu_budget_mib = 6144\n",
        "gpu_budget_mib = 6144\n\n[service.chat.evidence]\nmeasured_peak_mib = 7200\nmeasured_on = 2026-11-20\n",
    )
    assert _spec(ok).services["chat"].evidence is not None  # 7,200 of the task's 8,192: a figure this task can show
    over = ok.replace("measured_peak_mib = 7200", "measured_peak_mib = 8500")
    with pytest.raises(FleetSpecError, match="measured_peak_mib 8500 is above the task's GPU budget 8192"):
        _spec(over)
