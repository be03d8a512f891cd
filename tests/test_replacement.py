"""A stack update that would replace a resource under the custom name it keeps (core.replacement), and the command
that compares a cloud assembly with the deployed templates (``stacks replacements``, CloudFormation stubbed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ecs_gpu_sharing.cli import main
from ecs_gpu_sharing.core.exports_in_use import exports_in_use
from ecs_gpu_sharing.core.replacement import replacements
from ecs_gpu_sharing.core.update_refusals import update_refusals
from ecs_gpu_sharing.operations import aws
from ecs_gpu_sharing.operations.assembly import assembly_stacks

from conftest import write_assembly

REGION = "us-east-1"
_GROUP = "AWS::ElasticLoadBalancingV2::TargetGroup"


def _stubbed(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The CloudFormation client the CLI gets, to stub."""
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    monkeypatch.setattr(aws, "client", lambda service, region: cloudformation)
    return cloudformation


def _deployed(cfn: Stubber, stack: str, template: dict[str, Any]) -> None:
    """GetTemplate's answer for a deployed stack."""
    cfn.add_response(
        "get_template", {"TemplateBody": json.dumps(template)}, {"StackName": stack, "TemplateStage": "Original"}
    )


def _template(kind: str, **props: Any) -> dict[str, Any]:
    return {"Resources": {"Res": {"Type": kind, "Properties": props}}}


@pytest.mark.parametrize(
    ("kind", "before", "after", "changed"),
    [
        # a named target group whose port changes (a model server moved from 8080 to 8000)
        (_GROUP, {"Name": "chat", "Port": 8080}, {"Name": "chat", "Port": 8000}, ("Port",)),
        # awsvpc instead of bridge: its target type changes
        (_GROUP, {"Name": "chat", "TargetType": "instance"}, {"Name": "chat", "TargetType": "ip"}, ("TargetType",)),
        # named with its name changing in the same change: replaced freely
        (_GROUP, {"Name": "chat", "Port": 8080}, {"Name": "chat-v2", "Port": 8000}, None),
        # named by CloudFormation: replaced freely
        (_GROUP, {"Port": 8080}, {"Port": 8000}, None),
        # a change made in place
        (_GROUP, {"Name": "chat", "HealthCheckPath": "/"}, {"Name": "chat", "HealthCheckPath": "/health"}, None),
        # a service named within its cluster: moved to another cluster it is created there, beside the old one
        (
            "AWS::ECS::Service",
            {"ServiceName": "chat", "Cluster": {"Ref": "A"}, "SchedulingStrategy": "REPLICA"},
            {"ServiceName": "chat", "Cluster": {"Ref": "A"}, "SchedulingStrategy": "DAEMON"},
            ("SchedulingStrategy",),
        ),
        (
            "AWS::ECS::Service",
            {"ServiceName": "chat", "Cluster": {"Ref": "A"}},
            {"ServiceName": "chat", "Cluster": {"Ref": "B"}},
            None,
        ),
        # a create-only property below the top: the group a named capacity provider scales
        (
            "AWS::ECS::CapacityProvider",
            {"Name": "l4", "AutoScalingGroupProvider": {"AutoScalingGroupArn": {"Ref": "Asg"}}},
            {"Name": "l4", "AutoScalingGroupProvider": {"AutoScalingGroupArn": {"Ref": "Asg2"}}},
            ("AutoScalingGroupProvider/AutoScalingGroupArn",),
        ),
    ],
)
def test_a_replacement_under_a_kept_name_is_found(
    kind: str, before: dict[str, Any], after: dict[str, Any], changed: tuple[str, ...] | None
) -> None:
    found = replacements("s", _template(kind, **before), _template(kind, **after))
    assert [r.changed for r in found] == ([changed] if changed else [])
    if changed:
        assert found[0].logical_id == "Res" and "new name" in found[0].problem


def test_a_new_resource_or_one_of_another_type_is_not_a_replacement() -> None:
    deployed = _template("AWS::SQS::Queue", QueueName="jobs")
    assert replacements("s", {"Resources": {}}, _template(_GROUP, Name="chat")) == []
    assert replacements("s", deployed, _template(_GROUP, Name="jobs")) == []


def test_a_cloud_assembly_lists_its_stacks_and_those_of_its_stages(tmp_path: Path) -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_sqs as sqs

    app = cdk.App(outdir=str(tmp_path))
    sqs.Queue(cdk.Stack(app, "Plain"), "Q")
    stage = cdk.Stage(app, "Prod", env=cdk.Environment(account="123456789012", region="eu-west-1"))
    sqs.Queue(cdk.Stack(stage, "Models", stack_name="prod-models"), "Q")
    app.synth()
    stacks = assembly_stacks(tmp_path)
    assert [(s.name, s.region) for s in stacks] == [("Plain", None), ("prod-models", "eu-west-1")]
    assert all(json.loads(s.template.read_text())["Resources"] for s in stacks)


def test_stacks_replacements_fails_a_named_group_replaced_and_passes_a_new_stack(
    tmp_path: Path, fake_credentials: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    deployed = _template(_GROUP, Name="chat", Port=8080, Protocol="HTTP")
    cdk_out = write_assembly(
        tmp_path, {"models": _template(_GROUP, Name="chat", Port=8000, Protocol="HTTP"), "extra": {"Resources": {}}}
    )
    cloudformation = _stubbed(monkeypatch)
    with Stubber(cloudformation) as cfn:
        cfn.add_client_error(
            "get_template",
            "ValidationError",
            "Stack with id extra does not exist",
            400,
            {"StackName": "extra", "TemplateStage": "Original"},
        )
        _deployed(cfn, "models", deployed)
        code = main(["stacks", "replacements", "--cdk-out", str(cdk_out), "--region", REGION])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert out[0].startswith("models/Res (AWS::ElasticLoadBalancingV2::TargetGroup): Port changes")
    assert "its Name chat stays" in out[0]
    assert out[1] == "extra: not deployed yet (nothing is replaced)"


def test_stacks_replacements_needs_a_synthesizedwrite_assembly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["stacks", "replacements", "--cdk-out", str(tmp_path)]) == 1
    assert "run cdk synth first" in capsys.readouterr().err


def _exporting(resources: dict[str, Any], value: Any, name: Any = "cluster:ProviderName") -> dict[str, Any]:
    return {"Resources": resources, "Outputs": {"Out": {"Value": value, "Export": {"Name": name}}}}


_PROVIDER = {
    "Type": "AWS::ECS::CapacityProvider",
    "Properties": {"AutoScalingGroupProvider": {"AutoScalingGroupArn": "a"}},
}
_REPLACED_PROVIDER = {
    "Type": "AWS::ECS::CapacityProvider",
    "Properties": {"AutoScalingGroupProvider": {"AutoScalingGroupArn": "b"}},
}


@pytest.mark.parametrize(
    ("new", "change"),
    [
        ({"Resources": {"Cp": _PROVIDER}}, "is removed"),
        (_exporting({"Cp": _PROVIDER}, {"Fn::GetAtt": ["Cp", "Arn"]}), "changes its value"),
        # the value as written stays, but it names a resource the update replaces: a new physical id
        (
            _exporting({"Cp": _REPLACED_PROVIDER}, {"Ref": "Cp"}),
            "changes as Cp is replaced (AutoScalingGroupProvider/AutoScalingGroupArn change)",
        ),
        (_exporting({"Cp": _PROVIDER}, {"Ref": "Cp"}), None),
    ],
)
def test_an_export_another_stack_imports_may_not_change(new: dict[str, Any], change: str | None) -> None:
    deployed = _exporting({"Cp": _PROVIDER}, {"Ref": "Cp"})
    found = exports_in_use("cluster", deployed, new, {"cluster:ProviderName": ["services"]})
    assert [f.change for f in found] == ([change] if change else [])
    assert not found or ("services imports" in found[0].problem and "export_value" in found[0].problem)
    assert exports_in_use("cluster", deployed, new, {}) == []  # imported by no stack: free to change


def test_an_export_named_after_its_stack_is_read_by_that_name() -> None:
    deployed = _exporting({}, "v", name={"Fn::Sub": "${AWS::StackName}-Vpc"})
    found = exports_in_use("net", deployed, {"Resources": {}}, {"net-Vpc": ["models"]})
    assert [(f.export, f.importers) for f in found] == [("net-Vpc", ("models",))]


def test_stacks_replacements_fails_an_export_in_use_the_update_changes(
    tmp_path: Path, fake_credentials: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    deployed = _exporting({"Cp": _PROVIDER}, {"Ref": "Cp"})
    deployed["Outputs"]["Free"] = {"Value": "x", "Export": {"Name": "cluster:Free"}}
    cdk_out = write_assembly(tmp_path, {"cluster": {"Resources": {"Cp": _PROVIDER}}})
    cloudformation = _stubbed(monkeypatch)
    with Stubber(cloudformation) as cfn:
        _deployed(cfn, "cluster", deployed)
        cfn.add_response("list_imports", {"Imports": ["services"]}, {"ExportName": "cluster:ProviderName"})
        cfn.add_client_error(
            "list_imports",
            "ValidationError",
            "Export 'cluster:Free' is not imported by any stack.",
            400,
            {"ExportName": "cluster:Free"},
        )
        assert main(["stacks", "replacements", "--cdk-out", str(cdk_out), "--region", REGION, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [(e["export"], e["importers"], e["change"]) for e in report["exports_in_use"]] == [
        ("cluster:ProviderName", ["services"], "is removed")
    ]


def test_exports_a_caller_may_not_list_the_imports_of_are_said_not_checked(
    tmp_path: Path, fake_credentials: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    deployed = _exporting({"Cp": _PROVIDER}, {"Ref": "Cp"})
    cdk_out = write_assembly(tmp_path, {"cluster": deployed})
    cloudformation = _stubbed(monkeypatch)
    with Stubber(cloudformation) as cfn:
        _deployed(cfn, "cluster", deployed)
        cfn.add_client_error(
            "list_imports", "AccessDenied", "not authorized", 403, {"ExportName": "cluster:ProviderName"}
        )
        assert main(["stacks", "replacements", "--cdk-out", str(cdk_out), "--region", REGION]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("cluster: its exports in use were not checked:") and "AccessDenied" in line


def test_stacks_replacements_reads_a_nested_stacks_deployed_template(
    tmp_path: Path, fake_credentials: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A nested stack is updated with its parent, and CloudFormation refuses a replacement under a kept name there
    too: its deployed template is the one of the stack its parent's resource names."""
    nested = {
        "Type": "AWS::CloudFormation::Stack",
        "Properties": {"TemplateURL": "x"},
        "Metadata": {"aws:asset:path": "modelsServing.nested.template.json"},
    }
    (tmp_path / "modelsServing.nested.template.json").write_text(
        json.dumps(_template(_GROUP, Name="chat", Port=8000, Protocol="HTTP"))
    )
    cdk_out = write_assembly(tmp_path, {"models": {"Resources": {"Serving": nested, "Fresh": {**nested}}}})
    arn = "arn:aws:cloudformation:us-east-1:123456789012:stack/models-Serving-1ABC/guid"
    cloudformation = _stubbed(monkeypatch)
    with Stubber(cloudformation) as cfn:
        _deployed(cfn, "models", {"Resources": {"Serving": nested}})
        summary = {
            "LogicalResourceId": "Serving",
            "PhysicalResourceId": arn,
            "ResourceType": "AWS::CloudFormation::Stack",
            "LastUpdatedTimestamp": "2026-12-01T00:00:00Z",
            "ResourceStatus": "CREATE_COMPLETE",
        }
        cfn.add_response("list_stack_resources", {"StackResourceSummaries": [summary]}, {"StackName": "models"})
        _deployed(cfn, arn, _template(_GROUP, Name="chat", Port=8080, Protocol="HTTP"))
        code = main(["stacks", "replacements", "--cdk-out", str(cdk_out), "--region", REGION])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert out[0].startswith("models/Serving/Res (AWS::ElasticLoadBalancingV2::TargetGroup): Port changes"), out
    assert "models/Fresh: not deployed yet (nothing is replaced)" in out


_BALANCER = "AWS::ElasticLoadBalancingV2::LoadBalancer"
_SG = [{"Fn::GetAtt": ["Sg", "GroupId"]}]


@pytest.mark.parametrize(
    ("before", "after", "refused"),
    [
        ({"Type": "network"}, {"Type": "network", "SecurityGroups": _SG}, True),
        ({"Type": "network", "SecurityGroups": []}, {"Type": "network", "SecurityGroups": _SG}, True),
        ({"Type": "network", "SecurityGroups": _SG}, {"Type": "network", "SecurityGroups": [*_SG, "sg-2"]}, False),
        ({"Type": "network"}, {"Type": "network"}, False),
        ({}, {"SecurityGroups": _SG}, False),  # an application load balancer takes groups at any time
        # replaced (its scheme is create-only): the new balancer is created with its groups
        (
            {"Type": "network", "Scheme": "internal"},
            {"Type": "network", "Scheme": "internet-facing", "SecurityGroups": _SG},
            False,
        ),
    ],
)
def test_security_groups_added_to_a_network_load_balancer_made_without_them_are_refused(
    before: dict[str, Any], after: dict[str, Any], refused: bool
) -> None:
    """Elastic Load Balancing API Reference, SetSecurityGroups: "You can't perform this operation on a Network Load
    Balancer unless you specified a security group for the load balancer when you created it"."""
    found = update_refusals("models", _template(_BALANCER, **before), _template(_BALANCER, **after))
    assert bool(found) is refused
    assert not refused or "created without security groups" in found[0].problem


def test_stacks_replacements_fails_security_groups_added_to_a_deployed_network_load_balancer(
    tmp_path: Path, fake_credentials: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cdk_out = write_assembly(tmp_path, {"models": _template(_BALANCER, Type="network", SecurityGroups=_SG)})
    cloudformation = _stubbed(monkeypatch)
    with Stubber(cloudformation) as cfn:
        _deployed(cfn, "models", _template(_BALANCER, Type="network"))
        code = main(["stacks", "replacements", "--cdk-out", str(cdk_out), "--region", REGION, "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    assert [r["logical_id"] for r in report["update_refusals"]] == ["Res"]


@pytest.mark.parametrize("command", ["replacements", "references", "quotas", "zones"])
def test_the_stacks_commands_read_the_assembly_cdk_json_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """cdk synth writes where cdk.json's "output" says; a stacks command run beside it reads there, not a cdk.out
    an older synth may have left."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cdk.json").write_text(json.dumps({"app": "python3 app.py", "output": "build/assembly"}))
    (tmp_path / "cdk.out").mkdir()
    (tmp_path / "cdk.out" / "manifest.json").write_text("{}")  # a stale assembly of another synth
    assert main(["stacks", command, "--region", REGION]) == 1
    assert "build/assembly has no manifest.json" in capsys.readouterr().err
    (tmp_path / "cdk.json").write_text("{ not json")
    assert main(["stacks", command, "--region", REGION]) == 1
    assert "cdk.json" in capsys.readouterr().err
