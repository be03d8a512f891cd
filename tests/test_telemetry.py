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
from constructs import Construct

from ecs_gpu_sharing import (
    GpuCapacity,
    GpuManagedInstancesCapacity,
    MpsShare,
    SharedGpuService,
    SharedGpuTaskDefinition,
)
from ecs_gpu_sharing.cdk.dashboard import GpuFleetDashboard
from ecs_gpu_sharing.cdk.telemetry import DAEMON_IMAGE_DIR, STOP_METRICS, GpuTelemetry
from ecs_gpu_sharing.core.telemetry import METRIC_NAMESPACE as NAMESPACE
from ecs_gpu_sharing.operations.telemetry.daemon import Daemon, LogSink, TaskDirectory, mps_up, read_gpus
from ecs_gpu_sharing.operations.telemetry.sampling import (
    Owner,
    Window,
    container_id_from_cgroup,
    merge_processes,
    percentile,
    window_records,
)

from conftest import new_app
from validators import ecs_register_task_definition_errors

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
    records = window_records(1_700_000_000_000, CLUSTER, "i-0abc", windows, [], mps_up=True, namespace=NAMESPACE)
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


class NVMLError_NotSupported(Exception):  # pynvml's name for NVML_ERROR_NOT_SUPPORTED
    pass


class FakeNvml:
    """pynvml's calls the daemon makes, with pynvml's shapes (bytes; usedGpuMemory None where NVML cannot tell).
    ``procs`` are the compute processes, ``mps`` the MPS clients (None: the driver does not support the call)."""

    def __init__(self, gpus: list[dict[str, Any]]) -> None:
        self.gpus = gpus
        self.broken: Exception | None = None

    def nvmlDeviceGetCount(self) -> int:
        if self.broken is not None:
            raise self.broken
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

    @staticmethod
    def _entries(procs: list[tuple[int, int | None]]) -> list[Any]:
        return [SimpleNamespace(pid=pid, usedGpuMemory=None if mib is None else mib * MIB) for pid, mib in procs]

    def nvmlDeviceGetComputeRunningProcesses(self, handle: int) -> list[Any]:
        return self._entries(self.gpus[handle]["procs"])

    def nvmlDeviceGetMPSComputeRunningProcesses(self, handle: int) -> list[Any]:
        mps = self.gpus[handle].get("mps", [])
        if mps is None:
            raise NVMLError_NotSupported("Not Supported")
        return self._entries(mps)


@pytest.fixture
def host(tmp_path: Path) -> dict[str, Path]:
    proc = tmp_path / "proc"
    for pid, cid in ((101, CID["emb1"]), (102, CID["emb2"]), (201, CID["llm"]), (301, CID["stray"])):
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "cgroup").write_text(f"0::/ecs.slice/docker-{cid}.scope\n")
        (proc / str(pid) / "comm").write_text("python3\n")
    for pid, name in ((900, "nvidia-cuda-mps-control"), (901, "nvidia-cuda-mps-server")):
        (proc / str(pid)).mkdir()
        (proc / str(pid) / "cgroup").write_text("0::/system.slice/nvidia-mps.service\n")
        (proc / str(pid) / "comm").write_text(name[:15] + "\n")  # what the kernel keeps: nvidia-cuda-mps
        (proc / str(pid) / "cmdline").write_bytes(f"/usr/bin/{name}\0-d\0".encode())
    return {"proc": proc}


def _ecs_with_tasks(client: Any = None) -> tuple[Any, Stubber]:
    client = client or boto3.client("ecs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
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


def _daemon(nvml: Any, client: Any, proc: Path, batches: list[list[str]], **kwargs: Any) -> Daemon:
    clock = iter(range(1000, 100000, 5))
    log: list[str] = kwargs.pop("log", [])
    return Daemon(
        nvml=nvml,
        directory=TaskDirectory(client, CLUSTER, "ci-1"),
        cluster=CLUSTER,
        instance="i-0abc",
        proc=proc,
        sink=kwargs.pop("sink", lambda lines: batches.append(list(lines))),
        log=log.append,
        clock=lambda: float(next(clock)),
        namespace=NAMESPACE,
        **kwargs,
    )


def test_the_daemon_attributes_gpu_memory_to_services_and_publishes_a_window(host: dict[str, Path]) -> None:
    nvml = FakeNvml(
        [
            {"total": 23034, "used": 5000, "util": 35, "procs": [(101, 1800), (301, 500), (901, None)]},
            {"total": 23034, "used": 9000, "util": 80, "procs": [(201, 8800)]},
        ]
    )
    client, stub = _ecs_with_tasks()
    batches: list[list[str]] = []
    with stub:
        daemon = _daemon(nvml, client, host["proc"], batches)
        daemon.sample()  # one refresh of ECS's record: both containers are unknown at first
        nvml.gpus[0]["procs"] = [(101, 2100)]
        nvml.gpus[1]["procs"] = [(201, 9100)]
        daemon.sample()  # known now: no second ECS call (the Stubber would fail on one)
        daemon.publish()
        stub.assert_no_pending_responses()
    (batch,) = batches
    records = [json.loads(line) for line in batch]
    by_service = {r["Service"]: r for r in records if "Service" in r}
    assert set(by_service) == {"models-embedder", "models-llm"}  # the stray container is no ECS task's
    assert by_service["models-embedder"]["GpuMemoryPeakMiB"] == 2100
    assert (
        by_service["models-llm"]["GpuMemoryPeakMiB"] == 9100 and by_service["models-llm"]["GpuUtilizationPercent"] == 80
    )
    gpus = [r for r in records if "Gpu" in r]
    assert [(g["Gpu"], g["GpuMemoryUsedMiB"]) for g in gpus] == [("0", 5000), ("1", 9000)]
    (health,) = [r for r in records if "MpsHealthy" in r]
    assert (health["MpsHealthy"], health["NvmlAvailable"], health["EcsErrors"], health["PublishErrors"]) == (1, 1, 0, 0)
    assert daemon.windows == {}  # a new window starts


def test_mps_clients_are_sampled_and_each_process_counted_once(host: dict[str, Path]) -> None:
    """Under MPS the compute list shows the server (C nvidia-cuda-mps-server) and the MPS list each client (M+C)
    with its own memory; a client the driver lists in both is counted once, with the MPS list's figure."""
    nvml = FakeNvml(
        [
            {
                "total": 23034,
                "used": 6000,
                "util": 50,
                "procs": [(901, 300), (101, None)],
                "mps": [(101, 2000), (201, 3000)],
            }
        ]
    )
    (gpu,) = read_gpus(nvml)
    assert dict(gpu.processes) == {101: 2000, 201: 3000, 901: 300}
    client, stub = _ecs_with_tasks()
    batches: list[list[str]] = []
    with stub:
        daemon = _daemon(nvml, client, host["proc"], batches)
        daemon.sample()
        daemon.publish()
    peaks = {r["Service"]: r["GpuMemoryPeakMiB"] for r in map(json.loads, batches[0]) if "Service" in r}
    assert peaks == {"models-embedder": 2000, "models-llm": 3000}  # the MPS server belongs to no task
    nvml.gpus[0]["mps"] = None  # a driver without the MPS call: the compute list alone
    (gpu,) = read_gpus(nvml)
    assert dict(gpu.processes) == {901: 300, 101: None}


def test_merging_prefers_a_known_figure() -> None:
    assert merge_processes([(1, None), (2, 5)], [(1, 7)]) == ((1, 7), (2, 5))
    assert merge_processes([(1, 4)], [(1, None)]) == ((1, 4),)


def test_mps_is_down_without_its_control_process(host: dict[str, Path]) -> None:
    """The kernel truncates the control daemon's name to 15 characters, which the server's name shares: the command
    line tells them apart."""
    assert (host["proc"] / "900" / "comm").read_text().strip() == "nvidia-cuda-mps"
    assert mps_up(host["proc"])
    (host["proc"] / "900" / "comm").write_text("bash\n")
    assert not mps_up(host["proc"]), "the server alone (same 15 characters) is not the control daemon"
    with pytest.raises(OSError):
        mps_up(host["proc"] / "missing")


def test_the_daemon_survives_a_host_without_nvml_and_connects_when_it_appears(host: dict[str, Path]) -> None:
    attempts: list[int] = []
    nvml = FakeNvml([{"total": 23034, "used": 0, "util": 0, "procs": []}])

    def connect() -> Any:
        attempts.append(1)
        if len(attempts) == 1:
            raise OSError("libnvidia-ml.so.1: cannot open shared object file")
        return nvml

    batches: list[list[str]] = []
    log: list[str] = []
    daemon = _daemon(None, None, host["proc"], batches, connect=connect, log=log)
    daemon.sample()
    daemon.sample()  # within the minute: no second attempt
    daemon.publish()
    (health,) = [json.loads(line) for line in batches[0]]
    assert (health["NvmlAvailable"], health["NvmlErrors"], health["MpsHealthy"]) == (0, 1, 1)
    assert len(attempts) == 1 and len(log) == 1 and "libnvidia-ml.so.1" in json.loads(log[0])["message"]
    daemon._next_connect = 0.0  # a minute later
    daemon.sample()
    assert daemon.nvml is nvml and json.loads(log[-1])["message"] == "recovered"


def test_the_daemon_survives_nvml_failing_mid_run_with_one_log_line(host: dict[str, Path]) -> None:
    nvml = FakeNvml([{"total": 23034, "used": 0, "util": 0, "procs": []}])
    nvml.broken = RuntimeError("GPU is lost")
    batches: list[list[str]] = []
    log: list[str] = []
    daemon = _daemon(nvml, None, host["proc"], batches, log=log)
    for _ in range(3):
        daemon.sample()
    daemon.publish()
    (health,) = [json.loads(line) for line in batches[0]]
    assert health["NvmlErrors"] == 3 and len(log) == 1  # counted each time, logged once


def test_the_daemon_survives_an_unreadable_proc(host: dict[str, Path], tmp_path: Path) -> None:
    nvml = FakeNvml([{"total": 23034, "used": 0, "util": 0, "procs": []}])
    batches: list[list[str]] = []
    log: list[str] = []
    daemon = _daemon(nvml, None, tmp_path / "no-proc", batches, log=log)
    daemon.sample()
    daemon.publish()
    records = [json.loads(line) for line in batches[0]]
    (health,) = [r for r in records if "ProcErrors" in r]
    assert health["ProcErrors"] == 1 and "MpsHealthy" not in health  # unknown, not "down"
    assert json.loads(log[0])["source"] == "Proc"


def test_the_daemon_survives_ecs_throttling(host: dict[str, Path]) -> None:
    nvml = FakeNvml([{"total": 23034, "used": 2000, "util": 10, "procs": [(101, 1800)]}])
    client = boto3.client("ecs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(client)
    stub.add_client_error("list_tasks", "ThrottlingException", "Rate exceeded")
    batches: list[list[str]] = []
    log: list[str] = []
    with stub:
        daemon = _daemon(nvml, client, host["proc"], batches, log=log)
        daemon.sample()
        daemon.publish()
    records = [json.loads(line) for line in batches[0]]
    assert not [r for r in records if "Service" in r]  # no owner known: nothing attributed, nothing invented
    (health,) = [r for r in records if "EcsErrors" in r]
    assert health["EcsErrors"] == 1 and "ThrottlingException" in json.loads(log[0])["message"]


def test_the_daemon_keeps_its_records_while_publishing_fails_and_sends_them_later(host: dict[str, Path]) -> None:
    nvml = FakeNvml([{"total": 23034, "used": 0, "util": 0, "procs": []}])
    sent: list[list[str]] = []
    failing = [True]

    def sink(lines: list[str]) -> None:
        if failing[0]:
            raise ConnectionError("throttled")
        sent.append(list(lines))

    log: list[str] = []
    daemon = _daemon(nvml, None, host["proc"], [], sink=sink, log=log)
    daemon.sample()
    daemon.publish()  # refused: kept
    assert daemon.pending and not sent
    failing[0] = False
    daemon.sample()
    daemon.publish()
    (batch,) = sent
    healths = [json.loads(line) for line in batch if "PublishErrors" in line]
    assert [h["PublishErrors"] for h in healths] == [0, 1]  # both windows, the second counting the failure
    assert [json.loads(line)["message"] for line in log] == ["ConnectionError: throttled", "recovered"]


def test_the_log_sink_writes_to_the_evidence_group_in_batches_within_aws_limits() -> None:
    client = boto3.client("logs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(client)
    group, stream = "/ecs-gpu-sharing/evidence/models", "i-0abc/task1"
    stub.add_response("create_log_stream", {}, {"logGroupName": group, "logStreamName": stream})
    lines = ["x" * 524_200, "y" * 524_200, "z" * 100]  # with 26 bytes each, the third passes 1,048,576 bytes
    stub.add_response(
        "put_log_events",
        {},
        {
            "logGroupName": group,
            "logStreamName": stream,
            "logEvents": [{"timestamp": 5000, "message": lines[0]}, {"timestamp": 5000, "message": lines[1]}],
        },
    )
    stub.add_response(
        "put_log_events",
        {},
        {"logGroupName": group, "logStreamName": stream, "logEvents": [{"timestamp": 5000, "message": lines[2]}]},
    )
    with stub:
        LogSink(client, group, stream, clock=lambda: 5.0)(lines)
        stub.assert_no_pending_responses()


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
    one = GpuCapacity(stack, "L4", cluster=cluster, instance_types=["g6.xlarge", "g6.2xlarge"])
    four = GpuCapacity(stack, "L4x4", cluster=cluster, instance_types=["g6.12xlarge"])
    telemetry = GpuTelemetry(stack, "Telemetry", cluster=cluster, capacities=[one, four])
    task = SharedGpuTaskDefinition(stack, "Task")
    image = ecs.ContainerImage.from_registry("repo/x@sha256:" + "0" * 64)
    task.add_container("model", image=image, memory_limit_mib=512, gpu=MpsShare(gpu_budget_mib=1536))
    task.add_container("sidecar", image=image, memory_limit_mib=256, gpu=MpsShare(gpu_budget_mib=512))
    service = SharedGpuService(stack, "Emb", cluster=cluster, capacity=one, task_definition=task, desired_count=2)
    # The budget is the task's (both containers' shares), read from the plan; the service's handle is enough.
    GpuFleetDashboard(stack, "Dash", cluster=cluster, services={"embedder": service.service})
    return {
        "template": Template.from_stack(stack),
        "telemetry": telemetry,
        "raw": app.synth().get_stack_by_name("Obs").template,
    }


def _daemon_tasks(raw: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        k: r
        for k, r in raw["Resources"].items()
        if r["Type"] == "AWS::ECS::TaskDefinition" and k.startswith("Telemetry")
    }


def test_one_daemon_per_gpu_count_is_placed_by_instance_type_on_sharing_hosts(deployed: dict[str, Any]) -> None:
    services = deployed["template"].find_resources(
        "AWS::ECS::Service", {"Properties": {"SchedulingStrategy": "DAEMON"}}
    )
    expressions = sorted(s["Properties"]["PlacementConstraints"][0]["Expression"] for s in services.values())
    assert expressions == [
        "attribute:ecs.capability.gpu-sharing-mps exists and attribute:ecs.instance-type in [g6.12xlarge]",
        "attribute:ecs.capability.gpu-sharing-mps exists and attribute:ecs.instance-type in [g6.2xlarge, g6.xlarge]",
    ]
    assert sorted(deployed["telemetry"].services) == [1, 4]


def test_the_daemon_gets_nvml_from_the_host_read_only_and_reserves_no_gpu(deployed: dict[str, Any]) -> None:
    """The agent gives the nvidia runtime only to tasks that ask for GPUs (agent/api/task/task.go,
    overrideContainerRuntime), so the daemon gets NVML and its devices by host volume and linuxParameters."""
    tasks = _daemon_tasks(deployed["raw"])
    devices = {}
    for task in tasks.values():
        (c,) = task["Properties"]["ContainerDefinitions"]
        env = {e["Name"]: e["Value"] for e in c["Environment"]}
        assert not [k for k in env if k.startswith("NVIDIA_")]  # runc ignores them: nothing pretends otherwise
        assert env["LD_LIBRARY_PATH"] == "/opt/nvml"
        assert "ResourceRequirements" not in c  # reserves no GPU
        assert c["User"] == "65534:65534" and c["ReadonlyRootFilesystem"] is True and "Privileged" not in c
        assert all(m["ReadOnly"] for m in c["MountPoints"])
        volumes = {v["Name"]: v["Host"]["SourcePath"] for v in task["Properties"]["Volumes"]}
        assert volumes == {"host-proc": "/proc", "nvml": "/usr/lib64/libnvidia-ml.so.1"}  # no MPS pipe folder
        assert {m["ContainerPath"] for m in c["MountPoints"]} == {"/host/proc", "/opt/nvml/libnvidia-ml.so.1"}
        found = c["LinuxParameters"]["Devices"]
        assert all(d["Permissions"] == ["read", "write"] and d["HostPath"] == d["ContainerPath"] for d in found)
        devices[len(found) - 1] = [d["HostPath"] for d in found]
        assert task["Properties"]["NetworkMode"] == "bridge"
    assert devices == {
        1: ["/dev/nvidiactl", "/dev/nvidia0"],
        4: ["/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3"],
    }


def test_the_daemon_task_definitions_are_valid_for_the_ecs_api(deployed: dict[str, Any]) -> None:
    for task in _daemon_tasks(deployed["raw"]).values():
        assert ecs_register_task_definition_errors(task["Properties"]) == ""


def test_only_the_daemon_may_write_the_evidence_and_the_hosts_may_not(deployed: dict[str, Any]) -> None:
    raw = deployed["raw"]
    policies = {k: r for k, r in raw["Resources"].items() if r["Type"] == "AWS::IAM::Policy"}
    daemon = [r for k, r in policies.items() if k.startswith("TelemetryGpus") and "TaskRole" in k]
    assert len(daemon) == 2
    for policy in daemon:
        statements = policy["Properties"]["PolicyDocument"]["Statement"]
        actions = sorted(
            a for st in statements for a in ([st["Action"]] if isinstance(st["Action"], str) else st["Action"])
        )
        assert actions == [
            "ecs:DescribeContainerInstances",
            "ecs:DescribeTasks",
            "ecs:ListTasks",
            "logs:CreateLogStream",
            "logs:PutLogEvents",
        ]
        (logs,) = [st for st in statements if "logs:PutLogEvents" in st["Action"]]
        assert "Evidence" in json.dumps(logs["Resource"])  # the evidence group, not "*"
    hosts = [r for k, r in policies.items() if "InstanceRole" in k]
    assert len(hosts) == 2
    for policy in hosts:
        (deny,) = [st for st in policy["Properties"]["PolicyDocument"]["Statement"] if st["Effect"] == "Deny"]
        assert sorted(deny["Action"]) == ["logs:CreateLogStream", "logs:PutLogEvents"]
        assert ":log-group:/ecs-gpu-sharing/evidence/*" in json.dumps(deny["Resource"])
    (group,) = [r for k, r in raw["Resources"].items() if k.startswith("TelemetryEvidence")]
    assert "/ecs-gpu-sharing/evidence/" in json.dumps(group["Properties"]["LogGroupName"])


def test_the_stopped_task_log_group_admits_only_the_clusters_rule(deployed: dict[str, Any]) -> None:
    raw = deployed["raw"]
    (policy,) = [r for r in raw["Resources"].values() if r["Type"] == "AWS::Logs::ResourcePolicy"]
    (rule,) = [k for k, r in raw["Resources"].items() if r["Type"] == "AWS::Events::Rule"]
    # The document is a string CloudFormation joins: each reference read as the name of what it names.
    separator, parts = policy["Properties"]["PolicyDocument"]["Fn::Join"]
    text = separator.join(p if isinstance(p, str) else json.dumps(p).replace('"', "'") for p in parts)
    statements = {tuple(st["Action"]): st for st in json.loads(text)["Statement"]}
    assert set(statements) == {("logs:CreateLogStream",), ("logs:PutLogEvents",)}
    assert all(st["Principal"] == {"Service": "events.amazonaws.com"} for st in statements.values())
    # Only the writes carry the rule's ARN: EventBridge's CreateLogStream call has no aws:SourceArn to match, and a
    # condition on it refuses every stream, so every delivery fails (aws-samples/serverless-patterns pull 618).
    assert "Condition" not in statements[("logs:CreateLogStream",)]
    assert rule in json.dumps(statements[("logs:PutLogEvents",)]["Condition"]["ArnEquals"]["aws:SourceArn"])


def test_telemetry_needs_ec2_capacities() -> None:
    app = new_app()
    stack = cdk.Stack(app, "S")
    cluster = ecs.Cluster(stack, "C", vpc=ec2.Vpc(stack, "V", max_azs=1, nat_gateways=0, subnet_configuration=[]))
    with pytest.raises(ValueError, match="capacities must name the GpuCapacity constructs"):
        GpuTelemetry(stack, "T", cluster=cluster, capacities=[])
    with pytest.raises(ValueError, match="is not a GpuCapacity"):
        GpuTelemetry(stack, "U", cluster=cluster, capacities=["g6.xlarge"])  # type: ignore[list-item]
    other = cdk.Stack(app, "S2")
    cluster = ecs.Cluster(other, "C", vpc=ec2.Vpc(other, "V", max_azs=2))
    capacity = GpuCapacity(other, "L4", cluster=cluster, instance_types=["g6.xlarge"])
    with pytest.raises(
        ValueError, match=r"capacities must be a list of GpuCapacity constructs, got one; pass capacities=\[L4\]"
    ):
        GpuTelemetry(other, "W", cluster=cluster, capacities=capacity)  # type: ignore[arg-type]


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
    alarms = t.find_resources("AWS::CloudWatch::Alarm").values()
    (alarm,) = [a for a in alarms if "Metrics" in a["Properties"]]
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


def test_the_dashboards_account_wide_name_carries_the_stacks_region(deployed: dict[str, Any]) -> None:
    """Dashboards are global in an account: one stack deployed to two regions must not name one dashboard twice."""
    (dashboard,) = deployed["template"].find_resources("AWS::CloudWatch::Dashboard").values()
    name = dashboard["Properties"]["DashboardName"]
    assert name == {"Fn::Join": ["", ["Obs-", {"Ref": "AWS::Region"}, "-Dash"]]}


def test_two_dashboards_of_one_stack_have_two_names() -> None:
    """A dashboard holds a bounded number of services, so a large fleet has several, often in one stack."""
    app = cdk.App()
    stack = cdk.Stack(app, "Obs", env=cdk.Environment(account="123456789012", region="eu-west-1"))
    cluster = ecs.Cluster(stack, "Cluster", vpc=ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1))
    capacity = GpuCapacity(stack, "L4", cluster=cluster, instance_types=["g6.xlarge"])
    task = SharedGpuTaskDefinition(stack, "Task")
    task.add_container(
        "model",
        image=ecs.ContainerImage.from_registry("repo/x@sha256:" + "0" * 64),
        memory_limit_mib=512,
        gpu=MpsShare(gpu_budget_mib=1536),
    )
    service = SharedGpuService(stack, "Emb", cluster=cluster, capacity=capacity, task_definition=task, desired_count=1)
    team = Construct(stack, "Team b")
    GpuFleetDashboard(stack, "Dash", cluster=cluster, services={"embedder": service.service})
    GpuFleetDashboard(team, "Dash", cluster=cluster, services={"embedder": service.service})
    dashboards = Template.from_stack(stack).find_resources("AWS::CloudWatch::Dashboard").values()
    assert sorted(d["Properties"]["DashboardName"] for d in dashboards) == [
        "Obs-eu-west-1-Dash",
        "Obs-eu-west-1-Team-b-Dash",
    ]


def test_undelivered_stopped_task_events_raise_an_alarm(deployed: dict[str, Any]) -> None:
    """EventBridge drops what it cannot deliver silently: its FailedInvocations metric for the rule is watched."""
    t = deployed["template"]
    (rule_id,) = t.find_resources("AWS::Events::Rule")
    t.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "AWS/Events",
            "MetricName": "FailedInvocations",
            "Dimensions": [{"Name": "RuleName", "Value": {"Ref": rule_id}}],
            "Threshold": 0,
            "ComparisonOperator": "GreaterThanThreshold",
            "TreatMissingData": "notBreaching",
        },
    )
    assert deployed["telemetry"].stopped_tasks_delivery_alarm is not None


def test_a_dashboard_refuses_more_services_than_its_widgets_allow() -> None:
    app = new_app()
    stack = cdk.Stack(app, "S")
    cluster = ecs.Cluster(stack, "C", vpc=ec2.Vpc(stack, "V", max_azs=1, nat_gateways=0, subnet_configuration=[]))
    with pytest.raises(ValueError, match="more than a CloudWatch dashboard holds"):
        GpuFleetDashboard(stack, "D", cluster=cluster, services={f"s{i}": None for i in range(200)})  # type: ignore[misc]
    with pytest.raises(ValueError, match=r"alarm_ratio must be a number in \(0, 1\]"):
        GpuFleetDashboard(stack, "E", cluster=cluster, services={}, alarm_ratio=1.5)


def test_a_dashboard_takes_services_and_reads_their_budgets_from_the_plan_refusing_anything_else() -> None:
    app = new_app()
    stack = cdk.Stack(app, "S")
    cluster = ecs.Cluster(stack, "C", vpc=ec2.Vpc(stack, "V", max_azs=2, nat_gateways=1))
    task = ecs.Ec2TaskDefinition(stack, "Task")
    task.add_container("web", image=ecs.ContainerImage.from_registry("repo/web:1"), memory_limit_mib=512)
    web = ecs.Ec2Service(stack, "Web", cluster=cluster, task_definition=task, min_healthy_percent=100)
    # A budget given by hand could drift from the task definition's: the tuple form is refused, saying why.
    with pytest.raises(ValueError, match=r"S/Tuple: services\['web'\] is a \(service, budget\) pair.*give the service"):
        GpuFleetDashboard(stack, "Tuple", cluster=cluster, services={"web": (web, 2048)})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match=r"S/Def: services\['web'\] is a task definition.*give the service"):
        GpuFleetDashboard(stack, "Def", cluster=cluster, services={"web": task})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match=r"S/Str: services\['web'\] must be a service.*got str"):
        GpuFleetDashboard(stack, "Str", cluster=cluster, services={"web": "Web"})  # type: ignore[dict-item]
    # A service the plan does not hold (no GPU capacity) has no budget: refused when the app synthesizes.
    GpuCapacity(stack, "L4", cluster=cluster, instance_types=["g6.xlarge"])
    GpuFleetDashboard(stack, "Dash", cluster=cluster, services={"web": web})
    with pytest.raises(Exception, match=r"S/Dash: services\['web'\] \(S/Web\) is not in the GPU fleet plan"):
        app.synth()


def test_managed_instances_hosts_may_not_write_the_evidence_either() -> None:
    app = new_app()
    stack = cdk.Stack(app, "S")
    cluster = ecs.Cluster(stack, "C", vpc=ec2.Vpc(stack, "V", max_azs=2, nat_gateways=1))
    GpuManagedInstancesCapacity(stack, "mi", cluster=cluster, instance_types=["g6.xlarge"])
    policies = Template.from_stack(stack).find_resources("AWS::IAM::Policy")
    (host,) = [p for k, p in policies.items() if "InstanceRole" in k]
    (deny,) = [st for st in host["Properties"]["PolicyDocument"]["Statement"] if st["Effect"] == "Deny"]
    assert ":log-group:/ecs-gpu-sharing/evidence/*" in json.dumps(deny["Resource"])


def test_one_table_reads_a_stopped_task_for_evaluate_and_for_the_dashboards_filters() -> None:
    from ecs_gpu_sharing.core.telemetry import CRASH, HOST_MEMORY, MPS, STOP_RULES, stop_causes

    killed = {
        "stoppedReason": "x",
        "stopCode": "EssentialContainerExited",
        "containers": [{"reason": "OutOfMemoryError"}],
    }
    assert stop_causes(killed) == {HOST_MEMORY, CRASH}
    assert stop_causes({"stoppedReason": "MPS control daemon not responding"}) == {MPS}
    assert stop_causes({"stoppedReason": "Scaling activity", "stopCode": "ServiceSchedulerInitiated"}) == set()
    # Every rule's filter names the field and value the Python reading uses.
    for rule in STOP_RULES:
        assert rule.value in STOP_METRICS[rule.metric] and rule.field.split("[")[0] in STOP_METRICS[rule.metric]


def _two_clusters() -> tuple[cdk.Stack, ecs.Cluster, ecs.Cluster, GpuCapacity, SharedGpuService]:
    app = new_app()
    stack = cdk.Stack(app, "Two")
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
    cluster, other = ecs.Cluster(stack, "Cluster", vpc=vpc), ecs.Cluster(stack, "Other", vpc=vpc)
    capacity = GpuCapacity(stack, "L4", cluster=cluster, instance_types=["g6.xlarge"])
    task = SharedGpuTaskDefinition(stack, "Task")
    task.add_container(
        "model",
        image=ecs.ContainerImage.from_registry("r/x@sha256:" + "0" * 64),
        memory_limit_mib=512,
        gpu=MpsShare(1536),
    )
    service = SharedGpuService(stack, "Emb", cluster=cluster, capacity=capacity, task_definition=task, desired_count=1)
    return stack, cluster, other, capacity, service


def test_telemetry_runs_in_its_capacities_cluster() -> None:
    """A daemon service in another cluster runs on none of the capacity's hosts: no figure would ever come."""
    stack, _cluster, other, capacity, _ = _two_clusters()
    with pytest.raises(ValueError, match=r"Two/Tel: capacity L4 is in cluster Two/Cluster, not Two/Other"):
        GpuTelemetry(stack, "Tel", cluster=other, capacities=[capacity])


@pytest.mark.parametrize(
    ("sample", "publish", "message"),
    [
        (0, 60, r"sample_seconds must be an integer >= 1, got 0"),
        (120, 60, r"sample_seconds 120 is more than publish_seconds 60, so a published window could hold no sample"),
        (5, 301, r"publish_seconds 301 is more than 300, the period of the dashboard's budget metrics and alarms"),
        (5, 2.5, r"publish_seconds must be an integer"),
    ],
)
def test_telemetry_refuses_intervals_its_figures_cannot_come_by(sample: Any, publish: Any, message: str) -> None:
    stack, cluster, _other, capacity, _ = _two_clusters()
    with pytest.raises(ValueError, match=message):
        GpuTelemetry(
            stack, "Tel", cluster=cluster, capacities=[capacity], sample_seconds=sample, publish_seconds=publish
        )


def test_a_dashboard_graphs_services_of_its_cluster_and_at_least_one() -> None:
    stack, _cluster, other, _capacity, service = _two_clusters()
    with pytest.raises(ValueError, match=r"Two/Dash: services\['emb'\] runs in cluster Two/Cluster, not Two/Other"):
        GpuFleetDashboard(stack, "Dash", cluster=other, services={"emb": service})
    with pytest.raises(ValueError, match=r"Two/Empty: services is empty"):
        GpuFleetDashboard(stack, "Empty", cluster=other, services={})


@pytest.mark.parametrize(
    ("option", "value", "kind"),
    [
        ("image", "repo/telemetry:1", "aws_ecs.ContainerImage"),
        ("log_retention", 30, "aws_logs.RetentionDays"),
        ("alarm_topic", "arn:aws:sns:us-east-1:123456789012:gpu", "aws_sns.ITopic"),
    ],
)
def test_telemetry_refuses_an_option_of_another_type_by_name(option: str, value: Any, kind: str) -> None:
    """Passed on as it was, aws-cdk-lib would refuse it later, naming only its own class inside a JavaScript trace."""
    stack, cluster, _other, capacity, service = _two_clusters()
    with pytest.raises(ValueError, match=rf"Two/Tel: {option} must be an {kind}, got"):
        GpuTelemetry(stack, "Tel", cluster=cluster, capacities=[capacity], **{option: value})
    if option == "alarm_topic":
        with pytest.raises(ValueError, match=rf"Two/Dash: alarm_topic must be an {kind}, got str"):
            GpuFleetDashboard(stack, "Dash", cluster=cluster, services={"emb": service}, alarm_topic=value)
