"""Every service on a GPU capacity found in the written templates, however it was built (core.tenancy), and the
task-role escalation classification (core.escalation). Pure Python: the templates are CloudFormation as CDK writes
it, made by hand here; tests/test_guards_app.py synthesizes the same attacks through aws-cdk-lib."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from ecs_gpu_sharing.core import container_guards as guards
from ecs_gpu_sharing.core import escalation, tenancy
from ecs_gpu_sharing.core.fleet import SERVICE_TAG

from conftest import REPO, load_script

PRIVILEGED_TASK = {
    "Type": "AWS::ECS::TaskDefinition",
    "Properties": {"ContainerDefinitions": [{"Name": "x", "Image": "i", "Memory": 64, "Privileged": "true"}]},
}


def _cluster_stack() -> dict[str, Any]:
    return {
        "Resources": {
            "Cluster": {"Type": "AWS::ECS::Cluster", "Properties": {}},
            "Provider": {
                "Type": "AWS::ECS::CapacityProvider",
                "Properties": {"AutoScalingGroupProvider": {}},
                "Metadata": {tenancy.CAPACITY_METADATA: "l4", "aws:cdk:path": "c/L4/Provider/Provider"},
            },
            "Other": {"Type": "AWS::ECS::CapacityProvider", "Properties": {"AutoScalingGroupProvider": {}}},
            "Assoc": {
                "Type": "AWS::ECS::ClusterCapacityProviderAssociations",
                "Properties": {"Cluster": {"Ref": "Cluster"}, "CapacityProviders": [{"Ref": "Provider"}]},
            },
            "Cpu": {"Type": "AWS::ECS::Cluster", "Properties": {}},
        },
        "Outputs": {
            "ProviderOut": {"Value": {"Ref": "Provider"}, "Export": {"Name": "c:Provider"}},
            "ClusterOut": {"Value": {"Ref": "Cluster"}},
        },
    }


def _service(**props: Any) -> dict[str, Any]:
    return {"Type": "AWS::ECS::Service", "Properties": {"TaskDefinition": {"Ref": "Task"}, **props}}


def _app(service: dict[str, Any], task: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    tenant = {"Resources": {"Svc": service, "Task": copy.deepcopy(task or PRIVILEGED_TASK), **extra}}
    return {"c": _cluster_stack(), "tenant": tenant}


def _rules(templates: dict[str, Any], allowed: Any = None) -> list[str]:
    return [v.rule_id for v in tenancy.judge(templates, allowed).violations]


ON_GPU = [
    pytest.param(
        {"CapacityProviderStrategy": [{"CapacityProvider": {"Fn::ImportValue": "c:Provider"}}]}, id="import-value"
    ),
    pytest.param(
        {
            "CapacityProviderStrategy": [
                {"CapacityProvider": {"Fn::GetStackOutput": {"StackName": "c", "OutputName": "ProviderOut"}}}
            ]
        },
        id="stack-output",
    ),
    pytest.param(
        {"Cluster": {"Fn::GetStackOutput": {"StackName": "c", "OutputName": "ClusterOut"}}, "LaunchType": "EC2"},
        id="ec2-launch-type-on-the-gpu-cluster",
    ),
    pytest.param(
        {"Cluster": {"Fn::GetStackOutput": {"StackName": "c", "OutputName": "ClusterOut"}}},
        id="the-cluster-default-strategy",
    ),
    pytest.param({"Cluster": "my-cluster", "LaunchType": "EC2"}, id="imported-cluster-by-name"),
    pytest.param({"Cluster": "my-cluster", "CapacityProviderStrategy": [{"CapacityProvider": "gpu"}]}, id="by-name"),
]


@pytest.mark.parametrize("props", ON_GPU)
def test_a_service_on_a_gpu_capacity_is_judged_however_it_names_it(props: dict[str, Any]) -> None:
    assert _rules(_app(_service(**props))) == [guards.PRIVILEGED_CONTAINER]


NOT_ON_GPU = [
    pytest.param({"LaunchType": "FARGATE", "Cluster": "my-cluster"}, id="fargate"),
    pytest.param({"CapacityProviderStrategy": [{"CapacityProvider": "FARGATE_SPOT"}]}, id="fargate-spot"),
]


@pytest.mark.parametrize("props", NOT_ON_GPU)
def test_a_service_elsewhere_is_not_judged(props: dict[str, Any]) -> None:
    assert _rules(_app(_service(**props))) == []


def test_a_service_whose_provider_cannot_be_told_apart_is_judged() -> None:
    props = {"Cluster": {"Fn::ImportValue": "nothing"}, "CapacityProviderStrategy": [{"CapacityProvider": "x"}]}
    assert _rules(_app(_service(**props))) == [guards.PRIVILEGED_CONTAINER]


def test_a_service_in_another_cluster_of_the_app_is_not_judged() -> None:
    templates = _app(_service(LaunchType="EC2", Cluster={"Ref": "Cpu"}))
    templates["c"]["Resources"].update(templates.pop("tenant")["Resources"])
    assert _rules(templates) == []


def test_a_service_on_a_named_cluster_elsewhere_is_not_judged() -> None:
    templates = _app(_service(LaunchType="EC2", Cluster="batch"))
    templates["c"]["Resources"]["Cluster"]["Properties"]["ClusterName"] = "gpu"
    assert _rules(templates) == []
    templates["tenant"]["Resources"]["Svc"]["Properties"]["Cluster"] = "arn:aws:ecs:us-east-1:1:cluster/gpu"
    assert _rules(templates) == [guards.PRIVILEGED_CONTAINER]


def test_an_app_without_a_gpu_capacity_judges_nothing() -> None:
    templates = _app(_service(LaunchType="EC2"))
    del templates["c"]["Resources"]["Provider"]["Metadata"]
    assert _rules(templates) == []


def test_a_task_definition_the_app_does_not_hold_is_refused_on_a_gpu_capacity() -> None:
    service = _service(CapacityProviderStrategy=[{"CapacityProvider": {"Fn::ImportValue": "c:Provider"}}])
    service["Properties"]["TaskDefinition"] = "arn:aws:ecs:us-east-1:1:task-definition/x:1"
    assert _rules(_app(service)) == [tenancy.TASK_DEFINITION_NOT_READABLE]
    allowed = {("tenant", "Svc"): {tenancy.TASK_DEFINITION_NOT_READABLE: "the platform's own agent"}}
    judged = tenancy.judge(_app(service), allowed)
    assert judged.violations == [] and judged.allowed == [
        ("tenant/Svc", tenancy.TASK_DEFINITION_NOT_READABLE, "the platform's own agent")
    ]


def test_an_allowance_permits_its_rule_on_its_resource_only() -> None:
    templates = _app(_service(LaunchType="EC2", Cluster="x"))
    assert _rules(templates, {("tenant", "Task"): {guards.PRIVILEGED_CONTAINER: "a reason"}}) == []
    assert _rules(templates, {("tenant", "Task"): {guards.HOST_PATH: "a reason"}}) == [guards.PRIVILEGED_CONTAINER]
    assert _rules(templates, {("tenant", "Svc"): {guards.PRIVILEGED_CONTAINER: "a reason"}}) == [
        guards.PRIVILEGED_CONTAINER
    ]


def _role_app(statement: dict[str, Any], *, inline: bool = False) -> dict[str, Any]:
    task = {
        "Type": "AWS::ECS::TaskDefinition",
        "Properties": {"ContainerDefinitions": [], "TaskRoleArn": {"Fn::GetAtt": ["Role", "Arn"]}},
    }
    doc = {"Version": "2012-10-17", "Statement": [statement]}
    role: dict[str, Any] = {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": {}}}
    extra = {"Role": role}
    if inline:
        role["Properties"]["Policies"] = [{"PolicyName": "p", "PolicyDocument": doc}]
    else:
        extra["Policy"] = {
            "Type": "AWS::IAM::Policy",
            "Properties": {"PolicyDocument": doc, "Roles": [{"Ref": "Role"}]},
        }
    return _app(_service(LaunchType="EC2", Cluster="x"), task, **extra)


@pytest.mark.parametrize("inline", [False, True])
def test_an_escalating_grant_on_a_task_role_is_refused_wherever_it_is_attached(inline: bool) -> None:
    templates = _role_app({"Effect": "Allow", "Action": "iam:PutRolePolicy", "Resource": "*"}, inline=inline)
    (violation,) = tenancy.judge(templates).violations
    assert violation.rule_id == escalation.TASK_ROLE_ESCALATION and violation.logical_id == "Role"
    assert "changes IAM" in violation.message


@pytest.mark.parametrize("execs", [False, True])
def test_ecs_execs_log_grant_on_every_group_says_how_to_scope_it(execs: bool) -> None:
    """aws-ecs grants a service's task role logs writes on every group for ECS Exec (enable_execute_command) where the
    cluster's execute command configuration names no log group: the refusal says how to scope it."""
    statement = {"Effect": "Allow", "Action": ["logs:CreateLogStream", "logs:PutLogEvents"], "Resource": "*"}
    templates = _role_app(statement)
    if execs:
        templates["tenant"]["Resources"]["Svc"]["Properties"]["EnableExecuteCommand"] = True
    found = [v.message for v in tenancy.judge(templates).violations if v.rule_id == escalation.TASK_ROLE_ESCALATION]
    assert found and all(("execute_command_configuration" in m) is execs for m in found)


def test_an_administrator_managed_policy_is_refused_and_cannot_be_allowed() -> None:
    templates = _role_app({"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"})
    templates["tenant"]["Resources"]["Role"]["Properties"]["ManagedPolicyArns"] = [
        {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":iam::aws:policy/AdministratorAccess"]]}
    ]
    allowed = {
        ("tenant", "Role"): {escalation.TASK_ROLE_ESCALATION: "x"},
        ("tenant", "Task"): {escalation.TASK_ROLE_ESCALATION: "x"},
    }
    assert _rules(templates, allowed) == [escalation.TASK_ROLE_REFUSED_POLICY]


def test_two_services_claiming_one_plan_name_are_refused() -> None:
    tagged = _service(LaunchType="FARGATE", Tags=[{"Key": SERVICE_TAG, "Value": "chat"}])
    templates = _app(tagged, Copy=copy.deepcopy(tagged))
    (violation,) = tenancy.judge(templates).violations
    assert violation.rule_id == tenancy.SERVICE_NAME_CLAIMED and "chat" in violation.message


# --- the classification -------------------------------------------------------------------------------------------


def _log_group_arn(*name: Any) -> dict[str, Any]:
    """A log group's ARN as CDK writes it: the partition, region and account as references, then the name's parts."""
    head = ["arn:", {"Ref": "AWS::Partition"}, ":logs:", {"Ref": "AWS::Region"}, ":", {"Ref": "AWS::AccountId"}]
    return {"Fn::Join": ["", [*head, ":log-group:", *name]]}


ESCALATING = [
    (["iam:PutRolePolicy"], ["*"]),
    (["iam:AttachRolePolicy"], ["arn:aws:iam::123456789012:role/task"]),
    (["IAM:put*"], ["*"]),
    (["iam:*"], ["*"]),
    (["sts:*"], ["*"]),
    (["sts:AssumeRole"], ["arn:aws:iam::123456789012:role/admin"]),
    (["ssm:SendCommand"], ["*"]),
    (["ssm:Start*"], ["*"]),
    (["ecs:TagResource"], ["*"]),
    (["ecs:PutAttributes"], ["*"]),
    (["ecs:Submit*"], ["*"]),
    (["ecs:ExecuteCommand"], ["*"]),
    (["logs:PutLogEvents"], ["*"]),
    (["logs:PutLogEvents"], ["arn:aws:logs:us-east-1:123456789012:log-group:/ecs-gpu-sharing/evidence/*"]),
    (["logs:*"], ["arn:aws:logs:*:*:log-group:/aws/events/ecs-gpu-sharing/prod/stopped-tasks:*"]),
    # a group named at deploy (a parameter) could be the evidence group
    (["logs:PutLogEvents"], [_log_group_arn({"Ref": "GroupName"}, ":*")]),
    (["iam:PassRole", "lambda:CreateFunction"], ["*"]),
    (["*"], ["*"]),
    (["s?s:AssumeRole"], ["*"]),
]


@pytest.mark.parametrize(("actions", "resources"), ESCALATING)
def test_escalating_grants_are_found(actions: list[str], resources: list[str]) -> None:
    assert escalation.escalations([{"Statement": [{"Effect": "Allow", "Action": actions, "Resource": resources}]}])


HARMLESS = [
    (["s3:GetObject"], ["*"]),
    (["iam:GetRole", "iam:ListRoles"], ["*"]),
    (["sts:GetCallerIdentity"], ["*"]),
    (["iam:PassRole"], ["arn:aws:iam::123456789012:role/x"]),
    (["logs:PutLogEvents"], ["arn:aws:logs:us-east-1:123456789012:log-group:/my/app:*"]),
    (["logs:PutLogEvents"], [_log_group_arn("/my/app:*")]),
    (["ecs:DescribeServices", "ssm:GetParameter"], ["*"]),
]


@pytest.mark.parametrize(("actions", "resources"), HARMLESS)
def test_harmless_grants_pass(actions: list[str], resources: list[str]) -> None:
    assert (
        escalation.escalations([{"Statement": [{"Effect": "Allow", "Action": actions, "Resource": resources}]}]) == []
    )


DEPLOY_TIME = [
    pytest.param(
        {"Statement": [{"Effect": {"Fn::If": ["C", "Allow", "Deny"]}, "Action": "iam:PutRolePolicy", "Resource": "*"}]},
        id="effect",
    ),
    pytest.param({"Statement": [{"Effect": "Allow", "Action": {"Ref": "Action"}, "Resource": "*"}]}, id="action"),
    pytest.param(
        {"Statement": [{"Effect": "Allow", "Action": [{"Fn::If": ["C", "iam:PassRole", "s3:GetObject"]}]}]},
        id="action-in-a-list",
    ),
    pytest.param(
        {
            "Statement": [
                {"Effect": "Allow", "Action": "logs:PutLogEvents", "NotResource": "arn:aws:logs:*:*:log-group:/a"}
            ]
        },
        id="not-resource",
    ),
    pytest.param(
        json.dumps({"Statement": [{"Effect": "Allow", "Action": "iam:PutRolePolicy", "Resource": "*"}]}),
        id="document-as-json-text",
    ),
    pytest.param({"Fn::If": ["C", {"Statement": []}, {"Statement": []}]}, id="document-at-deploy"),
    pytest.param({"Statement": {"Ref": "Statements"}}, id="statements-at-deploy"),
]


@pytest.mark.parametrize("document", DEPLOY_TIME)
def test_a_grant_the_synth_cannot_read_is_judged_as_it_could_be(document: Any) -> None:
    """What the synth cannot read may be anything: an Effect, an action, a document known only at deploy, and an Allow
    with NotResource, which grants every resource but those it names."""
    assert escalation.escalations([document])


def test_pass_role_escalates_with_a_code_runner_in_another_policy_of_the_role() -> None:
    one = {"Statement": [{"Effect": "Allow", "Action": "iam:PassRole", "Resource": "*"}]}
    two = {"Statement": [{"Effect": "Allow", "Action": "ecs:RunTask", "Resource": "*"}]}
    assert any("runs code under another role" in why for why in escalation.escalations([one, two]))


def test_not_action_and_deny_are_read() -> None:
    allow_all_but = {"Statement": [{"Effect": "Allow", "NotAction": "s3:*", "Resource": "*"}]}
    deny = {"Statement": [{"Effect": "Deny", "Action": "iam:*", "Resource": "*"}]}
    assert escalation.escalations([allow_all_but]) and escalation.escalations([deny]) == []


def test_the_action_list_is_what_botocore_names() -> None:
    module = load_script(REPO / "scripts" / "escalation_actions.py")
    assert json.loads(module.OUT.read_text()) == module.build(), "run scripts/escalation_actions.py"


def test_a_scheduled_task_on_the_gpu_cluster_is_judged() -> None:
    rule = {
        "Type": "AWS::Events::Rule",
        "Properties": {
            "ScheduleExpression": "rate(1 hour)",
            "Targets": [
                {
                    "Arn": {"Fn::GetStackOutput": {"StackName": "c", "OutputName": "ClusterOut"}},
                    "Id": "t",
                    "EcsParameters": {"TaskDefinitionArn": {"Ref": "Task"}, "LaunchType": "EC2"},
                }
            ],
        },
    }
    templates = {"c": _cluster_stack(), "tenant": {"Resources": {"Rule": rule, "Task": copy.deepcopy(PRIVILEGED_TASK)}}}
    assert _rules(templates) == [guards.PRIVILEGED_CONTAINER]
    schedule = {
        "Type": "AWS::Scheduler::Schedule",
        "Properties": {
            "Target": {
                "Arn": "my-cluster",
                "EcsParameters": {
                    "TaskDefinitionArn": {"Ref": "Task"},
                    "CapacityProviderStrategy": [{"CapacityProvider": {"Fn::ImportValue": "c:Provider"}}],
                },
            }
        },
    }
    templates["tenant"]["Resources"] = {"Schedule": schedule, "Task": copy.deepcopy(PRIVILEGED_TASK)}
    assert _rules(templates) == [guards.PRIVILEGED_CONTAINER]


def test_a_task_set_of_an_external_service_is_judged_and_the_service_is_not_refused() -> None:
    service = _service(CapacityProviderStrategy=[{"CapacityProvider": {"Fn::ImportValue": "c:Provider"}}])
    service["Properties"]["DeploymentController"] = {"Type": "EXTERNAL"}
    del service["Properties"]["TaskDefinition"]
    task_set = {
        "Type": "AWS::ECS::TaskSet",
        "Properties": {
            "Cluster": "my-cluster",
            "Service": {"Ref": "Svc"},
            "TaskDefinition": {"Ref": "Task"},
            "LaunchType": "EC2",
        },
    }
    assert _rules(_app(service, TaskSet=task_set)) == [guards.PRIVILEGED_CONTAINER]


def test_a_task_role_written_as_an_arn_is_refused_on_a_gpu_capacity() -> None:
    task = {
        "Type": "AWS::ECS::TaskDefinition",
        "Properties": {"ContainerDefinitions": [], "TaskRoleArn": "arn:aws:iam::123456789012:role/Admin"},
    }
    on_gpu = _service(CapacityProviderStrategy=[{"CapacityProvider": {"Fn::ImportValue": "c:Provider"}}])
    assert _rules(_app(on_gpu, task)) == [tenancy.TASK_ROLE_NOT_READABLE]
    maybe = tenancy.judge(_app(_service(LaunchType="EC2", Cluster="x"), task))
    assert maybe.violations == [] and "task role" in maybe.not_judged[0].reason


def test_a_log_configuration_naming_the_evidence_group_is_refused() -> None:
    task = copy.deepcopy(PRIVILEGED_TASK)
    container = task["Properties"]["ContainerDefinitions"][0]
    del container["Privileged"]
    container["LogConfiguration"] = {
        "LogDriver": "awslogs",
        "Options": {"awslogs-group": "/ecs-gpu-sharing/evidence/models", "awslogs-region": "us-east-1"},
    }
    assert _rules(_app(_service(LaunchType="EC2", Cluster="x"), task)) == [guards.EVIDENCE_LOGS]


EVIDENCE_GROUP = {
    "Type": "AWS::Logs::LogGroup",
    "Properties": {"LogGroupName": {"Fn::Join": ["", ["/ecs-gpu-sharing/evidence/", {"Ref": "Cluster"}]]}},
}
OWN_GROUP = {"Type": "AWS::Logs::LogGroup", "Properties": {"RetentionInDays": 30}}


def _evidence_app(reference: Any, *, across: bool) -> tuple[dict[str, Any], Any]:
    """The evidence group in the cluster's stack (``across``: named through its export) or the tenant's own."""
    templates = _app(_service(LaunchType="EC2", Cluster="x"))
    held = templates["c"] if across else templates["tenant"]
    held["Resources"]["Evidence"] = copy.deepcopy(EVIDENCE_GROUP)
    held["Resources"]["Own"] = copy.deepcopy(OWN_GROUP)
    if across:
        held["Outputs"]["EvidenceOut"] = {"Value": reference, "Export": {"Name": "c:Evidence"}}
        return templates, {"Fn::ImportValue": "c:Evidence"}
    return templates, reference


@pytest.mark.parametrize("across", [False, True])
@pytest.mark.parametrize("reference", [{"Ref": "Evidence"}, {"Fn::GetAtt": ["Evidence", "Arn"]}])
def test_a_log_configuration_referring_to_the_evidence_group_is_refused(reference: Any, across: bool) -> None:
    """A Ref to the group (``ecs.LogDrivers.aws_logs(log_group=telemetry.evidence)``) carries no name to read: the
    group it names does."""
    templates, named = _evidence_app(reference, across=across)
    container = templates["tenant"]["Resources"]["Task"]["Properties"]["ContainerDefinitions"][0]
    del container["Privileged"]
    container["LogConfiguration"] = {"LogDriver": "awslogs", "Options": {"awslogs-group": named}}
    assert _rules(templates) == [guards.EVIDENCE_LOGS]
    container["LogConfiguration"]["Options"]["awslogs-group"] = {"Ref": "Own"}  # the task's own group
    if not across:
        assert _rules(templates) == []


@pytest.mark.parametrize(
    ("group", "refused"),
    [
        ({"Ref": "GroupName"}, True),  # a parameter: any group, the evidence group among them
        ({"Fn::Join": ["", ["/teams/", {"Ref": "GroupName"}]]}, False),  # under /teams/, whatever the parameter says
        ({"Ref": "Own"}, False),  # the task's own group, named by CloudFormation
        ({"Fn::Sub": "${GroupName}"}, True),
    ],
)
def test_a_log_group_the_synth_cannot_read_is_refused(group: Any, refused: bool) -> None:
    templates = _app(_service(LaunchType="EC2", Cluster="x"))
    templates["tenant"]["Resources"]["Own"] = copy.deepcopy(OWN_GROUP)
    templates["tenant"]["Parameters"] = {"GroupName": {"Type": "String"}}
    container = templates["tenant"]["Resources"]["Task"]["Properties"]["ContainerDefinitions"][0]
    del container["Privileged"]
    container["LogConfiguration"] = {
        "LogDriver": "awslogs",
        "Options": {"awslogs-group": group, "awslogs-region": {"Ref": "AWS::Region"}},
    }
    assert _rules(templates) == ([guards.EVIDENCE_LOGS] if refused else [])


@pytest.mark.parametrize("across", [False, True])
def test_a_task_role_grant_on_the_evidence_group_by_reference_is_refused(across: bool) -> None:
    """``telemetry.evidence.grant_write(task_role)`` writes the group's Arn as a GetAtt, with no name to read."""
    statement = {"Effect": "Allow", "Action": ["logs:CreateLogStream", "logs:PutLogEvents"], "Resource": None}
    templates = _role_app(statement)
    held = templates["c"] if across else templates["tenant"]
    held["Resources"]["Evidence"] = copy.deepcopy(EVIDENCE_GROUP)
    templates["tenant"]["Resources"]["Own"] = copy.deepcopy(OWN_GROUP)
    if across:
        held["Outputs"]["EvidenceOut"] = {"Value": {"Fn::GetAtt": ["Evidence", "Arn"]}, "Export": {"Name": "c:E"}}
    statement = templates["tenant"]["Resources"]["Policy"]["Properties"]["PolicyDocument"]["Statement"][0]
    statement["Resource"] = {"Fn::ImportValue": "c:E"} if across else {"Fn::GetAtt": ["Evidence", "Arn"]}
    found = tenancy.judge(templates).violations
    assert [(v.rule_id, v.logical_id) for v in found] == [(escalation.TASK_ROLE_ESCALATION, "Role")] * 2
    assert all("on /ecs-gpu-sharing/evidence/* can write the evidence" in v.message for v in found)
    statement["Resource"] = {"Fn::GetAtt": ["Own", "Arn"]}  # the task's own group
    assert tenancy.judge(templates).violations == []


def test_a_second_provider_over_the_gpu_group_is_the_gpu_capacity() -> None:
    templates = _app(_service(CapacityProviderStrategy=[{"CapacityProvider": {"Ref": "Mine"}}]))
    cluster = templates["c"]["Resources"]
    cluster["Group"] = {"Type": "AWS::AutoScaling::AutoScalingGroup", "Properties": {"MaxSize": "1", "MinSize": "0"}}
    cluster["Provider"]["Properties"]["AutoScalingGroupProvider"] = {"AutoScalingGroupArn": {"Ref": "Group"}}
    templates["c"]["Outputs"]["GroupOut"] = {"Value": {"Ref": "Group"}, "Export": {"Name": "c:Group"}}
    templates["tenant"]["Resources"]["Mine"] = {
        "Type": "AWS::ECS::CapacityProvider",
        "Properties": {"AutoScalingGroupProvider": {"AutoScalingGroupArn": {"Fn::ImportValue": "c:Group"}}},
    }
    assert _rules(templates) == [guards.PRIVILEGED_CONTAINER]


@pytest.mark.parametrize(
    "arn",
    [
        {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":iam::aws:policy/AmazonSSMFullAccess"]]},
        "arn:aws:iam::123456789012:policy/team-wide",
    ],
)
def test_a_managed_policy_whose_grants_cannot_be_read_is_refused(arn: Any) -> None:
    templates = _role_app({"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"})
    templates["tenant"]["Resources"]["Role"]["Properties"]["ManagedPolicyArns"] = [arn]
    (violation,) = tenancy.judge(templates).violations
    assert violation.rule_id == escalation.TASK_ROLE_ESCALATION and "cannot be judged" in violation.message
    read_only = {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":iam::aws:policy/AmazonS3ReadOnlyAccess"]]}
    templates["tenant"]["Resources"]["Role"]["Properties"]["ManagedPolicyArns"] = [read_only]
    assert tenancy.judge(templates).violations == []


def test_a_policy_naming_the_task_role_by_its_literal_name_is_read() -> None:
    templates = _role_app({"Effect": "Allow", "Action": "iam:CreateAccessKey", "Resource": "*"})
    resources = templates["tenant"]["Resources"]
    resources["Role"]["Properties"]["RoleName"] = "model-task"
    resources["Policy"]["Properties"]["Roles"] = ["model-task"]
    assert _rules(templates) == [escalation.TASK_ROLE_ESCALATION]


def _volume(name: str, scope: str = "shared") -> dict[str, Any]:
    return {"Name": name, "DockerVolumeConfiguration": {"Scope": scope, "Autoprovision": True, "Driver": "local"}}


def _two_tasks(first: dict[str, Any], second: dict[str, Any], second_cluster: str = "x") -> dict[str, Any]:
    """Two services on the GPU cluster (the second elsewhere when ``second_cluster`` is not "x"), each with one
    task definition of one volume."""
    templates = _app(
        _service(LaunchType="EC2", Cluster="x"),
        {"Type": "AWS::ECS::TaskDefinition", "Properties": {"ContainerDefinitions": [], "Volumes": [first]}},
    )
    templates["c"]["Resources"]["Cluster"]["Properties"]["ClusterName"] = "x"  # the GPU cluster, by its name
    templates["tenant"]["Resources"]["Svc2"] = {
        "Type": "AWS::ECS::Service",
        "Properties": {"TaskDefinition": {"Ref": "Task2"}, "LaunchType": "EC2", "Cluster": second_cluster},
    }
    templates["tenant"]["Resources"]["Task2"] = {
        "Type": "AWS::ECS::TaskDefinition",
        "Properties": {"ContainerDefinitions": [], "Volumes": [second]},
    }
    return templates


@pytest.mark.parametrize(
    ("first", "second", "cluster", "refused"),
    [
        pytest.param(_volume("a-cache"), _volume("b-cache"), "x", False, id="two-names"),
        pytest.param(_volume("cache"), _volume("cache", "task"), "x", False, id="one-task-scoped"),
        pytest.param(_volume("cache"), _volume("cache"), "x", True, id="one-name-twice"),
        pytest.param(_volume("cache", "Shared"), _volume("cache"), "x", True, id="any-spelling"),
        pytest.param(_volume("cache"), _volume("cache"), "batch", False, id="the-other-off-the-gpu-hosts"),
    ],
)
def test_one_shared_docker_volume_named_by_two_task_definitions_is_refused(
    first: dict[str, Any], second: dict[str, Any], cluster: Any, refused: bool
) -> None:
    """A shared-scope Docker volume is one volume per host by its name (amazon-ecs-agent, agent/api/task/task.go,
    addSharedVolumes): two task definitions naming it on GPU hosts reach each other's files."""
    judged = tenancy.judge(_two_tasks(first, second, cluster))
    assert [v.rule_id for v in judged.violations] == ([tenancy.SHARED_VOLUME_NAMED_TWICE] if refused else [])
    if refused:
        text = judged.violations[0].message
        assert "'cache'" in text and "tenant/Task" in text and "tenant/Task2" in text


def test_a_shared_docker_volume_named_twice_can_be_allowed() -> None:
    allowed = {("tenant", "Task2"): {tenancy.SHARED_VOLUME_NAMED_TWICE: "one team's two services share a cache"}}
    judged = tenancy.judge(_two_tasks(_volume("cache"), _volume("cache")), allowed)
    assert judged.violations == []
    assert judged.allowed == [
        ("tenant/Task2", tenancy.SHARED_VOLUME_NAMED_TWICE, "one team's two services share a cache")
    ]


def _machine(definition: Any, *, as_text: bool) -> dict[str, Any]:
    key = "DefinitionString" if as_text else "Definition"
    return {"Type": "AWS::StepFunctions::StateMachine", "Properties": {key: definition}}


def _run(request: dict[str, Any]) -> dict[str, Any]:
    return {"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": "arn:aws:states:::ecs:runTask", **request}}}


def _running(**parameters: Any) -> dict[str, Any]:
    """A state machine, its definition an object, whose one Task state runs an ECS task with these parameters."""
    return _machine(_run({"Parameters": parameters}), as_text=False)


@pytest.mark.parametrize(
    ("machine", "judged"),
    [
        pytest.param(
            _running(Cluster="my-cluster", TaskDefinition={"Ref": "Task"}),
            "gpu",
            id="object",
        ),
        pytest.param(
            _machine(
                {
                    "Fn::Join": [
                        "",
                        [
                            '{"StartAt":"P","States":{"P":{"Type":"Parallel","End":true,"Branches":[{"StartAt":"A","States":{"A":'
                            '{"Type":"Task","End":true,"Resource":"arn:',
                            {"Ref": "AWS::Partition"},
                            ':states:::ecs:runTask.sync","Parameters":{"Cluster":"',
                            {"Fn::ImportValue": "c:Cluster"},
                            '","TaskDefinition":"tenant-model","LaunchType":"EC2"}}}}]}}}',
                        ],
                    ]
                },
                as_text=True,
            ),
            "gpu",
            id="text-around-references-in-a-parallel-branch",
        ),
        pytest.param(
            _machine(_run({"Arguments": {"Cluster": "my-cluster", "TaskDefinition": "tenant-model"}}), as_text=False),
            "gpu",
            id="jsonata",
        ),
        pytest.param(
            _running(**{"Cluster.$": "$.cluster", "TaskDefinition": {"Ref": "Task"}}),
            "maybe",
            id="cluster-from-input",
        ),
        pytest.param(
            _running(**{"Cluster": "my-cluster", "TaskDefinition.$": "$.td"}),
            "unreadable",
            id="task-from-input",
        ),
        pytest.param(
            _running(Cluster="my-cluster", TaskDefinition="tenant-model:3"),
            "unreadable",
            id="a-pinned-revision",
        ),
        pytest.param(
            _running(Cluster="my-cluster", TaskDefinition={"Ref": "Task"}, LaunchType="FARGATE"),
            None,
            id="fargate",
        ),
    ],
)
def test_a_state_machine_running_a_task_on_the_gpu_cluster_is_judged(
    machine: dict[str, Any], judged: str | None
) -> None:
    """ecs:runTask in any Task state of the definition, as an object or as CDK's JSON text around references; a field
    taken from the machine's input is known only when it runs."""
    templates = _app(_service(LaunchType="FARGATE"), Machine=machine)
    templates["tenant"]["Resources"]["Task"]["Properties"]["Family"] = "tenant-model"
    templates["c"]["Resources"]["Cluster"]["Properties"]["ClusterName"] = "my-cluster"
    templates["c"]["Outputs"]["ClusterExport"] = {"Value": {"Ref": "Cluster"}, "Export": {"Name": "c:Cluster"}}
    found = tenancy.judge(templates)
    rules = [v.rule_id for v in found.violations]
    expected = {
        "gpu": [guards.PRIVILEGED_CONTAINER],
        "unreadable": [tenancy.TASK_DEFINITION_NOT_READABLE],
        "maybe": [guards.PRIVILEGED_CONTAINER],
        None: [],
    }[judged]
    assert rules == expected, found
    if judged == "maybe":
        assert "cannot be told apart" in found.violations[0].message


def test_a_pipe_running_a_task_on_the_gpu_cluster_is_judged() -> None:
    pipe = {
        "Type": "AWS::Pipes::Pipe",
        "Properties": {
            "Target": {"Fn::ImportValue": "c:Cluster"},
            "TargetParameters": {"EcsTaskParameters": {"TaskDefinitionArn": {"Ref": "Task"}, "LaunchType": "EC2"}},
        },
    }
    templates = _app(_service(LaunchType="FARGATE"), Pipe=pipe)
    templates["c"]["Outputs"]["ClusterExport"] = {
        "Value": {"Fn::GetAtt": ["Cluster", "Arn"]},
        "Export": {"Name": "c:Cluster"},
    }
    assert _rules(templates) == [guards.PRIVILEGED_CONTAINER]
    pipe["Properties"]["TargetParameters"]["EcsTaskParameters"]["LaunchType"] = "FARGATE"
    assert _rules(templates) == []


def _rule_target(**target: Any) -> dict[str, Any]:
    return {
        "Type": "AWS::Events::Rule",
        "Properties": {
            "Targets": [
                {
                    "Id": "t",
                    "Arn": {"Fn::ImportValue": "c:ClusterArn"},
                    "EcsParameters": {"TaskDefinitionArn": {"Ref": "Task"}, "LaunchType": "EC2"},
                    **target,
                }
            ]
        },
    }


def _runner_app(runner: dict[str, Any]) -> dict[str, Any]:
    """A harmless task definition that ``runner`` runs on the GPU cluster, and a role that can change IAM."""
    templates = _app(_service(LaunchType="FARGATE"), Runner=runner)
    del templates["tenant"]["Resources"]["Task"]["Properties"]["ContainerDefinitions"][0]["Privileged"]
    templates["c"]["Outputs"]["ClusterArn"] = {
        "Value": {"Fn::GetAtt": ["Cluster", "Arn"]},
        "Export": {"Name": "c:ClusterArn"},
    }
    statement = {"Effect": "Allow", "Action": "iam:PutRolePolicy", "Resource": "*"}
    templates["tenant"]["Resources"]["Admin"] = {
        "Type": "AWS::IAM::Role",
        "Properties": {"Policies": [{"PolicyName": "p", "PolicyDocument": {"Statement": [statement]}}]},
    }
    return templates


def _pipe(environment: list[dict[str, Any]]) -> dict[str, Any]:
    """A pipe that runs the task on the GPU cluster, overriding its container's environment."""
    overrides = {"ContainerOverrides": [{"Name": "x", "Environment": environment}]}
    parameters = {"TaskDefinitionArn": {"Ref": "Task"}, "LaunchType": "EC2", "Overrides": overrides}
    return {
        "Type": "AWS::Pipes::Pipe",
        "Properties": {
            "Target": {"Fn::ImportValue": "c:ClusterArn"},
            "TargetParameters": {"EcsTaskParameters": parameters},
        },
    }


STEER = {
    "containerOverrides": [
        {"name": "x", "environment": [{"name": "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "value": "100"}]}
    ]
}


@pytest.mark.parametrize(
    ("runner", "rules"),
    [
        pytest.param(_rule_target(), [], id="no-overrides"),
        pytest.param(_rule_target(Input=json.dumps(STEER)), [guards.GPU_STEERING_ENVIRONMENT], id="rule-input"),
        pytest.param(
            _rule_target(Input={"Fn::Join": ["", ['{"taskRoleArn":"', {"Fn::GetAtt": ["Admin", "Arn"]}, '"}']]}),
            [escalation.TASK_ROLE_ESCALATION],
            id="rule-input-task-role",
        ),
        pytest.param(_rule_target(InputPath="$.detail"), [tenancy.TASK_OVERRIDES_NOT_READABLE], id="rule-input-path"),
        pytest.param(
            _rule_target(InputTransformer={"InputTemplate": "<o>", "InputPathsMap": {"o": "$.detail"}}),
            [tenancy.TASK_OVERRIDES_NOT_READABLE],
            id="rule-input-transformer-the-whole-event",
        ),
        pytest.param(
            _rule_target(InputTransformer={"InputTemplate": '{"containerOverrides": <o>}', "InputPathsMap": {}}),
            [tenancy.TASK_OVERRIDES_NOT_READABLE],
            id="rule-input-transformer-container-overrides-from-the-event",
        ),
        pytest.param(
            _rule_target(
                InputTransformer={
                    "InputTemplate": '{"containerOverrides": [{"name": "x", "environment": ['
                    '{"name": "OBJECT", "value": <key>}, {"name": "URL", "value": "s3://<bucket>/<key>"}]}]}',
                    "InputPathsMap": {"key": "$.detail.object.key", "bucket": "$.detail.bucket.name"},
                }
            ),
            [],
            id="rule-input-transformer-values-from-the-event",
        ),
        pytest.param(
            _rule_target(
                InputTransformer={
                    "InputTemplate": '{"containerOverrides": [{"name": "x", "environment": [{"name": "<n>", "value": "0"}]}]}',
                    "InputPathsMap": {"n": "$.detail.n"},
                }
            ),
            [guards.GPU_STEERING_ENVIRONMENT],
            id="rule-input-transformer-a-variable-named-by-the-event",
        ),
        pytest.param(
            _pipe([{"Name": "NVIDIA_VISIBLE_DEVICES", "Value": "all"}]),
            [guards.GPU_STEERING_ENVIRONMENT],
            id="pipe-overrides",
        ),
        pytest.param(
            _pipe([{"Name": "JOB", "Value": "$.body.job"}, {"Name": "$.body.variable", "Value": "0"}]),
            [guards.GPU_STEERING_ENVIRONMENT],
            id="pipe-overrides-a-variable-named-by-a-dynamic-path",
        ),
        pytest.param(
            _running(
                Cluster={"Fn::ImportValue": "c:ClusterArn"},
                TaskDefinition={"Ref": "Task"},
                Overrides={"TaskRoleArn": {"Fn::GetAtt": ["Admin", "Arn"]}},
            ),
            [escalation.TASK_ROLE_ESCALATION],
            id="state-machine-task-role",
        ),
        pytest.param(
            _running(
                **{
                    "Cluster": {"Fn::ImportValue": "c:ClusterArn"},
                    "TaskDefinition": {"Ref": "Task"},
                    "Overrides.$": "$.o",
                }
            ),
            [tenancy.TASK_OVERRIDES_NOT_READABLE],
            id="state-machine-overrides-from-input",
        ),
        pytest.param(
            _machine(
                _run(
                    {
                        "Arguments": {
                            "Cluster": {"Fn::ImportValue": "c:ClusterArn"},
                            "TaskDefinition": {"Ref": "Task"},
                            "Overrides": {
                                "ContainerOverrides": [
                                    {"Name": "x", "Environment": [{"Name": "{% $states.input.n %}", "Value": "0"}]}
                                ]
                            },
                        }
                    }
                ),
                as_text=False,
            ),
            [guards.GPU_STEERING_ENVIRONMENT],
            id="state-machine-a-variable-named-by-jsonata",
        ),
    ],
)
def test_what_a_runner_overrides_is_judged_as_the_task_definition_is(runner: dict[str, Any], rules: list[str]) -> None:
    """RunTask's overrides (ECS API Reference, TaskOverride) give a task another environment or task role: an
    EventBridge target's Input, a pipe's Overrides, a state machine's Overrides are judged; what comes from the event or
    the machine's input cannot be, and is refused."""
    found = tenancy.judge(_runner_app(runner))
    assert [v.rule_id for v in found.violations] == rules, found
    assert all(v.logical_id in ("Runner", "Admin") for v in found.violations)


def test_a_cluster_given_by_a_jsonata_expression_is_known_only_at_run_time() -> None:
    """Every cluster of the app named, a name the templates do not hold is another cluster's; an expression is not."""
    expression = {"Cluster": "{% $states.input.c %}", "TaskDefinition": {"Ref": "Task"}}
    machine = _machine(_run({"Arguments": expression}), as_text=False)
    templates = _app(_service(LaunchType="FARGATE"), Machine=machine)
    for name, cluster in (("gpu", "Cluster"), ("cpu", "Cpu")):
        templates["c"]["Resources"][cluster]["Properties"]["ClusterName"] = name
    found = tenancy.judge(templates)
    assert [v.rule_id for v in found.violations] == [guards.PRIVILEGED_CONTAINER]
    assert "cannot be told apart" in found.violations[0].message
    expression["Cluster"] = "cpu"
    assert tenancy.judge(templates).violations == []


def test_overrides_the_synth_cannot_read_can_be_allowed_on_their_runner() -> None:
    templates = _runner_app(_rule_target(InputPath="$.detail"))
    (refused,) = tenancy.judge(templates).violations
    assert (
        "comes from the event (InputPath)" in refused.message
        and "write the overrides in the template" in refused.message
    )
    assert "FleetPlan.allow" in refused.message
    allowed = {("tenant", "Runner"): {tenancy.TASK_OVERRIDES_NOT_READABLE: "the queue's producer is ours"}}
    found = tenancy.judge(templates, allowed)
    assert found.violations == []
    assert found.allowed == [("tenant/Runner", tenancy.TASK_OVERRIDES_NOT_READABLE, "the queue's producer is ours")]


def _sdk_call(phase: str, call: dict[str, Any]) -> dict[str, Any]:
    return {"Type": "Custom::AWS", "Properties": {"ServiceToken": "arn:aws:lambda:x", phase: json.dumps(call)}}


@pytest.mark.parametrize(
    ("runner", "rules"),
    [
        pytest.param(
            _sdk_call(
                "Update",
                {
                    "service": "@aws-sdk/client-ecs",
                    "action": "RunTaskCommand",
                    "parameters": {"cluster": "my-cluster", "taskDefinition": "tenant-model", "launchType": "EC2"},
                },
            ),
            [guards.PRIVILEGED_CONTAINER],
            id="sdk-v3-names-on-update",
        ),
        pytest.param(
            _sdk_call(
                "Create",
                {
                    "service": "ECS",
                    "action": "updateService",
                    "parameters": {"cluster": "my-cluster", "service": "s", "desiredCount": 2},
                },
            ),
            [],
            id="update-service-keeping-its-task-definition",
        ),
        pytest.param(
            _sdk_call("Create", {"service": "S3", "action": "putObject", "parameters": {"taskDefinition": "x"}}),
            [],
            id="another-service",
        ),
        pytest.param(
            {
                "Type": "Custom::AWS",
                "Properties": {
                    "Create": {
                        "Fn::Join": [
                            "",
                            [
                                '{"service":"ECS","action":"runTask","parameters":{"cluster":"my-cluster",'
                                '"taskDefinition":"tenant-model","overrides":',
                                {"Ref": "Overrides"},
                                "}}",
                            ],
                        ]
                    }
                },
            },
            [guards.PRIVILEGED_CONTAINER, tenancy.TASK_OVERRIDES_NOT_READABLE],
            id="overrides-at-deploy",
        ),
    ],
)
def test_an_sdk_call_at_deploy_is_judged_as_what_it_runs(runner: dict[str, Any], rules: list[str]) -> None:
    templates = _app(_service(LaunchType="FARGATE"), Runner=runner)
    templates["tenant"]["Resources"]["Task"]["Properties"]["Family"] = "tenant-model"
    templates["c"]["Resources"]["Cluster"]["Properties"]["ClusterName"] = "my-cluster"
    assert [v.rule_id for v in tenancy.judge(templates).violations] == rules
