"""Every resource of every template accounted for: created and read back, adapted, or not checked."""

# This module completes moto (an emulator) at run time: it replaces methods of moto's models and registers models
# of its own, which mypy cannot type against moto's classes.
# mypy: disable-error-code="assignment,method-assign,attr-defined,abstract,arg-type,call-overload,unused-ignore,misc"
from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from ecs_gpu_sharing.core.template_limits import duplicate_security_group_rules

from .adapters import ADAPTED_IDS
from .report import ACCOUNT, ADAPTED, CREATED, NOT_CHECKED, Report, ResourceCheck


def empty_account(clients: Callable[[str], Any]) -> list[str]:
    """Makes the emulated account a new account: no default VPC (moto makes one in each region; a fleet must not lean
    on it) and no service-linked roles (AWS makes each with a service's first use). Returns what it removed."""
    ec2 = clients("ec2")
    removed = []
    for vpc in ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"]:
        vpc_id = vpc["VpcId"]
        for subnet in ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["Subnets"]:
            ec2.delete_subnet(SubnetId=subnet["SubnetId"])
        for gateway in ec2.describe_internet_gateways(Filters=[{"Name": "attachment.vpc-id", "Values": [vpc_id]}])[
            "InternetGateways"
        ]:
            ec2.detach_internet_gateway(InternetGatewayId=gateway["InternetGatewayId"], VpcId=vpc_id)
            ec2.delete_internet_gateway(InternetGatewayId=gateway["InternetGatewayId"])
        ec2.delete_vpc(VpcId=vpc_id)
        removed.append(f"default VPC {vpc_id}")
    iam = clients("iam")
    for role in iam.list_roles(PathPrefix="/aws-service-role/")["Roles"]:
        iam.delete_role(RoleName=role["RoleName"])
        removed.append(f"service-linked role {role['RoleName']}")
    return removed


def missing_key_policy_roles(policy: Any, *, account_id: str = ACCOUNT) -> list[str]:
    """The IAM roles a key policy names as principals that the emulated account does not hold. KMS checks that every
    principal of a key policy exists (MalformedPolicyDocumentException); moto does not, and its account starts as a
    new account does, without service-linked roles (the Auto Scaling one appears with a first group)."""
    from moto.iam.models import iam_backends

    document = json.loads(policy) if isinstance(policy, str) else policy or {}
    roles = {role.arn for role in iam_backends[account_id]["aws"].roles.values()}
    missing = []
    for statement in document.get("Statement") or []:
        principal = statement.get("Principal")
        names = principal.get("AWS") if isinstance(principal, dict) else None
        for name in names if isinstance(names, list) else [names] if names else []:
            if isinstance(name, str) and ":role/" in name and name not in roles:
                missing.append(name)
    return missing


READ_BACK: dict[str, Callable[[Callable[[str], Any], str], bool]] = {
    "AWS::ECS::Cluster": lambda c, p: bool(c("ecs").describe_clusters(clusters=[p])["clusters"]),
    "AWS::ECS::TaskDefinition": lambda c, p: bool(
        c("ecs").describe_task_definition(taskDefinition=p)["taskDefinition"]
    ),
    "AWS::ECS::Service": lambda c, p: any(
        s["status"] == "ACTIVE" for s in c("ecs").describe_services(cluster=p.split("/")[-2], services=[p])["services"]
    ),
    "AWS::AutoScaling::AutoScalingGroup": lambda c, p: bool(
        c("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[p])["AutoScalingGroups"]
    ),
    "AWS::EC2::LaunchTemplate": lambda c, p: bool(
        c("ec2").describe_launch_templates(LaunchTemplateIds=[p])["LaunchTemplates"]
    ),
    "AWS::EC2::SecurityGroup": lambda c, p: bool(c("ec2").describe_security_groups(GroupIds=[p])["SecurityGroups"]),
    "AWS::EC2::VPC": lambda c, p: bool(c("ec2").describe_vpcs(VpcIds=[p])["Vpcs"]),
    "AWS::EC2::Subnet": lambda c, p: bool(c("ec2").describe_subnets(SubnetIds=[p])["Subnets"]),
    "AWS::ElasticLoadBalancingV2::LoadBalancer": lambda c, p: bool(
        c("elbv2").describe_load_balancers(LoadBalancerArns=[p])["LoadBalancers"]
    ),
    "AWS::ElasticLoadBalancingV2::TargetGroup": lambda c, p: bool(
        c("elbv2").describe_target_groups(TargetGroupArns=[p])["TargetGroups"]
    ),
    "AWS::ElasticLoadBalancingV2::Listener": lambda c, p: bool(
        c("elbv2").describe_listeners(ListenerArns=[p])["Listeners"]
    ),
    "AWS::ElasticLoadBalancingV2::ListenerRule": lambda c, p: bool(c("elbv2").describe_rules(RuleArns=[p])["Rules"]),
    "AWS::Logs::LogGroup": lambda c, p: any(
        g["logGroupName"] == p for g in c("logs").describe_log_groups(logGroupNamePrefix=p)["logGroups"]
    ),
    "AWS::IAM::Role": lambda c, p: bool(c("iam").get_role(RoleName=p)["Role"]),
    "AWS::SNS::Topic": lambda c, p: bool(c("sns").get_topic_attributes(TopicArn=p)["Attributes"]),
    "AWS::KMS::Key": lambda c, p: c("kms").describe_key(KeyId=p)["KeyMetadata"]["Enabled"],
}


def _stack_resources(clients: Callable[[str], Any], stack: str) -> tuple[str, dict[str, str]]:
    described = clients("cloudformation").describe_stacks(StackName=stack)["Stacks"][0]
    out: dict[str, str] = {}
    paginator = clients("cloudformation").get_paginator("list_stack_resources")
    for page in paginator.paginate(StackName=stack):
        for summary in page["StackResourceSummaries"]:
            if summary.get("PhysicalResourceId"):
                out[summary["LogicalResourceId"]] = summary["PhysicalResourceId"]
    return described["StackId"], out


def _group(value: Any, physical: Mapping[str, str], clients: Callable[[str], Any]) -> str | None:
    if isinstance(value, dict) and list(value) == ["Fn::GetAtt"] and value["Fn::GetAtt"][1] == "GroupId":
        return physical.get(value["Fn::GetAtt"][0])
    if isinstance(value, dict) and list(value) == ["Fn::GetStackOutput"]:
        ref = value["Fn::GetStackOutput"]
        stacks = clients("cloudformation").describe_stacks(StackName=ref["StackName"])["Stacks"]
        for output in stacks[0].get("Outputs", []) if stacks else []:
            if output["OutputKey"] == ref["OutputName"]:
                return str(output["OutputValue"])
        return None
    return value if isinstance(value, str) else None


def _ingress_held(clients: Callable[[str], Any], props: Mapping[str, Any], physical: Mapping[str, str]) -> bool | None:
    """Whether the group holds the rule; None when the template's references cannot be read in this stack."""
    group = _group(props.get("GroupId"), physical, clients)
    source = _group(props.get("SourceSecurityGroupId"), physical, clients)
    if group is None or (props.get("SourceSecurityGroupId") is not None and source is None):
        return None
    (described,) = clients("ec2").describe_security_groups(GroupIds=[group])["SecurityGroups"]
    for permission in described.get("IpPermissions", []):
        if (
            str(permission.get("IpProtocol")) == str(props.get("IpProtocol"))
            and permission.get("FromPort") == int(props.get("FromPort", -1))
            and permission.get("ToPort") == int(props.get("ToPort", -1))
            and (source is None or any(p.get("GroupId") == source for p in permission.get("UserIdGroupPairs", [])))
        ):
            return True
    return False


def _written(containers: Any) -> dict[str, tuple[Any, Any]]:
    """Each container's image and MPS budget as a task definition states them (PascalCase or camelCase)."""
    out = {}
    for raw in containers if isinstance(containers, list) else []:
        c = {str(k).lower(): v for k, v in raw.items()} if isinstance(raw, Mapping) else {}
        budget = None
        for req in c.get("resourcerequirements") or []:
            text = json.dumps(req)
            match = re.search(r'"[Mm]emory": "?(\d+)', text)
            budget = int(match.group(1)) if match else budget
        out[str(c.get("name"))] = (c.get("image"), budget)
    return out


def current_task_definitions(clients: Callable[[str], Any], templates: Mapping[str, Any]) -> list[str]:
    """Where a deployed task definition is not what its template says (a literal image, an MPS budget): after an
    update, the emulator must hold the edited revision, as ECS would (an update that changes no task definition
    proves nothing)."""
    problems = []
    for stack, template in templates.items():
        _, physical = _stack_resources(clients, stack)
        for logical_id, resource in (template.get("Resources") or {}).items():
            if resource.get("Type") != "AWS::ECS::TaskDefinition" or logical_id not in physical:
                continue
            wanted = _written((resource.get("Properties") or {}).get("ContainerDefinitions"))
            held = clients("ecs").describe_task_definition(taskDefinition=physical[logical_id])["taskDefinition"]
            found = _written(held.get("containerDefinitions"))
            for name, (image, budget) in wanted.items():
                got_image, got_budget = found.get(name, (None, None))
                if isinstance(image, str) and image != got_image:
                    problems.append(
                        f"{stack}/{logical_id}: container {name} runs {got_image}, the template says {image}"
                    )
                if budget is not None and budget != got_budget:
                    problems.append(
                        f"{stack}/{logical_id}: container {name} has an MPS budget of {got_budget} MiB, the template "
                        f"says {budget}"
                    )
    return problems


def account(clients: Callable[[str], Any], templates: Mapping[str, Any]) -> Report:
    """Accounts for every resource of every deployed template (see the module's docstring). A resource is never
    counted unless the emulator holds it."""
    report = Report()
    for violation in duplicate_security_group_rules(templates):
        report.problems.append(str(violation))
    for stack, template in templates.items():
        try:
            stack_id, physical = _stack_resources(clients, stack)
        except Exception as error:  # the emulator failed to list the stack: nothing in it is counted
            report.problems.append(f"{stack}: cannot list its resources ({type(error).__name__}: {error})")
            for logical_id, resource in (template.get("Resources") or {}).items():
                report.checks.append(
                    ResourceCheck(stack, logical_id, resource["Type"], NOT_CHECKED, "stack unreadable")
                )
            continue
        for logical_id, resource in (template.get("Resources") or {}).items():
            kind = resource["Type"]
            if kind == "AWS::CDK::Metadata":
                continue
            if (stack_id, logical_id) in ADAPTED_IDS:
                made = ADAPTED_IDS[(stack_id, logical_id)]
                report.checks.append(
                    ResourceCheck(stack, logical_id, kind, ADAPTED, f"made through moto's API: {made}")
                )
                continue
            if kind == "AWS::EC2::SecurityGroupIngress" and logical_id not in physical:
                # moto gives a standalone ingress rule no physical id: read the rule back from its group instead.
                held = _ingress_held(clients, resource.get("Properties") or {}, physical)
                if held is True:
                    report.checks.append(ResourceCheck(stack, logical_id, kind, CREATED, "read back from its group"))
                    continue
                if held is False:
                    report.checks.append(ResourceCheck(stack, logical_id, kind, NOT_CHECKED, "not in its group"))
                    report.problems.append(f"{stack}/{logical_id} ({kind}): the rule is not in its security group")
                    continue
            if logical_id not in physical:
                report.checks.append(
                    ResourceCheck(stack, logical_id, kind, NOT_CHECKED, "moto's CloudFormation has no model for it")
                )
                continue
            check = READ_BACK.get(kind)
            if check is None:
                report.checks.append(
                    ResourceCheck(stack, logical_id, kind, CREATED, f"listed as {physical[logical_id]}; not read back")
                )
                continue
            try:
                ok, why = bool(check(clients, physical[logical_id])), "the emulator does not hold it"
            except Exception as error:  # a failed read-back is a finding, not a crash
                ok, why = False, f"{type(error).__name__}: {error}"
            if ok:
                report.checks.append(
                    ResourceCheck(stack, logical_id, kind, CREATED, f"read back: {physical[logical_id]}")
                )
            else:
                report.checks.append(ResourceCheck(stack, logical_id, kind, NOT_CHECKED, f"listed but {why}"))
                report.problems.append(f"{stack}/{logical_id} ({kind}): listed by CloudFormation but {why}")
    try:
        report.problems.extend(current_task_definitions(clients, templates))
    except Exception as error:  # a failed read-back is a finding, not a crash
        report.problems.append(f"task definitions could not be read back ({type(error).__name__}: {error})")
    return report
