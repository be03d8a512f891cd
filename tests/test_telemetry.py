"""The GPU telemetry daemon (#15 section 2): its parts on this machine, against a fake NVML, a fake /proc and
botocore's Stubber for ECS; and the constructs that deploy it, with the dashboard and alarms."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aws_cdk as cdk
import boto3
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk.assertions import Match, Template
from botocore.stub import Stubber

from ecs_gpu_sharing import GpuCapacity
from ecs_gpu_sharing.cdk.telemetry import DAEMON_IMAGE_DIR, STOP_METRICS, GpuFleetDashboard, GpuTelemetry
from ecs_gpu_sharing.operations.telemetry.daemon import Daemon, TaskDirectory, mps_up, read_gpus
from ecs_gpu_sharing.operations.telemetry.sampling import (
    NAMESPACE,
    Owner,
    Window,
    container_id_from_cgroup,
    percentile,
    window_records,
)

from conftest import new_app

CID = {name: (c * 64) for name, c in (("emb1", "a"), ("emb2", "b"), ("llm", "c"), ("stray", "d"))}
CLUSTER = "models"
ARN = "arn:aws:ecs:us-east-1:123456789012:task/models/"
MIB = 1024 * 1024


# --- pure parts ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"0::/ecs.slice/ecs-1234.slice/docker-{'a' * 64}.scope\n", "a" * 64),  # cgroup v2, systemd driver
        (f"0::/ecs/0123456789abcdef0123456789abcdef/{'b' * 64}\n", "b" * 64),  # cgroupfs under ECS's task parent
        (f"12:memory:/docker/{'c' * 64}\n11:cpu:/\n", "c" * 64),  # cgroup v1
        ("0::/system.slice/nvidia-mps.service\n", None),  # the MPS server: no container
        ("", None),
    ],
)
def test_a_process_cgroup_names_its_container(text: str, expected: str | None) -> None:
    assert container_id_from_cgroup(text) == expected


def test_percentile_is_nearest_rank() -> None:
    assert percentile(list(range(1, 101)), 99) == 99
    assert percentile([5], 99) == 5 and percentile([], 99) == 0
    assert Window([3, 9, 4]).peak == 9


def test_records_are_embedded_metric_format_with_every_dimension_present() -> None:
    owner1 = Owner("models-embedder", "model", ARN + "1")
    owner2 = Owner("models-embedder", "model", ARN + "2")
    windows = {owner1: Window([100, 300], [20, 40]), owner2: Window([200] * 99 + [900], [10] * 100)}
    records = window_records(1_700_000_000_000, CLUSTER, "i-0abc", windows, [], mps_up=True)
    service, health = records
    for record in records:
        (directive,) = record["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == NAMESPACE
        for dimension_set in directive["Dimensions"]:
            assert all(isinstance(record[d], str) for d in dimension_set)
        assert all(isinstance(record[m["Name"]], int | float) for m in directive["Metrics"])
    # The peak of any one task's container, the p99 over all samples of the service's containers on the host.
    assert (service["GpuMemoryPeakMiB"], service["GpuMemoryP99MiB"], service["GpuUtilizationPercent"]) == (900, 300, 40)
    assert health["MpsHealthy"] == 1


# --- the daemon against a fake NVML, a fake /proc and ECS through Stubber -------------------------------------


class FakeNvml:
    """pynvml's calls the daemon makes, with pynvml's shapes (bytes; usedGpuMemory None where NVML cannot tell)."""

    def __init__(self, gpus: list[dict[str, Any]]) -> None:
        self.gpus = gpus

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> Any:
        gpu = self.gpus[handle]
        return SimpleNamespace(
            total=gpu["total"] * MIB, used=gpu["used"] * MIB, free=(gpu["total"] - gpu["used"]) * MIB
        )

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> Any:
        return SimpleNamespace(gpu=self.gpus[handle]["util"], memory=0)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: int) -> list[Any]:
        return [
            SimpleNamespace(pid=pid, usedGpuMemory=None if mib is None else mib * MIB)
            for pid, mib in self.gpus[handle]["procs"]
        ]


@pytest.fixture
def host(tmp_path: Path) -> dict[str, Path]:
    proc = tmp_path / "proc"
    for pid, cid in ((101, CID["emb1"]), (102, CID["emb2"]), (201, CID["llm"]), (301, CID["stray"])):
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "cgroup").write_text(f"0::/ecs.slice/docker-{cid}.scope\n")
        (proc / str(pid) / "comm").write_text("python3\n")
    (proc / "900").mkdir()
    (proc / "900" / "cgroup").write_text("0::/system.slice/nvidia-mps.service\n")
    (proc / "900" / "comm").write_text("nvidia-cuda-mps-control\n")
    pipes = tmp_path / "mps"
    pipes.mkdir()
    (pipes / "control").write_text("")
    return {"proc": proc, "pipes": pipes}


def _ecs_with_tasks() -> tuple[Any, Stubber]:
    client = boto3.client("ecs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(client)
    stub.add_response(
        "list_tasks",
        {"taskArns": [ARN + "1", ARN + "2"]},
        {"cluster": CLUSTER, "desiredStatus": "RUNNING", "containerInstance": "ci-1"},
    )
    stub.add_response(
        "describe_tasks",
        {
            "tasks": [
                {
                    "taskArn": ARN + "1",
                    "group": "service:models-embedder",
                    "containers": [{"name": "model", "runtimeId": CID["emb1"]}],
                },
                {
                    "taskArn": ARN + "2",
                    "group": "service:models-llm",
                    "containers": [
                        {"name": "model", "runtimeId": CID["llm"]},
                        {"name": "metrics", "runtimeId": "e" * 64},
                    ],
                },
            ]
        },
        {"cluster": CLUSTER, "tasks": [ARN + "1", ARN + "2"]},
    )
    return client, stub


def test_the_daemon_attributes_gpu_memory_to_services_and_publishes_a_window(host: dict[str, Path]) -> None:
    nvml = FakeNvml(
        [
            {"total": 23034, "used": 5000, "util": 35, "procs": [(101, 1800), (301, 500), (900, None)]},
            {"total": 23034, "used": 9000, "util": 80, "procs": [(201, 8800)]},
        ]
    )
    client, stub = _ecs_with_tasks()
    lines: list[str] = []
    clock = iter(range(1000, 2000, 5))
    with stub:
        daemon = Daemon(
            nvml=nvml,
            directory=TaskDirectory(client, CLUSTER, "ci-1"),
            cluster=CLUSTER,
            instance="i-0abc",
            proc=host["proc"],
            pipe_dir=host["pipes"],
            emit=lines.append,
            clock=lambda: float(next(clock)),
        )
        daemon.sample()  # one refresh of ECS's record: both containers are unknown at first
        nvml.gpus[0]["procs"] = [(101, 2100)]
        nvml.gpus[1]["procs"] = [(201, 9100)]
        daemon.sample()  # known now: no second ECS call (the Stubber would fail on one)
        daemon.publish()
        stub.assert_no_pending_responses()
    records = [json.loads(line) for line in lines]
    by_service = {r["Service"]: r for r in records if "Service" in r}
    assert set(by_service) == {"models-embedder", "models-llm"}  # the stray container is no ECS task's
    assert by_service["models-embedder"]["GpuMemoryPeakMiB"] == 2100
    assert (
        by_service["models-llm"]["GpuMemoryPeakMiB"] == 9100 and by_service["models-llm"]["GpuUtilizationPercent"] == 80
    )
    gpus = [r for r in records if "Gpu" in r]
    assert [(g["Gpu"], g["GpuMemoryUsedMiB"]) for g in gpus] == [("0", 5000), ("1", 9000)]
    assert [r["MpsHealthy"] for r in records if "MpsHealthy" in r] == [1]
    assert daemon.windows == {}  # a new window starts


def test_mps_is_down_without_its_pipe_or_its_process(host: dict[str, Path]) -> None:
    assert mps_up(host["proc"], host["pipes"])
    (host["proc"] / "900" / "comm").write_text("bash\n")
    assert not mps_up(host["proc"], host["pipes"])
    assert not mps_up(host["proc"], host["pipes"] / "missing")


def test_nvml_figures_are_read_in_mib() -> None:
    (gpu,) = read_gpus(FakeNvml([{"total": 46068, "used": 1024, "util": 7, "procs": [(5, 512), (6, None)]}]))
    assert (gpu.memory_total_mib, gpu.memory_used_mib, gpu.utilization, gpu.processes) == (
        46068,
        1024,
        7,
        ((5, 512), (6, None)),
    )


# --- the image ----------------------------------------------------------------------------------------------


def test_the_image_context_holds_what_its_dockerfile_copies_and_the_wheel_ships_it() -> None:
    dockerfile = (DAEMON_IMAGE_DIR / "Dockerfile").read_text()
    copied = [w for line in dockerfile.splitlines() if line.startswith("COPY") for w in line.split()[1:-1]]
    assert copied and all((DAEMON_IMAGE_DIR / name).is_file() for name in copied)
    assert "USER 65534" in dockerfile and "nvidia-ml-py==" in (DAEMON_IMAGE_DIR / "requirements.txt").read_text()
    pyproject = (DAEMON_IMAGE_DIR.parents[3] / "pyproject.toml").read_text()
    assert '"ecs_gpu_sharing.operations.telemetry" = ["Dockerfile", "requirements.txt", ".dockerignore"]' in pyproject


# --- the constructs -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def deployed() -> dict[str, Any]:
    app = new_app()
    stack = cdk.Stack(app, "Obs")
    cluster = ecs.Cluster(stack, "Cluster", vpc=ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1))
    GpuCapacity(stack, "L4", cluster=cluster, instance_types=["g6.xlarge"])
    telemetry = GpuTelemetry(stack, "Telemetry", cluster=cluster)
    task = ecs.Ec2TaskDefinition(stack, "Task")
    task.add_container(
        "model", image=ecs.ContainerImage.from_registry("repo/x@sha256:" + "0" * 64), memory_limit_mib=512
    )
    service = ecs.Ec2Service(stack, "Emb", cluster=cluster, task_definition=task, min_healthy_percent=100)
    GpuFleetDashboard(stack, "Dash", cluster=cluster, services={"embedder": (service, 2048)})
    return {
        "template": Template.from_stack(stack),
        "telemetry": telemetry,
        "raw": app.synth().get_stack_by_name("Obs").template,
    }


def test_the_daemon_runs_on_every_gpu_sharing_host_with_least_privilege(deployed: dict[str, Any]) -> None:
    t = deployed["template"]
    t.has_resource_properties(
        "AWS::ECS::Service",
        {
            "SchedulingStrategy": "DAEMON",
            "PlacementConstraints": [
                {"Type": "memberOf", "Expression": "attribute:ecs.capability.gpu-sharing-mps exists"}
            ],
        },
    )
    raw = deployed["raw"]
    (task,) = [
        r for k, r in raw["Resources"].items() if r["Type"] == "AWS::ECS::TaskDefinition" and k.startswith("Telemetry")
    ]
    (c,) = task["Properties"]["ContainerDefinitions"]
    env = {e["Name"]: e["Value"] for e in c["Environment"]}
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all" and env["NVIDIA_DRIVER_CAPABILITIES"] == "utility"
    assert "ResourceRequirements" not in c  # reserves no GPU
    assert c["User"] == "65534:65534" and c["ReadonlyRootFilesystem"] is True and "Privileged" not in c
    assert all(m["ReadOnly"] for m in c["MountPoints"])
    assert task["Properties"]["NetworkMode"] == "bridge"
    policies = [
        r
        for k, r in raw["Resources"].items()
        if r["Type"] == "AWS::IAM::Policy" and k.startswith("TelemetryTaskTaskRole")
    ]
    actions = sorted(
        a
        for p in policies
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    )
    assert actions == ["ecs:DescribeContainerInstances", "ecs:DescribeTasks", "ecs:ListTasks"]


def test_stopped_tasks_are_counted_by_task_group(deployed: dict[str, Any]) -> None:
    t = deployed["template"]
    t.has_resource_properties(
        "AWS::Events::Rule",
        {
            "EventPattern": Match.object_like(
                {"detail-type": ["ECS Task State Change"], "detail": Match.object_like({"lastStatus": ["STOPPED"]})}
            )
        },
    )
    filters = t.find_resources("AWS::Logs::MetricFilter")
    assert sorted(f["Properties"]["MetricTransformations"][0]["MetricName"] for f in filters.values()) == sorted(
        STOP_METRICS
    )
    assert all(
        f["Properties"]["MetricTransformations"][0]["Dimensions"] == [{"Key": "Group", "Value": "$.detail.group"}]
        for f in filters.values()
    )
    # The log group's resource policy is declared, not written by a Lambda-backed custom resource.
    assert not [
        k for k, r in deployed["raw"]["Resources"].items() if k.startswith("Telemetry") and "Lambda" in r["Type"]
    ]
    t.resource_count_is("AWS::Logs::ResourcePolicy", 1)


def test_an_alarm_fires_when_the_peak_nears_the_budget(deployed: dict[str, Any]) -> None:
    t = deployed["template"]
    (alarm,) = t.find_resources("AWS::CloudWatch::Alarm").values()
    assert alarm["Properties"]["Threshold"] == 1843  # 90% of 2048 MiB
    (metric,) = alarm["Properties"]["Metrics"]
    stat = metric["MetricStat"]
    assert (stat["Metric"]["MetricName"], stat["Metric"]["Namespace"], stat["Stat"]) == (
        "GpuMemoryPeakMiB",
        NAMESPACE,
        "Maximum",
    )
    (dashboard,) = t.find_resources("AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    assert "budget 2048 MiB" in body and "GpuMemoryP99MiB" in body and "OomStops" in body


def test_a_dashboard_refuses_more_services_than_its_widgets_allow() -> None:
    app = new_app()
    stack = cdk.Stack(app, "S")
    cluster = ecs.Cluster(stack, "C", vpc=ec2.Vpc(stack, "V", max_azs=1, nat_gateways=0, subnet_configuration=[]))
    with pytest.raises(ValueError, match="more than a CloudWatch dashboard holds"):
        GpuFleetDashboard(stack, "D", cluster=cluster, services={f"s{i}": (None, 1) for i in range(200)})  # type: ignore[misc]
    with pytest.raises(ValueError, match="alarm_ratio must be in"):
        GpuFleetDashboard(stack, "E", cluster=cluster, services={}, alarm_ratio=1.5)
