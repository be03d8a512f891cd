"""The allow-list over a rendered task definition (core.container_guards): one case per denied property and spelling,
one per allowed one, and the classification held to botocore's ECS model. Pure Python: no synth."""

from __future__ import annotations

import copy
from typing import Any

import botocore.session
import pytest

from ecs_gpu_sharing.core import container_guards as guards

MODEL = {
    "Family": "t",
    "NetworkMode": "bridge",
    "ContainerDefinitions": [
        {
            "Name": "model",
            "Image": "public.ecr.aws/x/y@sha256:" + "0" * 64,
            "Memory": 1024,
            "Essential": True,
            "User": "1000:1000",
            "ReadonlyRootFilesystem": True,
        }
    ],
}


def _task(**changes: Any) -> dict[str, Any]:
    """The model task with changes: keys ``task.X`` at the task, ``c.X`` on the container, ``linux.X`` in its
    LinuxParameters."""
    task = copy.deepcopy(MODEL)
    container = task["ContainerDefinitions"][0]
    for key, value in changes.items():
        where, _, name = key.partition("__")
        if where == "task":
            task[name] = value
        elif where == "c":
            container[name] = value
        else:
            container.setdefault("LinuxParameters", {})[name] = value
    return task


def _rules(task: dict[str, Any]) -> list[str]:
    return [guards.rule_of(line) for line in guards.guard_violations(task)]


DENIED = [
    ({"task__NetworkMode": "host"}, guards.NETWORK_MODE),
    ({"task__NetworkMode": "HOST"}, guards.NETWORK_MODE),
    ({"task__NetworkMode": "none"}, guards.NETWORK_MODE),
    ({"task__NetworkMode": {"Ref": "Mode"}}, guards.NETWORK_MODE),
    ({"task__PidMode": "host"}, guards.HOST_NAMESPACE),
    ({"task__IpcMode": "Host"}, guards.HOST_NAMESPACE),
    ({"task__IpcMode": "shareable"}, guards.HOST_NAMESPACE),
    ({"c__Privileged": True}, guards.PRIVILEGED_CONTAINER),
    ({"c__Privileged": "true"}, guards.PRIVILEGED_CONTAINER),
    ({"c__Privileged": "True"}, guards.PRIVILEGED_CONTAINER),
    ({"c__Privileged": {"Ref": "P"}}, guards.PRIVILEGED_CONTAINER),
    ({"c__privileged": "TRUE"}, guards.PRIVILEGED_CONTAINER),
    ({"linux__Capabilities": {"Add": ["SYS_ADMIN"]}}, guards.HOST_CAPABILITY),
    ({"linux__Capabilities": {"Add": ["CAP_SYS_ADMIN"]}}, guards.HOST_CAPABILITY),
    ({"linux__Capabilities": {"Add": ["sys_module"]}}, guards.HOST_CAPABILITY),
    ({"linux__Capabilities": {"Add": [" DAC_READ_SEARCH "]}}, guards.HOST_CAPABILITY),
    ({"linux__Capabilities": {"Add": ["NET_ADMIN"]}}, guards.HOST_CAPABILITY),
    ({"linux__Capabilities": {"Add": ["ALL"]}}, guards.HOST_CAPABILITY),
    ({"c__DockerSecurityOptions": ["apparmor:unconfined"]}, guards.SECURITY_OPTION),
    ({"c__DockerSecurityOptions": ["seccomp=unconfined"]}, guards.SECURITY_OPTION),
    ({"c__DockerSecurityOptions": ["label:disable"]}, guards.SECURITY_OPTION),
    ({"linux__Devices": [{"HostPath": "/dev/nvidia0"}]}, guards.GPU_DEVICE_MAPPED),
    ({"linux__Devices": [{"HostPath": "/dev//nvidia0"}]}, guards.GPU_DEVICE_MAPPED),
    ({"linux__Devices": [{"HostPath": "/dev/../dev/nvidiactl"}]}, guards.GPU_DEVICE_MAPPED),
    ({"linux__Devices": [{"HostPath": "/dev/char/195:0"}]}, guards.GPU_DEVICE_MAPPED),
    ({"linux__Devices": [{"HostPath": "/dev/fuse"}]}, guards.DEVICE_MAPPED),
    ({"linux__Devices": [{"HostPath": "/dev/sda"}]}, guards.DEVICE_MAPPED),
    ({"c__Environment": [{"Name": "NVIDIA_VISIBLE_DEVICES", "Value": "all"}]}, guards.GPU_STEERING_ENVIRONMENT),
    ({"c__Secrets": [{"Name": "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "ValueFrom": "x"}]}, guards.GPU_STEERING_ENVIRONMENT),
    # An environment file's variables are read by the agent at task start, out of the synth's sight: any of them may
    # be NVIDIA_VISIBLE_DEVICES or CUDA_MPS_PINNED_DEVICE_MEM_LIMIT.
    ({"c__EnvironmentFiles": [{"Type": "s3", "Value": "arn:aws:s3:::b/model.env"}]}, guards.GPU_STEERING_ENVIRONMENT),
    ({"c__environmentFiles": [{"type": "s3", "value": "arn:aws:s3:::b/model.env"}]}, guards.GPU_STEERING_ENVIRONMENT),
    ({"c__EnvironmentFiles": {"Ref": "Files"}}, guards.GPU_STEERING_ENVIRONMENT),
    # a variable named at deploy could be any of them
    ({"c__Environment": [{"Name": {"Ref": "Variable"}, "Value": "0"}]}, guards.GPU_STEERING_ENVIRONMENT),
    (
        {"c__Secrets": [{"Name": {"Fn::Join": ["", ["CUDA_", "VISIBLE_DEVICES"]]}, "ValueFrom": "x"}]},
        guards.GPU_STEERING_ENVIRONMENT,
    ),
    # a real-time thread is outside cgroup v2's CPU control: it can take the host's CPUs from every other tenant
    ({"c__Ulimits": [{"Name": "rtprio", "SoftLimit": 1, "HardLimit": 99}]}, guards.REALTIME_PRIORITY),
    ({"c__Ulimits": [{"Name": "RTPRIO", "SoftLimit": 0, "HardLimit": 1}]}, guards.REALTIME_PRIORITY),
    ({"c__Ulimits": [{"name": "rtprio", "softLimit": {"Ref": "P"}, "hardLimit": 0}]}, guards.REALTIME_PRIORITY),
    ({"c__Ulimits": {"Ref": "Limits"}}, guards.REALTIME_PRIORITY),
    ({"c__Unheard": 1}, guards.UNKNOWN_PROPERTY),
    ({"task__TrustedExecutionConfiguration": {}}, guards.UNKNOWN_PROPERTY),
    ({"linux__Something": 1}, guards.UNKNOWN_PROPERTY),
]


@pytest.mark.parametrize(("changes", "rule"), DENIED)
def test_each_denied_property_in_each_spelling_is_refused(changes: dict[str, Any], rule: str) -> None:
    assert rule in _rules(_task(**changes))


@pytest.mark.parametrize(
    "path", ["/var/run/docker.sock", "/run/mps-ecs", "/run//mps-ecs/", "/", "/proc", "/etc/../var/run/docker.sock"]
)
def test_a_host_path_volume_is_refused_normalised(path: str) -> None:
    task = _task(task__Volumes=[{"Name": "v", "Host": {"SourcePath": path}}])
    lines = guards.guard_violations(task)
    assert [guards.rule_of(line) for line in lines] == [guards.HOST_PATH]
    assert " ".join(lines).count("docker.sock") <= 2


@pytest.mark.parametrize(
    "config",
    [
        {"Driver": "local", "DriverOpts": {"type": "none", "o": "bind", "device": "/var/run"}},
        {"Driver": "rexray/ebs"},
    ],
)
def test_a_docker_volume_that_can_bind_a_host_path_is_refused(config: dict[str, Any]) -> None:
    assert _rules(_task(task__Volumes=[{"Name": "v", "DockerVolumeConfiguration": config}])) == [guards.HOST_PATH]


ALLOWED = [
    {},
    {"task__NetworkMode": "awsvpc"},
    {"task__NetworkMode": "bridge"},
    {"task__PidMode": "task"},
    {"task__IpcMode": "none"},
    {"c__Privileged": False},
    {"c__Privileged": "false"},
    {"c__Privileged": "False"},
    {"linux__Capabilities": {"Drop": ["ALL"], "Add": ["NET_BIND_SERVICE"]}},
    {"linux__Capabilities": {"Add": ["cap_chown", "CAP_SETUID"]}},
    {"linux__InitProcessEnabled": True, "linux__SharedMemorySize": 1024, "linux__Tmpfs": [{"ContainerPath": "/t"}]},
    {"c__DockerSecurityOptions": ["no-new-privileges"]},
    {"c__DockerSecurityOptions": ["no-new-privileges:true"]},
    {"c__Environment": [{"Name": "MODEL_ID", "Value": "x"}, {"Name": "cuda_visible_devices", "Value": "0"}]},
    {"c__EnvironmentFiles": []},
    {"task__Volumes": [{"Name": "scratch"}]},
    {"task__Volumes": [{"Name": "scratch", "Host": {}}]},
    {"task__Volumes": [{"Name": "scratch", "Host": {"SourcePath": ""}}]},
    {"task__Volumes": [{"Name": "cache", "DockerVolumeConfiguration": {"Scope": "shared", "Driver": "local"}}]},
    {"task__Volumes": [{"Name": "efs", "EFSVolumeConfiguration": {"FilesystemId": "fs-1"}}]},
    {"task__Volumes": [{"Name": "ebs", "ConfiguredAtLaunch": True}]},
    {"c__SystemControls": [{"Namespace": "net.core.somaxconn", "Value": "1024"}], "c__Ulimits": []},
    {
        "c__Ulimits": [
            {"Name": "nofile", "SoftLimit": 65536, "HardLimit": 65536},
            {"Name": "memlock", "SoftLimit": -1, "HardLimit": -1},
        ]
    },
    {"c__Ulimits": [{"Name": "rtprio", "SoftLimit": 0, "HardLimit": 0}]},
]


@pytest.mark.parametrize("changes", ALLOWED)
def test_each_allowed_property_passes(changes: dict[str, Any]) -> None:
    assert guards.guard_violations(_task(**changes)) == []


def test_api_spelling_is_read_the_same() -> None:
    task = {"networkMode": "host", "containerDefinitions": [{"name": "m", "image": "x", "privileged": "true"}]}
    assert set(_rules(task)) == {guards.NETWORK_MODE, guards.PRIVILEGED_CONTAINER}


def _members(shape: str) -> set[str]:
    model = botocore.session.get_session().get_service_model("ecs")
    return set(model.shape_for(shape).members)


@pytest.mark.parametrize(
    ("shape", "neutral", "judged"),
    [
        ("ContainerDefinition", guards.CONTAINER_NEUTRAL, guards.CONTAINER_JUDGED),
        ("LinuxParameters", guards.LINUX_NEUTRAL, guards.LINUX_JUDGED),
        ("Volume", guards.VOLUME_NEUTRAL, guards.VOLUME_JUDGED),
    ],
)
def test_every_property_of_the_ecs_model_is_classified(shape: str, neutral: Any, judged: Any) -> None:
    """A property AWS adds is refused until someone decides what it grants; one classified here exists."""
    members = _members(shape)
    assert members - neutral - judged - guards.NOT_ALLOWED == set(), "classify the new properties"
    assert (neutral | judged) - members == set(), "a classified property the model does not have"


def test_every_task_property_is_classified() -> None:
    model = botocore.session.get_session().get_service_model("ecs")
    members = set(model.operation_model("RegisterTaskDefinition").input_shape.members)
    known = guards.TASK_NEUTRAL | guards.TASK_JUDGED
    assert members - known - guards.NOT_ALLOWED == set()
    assert known - members == set()


def test_a_command_that_changes_mps_variables_warns() -> None:
    task = _task(c__EntryPoint=["sh", "-c"], c__Command=["env -u CUDA_MPS_PINNED_DEVICE_MEM_LIMIT python serve.py"])
    (line,) = guards.mps_variables_in_command(task)
    assert "container model" in line and "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT" in line
    assert guards.mps_variables_in_command(_task(c__Command=["python", "serve.py"])) == []


@pytest.mark.parametrize(
    "changes",
    [
        {"task__ContainerDefinitions": {"Fn::If": ["C", [], []]}},
        {"task__Volumes": {"Ref": "Volumes"}},
        {"c__Environment": {"Fn::If": ["C", [{"Name": "CUDA_VISIBLE_DEVICES", "Value": "0"}], []]}},
    ],
)
def test_a_list_written_as_a_deploy_time_value_is_refused(changes: dict[str, Any]) -> None:
    task = _task(**{k: v for k, v in changes.items() if k != "task__ContainerDefinitions"})
    if "task__ContainerDefinitions" in changes:
        task["ContainerDefinitions"] = changes["task__ContainerDefinitions"]
    assert guards.UNKNOWN_PROPERTY in _rules(task)
