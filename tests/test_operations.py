"""Operations against AWS, through real botocore: moto where it serves the calls, botocore's Stubber where it
cannot (gpuDevices, health status, throttling, access denied). Both validate against AWS's service models."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws
from moto.server import ThreadedMotoServer

from ecs_gpu_sharing.cli import main
from ecs_gpu_sharing.core import ami_release, catalog, fleet
from ecs_gpu_sharing.operations import ami_refresh, ami_verify, aws, catalog_refresh, cluster_status, ebs_key

from conftest import REPO, THREE_MODELS

RELEASE = "20261113"
AMI_NAME = f"al2023-ami-ecs-gpu-hvm-2023.0.{RELEASE}-kernel-6.1-x86_64-ebs"
PARAMETER = f"/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/{AMI_NAME}/image_id"


def _stubbed(monkeypatch: pytest.MonkeyPatch, **clients: Any) -> None:
    """Makes the CLI use these (stubbed) clients by service name."""
    monkeypatch.setattr(aws, "client", lambda service, region: clients[service])


def _real(service: str) -> Any:
    return boto3.client(service, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")


# --- catalog refresh ------------------------------------------------------------------------------------


@mock_aws
def test_catalog_refresh_writes_the_catalog_and_says_what_changed(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first refresh describes the region through moto; the later ones reuse that description (moto takes four
    # seconds a call), since they test what is written and refused.
    generate, described = catalog_refresh.generate, []

    def described_once(ec2_client: Any) -> str:
        if not described:
            described.append(generate(ec2_client))
        return described[0]

    monkeypatch.setattr(catalog_refresh, "generate", described_once)
    output = tmp_path / "catalog.json"
    shutil.copy(str(catalog.data_path()), output)
    assert main(["catalog", "refresh", "--region", "us-east-1", "--output", str(output)]) == 0
    assert "no changes" in capsys.readouterr().out
    text = output.read_text().replace('"g6.xlarge": {', '"g6.gone": {')
    output.write_text(text)
    # A refresh that would drop a type writes nothing and says which, unless removals are allowed.
    assert main(["catalog", "refresh", "--region", "us-east-1", "--output", str(output)]) == 1
    assert "would drop 1 instance types that us-east-1 does not describe (g6.gone); nothing was written" in (
        capsys.readouterr().err
    )
    assert output.read_text() == text
    assert main(["catalog", "refresh", "--region", "us-east-1", "--output", str(output), "--allow-removals"]) == 0
    out = capsys.readouterr().out
    assert "added (1): g6.xlarge" in out and "removed (1): g6.gone" in out


# --- ami verify -----------------------------------------------------------------------------------------


@mock_aws
def test_inspect_region_resolves_a_published_release_through_aws_data(fake_credentials: None) -> None:
    # moto carries AWS's public parameters and images; its copy ends at 20260922 (below the floor).
    result = ami_verify.inspect_region(_real("ssm"), _real("ec2"), "20260922")
    assert result.ok and result.image_id == "ami-0ca77a28d8801702a"  # its root device /dev/xvda, as AWS lists it


@mock_aws
def test_ami_verify_reports_a_release_not_published_in_the_region(
    fake_credentials: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ami", "verify", "--release", RELEASE, "--region", "us-east-1"]) == 1
    assert (
        capsys.readouterr().out.strip()
        == f"us-east-1: FAILED: no public SSM parameter {PARAMETER}: the release is not published here"
    )


def test_ami_verify_refuses_a_release_below_the_floor_before_any_call(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ami", "verify", "--release", "20260922", "--region", "us-east-1"]) == 1
    assert "older than 20261019" in capsys.readouterr().err


def _ami_stubs(image: dict[str, Any]) -> tuple[Any, Any, Stubber, Stubber]:
    ssm, ec2 = _real("ssm"), _real("ec2")
    ssm_stub, ec2_stub = Stubber(ssm), Stubber(ec2)
    ssm_stub.add_response(
        "get_parameter",
        {"Parameter": {"Name": PARAMETER, "Type": "String", "Value": "ami-0123456789abcdef0", "Version": 1}},
        {"Name": PARAMETER},
    )
    ec2_stub.add_response("describe_images", {"Images": [image]}, {"ImageIds": ["ami-0123456789abcdef0"]})
    return ssm, ec2, ssm_stub, ec2_stub


def test_ami_verify_prints_the_ami_id_when_the_release_checks_out(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    image = {"ImageId": "ami-0123456789abcdef0", "Name": AMI_NAME, "Architecture": "x86_64", "State": "available"}
    root = [{"DeviceName": "/dev/xvda", "Ebs": {"SnapshotId": "snap-1", "VolumeSize": 30}}]
    ssm, ec2, ssm_stub, ec2_stub = _ami_stubs({**image, "RootDeviceName": "/dev/xvda", "BlockDeviceMappings": root})
    _stubbed(monkeypatch, ssm=ssm, ec2=ec2)
    with ssm_stub, ec2_stub:
        assert main(["ami", "verify", "--release", RELEASE, "--region", "us-east-1"]) == 0
    assert capsys.readouterr().out.strip() == "us-east-1: ami-0123456789abcdef0 ok"


@pytest.mark.parametrize(
    ("image", "problem"),
    [
        ({"Name": AMI_NAME, "Architecture": "arm64"}, "is arm64, not x86_64"),
        ({"Name": "al2023-ami-ecs-hvm-2023.0.20261113-kernel-6.1-x86_64", "Architecture": "x86_64"}, "is named"),
        # The launch templates size the root volume by its device name: on another, theirs is a second disk.
        ({"Name": AMI_NAME, "Architecture": "x86_64", "RootDeviceName": "/dev/sda1"}, "root device is /dev/sda1"),
        # EC2 launches no root volume smaller than its snapshot: every root_volume_gib the constructs take must fit.
        (
            {
                "Name": AMI_NAME,
                "Architecture": "x86_64",
                "RootDeviceName": "/dev/xvda",
                "BlockDeviceMappings": [{"DeviceName": "/dev/xvda", "Ebs": {"SnapshotId": "snap-1", "VolumeSize": 40}}],
            },
            "root snapshot is 40 GiB, and EC2 launches no root volume smaller",
        ),
    ],
)
def test_ami_verify_fails_on_the_wrong_image(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], image: dict[str, Any], problem: str
) -> None:
    ssm, ec2, ssm_stub, ec2_stub = _ami_stubs({"ImageId": "ami-0123456789abcdef0", **image})
    _stubbed(monkeypatch, ssm=ssm, ec2=ec2)
    with ssm_stub, ec2_stub:
        assert main(["ami", "verify", "--release", RELEASE, "--region", "us-east-1"]) == 1
    assert problem in capsys.readouterr().out


# --- cluster status -------------------------------------------------------------------------------------

NOW = datetime.datetime(2026, 11, 29, tzinfo=datetime.UTC)
CLUSTER = "models"


def _instance(
    instance_id: str, *, agent: str, mps: bool, health: str, gpus: list[dict[str, Any]], ami: str = ""
) -> dict[str, Any]:
    attributes = [{"name": "ecs.instance-type", "value": "g6.xlarge"}]
    if ami:
        attributes.append({"name": "ecs.ami-id", "value": ami})
    if mps:
        attributes.append({"name": cluster_status.MPS_CAPABILITY})
    return {
        "containerInstanceArn": f"arn:aws:ecs:us-east-1:123456789012:container-instance/{CLUSTER}/{instance_id}",
        "ec2InstanceId": instance_id,
        "versionInfo": {"agentVersion": agent},
        "attributes": attributes,
        "healthStatus": {
            "overallStatus": health,
            "details": [
                {
                    "type": "ACCELERATED_COMPUTE",
                    "status": health,
                    "lastUpdated": NOW,
                    **({"statusReason": "MPS control daemon is not responding"} if health == "IMPAIRED" else {}),
                }
            ],
        },
        "gpuDevices": gpus,
    }


def _ecs_stub(instances: list[dict[str, Any]], services: list[dict[str, Any]]) -> tuple[Any, Stubber]:
    ecs = _real("ecs")
    stub = Stubber(ecs)
    stub.add_response(
        "describe_clusters", {"clusters": [{"clusterName": CLUSTER, "status": "ACTIVE"}]}, {"clusters": [CLUSTER]}
    )
    arns = [i["containerInstanceArn"] for i in instances]
    stub.add_response("list_container_instances", {"containerInstanceArns": arns}, {"cluster": CLUSTER})
    if arns:
        stub.add_response(
            "describe_container_instances",
            {"containerInstances": instances, "failures": []},
            {"cluster": CLUSTER, "containerInstances": arns, "include": ["CONTAINER_INSTANCE_HEALTH"]},
        )
    service_arns = [f"arn:aws:ecs:us-east-1:123456789012:service/{CLUSTER}/{s['serviceName']}" for s in services]
    stub.add_response("list_services", {"serviceArns": service_arns}, {"cluster": CLUSTER})
    if services:
        stub.add_response(
            "describe_services",
            {"services": services, "failures": []},
            {"cluster": CLUSTER, "services": service_arns, "include": ["TAGS"]},
        )
    return ecs, stub


def _service(name: str, desired: int, running: int, tag: str | None) -> dict[str, Any]:
    doc: dict[str, Any] = {"serviceName": name, "desiredCount": desired, "runningCount": running}
    if tag:
        doc["tags"] = [{"key": fleet.SERVICE_TAG, "value": tag}]
    return doc


def _gpu(gpu_id: str, total: int, remaining: int, count: int, mode: str = "NVIDIA_MPS") -> dict[str, Any]:
    return {
        "gpuId": gpu_id,
        "sharingMode": mode,
        "totalMemoryInMiB": total,
        "remainingMemoryInMiB": remaining,
        "containerCount": count,
    }


def test_cluster_status_of_a_healthy_cluster(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    healthy = _instance("i-0aaa", agent="1.108.3", mps=True, health="OK", gpus=[_gpu("GPU-1", 22563, 10563, 3)])
    ecs, stub = _ecs_stub([healthy], [_service("emb", 3, 3, "emb")])
    _stubbed(monkeypatch, ecs=ecs)
    with stub:
        assert main(["cluster", "status", "--cluster", CLUSTER, "--region", "us-east-1"]) == 0
    out = capsys.readouterr().out
    assert "i-0aaa g6.xlarge agent 1.108.3 mps yes accelerated-compute OK" in out
    assert "GPU GPU-1 NVIDIA_MPS: 12000 of 22563 MiB allocated, 10563 remaining, 3 containers" in out
    assert "no problems found" in out


def test_cluster_status_reports_every_problem_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    old = _instance("i-0old", agent="1.106.2", mps=False, health="IMPAIRED", gpus=[])
    gpus = [_gpu("GPU-2", 22563, 163, 4), _gpu("GPU-3", 22400, 22400, 0)]  # the second registers less than the plan
    full = _instance("i-0full", agent="1.108.3", mps=True, health="OK", gpus=gpus, ami="ami-0aaaaaaaaaaaaaaa1")
    services = [_service("emb", 4, 2, "emb"), _service("rr", 2, 2, "rr")]
    ecs, stub = _ecs_stub([old, full], services)
    ec2 = _real("ec2")
    ec2_stub = Stubber(ec2)
    ec2_stub.add_response(
        "describe_images",
        {
            "Images": [
                {
                    "ImageId": "ami-0aaaaaaaaaaaaaaa1",
                    "Name": "al2023-ami-ecs-gpu-hvm-2023.0.20261031-kernel-6.1-x86_64-ebs",
                }
            ]
        },
        {"ImageIds": ["ami-0aaaaaaaaaaaaaaa1"]},
    )
    ec2_stub.activate()
    _stubbed(monkeypatch, ecs=ecs, ec2=ec2)
    fleet_file = tmp_path / "fleet.toml"
    fleet_file.write_text(
        'name = "m"\n[capacity.l4]\ninstance_types = ["g6.xlarge"]\n'
        + "".join(
            f'[service.{n}]\ncapacity = "l4"\nimage = "i"\ndesired_count = {c}\ncpu_units = 256\nmemory_mib = 512\ngpu_budget_mib = 2048\n'
            for n, c in (("emb", 4), ("rr", 3), ("llm", 1))
        )
    )
    with stub:
        assert (
            main(
                [
                    "cluster",
                    "status",
                    "--cluster",
                    CLUSTER,
                    "--region",
                    "us-east-1",
                    "--fleet",
                    str(fleet_file),
                    "--json",
                ]
            )
            == 1
        )
    doc = json.loads(capsys.readouterr().out)
    first = doc["instances"][1]["gpus"][0]
    assert (first["remaining_mib"], first["plan_ecs_mib"], first["plan_usable_mib"]) == (163, 22563, 22307)
    problems = doc["problems"]
    assert problems == [
        "instance i-0old: ECS agent 1.106.2 is older than 1.107.0; use an AMI release >= 20261019",
        "instance i-0old: no ecs.capability.gpu-sharing-mps attribute: MPS tasks will not be placed here; the agent's setup check failed (it needs a GPU, the MPS control binary, the nvidia-mps systemd unit enabled, and not a vGPU slice): use the AL2023 GPU AMI, and see the agent's log for which",
        "instance i-0old: ACCELERATED_COMPUTE health is IMPAIRED: MPS control daemon is not responding",
        "service emb: 2 of 4 tasks running",
        "instance i-0full: GPU GPU-2: 22400 MiB allocated, past the plan's 22307 MiB usable per GPU (its 256 MiB margin is taken): lower budgets, or raise gpu_margin_mib",
        "instance i-0full: GPU GPU-3: ECS registers 22400 MiB, less than the 22563 MiB the plan takes for it (table); set ecs_gpu_memory_mib = 22400 on capacity l4",
        "fleet service rr: desired count is 2 in the cluster, 3 in the fleet file",
        "fleet service llm: not found in the cluster (no service tagged ecs-gpu-sharing:service=llm)",
        "instance i-0full: runs release 20261031, but capacity l4 pins 20261113; deploy the stack to roll the hosts onto it",
    ]
    assert doc["instances"][1]["ami_release"] == "20261031"
    ec2_stub.assert_no_pending_responses()


def test_cluster_status_pages_through_instances_in_batches_of_100() -> None:
    ecs = _real("ecs")
    stub = Stubber(ecs)
    arns = [f"arn:aws:ecs:us-east-1:123456789012:container-instance/{CLUSTER}/i{n:03d}" for n in range(150)]
    stub.add_response(
        "list_container_instances", {"containerInstanceArns": arns[:120], "nextToken": "t"}, {"cluster": CLUSTER}
    )
    stub.add_response(
        "list_container_instances", {"containerInstanceArns": arns[120:]}, {"cluster": CLUSTER, "nextToken": "t"}
    )
    for batch in (arns[:100], arns[100:]):
        stub.add_response(
            "describe_container_instances",
            {"containerInstances": [{"containerInstanceArn": a, "ec2InstanceId": a[-4:]} for a in batch]},
            {"cluster": CLUSTER, "containerInstances": batch, "include": ["CONTAINER_INSTANCE_HEALTH"]},
        )
    stub.add_response("list_services", {"serviceArns": []}, {"cluster": CLUSTER})
    with stub:
        instances, _ = cluster_status.read(ecs, CLUSTER)
    assert len(instances) == 150
    stub.assert_no_pending_responses()


@mock_aws
def test_cluster_status_against_moto_flags_instances_without_the_capability(
    fake_credentials: None, capsys: pytest.CaptureFixture[str]
) -> None:
    ecs, ec2 = _real("ecs"), _real("ec2")
    ecs.create_cluster(clusterName=CLUSTER)
    image = ec2.describe_images(Owners=["amazon"], MaxResults=5)["Images"][0]["ImageId"]
    instance = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1, InstanceType="g6.xlarge")["Instances"][0]
    document = json.dumps({"instanceId": instance["InstanceId"], "instanceType": "g6.xlarge", "region": "us-east-1"})
    ecs.register_container_instance(cluster=CLUSTER, instanceIdentityDocument=document)
    assert main(["cluster", "status", "--cluster", CLUSTER, "--region", "us-east-1"]) == 1
    assert f"instance {instance['InstanceId']}: no ecs.capability.gpu-sharing-mps attribute" in capsys.readouterr().out


# --- AWS failures: one clear line and a non-zero exit ---------------------------------------------------


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and captured.err.count("\n") == 1, captured.err
    return captured.err


@mock_aws
def test_missing_cluster(fake_credentials: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cluster", "status", "--cluster", "nope", "--region", "us-east-1"]) == 1
    assert "cluster 'nope' not found in us-east-1" in _one_error_line(capsys)


def test_no_credentials(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", raising=False)
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    assert main(["cluster", "status", "--cluster", CLUSTER, "--region", "us-east-1"]) == 1
    assert "no AWS credentials found" in _one_error_line(capsys)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("AccessDeniedException", "AccessDeniedException: User is not authorized; grant the caller this permission"),
        ("ThrottlingException", "ThrottlingException: Rate exceeded; AWS kept throttling after retries"),
    ],
)
def test_access_denied_and_throttling(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], code: str, expected: str
) -> None:
    ecs = _real("ecs")
    stub = Stubber(ecs)
    message = "User is not authorized" if code.startswith("Access") else "Rate exceeded"
    stub.add_client_error("describe_clusters", service_error_code=code, service_message=message, http_status_code=400)
    _stubbed(monkeypatch, ecs=ecs)
    with stub:
        assert main(["cluster", "status", "--cluster", CLUSTER, "--region", "us-east-1"]) == 1
    assert f"describing cluster {CLUSTER}: {expected}" in _one_error_line(capsys)


def test_clients_use_standard_retries(fake_credentials: None) -> None:
    assert aws.client("ecs", "us-east-1").meta.config.retries["mode"] == "standard"


def test_unknown_region(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cluster", "status", "--cluster", CLUSTER, "--region", "xx-fake-1"]) == 1
    assert "unknown region 'xx-fake-1': use a region name such as us-east-1" in _one_error_line(capsys)


# --- the three commands over HTTP against moto's server ------------------------------------------------


@pytest.fixture(scope="module")
def moto_server() -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


def _cli(endpoint: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    return subprocess.run(
        [sys.executable, "-m", "ecs_gpu_sharing.cli", *args], cwd=REPO, env=env, capture_output=True, text=True
    )


def test_commands_over_http_against_motos_server(moto_server: str, tmp_path: Path) -> None:
    output = tmp_path / "catalog.json"
    refreshed = _cli(moto_server, "catalog", "refresh", "--output", str(output))
    assert refreshed.returncode == 0, refreshed.stderr
    assert catalog.parse(output.read_text()) == dict(catalog.load())

    verified = _cli(
        moto_server, "ami", "verify", "--release", RELEASE, "--region", "us-east-1", "--region", "eu-west-1"
    )
    assert verified.returncode == 1  # moto's copy of the public parameters predates the release
    assert verified.stdout.count("FAILED: no public SSM parameter") == 2

    ecs = boto3.client(
        "ecs", region_name="us-east-1", endpoint_url=moto_server, aws_access_key_id="t", aws_secret_access_key="t"
    )
    ecs.create_cluster(clusterName=CLUSTER)
    status = _cli(moto_server, "cluster", "status", "--cluster", CLUSTER, "--json", "--fleet", str(THREE_MODELS))
    doc = json.loads(status.stdout)
    assert doc["cluster"] == CLUSTER and doc["instances"] == []
    assert status.returncode == 1 and any("fleet service embedder: not found" in p for p in doc["problems"])
    assert fleet.load(THREE_MODELS).services.keys() == {"embedder", "reranker", "small-llm"}


# --- ami refresh -------------------------------------------------------------------------------------------


@mock_aws
def test_ami_refresh_against_motos_public_parameters_keeps_the_table(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # moto's copy of AWS's public parameters ends below the floor: nothing to add, nothing dropped.
    output = tmp_path / "releases.json"
    shutil.copy(str(ami_release.releases_path()), output)
    before = output.read_text()
    assert main(["ami", "refresh", "--region", "us-east-1", "--output", str(output)]) == 0
    assert "no new releases" in capsys.readouterr().out
    assert ami_release.parse_releases(output.read_text()) == ami_release.parse_releases(before)


def test_ami_refresh_adds_a_published_release_with_its_agent(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ssm = _real("ssm")
    stub = Stubber(ssm)
    name = "al2023-ami-ecs-gpu-hvm-2023.0.20261201-kernel-6.1-x86_64-ebs"
    metadata = {"ecs_agent_version": "1.109.0", "image_id": "ami-0123456789abcdef0", "image_name": name}
    stub.add_response(
        "get_parameters_by_path",
        {
            "Parameters": [
                {"Name": f"{ami_refresh.GPU_PATH}/{name}", "Type": "String", "Value": json.dumps(metadata)},
                {"Name": f"{ami_refresh.GPU_PATH}/{name}/image_id", "Type": "String", "Value": "ami-0123456789abcdef0"},
                {
                    "Name": f"{ami_refresh.GPU_PATH}/al2023-ami-ecs-gpu-hvm-2023.0.20260922-kernel-6.1-x86_64-ebs",
                    "Type": "String",
                    "Value": json.dumps({"ecs_agent_version": "1.107.0"}),
                },
            ]
        },
        {"Path": ami_refresh.GPU_PATH, "Recursive": True},
    )
    _stubbed(monkeypatch, ssm=ssm)
    output = tmp_path / "releases.json"
    shutil.copy(str(ami_release.releases_path()), output)
    with stub:
        assert main(["ami", "refresh", "--output", str(output)]) == 0
    assert "added (1): 20261201" in capsys.readouterr().out
    table = ami_release.parse_releases(output.read_text())
    assert table["20261201"].ecs_agent_version == "1.109.0" and "GetParametersByPath" in table["20261201"].source
    assert set(ami_release.known_releases()) < set(table) and "20260922" not in table  # below the floor


def test_impaired_accelerated_compute_shows_ecss_reason_and_assumes_no_cause() -> None:
    inst = cluster_status.InstanceStatus("arn", "i-1", "g6.xlarge", "1.108.3", True, "IMPAIRED", "")
    (problem,) = cluster_status.problems_of([inst], [])
    assert problem == "instance i-1: ACCELERATED_COMPUTE health is IMPAIRED: ECS gave no reason"


def test_cluster_status_names_a_plan_service_claimed_twice() -> None:
    spec = fleet.load(REPO / "fleet.toml")
    services = [
        cluster_status.ServiceStatus(name="models-embedder-x", desired=2, running=2, fleet_service="embedder"),
        cluster_status.ServiceStatus(name="tenant-lookalike", desired=2, running=2, fleet_service="embedder"),
    ]
    problems = cluster_status.problems_of([], services, spec)
    assert any(
        p.startswith("fleet service embedder: claimed by 2 services (models-embedder-x, tenant-lookalike)")
        for p in problems
    )


def test_an_answer_that_is_not_aws_is_one_line_without_its_markup() -> None:
    ecs = boto3.client("ecs", region_name="us-east-1")
    with Stubber(ecs) as stub:
        stub.add_client_error(
            "list_services",
            service_error_code="",
            service_message="<html><body>502 Bad Gateway</body></html>",
            http_status_code=502,
        )
        with pytest.raises(aws.AwsOperationError) as raised, aws.aws_errors("reading the services of cluster models"):
            ecs.list_services(cluster="models")
    message = str(raised.value)
    assert "HTTP 502 with no AWS error" in message and "<html" not in message and "\n" not in message


def test_an_html_page_where_an_xml_service_answers_is_one_line_not_a_traceback() -> None:
    # EC2 speaks XML: an HTML error page (a proxy's, or moto's for an action it lacks) cannot be parsed at all, and
    # botocore raises ResponseParserError, which is no ClientError. A server on loopback answers that way.
    import http.server
    import threading

    from botocore.config import Config

    class Html500(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = b"<!doctype html><title>500 Internal Server Error</title>"
            self.send_response(500)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            return None

    server = http.server.HTTPServer(("127.0.0.1", 0), Html500)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        ec2 = boto3.client(
            "ec2",
            region_name="us-east-1",
            endpoint_url=f"http://127.0.0.1:{server.server_address[1]}",
            aws_access_key_id="x",
            aws_secret_access_key="x",
            config=Config(retries={"max_attempts": 1}),
        )
        with pytest.raises(aws.AwsOperationError) as raised, aws.aws_errors("us-east-1: reading the default EBS key"):
            ec2.get_ebs_default_kms_key_id()
    finally:
        server.shutdown()
    message = str(raised.value)
    assert message.startswith("us-east-1: reading the default EBS key: the endpoint answered with no AWS response")
    assert "<html" not in message and "\n" not in message


def test_a_missing_cluster_says_what_to_check(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in {
        "AWS_ACCESS_KEY_ID": "t",
        "AWS_SECRET_ACCESS_KEY": "t",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)
    with mock_aws():
        ecs = boto3.client("ecs", region_name="us-east-1")
        with (
            pytest.raises(aws.AwsOperationError, match=r"ClusterNotFoundException.*check the name and the region"),
            aws.aws_errors("reading the services of cluster nowhere"),
        ):
            ecs.list_services(cluster="nowhere")


# --- fleet zones ----------------------------------------------------------------------------------------------
# moto carries AWS's published offerings by zone: in ca-central-1, p5.48xlarge only in ca-central-1d; in
# ap-southeast-2, g5.xlarge in ap-southeast-2b and 2c only.


def _zones_fleet(tmp_path: Path, types: list[str], extra: str = "") -> Path:
    path = tmp_path / "fleet.toml"
    path.write_text(
        f'name = "z"\n{extra}\n[capacity.gpu]\ninstance_types = {json.dumps(types)}\n'
        '[service.a]\ncapacity = "gpu"\nimage = "i"\ndesired_count = 1\ncpu_units = 256\nmemory_mib = 512\n'
        "gpu_budget_mib = 1024\n"
    )
    return path


@mock_aws
def test_fleet_zones_passes_types_offered_in_both_zones(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet_file = _zones_fleet(tmp_path, ["g6.2xlarge", "g6.4xlarge"])
    assert main(["fleet", "zones", str(fleet_file), "--region", "us-east-1"]) == 0
    assert capsys.readouterr().out.strip() == (
        "gpu: g6.2xlarge in us-east-1a, us-east-1b; g6.4xlarge in us-east-1a, us-east-1b"
    )


@mock_aws
def test_fleet_zones_fails_a_capacity_no_zone_of_the_vpc_offers(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fleet", "zones", str(_zones_fleet(tmp_path, ["p5.48xlarge"])), "--region", "ca-central-1"]) == 1
    out = capsys.readouterr().out
    assert (
        "capacity.gpu: no zone of ca-central-1a, ca-central-1b offers p5.48xlarge in ca-central-1, so no host can "
        "launch and its tasks would wait in PROVISIONING (offered in p5.48xlarge: ca-central-1d)"
    ) in out


@mock_aws
def test_fleet_zones_warns_of_a_capacity_that_launches_in_one_zone(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fleet", "zones", str(_zones_fleet(tmp_path, ["g5.xlarge"])), "--region", "ap-southeast-2"]) == 0
    assert (
        "capacity.gpu: hosts can launch only in ap-southeast-2b of ap-southeast-2a, ap-southeast-2b"
        in capsys.readouterr().out
    )


@mock_aws
def test_fleet_zones_takes_the_zones_of_the_default_subnets_or_of_the_named_vpc(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ec2 = boto3.client("ec2", region_name="ca-central-1")
    # Fn::GetAZs gives the zones with a default subnet: without 1a's, an agnostic app's VPC is in 1b and 1d.
    (default_a,) = ec2.describe_subnets(
        Filters=[
            {"Name": "default-for-az", "Values": ["true"]},
            {"Name": "availability-zone", "Values": ["ca-central-1a"]},
        ]
    )["Subnets"]
    ec2.delete_subnet(SubnetId=default_a["SubnetId"])
    assert main(["fleet", "zones", str(_zones_fleet(tmp_path, ["p5.48xlarge"])), "--region", "ca-central-1"]) == 0
    assert "p5.48xlarge in ca-central-1d" in capsys.readouterr().out
    # A named VPC: its subnets' zones, here 1d only.
    vpc = ec2.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
    ec2.create_subnet(VpcId=vpc, CidrBlock="10.1.0.0/24", AvailabilityZone="ca-central-1d")
    bound = f'account = "123456789012"\nregion = "ca-central-1"\nvpc_id = "{vpc}"'
    assert main(["fleet", "zones", str(_zones_fleet(tmp_path, ["p5.48xlarge"], bound)), "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)
    assert result["zones"] == ["ca-central-1d"] and result["problems"] == [] and result["warnings"] == []
    # A type the VPC's zones never offer beside one they do: the group never launches it.
    assert main(["fleet", "zones", str(_zones_fleet(tmp_path, ["p5.48xlarge", "p5.4xlarge"], bound))]) == 1
    assert "capacity.gpu: p5.4xlarge is offered in none of ca-central-1d in ca-central-1" in capsys.readouterr().out


# --- cluster unprotect ----------------------------------------------------------------------------------------


def _protected_cluster() -> tuple[Any, Any, str]:
    """A cluster whose capacity provider's group has three instances protected from scale-in, as ECS leaves them."""
    ec2 = boto3.client("ec2", region_name="us-east-1")
    autoscaling = boto3.client("autoscaling", region_name="us-east-1")
    ecs = boto3.client("ecs", region_name="us-east-1")
    subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    ec2.create_launch_template(LaunchTemplateName="hosts", LaunchTemplateData={"ImageId": image})
    autoscaling.create_auto_scaling_group(
        AutoScalingGroupName="gpu-hosts",
        LaunchTemplate={"LaunchTemplateName": "hosts"},
        MinSize=3,
        MaxSize=3,
        DesiredCapacity=3,
        VPCZoneIdentifier=subnet,
        NewInstancesProtectedFromScaleIn=True,
    )
    arn = autoscaling.describe_auto_scaling_groups()["AutoScalingGroups"][0]["AutoScalingGroupARN"]
    ecs.create_capacity_provider(
        name="gpu", autoScalingGroupProvider={"autoScalingGroupArn": arn, "managedTerminationProtection": "ENABLED"}
    )
    ecs.create_cluster(clusterName="fleet", capacityProviders=["gpu"])
    return ecs, autoscaling, "fleet"


@mock_aws
def test_cluster_unprotect_refuses_while_a_service_wants_tasks_then_clears_every_protection(
    fake_credentials: None, capsys: pytest.CaptureFixture[str]
) -> None:
    ecs, autoscaling, cluster = _protected_cluster()
    ecs.register_task_definition(family="m", containerDefinitions=[{"name": "m", "image": "i", "memory": 64}])
    ecs.create_service(cluster=cluster, serviceName="embedder", taskDefinition="m", desiredCount=2)
    assert main(["cluster", "unprotect", "--cluster", cluster, "--region", "us-east-1"]) == 1
    assert "cluster fleet still runs 1 services (embedder): delete the services stacks first" in capsys.readouterr().err
    (group,) = autoscaling.describe_auto_scaling_groups()["AutoScalingGroups"]
    assert all(i["ProtectedFromScaleIn"] for i in group["Instances"])  # refused before any change

    ecs.update_service(cluster=cluster, service="embedder", desiredCount=0)
    assert main(["cluster", "unprotect", "--cluster", cluster, "--region", "us-east-1"]) == 0
    assert capsys.readouterr().out.strip() == "gpu-hosts: new instances unprotected; 3 instances unprotected"
    (group,) = autoscaling.describe_auto_scaling_groups()["AutoScalingGroups"]
    assert group["NewInstancesProtectedFromScaleIn"] is False
    assert [i["ProtectedFromScaleIn"] for i in group["Instances"]] == [False] * 3
    # A provider whose group is gone (an update replaced it, or a hand deleted it): said, and not a failure.
    autoscaling.delete_auto_scaling_group(AutoScalingGroupName="gpu-hosts", ForceDelete=True)
    assert main(["cluster", "unprotect", "--cluster", cluster, "--region", "us-east-1"]) == 0
    assert capsys.readouterr().out.strip() == "gpu-hosts: no such group any more; nothing to unprotect"


@mock_aws
def test_cluster_unprotect_finds_the_cluster_from_its_stack(
    fake_credentials: None, capsys: pytest.CaptureFixture[str]
) -> None:
    _protected_cluster()
    template = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {"ClusterName": {"Value": "fleet"}},
    }
    boto3.client("cloudformation", region_name="us-east-1").create_stack(
        StackName="models-cluster", TemplateBody=json.dumps(template)
    )
    assert main(["cluster", "unprotect", "--stack", "models-cluster", "--region", "us-east-1"]) == 0
    assert "3 instances unprotected" in capsys.readouterr().out
    assert main(["cluster", "unprotect", "--stack", "nope", "--region", "us-east-1"]) == 1
    assert "reading stack nope" in capsys.readouterr().err


# --- fleet quotas ---------------------------------------------------------------------------------------------
# moto serves no EC2 quotas, so botocore's Stubber answers, checked against the Service Quotas model.


def _quota(code: str, value: float) -> dict[str, Any]:
    return {"Quota": {"ServiceCode": "ec2", "QuotaCode": code, "QuotaName": code, "Value": value}}


@pytest.mark.parametrize(("quota", "code"), [(56.0, 0), (55.0, 1)])
def test_fleet_quotas_holds_the_fleets_most_vcpus_to_the_accounts_quota(
    quota: float, code: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The example fleet at its most: l4 3 x 8 vCPUs (g6.2xlarge), l40s 4 x 8 (g6e.2xlarge): 56 vCPUs of G and VT (each
    # max_instances ECS's placement need, 2 and 3, and its headroom for orders the replays did not draw).
    quotas = _real("service-quotas")
    with Stubber(quotas) as stub:
        stub.add_response(
            "get_service_quota", _quota("L-DB2E81BA", quota), {"ServiceCode": "ec2", "QuotaCode": "L-DB2E81BA"}
        )
        _stubbed(monkeypatch, **{"service-quotas": quotas})
        assert main(["fleet", "quotas", str(REPO / "fleet.toml"), "--region", "us-east-1"]) == code
    out = capsys.readouterr().out
    assert "Running On-Demand G and VT instances (L-DB2E81BA): 56 vCPUs at most (l4 3 x 8, l40s 4 x 8)" in out
    assert ("the fleet needs 56 vCPUs at the most" in out) == (code == 1)


def test_fleet_quotas_reads_aws_default_where_the_account_has_no_value(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fleet_file = _zones_fleet(tmp_path, ["p5.48xlarge"])
    quotas = _real("service-quotas")
    with Stubber(quotas) as stub:
        stub.add_client_error("get_service_quota", "NoSuchResourceException", "no value of its own")
        stub.add_response("get_aws_default_service_quota", _quota("L-417A185B", 0.0))
        _stubbed(monkeypatch, **{"service-quotas": quotas})
        assert main(["fleet", "quotas", str(fleet_file), "--json"]) == 1
    (result,) = json.loads(capsys.readouterr().out)
    assert result["quota_code"] == "L-417A185B" and result["needed_vcpus"] == 384 and result["quota_vcpus"] == 0
    assert "request an increase in Service Quotas, or lower max_instances" in result["problem"]


# --- fleet references -----------------------------------------------------------------------------------------


def _references_fleet(tmp_path: Path) -> Path:
    image = "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/llm:v1"
    path = tmp_path / "fleet.toml"
    path.write_text(
        'name = "r"\n[capacity.gpu]\ninstance_types = ["g6.2xlarge"]\n'
        f'[service.llm]\ncapacity = "gpu"\nimage = "{image}"\ndesired_count = 1\ncpu_units = 256\n'
        'memory_mib = 512\ngpu_budget_mib = 1024\nmodel_bucket = "team-weights"\n'
        'secrets = { HF_TOKEN = "secretsmanager:models/hf-token", API_KEY = "ssm:/models/api-key" }\n'
        '[service.embedder]\ncapacity = "gpu"\nimage = "ghcr.io/huggingface/text-embeddings-inference:1.8"\n'
        "desired_count = 1\ncpu_units = 256\nmemory_mib = 512\ngpu_budget_mib = 1024\n"
        'secrets = { HF_TOKEN = "secretsmanager:models/hf-token" }\n'
    )
    return path


@mock_aws
def test_fleet_references_finds_each_secret_parameter_image_and_bucket_the_fleet_names(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet_file = _references_fleet(tmp_path)
    assert main(["fleet", "references", str(fleet_file), "--region", "us-east-1"]) == 1
    out = capsys.readouterr().out
    assert "service.llm: secret models/hf-token: no Secrets Manager secret 'models/hf-token' in us-east-1" in out
    assert "service.llm: parameter /models/api-key: no SSM parameter '/models/api-key' in us-east-1" in out
    assert "no ECR repository 'team/llm' in 123456789012, us-east-1" in out
    assert "service.llm: bucket team-weights: no S3 bucket 'team-weights'" in out
    assert "service.embedder: secret models/hf-token: no Secrets Manager secret" in out  # looked up once, told twice
    assert "text-embeddings-inference" not in out  # a public registry's image is not this account's to look up

    boto3.client("secretsmanager", region_name="us-east-1").create_secret(Name="models/hf-token", SecretString="t")
    boto3.client("ssm", region_name="us-east-1").put_parameter(Name="/models/api-key", Value="k", Type="SecureString")
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="team-weights")
    ecr = boto3.client("ecr", region_name="us-east-1")
    ecr.create_repository(repositoryName="team/llm")
    assert main(["fleet", "references", str(fleet_file), "--region", "us-east-1"]) == 1
    assert "no image v1 in ECR repository 'team/llm'" in capsys.readouterr().out
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json"})
    ecr.put_image(repositoryName="team/llm", imageManifest=manifest, imageTag="v1")
    assert main(["fleet", "references", str(fleet_file), "--region", "us-east-1", "--json"]) == 0
    assert all(r["problem"] is None for r in json.loads(capsys.readouterr().out))


@mock_aws
def test_fleet_references_asks_for_the_customer_managed_key_that_encrypts_a_secret_parameter_or_bucket(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each under a customer managed key: the app lets no role of the task use it until kms_key_arn names it. The
    # parameter under SSM's own key (alias/aws/ssm) needs nothing.
    kms = boto3.client("kms", region_name="us-east-1")
    key = kms.create_key()["KeyMetadata"]
    boto3.client("secretsmanager", region_name="us-east-1").create_secret(
        Name="models/hf-token", SecretString="t", KmsKeyId=key["KeyId"]
    )
    ssm = boto3.client("ssm", region_name="us-east-1")
    ssm.put_parameter(Name="/models/api-key", Value="k", Type="SecureString", KeyId=key["Arn"])
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="team-weights")
    by_kms = {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": key["Arn"]}
    s3.put_bucket_encryption(
        Bucket="team-weights",
        ServerSideEncryptionConfiguration={"Rules": [{"ApplyServerSideEncryptionByDefault": by_kms}]},
    )
    text = _references_fleet(tmp_path).read_text().replace("123456789012.dkr.ecr.us-east-1.amazonaws.com/team/", "")
    fleet_file = tmp_path / "keys.toml"
    fleet_file.write_text(text)
    assert main(["fleet", "references", str(fleet_file), "--region", "us-east-1", "--json"]) == 1
    problems = {(r["service"], r["name"]): r["problem"] for r in json.loads(capsys.readouterr().out) if r["problem"]}
    wanted = f'set kms_key_arn = "{key["Arn"]}" on service.'
    assert set(problems) == {
        ("llm", "models/hf-token"),
        ("llm", "/models/api-key"),
        ("llm", "team-weights"),
        ("embedder", "models/hf-token"),
    }
    assert all(f"encrypted with the customer managed key {key['Arn']}" in p and wanted in p for p in problems.values())
    assert "(the task role could not read its weights)" in problems[("llm", "team-weights")]
    ssm.put_parameter(Name="/models/api-key", Value="k", Type="SecureString", KeyId="alias/aws/ssm", Overwrite=True)
    text = text.replace('model_bucket = "team-weights"', f'model_bucket = "team-weights"\nkms_key_arn = "{key["Arn"]}"')
    fleet_file.write_text(text)
    assert main(["fleet", "references", str(fleet_file), "--region", "us-east-1", "--json"]) == 1
    left = [(r["service"], r["name"]) for r in json.loads(capsys.readouterr().out) if r["problem"]]
    assert left == [("embedder", "models/hf-token")]  # the embedder names the same secret, and no key


def test_fleet_references_finds_each_aws_managed_policy_a_task_role_attaches(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """IAM refuses a role whose managed policy does not exist ("Policy ... does not exist or is not attachable"), so the
    stack fails to deploy; moto knows AWS's managed policies once told to load them, as AWS's own list."""
    monkeypatch.setenv("MOTO_IAM_LOAD_MANAGED_POLICIES", "true")
    text = _references_fleet(tmp_path).read_text()
    text = text.replace(
        'model_bucket = "team-weights"',
        'model_bucket = "team-weights"\ntask_role_managed_policies = ["AmazonBedrockReadOnly", "AmazonBedrockReadOnlyy"]',
    )
    fleet_file = tmp_path / "policies.toml"
    fleet_file.write_text(text)
    with mock_aws():
        assert main(["fleet", "references", str(fleet_file), "--region", "eu-west-1", "--json"]) == 1
    found = {r["name"]: r["problem"] for r in json.loads(capsys.readouterr().out) if r["kind"] == "policy"}
    assert found == {
        "arn:aws:iam::aws:policy/AmazonBedrockReadOnly": None,
        "arn:aws:iam::aws:policy/AmazonBedrockReadOnlyy": "no AWS managed policy AmazonBedrockReadOnlyy: IAM would "
        "refuse the role and the stack would not deploy; check its name in the IAM console's list of AWS managed "
        "policies",
    }


@mock_aws
def test_fleet_references_finds_a_balancers_certificate_that_is_missing_or_not_issued(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ELB creates no HTTPS listener without an issued certificate of its region: CertificateNotFound for one that is
    not there (aws/aws-cdk#6081, also while it waits for validation), UnsupportedCertificate for one not issued."""
    acm = boto3.client("acm", region_name="us-east-1")
    pending = acm.request_certificate(DomainName="models.example.com", ValidationMethod="DNS")["CertificateArn"]
    missing = pending.rsplit("/", 1)[0] + "/0a1b2c3d-1111-2222-3333-444455556666"
    text = _references_fleet(tmp_path).read_text()
    fleet_file = tmp_path / "tls.toml"
    balancers = (
        f'[load_balancer.api]\ncertificate_arn = "{pending}"\n[load_balancer.web]\ncertificate_arn = "{missing}"\n'
    )
    text = text.replace("[service.llm]", balancers + "[service.llm]")
    text = text.replace(
        'model_bucket = "team-weights"', 'model_bucket = "team-weights"\nload_balancer = "api"\nport = 8000'
    )
    text = text.replace("[service.embedder]\n", '[service.embedder]\nload_balancer = "web"\nport = 8001\n')
    fleet_file.write_text(text)
    assert main(["fleet", "references", str(fleet_file), "--region", "us-east-1"]) == 1
    out = capsys.readouterr().out
    assert f"load_balancer.api: certificate {pending}: its status is PENDING_VALIDATION, not ISSUED: ELB" in out
    assert f"load_balancer.web: certificate {missing}: no ACM certificate {missing}: ELB" in out


# --- fleet ebs -------------------------------------------------------------------------------------------------
# moto keeps the default EBS key (ModifyEbsDefaultKmsKeyId) but does not serve GetEbsDefaultKmsKeyId: botocore's
# Stubber answers that one read, checked against EC2's model; the key, its policy and its grants are moto's.


def _ebs_default(monkeypatch: pytest.MonkeyPatch, key_id: str) -> Stubber:
    ec2 = _real("ec2")
    real = aws.client
    monkeypatch.setattr(aws, "client", lambda service, region: ec2 if service == "ec2" else real(service, region))
    stub = Stubber(ec2)
    stub.add_response("get_ebs_default_kms_key_id", {"KmsKeyId": key_id}, {})
    return stub


AUTO_SCALING_ROLE = (
    "arn:aws:iam::123456789012:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling"
)


@mock_aws
def test_fleet_ebs_passes_aws_managed_key_and_a_customer_key_that_admits_auto_scaling(
    fake_credentials: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with _ebs_default(monkeypatch, "alias/aws/ebs"):
        assert main(["fleet", "ebs", str(REPO / "fleet.toml"), "--region", "us-east-1"]) == 0
    assert capsys.readouterr().out.strip() == "default EBS key alias/aws/ebs: AWS managed; Auto Scaling may use it"
    kms = boto3.client("kms", region_name="us-east-1")
    root = "arn:aws:iam::123456789012:root"
    by_condition = {
        "Effect": "Allow",
        "Principal": {"AWS": root},
        "Action": ["kms:Decrypt", "kms:CreateGrant"],
        "Resource": "*",
        "Condition": {"ArnEquals": {"aws:PrincipalArn": AUTO_SCALING_ROLE}},
    }
    admin = {"Effect": "Allow", "Principal": {"AWS": root}, "Action": "kms:*", "Resource": "*"}
    key = kms.create_key(Policy=json.dumps({"Version": "2012-10-17", "Statement": [admin, by_condition]}))
    with _ebs_default(monkeypatch, key["KeyMetadata"]["KeyId"]):
        assert main(["fleet", "ebs", str(REPO / "fleet.toml"), "--region", "us-east-1"]) == 0
    assert "customer managed; its key policy admits Auto Scaling's role" in capsys.readouterr().out
    granted = kms.create_key()["KeyMetadata"]
    kms.create_grant(KeyId=granted["KeyId"], GranteePrincipal=AUTO_SCALING_ROLE, Operations=["Decrypt", "CreateGrant"])
    with _ebs_default(monkeypatch, granted["Arn"]):
        assert main(["fleet", "ebs", str(REPO / "fleet.toml"), "--region", "us-east-1"]) == 0
    assert "customer managed; its grant admits Auto Scaling's role" in capsys.readouterr().out


@mock_aws
def test_fleet_ebs_fails_a_customer_key_nothing_lets_auto_scaling_use(
    fake_credentials: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    key = boto3.client("kms", region_name="us-east-1").create_key()["KeyMetadata"]  # the default key policy only
    with _ebs_default(monkeypatch, key["Arn"]):
        assert main(["fleet", "ebs", str(REPO / "fleet.toml"), "--region", "us-east-1", "--json"]) == 1
    (result,) = json.loads(capsys.readouterr().out)
    assert result["customer_managed"] and result["admitted_by"] is None
    assert (
        f"the region's default EBS key {key['Arn']} is customer managed and neither its key policy nor a grant admits "
        f"{AUTO_SCALING_ROLE}: every host launch would fail (Client.InternalError: Client error on launch)"
    ) in result["problem"]


def test_fleet_ebs_reads_nothing_for_managed_instances_only(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # ECS launches Managed Instances hosts itself: no Auto Scaling group, no read (the Stubber holds no answer).
    text = _zones_fleet(tmp_path, ["g6e.xlarge"]).read_text()
    fleet_file = tmp_path / "mi.toml"
    fleet_file.write_text(text.replace("[capacity.gpu]\n", '[capacity.gpu]\nkind = "managed-instances"\n'))
    ec2 = _real("ec2")
    with Stubber(ec2):
        _stubbed(monkeypatch, ec2=ec2)
        assert main(["fleet", "ebs", str(fleet_file), "--region", "us-east-1"]) == 0
    assert "no EC2 capacity" in capsys.readouterr().out


@mock_aws
def test_fleet_preflight_runs_every_check_and_says_which_failed(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # moto serves no EC2 quotas; the caller here may not read them either (botocore's Stubber says AccessDenied).
    quotas, real = _real("service-quotas"), aws.client
    monkeypatch.setattr(
        aws, "client", lambda service, region: quotas if service == "service-quotas" else real(service, region)
    )
    # The default EBS key is a read moto does not serve: the ebs check reads it from a Stubber's EC2 client.
    ebs = _real("ec2")
    checked = ebs_key.check
    monkeypatch.setattr(
        ebs_key,
        "check",
        lambda clients, region, spec: checked(lambda s, r: ebs if s == "ec2" else clients(s, r), region, spec),
    )
    with Stubber(quotas) as stub, Stubber(ebs) as ebs_stub:
        for _ in range(6):  # the vCPUs' quota, then the VPC's, internet gateways', NAT gateways', Elastic IPs',
            # gateway endpoints
            stub.add_client_error("get_service_quota", "AccessDeniedException", "not allowed", 400)
        ebs_stub.add_response("get_ebs_default_kms_key_id", {"KmsKeyId": "alias/aws/ebs"}, {})
        assert main(["fleet", "preflight", str(_references_fleet(tmp_path)), "--region", "us-east-1"]) == 1
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("== ")] == [
        "== zones",
        "== egress",
        "== namespace",
        "== quotas",
        "== limits",
        "== roles",
        "== ebs",
        "== references",
        "== capacities",
        "== balancers",
        "== ami",
    ]
    assert "no deployed capacity leaves the cluster" in out  # moto has no stack of the fleet: a first deploy
    assert "default EBS key alias/aws/ebs: AWS managed" in out
    assert "gpu: g6.2xlarge in us-east-1a, us-east-1b" in out
    # A check AWS will not answer is said, and does not fail the preflight.
    assert "not checked: us-east-1: reading the ec2 quota L-DB2E81BA: AccessDeniedException: not allowed; grant" in out
    assert "VPCs per Region (L-F678F1CE) in us-east-1: 1 in use, the fleet adds 1; quota not read: " in out
    assert "no Secrets Manager secret 'models/hf-token'" in out
    # moto's copy of AWS's public parameters ends before the floor, so the default release is "not published" there.
    assert f"{ami_release.DEFAULT_AMI_RELEASE}: us-east-1: FAILED: no public SSM parameter" in out
    # A new account, as moto's is: ECS's service-linked role is not there yet.
    assert "AWSServiceRoleForECS: missing" in out
    assert out.strip().endswith("preflight: failed: roles, references, ami; not checked: quotas")


def test_cluster_status_checks_the_log_drivers_the_plan_assumes_a_host_registers() -> None:
    """The plan takes a host on the AL2023 GPU AMI to register the AMI's log drivers (TaskLogDriverNotOnHosts); a
    host whose agent registers fewer (a narrower ECS_AVAILABLE_LOGGING_DRIVERS) is where a task the plan placed waits."""
    prefix = cluster_status.LOG_DRIVER_ATTRIBUTE
    raw = _instance("i-0log", agent="1.108.3", mps=True, health="OK", gpus=[])
    raw["attributes"] += [{"name": prefix + d} for d in ("json-file", "awslogs", "awsfirelens")]
    inst = cluster_status._instance(raw)
    assert inst.log_drivers == ["awsfirelens", "awslogs", "json-file"]
    assert cluster_status.log_driver_gaps([inst]) == []  # its AMI not read (no --fleet): not judged
    inst.ami_release = "20261113"
    (problem,) = cluster_status.log_driver_gaps([inst])
    assert problem.startswith("instance i-0log: its agent registers the log drivers awsfirelens, awslogs, json-file")
    assert "not fluentd, none, syslog" in problem and "TaskLogDriverNotOnHosts" in problem
    raw["attributes"] += [{"name": prefix + d} for d in ("syslog", "fluentd", "none")]
    full = cluster_status._instance(raw)
    full.ami_release = "20261113"
    assert cluster_status.log_driver_gaps([full]) == []
    bare = cluster_status._instance(_instance("i-0", agent="1.108.3", mps=True, health="OK", gpus=[]))
    bare.ami_release = "20261113"
    assert cluster_status.log_driver_gaps([bare]) == []  # lists no driver at all: an emulator's report, not judged


@pytest.mark.parametrize(("root_gib", "ok"), [(60, True), (200, True), (50, False)])
def test_ami_verify_checks_the_root_snapshot_against_the_smallest_root_volume(root_gib: int, ok: bool) -> None:
    """EC2 launches no root volume smaller than its snapshot (EbsBlockDevice, VolumeSize)."""
    root = [{"DeviceName": "/dev/xvda", "Ebs": {"SnapshotId": "snap-1", "VolumeSize": 60}}]
    image = {"ImageId": "ami-0123456789abcdef0", "Name": AMI_NAME, "Architecture": "x86_64", "State": "available"}
    ssm, ec2, ssm_stub, ec2_stub = _ami_stubs({**image, "RootDeviceName": "/dev/xvda", "BlockDeviceMappings": root})
    with ssm_stub, ec2_stub:
        result = ami_verify.inspect_region(ssm, ec2, RELEASE, root_gib)
    assert result.ok is ok
    assert ok or f"a root_volume_gib of {root_gib} launches no host; give root_volume_gib 60 or more" in str(
        result.problem
    )


def test_fleet_preflight_verifies_each_release_for_its_smallest_root_volume(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from ecs_gpu_sharing import preflight

    asked: list[tuple[str, int]] = []

    def verify(release: str, regions: list[Any], clients: Any, root_gib: int) -> list[ami_verify.RegionResult]:
        asked.append((release, root_gib))
        return [ami_verify.RegionResult("us-east-1", "ami-0123456789abcdef0", None)]

    monkeypatch.setattr(ami_verify, "verify", verify)
    small = tmp_path / "fleet.toml"  # both capacities on one release, the second with a smaller root volume
    small.write_text(
        THREE_MODELS.read_text().replace(
            'instance_types = ["g6e.2xlarge"]', 'instance_types = ["g6e.2xlarge"]\nroot_volume_gib = 80', 1
        )
    )
    spec = fleet.load(small)
    assert sorted(c.root_volume_gib for c in spec.capacities.values()) == [80, 200]
    _, (_lines, failed) = preflight._ami_report(spec, "us-east-1")
    assert not failed
    assert asked == [(ami_release.DEFAULT_AMI_RELEASE, 80)]


@pytest.mark.parametrize(
    ("environ", "profile", "expected"),
    [
        ({}, None, None),
        ({}, "eu-west-1", "eu-west-1"),
        ({"AWS_DEFAULT_REGION": "us-west-2"}, "eu-west-1", "us-west-2"),
        ({"AWS_REGION": "ap-south-1"}, "eu-west-1", "ap-south-1"),  # as Lambda, CodeBuild and CI actions set it
        ({"AWS_REGION": "ap-south-1", "AWS_DEFAULT_REGION": "us-west-2"}, None, "ap-south-1"),
        ({"AMAZON_REGION": "ca-central-1", "AWS_DEFAULT_REGION": "us-west-2"}, None, "ca-central-1"),
        ({"AWS_REGION": ""}, "eu-west-1", "eu-west-1"),
    ],
)
def test_the_default_region_is_the_one_the_cdk_cli_deploys_to(
    environ: dict[str, str], profile: str | None, expected: str | None
) -> None:
    assert aws.default_region(environ, profile) == expected


def _no_aws_region(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in [n for n in os.environ if n.startswith(("AWS_", "AMAZON_"))]:
        monkeypatch.delenv(name)
    (tmp_path / "aws-config").write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-config"))


def test_a_client_takes_aws_region_which_botocore_alone_does_not_read(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _no_aws_region(monkeypatch, tmp_path)
    monkeypatch.setenv("AWS_REGION", "ap-south-1")
    assert aws.client("ecs", None).meta.region_name == "ap-south-1"
    assert aws.client("ecs", "eu-west-1").meta.region_name == "eu-west-1"  # --region comes first
    monkeypatch.delenv("AWS_REGION")
    with pytest.raises(aws.AwsOperationError, match="set AWS_REGION or AWS_DEFAULT_REGION"):
        aws.client("ecs", None)


def test_a_preflight_with_no_region_is_refused_before_any_check(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every check would go unanswered, so 'preflight: passed' would say nothing was wrong where nothing was read."""
    _no_aws_region(monkeypatch, tmp_path)
    assert main(["fleet", "preflight", str(_references_fleet(tmp_path))]) == 1
    captured = capsys.readouterr()
    assert "preflight: passed" not in captured.out and "== " not in captured.out
    assert captured.err.startswith("error: no AWS region") and captured.err.count("\n") == 1
