"""The deploy rehearsal's account of what the emulator holds: it never counts a resource that was not made, lists
what it could not check, and fails on a security group rule declared twice, as EC2 would.

The cases run in one process of their own beside the tests (the rehearsal completes moto at run time, which no other
test should see), started once per test worker: each case starts from an empty account, as moto's reset leaves it
(`POST /moto-api/reset`), and a case costs under a second where a process of its own cost six. The whole
rehearsal (the CDK CLI deploying both fleets) is `make rehearse`, which .ci/run runs after the tests.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
import threading
from typing import Any

import pytest

from conftest import REPO, load_script

EMULATOR = """
import json, os, socket, sys, urllib.request
sock = socket.socket(); sock.bind(("localhost", 0)); port = sock.getsockname()[1]; sock.close()
os.environ.update({"AWS_ENDPOINT_URL": f"http://localhost:{port}", "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1", "AWS_CONFIG_FILE": "/nonexistent"})
import boto3
from moto.server import ThreadedMotoServer
sys.path.insert(0, os.environ["REHEARSAL_SCRIPTS"])  # the rehearsal is a development tool beside scripts/rehearse.py
import rehearsal
rehearsal.install_adapters()
server = ThreadedMotoServer(ip_address="localhost", port=port, verbose=False); server.start()
client = lambda service: boto3.client(service, region_name="us-east-1")


def create(template):
    vpc = client("ec2").create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    body = json.dumps(template).replace("VPC_ID", vpc)
    error = None
    try:
        client("cloudformation").create_stack(StackName="s", TemplateBody=body)
    except Exception as e:
        error = str(e)
    report = rehearsal.account(client, {"s": json.loads(body)})
    return {"error": error, "problems": report.problems,
        "checks": {c.logical_id: [c.status, c.detail] for c in report.checks}}


def update(first, second):
    cfn = client("cloudformation")
    cfn.create_stack(StackName="s", TemplateBody=json.dumps(first))
    error = None
    try:
        cfn.update_stack(StackName="s", TemplateBody=json.dumps(second))
    except Exception as e:
        error = str(e)
    return {"error": error, "problems": rehearsal.current_task_definitions(client, {"s": second})}


def change_sets(exporter, importer):  # two stacks made as `cdk deploy` makes them, through change sets
    cfn = client("cloudformation")
    error = None
    try:
        for name, template in (("exporter", exporter), ("importer", importer)):
            cfn.create_change_set(StackName=name, TemplateBody=json.dumps(template), ChangeSetName="cs",
                ChangeSetType="CREATE")
            cfn.execute_change_set(ChangeSetName="cs", StackName=name)
    except Exception as e:
        error = str(e)
    return {"error": error, "exports": sorted(x["Name"] for x in cfn.list_exports()["Exports"])}


for line in sys.stdin:  # a case a line: [kind, arguments]; each from an empty account
    kind, arguments = json.loads(line)
    urllib.request.urlopen(urllib.request.Request(f"http://localhost:{port}/moto-api/reset", method="POST"))
    rehearsal.ADAPTED_IDS.clear()
    cases = {"create": create, "update": update, "change_sets": change_sets}
    print("answer " + json.dumps(cases[kind](*arguments)), flush=True)
server.stop()
"""
"""A moto server on a free port of loopback, with the rehearsal's adapters, answering a case a line."""
CASE_SECONDS = 120  # a case takes under a second; the first, with moto's start, a few


class _Emulator:
    """The emulator's process, started on first use and ended when the worker ends. Its log goes to a file, not a
    pipe that nobody reads (a full pipe would stall the server)."""

    def __init__(self) -> None:
        self.log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (open for the process's life, closed in close)
        self.process = subprocess.Popen(
            [sys.executable, "-c", EMULATOR],
            cwd=REPO,
            env={**os.environ, "REHEARSAL_SCRIPTS": str(REPO / "scripts")},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )
        atexit.register(self.close)

    def ask(self, kind: str, *arguments: Any) -> dict[str, Any]:
        """The case's answer; a case that takes more than CASE_SECONDS ends the process, which fails the case."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps([kind, arguments]) + "\n")
        self.process.stdin.flush()
        timer = threading.Timer(CASE_SECONDS, self.process.kill)
        timer.start()
        try:
            for line in self.process.stdout:
                if line.startswith("answer "):
                    return dict(json.loads(line[len("answer ") :]))
        finally:
            timer.cancel()
        self.log.seek(0)
        raise AssertionError("the emulator ended or passed its time: " + self.log.read()[-2000:])

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            self.process.wait(timeout=30)
        self.log.close()


_emulator: _Emulator | None = None


def _ask(kind: str, *arguments: Any) -> dict[str, Any]:
    global _emulator
    if _emulator is None or _emulator.process.poll() is not None:
        _emulator = _Emulator()
    return _emulator.ask(kind, *arguments)


def _rehearse(resources: dict[str, Any]) -> dict[str, Any]:
    """``resources`` created as one stack in an empty account (``VPC_ID`` names a VPC made there), and the
    rehearsal's account of them."""
    return _ask("create", {"Resources": resources})


GROUP = {"Type": "AWS::EC2::SecurityGroup", "Properties": {"GroupDescription": "g", "VpcId": "VPC_ID"}}
OTHER = {"Type": "AWS::EC2::SecurityGroup", "Properties": {"GroupDescription": "o", "VpcId": "VPC_ID"}}


def _egress(port: int) -> dict[str, Any]:
    return {
        "Type": "AWS::EC2::SecurityGroupEgress",
        "Properties": {
            "GroupId": {"Fn::GetAtt": ["Group", "GroupId"]},
            "DestinationSecurityGroupId": {"Fn::GetAtt": ["Other", "GroupId"]},
            "IpProtocol": "tcp",
            "FromPort": port,
            "ToPort": port,
        },
    }


def test_what_moto_makes_is_read_back_and_what_it_skips_is_listed_not_counted() -> None:
    out = _rehearse(
        {
            "Group": GROUP,
            "Other": OTHER,
            "Egress": _egress(80),  # moto's CloudFormation has no model: the adapter makes it through the API
            "Bucket": {"Type": "AWS::Lightsail::Bucket", "Properties": {"BucketName": "b", "BundleId": "small_1_0"}},
        }
    )
    assert out["error"] is None and out["problems"] == []
    assert out["checks"]["Group"][0] == "created" and out["checks"]["Group"][1].startswith("read back: sg-")
    assert out["checks"]["Egress"][0] == "adapted"
    assert out["checks"]["Bucket"] == ["not checked", "moto's CloudFormation has no model for it"]


def test_a_security_group_rule_declared_twice_fails_the_rehearsal() -> None:
    out = _rehearse({"Group": GROUP, "Other": OTHER, "First": _egress(443), "Again": _egress(443)})
    assert any("DuplicateSecurityGroupRule" in p and "s/Again" in p for p in out["problems"]), out
    # The emulator refuses the second rule too, as EC2 would (InvalidPermission.Duplicate): the stack fails.
    assert out["error"] is not None or out["checks"]["Again"][0] != "adapted"


def _managed_instances_provider(requirements: dict[str, Any]) -> dict[str, Any]:
    return {
        "Type": "AWS::ECS::CapacityProvider",
        "Properties": {
            "ManagedInstancesProvider": {
                "InfrastructureRoleArn": "arn:aws:iam::123456789012:role/infra",
                "InstanceLaunchTemplate": {
                    "Ec2InstanceProfileArn": "arn:aws:iam::123456789012:instance-profile/hosts",
                    "NetworkConfiguration": {"Subnets": ["subnet-0123456789abcdef0"]},
                    "InstanceRequirements": requirements,
                },
            }
        },
    }


def test_a_managed_instances_capacity_provider_is_checked_against_the_api_model_and_held() -> None:
    # moto models Auto Scaling group providers only (it failed the whole deploy on this one): the rehearsal checks
    # the request with botocore's ECS model and holds the provider by name.
    good = {"VCpuCount": {"Min": 4}, "MemoryMiB": {"Min": 16384}, "AllowedInstanceTypes": ["g6e.xlarge"]}
    out = _rehearse({"Provider": _managed_instances_provider(good)})
    assert out["error"] is None and out["problems"] == [] and out["checks"]["Provider"][0] == "adapted", out


def test_a_managed_instances_provider_the_api_would_refuse_fails_the_rehearsal() -> None:
    bad = {"VCpuCount": {"Min": "four"}, "MemoryMiB": {"Min": 16384}}  # botocore's model wants an integer
    out = _rehearse({"Provider": _managed_instances_provider(bad)})
    assert "CreateCapacityProvider" in str(out["error"]) and "Invalid type" in str(out["error"]), out


def _key(principal: Any, condition: dict[str, Any] | None = None) -> dict[str, Any]:
    statement: dict[str, Any] = {"Effect": "Allow", "Principal": {"AWS": principal}, "Action": "kms:*", "Resource": "*"}
    if condition:
        statement["Condition"] = condition
    return {"Type": "AWS::KMS::Key", "Properties": {"KeyPolicy": {"Version": "2012-10-17", "Statement": [statement]}}}


SERVICE_LINKED = (
    "arn:aws:iam::123456789012:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling"
)


def test_a_key_policy_naming_a_role_the_new_account_lacks_fails_as_kms_would() -> None:
    # The rehearsal's account starts as a new account does: no Auto Scaling group yet, so no service-linked role.
    out = _rehearse({"Key": _key(SERVICE_LINKED)})
    assert "MalformedPolicyDocumentException" in str(out["error"]) and "AWSServiceRoleForAutoScaling" in str(
        out["error"]
    ), out


def test_a_key_policy_naming_the_account_with_a_principal_arn_condition_goes_through() -> None:
    condition = {"ArnEquals": {"aws:PrincipalArn": SERVICE_LINKED}}
    out = _rehearse({"Key": _key("arn:aws:iam::123456789012:root", condition)})
    assert out["error"] is None and out["problems"] == [], out


def test_a_secret_of_the_app_is_made_under_its_key_and_a_policy_may_name_it() -> None:
    # moto's CloudFormation has no model of a secret: a policy naming one (Ref) was left without a resource, and the
    # deploy of a construct-road app with a secret of its own failed. The rehearsal makes it through the API.
    key = _key("arn:aws:iam::123456789012:root")
    secret = {
        "Type": "AWS::SecretsManager::Secret",
        "Properties": {"GenerateSecretString": {"PasswordLength": 24}, "KmsKeyId": {"Fn::GetAtt": ["Key", "Arn"]}},
    }
    policy = {
        "Type": "AWS::IAM::ManagedPolicy",
        "Properties": {
            "PolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Action": "secretsmanager:GetSecretValue", "Resource": {"Ref": "Secret"}}
                ],
            }
        },
    }
    out = _rehearse({"Key": key, "Secret": secret, "Reader": policy})
    assert out["error"] is None and out["problems"] == [] and out["checks"]["Secret"][0] == "adapted", out


def test_a_service_with_placement_strategies_deploys_with_them() -> None:
    # CloudFormation writes PlacementStrategies; the ECS API (and moto behind the rehearsal's adapter) takes
    # placementStrategy: the rehearsal failed the whole services stack on it until the adapter renamed it.
    cluster = {"Type": "AWS::ECS::Cluster", "Properties": {}}
    task = {
        "Type": "AWS::ECS::TaskDefinition",
        "Properties": {"ContainerDefinitions": [{"Name": "m", "Image": "i", "Memory": 512}], "Family": "f"},
    }
    service = {
        "Type": "AWS::ECS::Service",
        "Properties": {
            "Cluster": {"Ref": "Cluster"},
            "TaskDefinition": {"Ref": "Task"},
            "DesiredCount": 1,
            "PlacementStrategies": [
                {"Type": "spread", "Field": "attribute:ecs.availability-zone"},
                {"Type": "binpack", "Field": "MEMORY"},
            ],
        },
    }
    out = _rehearse({"Cluster": cluster, "Task": task, "Service": service})
    assert out["error"] is None and out["problems"] == [], out


def _task(image: str, budget: int) -> dict[str, Any]:
    mps = {"Type": "GPU", "SharingStrategy": {"NvidiaMps": {"Memory": budget}}}
    container = {"Name": "model", "Image": image, "Memory": 1024, "ResourceRequirements": [mps]}
    return {
        "Resources": {"Task": {"Type": "AWS::ECS::TaskDefinition", "Properties": {"ContainerDefinitions": [container]}}}
    }


def test_an_edited_shared_gpu_task_definition_deploys_as_an_update() -> None:
    """moto's update path skipped the key conversion its create path does (MODEL_GAPS); the budget and image edits a
    team makes most often must deploy, and the emulator must then hold the edited revision."""
    outcome = _ask("update", _task("x:1", 2048), _task("x:2", 2560))
    assert outcome == {"error": None, "problems": []}


def test_a_stack_made_through_a_change_set_exports_its_outputs_to_the_next() -> None:
    """A construct app's stacks refer to each other by Fn::ImportValue unless told otherwise, and `cdk deploy` makes
    each stack through a change set; moto registers a stack's exports only when it is made by CreateStack, so the
    second stack failed ('No export named ...'). The rehearsal registers them (MODEL_GAPS), as CloudFormation does."""
    exporter = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {"TopicArn": {"Value": {"Ref": "Topic"}, "Export": {"Name": "exporter:TopicArn"}}},
    }
    importer = {
        "Resources": {
            "Queue": {
                "Type": "AWS::SQS::Queue",
                "Properties": {"Tags": [{"Key": "topic", "Value": {"Fn::ImportValue": "exporter:TopicArn"}}]},
            }
        }
    }
    assert _ask("change_sets", exporter, importer) == {"error": None, "exports": ["exporter:TopicArn"]}


def test_make_destroy_deletes_services_then_unprotects_the_hosts_then_the_rest() -> None:
    """scripts/destroy.py, which the rehearsal runs against moto: the order a real account needs (aws-cdk #18179)."""
    sys.path.insert(0, str(REPO / "scripts"))
    import destroy

    ran: list[list[str]] = []

    def run(command: list[str], *, code: int = 0, said: str = "") -> subprocess.CompletedProcess[str]:
        ran.append(command)
        return subprocess.CompletedProcess(command, code, said, "")

    stacks = ["m-network", "m-cluster", "m-services-1", "m-services-2", "m-observability-1", "other-services-1"]
    assert destroy.destroy(run, stacks, "m", ["--app", "out"], None) is None
    assert ran[0][-3:] == ["m-services-1", "m-services-2", "m-observability-1"]
    assert ran[1][-4:] == ["cluster", "unprotect", "--stack", "m-cluster"]
    assert ran[2][1:4] == ["destroy", "--all", "--force"]
    # A cluster stack that was never deployed has nothing to unprotect; any other failure stops before the cluster.
    ran.clear()
    missing = "error: reading stack m-cluster: Stack with id m-cluster does not exist"
    assert (
        destroy.destroy(lambda c: run(c, code=1 if "unprotect" in c else 0, said=missing), ["m-cluster"], "m", [], None)
        is None
    )
    assert len(ran) == 2
    ran.clear()
    denied = destroy.destroy(
        lambda c: run(c, code=1 if "unprotect" in c else 0, said="AccessDenied"), ["m-cluster"], "m", [], None
    )
    assert denied == "cluster unprotect exited 1: AccessDenied" and len(ran) == 1


def test_a_fleet_bound_to_another_account_is_refused_before_its_synth(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fleet file's account and region bind every stack: one of another account than the emulator's was seeded into
    a registry the emulator does not have, and the rehearsal stopped on a traceback, after a synth whose lookups wrote
    a cdk.context.json into the checkout. It is refused before the synth (the CDK CLI would refuse its deploy: the
    credentials are the emulator's account's); the edited fleet of an update is held to the same."""
    monkeypatch.syspath_prepend(str(REPO / "scripts"))  # rehearse imports destroy and rehearsal from beside it
    rehearse = load_script(REPO / "scripts" / "rehearse.py")
    monkeypatch.setattr(rehearse, "_synth", lambda *args, **kw: pytest.fail("synthesized a fleet of another account"))
    text = (
        'name = "acct"\n{env}[capacity.gpu]\ninstance_types = ["g6.2xlarge"]\n[service.m]\ncapacity = "gpu"\n'
        'image = "r/m:1"\ndesired_count = 1\ncpu_units = 256\nmemory_mib = 512\ngpu_budget_mib = 1024\n'
    )
    other, here = tmp_path / "other.toml", tmp_path / "here.toml"
    other.write_text(text.format(env='account = "111111111111"\nregion = "us-east-1"\n'))
    here.write_text(text.format(env=""))
    (problem,) = rehearse.rehearse(object(), other, None, tmp_path, False)
    assert problem.startswith("fleet other.toml targets aws://111111111111/us-east-1; the rehearsal's emulator is")
    assert problem.endswith("leave out the fleet file's account and region (or give those) to rehearse it")
    (problem,) = rehearse.rehearse(object(), here, other, tmp_path, False)
    assert problem.startswith("fleet other.toml targets aws://111111111111/us-east-1")


def test_an_app_whose_stacks_target_another_environment_is_refused_in_one_line_each(tmp_path: Any) -> None:
    """The emulator is one account in one region: a stack given another environment would fail at cdk deploy on a
    bootstrap the emulator does not have (and be checked in the wrong region), so the rehearsal says so first."""
    from conftest import load_script, write_assembly

    rehearse = load_script(REPO / "scripts" / "rehearse.py")
    out = write_assembly(tmp_path, {"Agnostic": {}, "Here": {}, "West": {}, "Other": {}})
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["artifacts"]["Here"]["environment"] = "aws://123456789012/us-east-1"
    manifest["artifacts"]["West"]["environment"] = "aws://123456789012/us-west-2"
    manifest["artifacts"]["Other"]["environment"] = "aws://111122223333/unknown-region"
    (out / "manifest.json").write_text(json.dumps(manifest))
    found = rehearse._outside_the_emulator(out)
    assert [line.split(" targets ")[0] for line in found] == ["stack Other", "stack West"]
    assert "aws://123456789012/us-west-2; the rehearsal's emulator is aws://123456789012/us-east-1" in found[1]
    assert "aws://111122223333/us-east-1" in found[0]
