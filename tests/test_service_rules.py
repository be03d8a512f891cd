"""AWS's service-side rules (core.service_rules): each row passes on a template that keeps it and fails on one that
breaks it, naming the resource; the table is complete and sourced; the plugin fails a construct app's synth."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from ecs_gpu_sharing.core import service_rules as sr
from ecs_gpu_sharing.core.service_rules import SERVICE_RULES, check_service_rules

from conftest import REPO, load_script

Res = tuple[str, str, dict[str, Any]]


def _stack(*resources: Res, attributes: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"Resources": {}}
    for lid, kind, props in resources:
        out["Resources"][lid] = {"Type": kind, "Properties": props, **(attributes or {}).get(lid, {})}
    return out


def _container(name: str = "model", **extra: Any) -> dict[str, Any]:
    return {"Name": name, "Image": "x", "Memory": 1024, **extra}


def _task(lid: str = "Td", *, mode: str | None = None, memory: Any = None, containers: Any = None, **extra: Any) -> Res:
    props: dict[str, Any] = {"ContainerDefinitions": containers if containers is not None else [_container()]}
    if mode:
        props["NetworkMode"] = mode
    if memory is not None:
        props["Memory"] = memory
    return lid, "AWS::ECS::TaskDefinition", {**props, **extra}


def _service(lid: str = "Svc", td: str = "Td", **props: Any) -> Res:
    return lid, "AWS::ECS::Service", {"TaskDefinition": {"Ref": td}, **props}


_CONNECT = {"ServiceConnectConfiguration": {"Enabled": True, "Namespace": "ns"}}
_NETWORK = {"NetworkConfiguration": {"AwsvpcConfiguration": {"Subnets": ["s"]}}}
_SCALABLE = {  # one ECS service's task count
    "ResourceId": {"Fn::Join": ["/", ["service", {"Ref": "Cluster"}, "chat"]]},
    "ScalableDimension": "ecs:service:DesiredCount",
    "ServiceNamespace": "ecs",
    "MinCapacity": 1,
    "MaxCapacity": 4,
}


def _connect(*services: dict[str, Any], namespace: str = "ns") -> dict[str, Any]:
    """A Service Connect configuration in ``namespace`` with these service entries."""
    return {"ServiceConnectConfiguration": {"Enabled": True, "Namespace": namespace, "Services": list(services)}}


def _group(**props: Any) -> Res:
    return "Asg", "AWS::AutoScaling::AutoScalingGroup", {"MinSize": "0", "MaxSize": "2", "LaunchTemplate": {}, **props}


def _roll(**roll: Any) -> dict[str, dict[str, Any]]:
    return {"Asg": {"UpdatePolicy": {"AutoScalingRollingUpdate": roll}}}


def _role(*services: Any, action: Any = "sts:AssumeRole", effect: str = "Allow") -> Res:
    """A role whose trust policy lets these service principals assume it."""
    principal = {"Service": services[0] if len(services) == 1 else list(services)}
    statement = {"Effect": effect, "Action": action, "Principal": principal}
    return "Role", "AWS::IAM::Role", {"AssumeRolePolicyDocument": {"Statement": [statement], "Version": "2012-10-17"}}


def _hosts_in(*extra: Res, public: bool = False) -> dict[str, Any]:
    """A capacity provider's group in subnet Sn of VPC Vpc, routed by table Rt, with these resources beside them."""
    subnet: dict[str, Any] = {"VpcId": {"Ref": "Vpc"}, "CidrBlock": "10.0.0.0/24"}
    if public:
        subnet["MapPublicIpOnLaunch"] = True
    return _stack(
        ("Vpc", "AWS::EC2::VPC", {"CidrBlock": "10.0.0.0/16"}),
        ("Sn", "AWS::EC2::Subnet", subnet),
        ("Rt", "AWS::EC2::RouteTable", {"VpcId": {"Ref": "Vpc"}}),
        ("Assoc", "AWS::EC2::SubnetRouteTableAssociation", {"SubnetId": {"Ref": "Sn"}, "RouteTableId": {"Ref": "Rt"}}),
        (
            "Asg",
            "AWS::AutoScaling::AutoScalingGroup",
            {"MinSize": "0", "MaxSize": "2", "VPCZoneIdentifier": [{"Ref": "Sn"}]},
        ),
        ("Cp", "AWS::ECS::CapacityProvider", {"AutoScalingGroupProvider": {"AutoScalingGroupArn": {"Ref": "Asg"}}}),
        *extra,
    )


def _route(**target: Any) -> Res:
    return "Out", "AWS::EC2::Route", {"RouteTableId": {"Ref": "Rt"}, "DestinationCidrBlock": "0.0.0.0/0", **target}


def _endpoint(service: str) -> Res:
    name = {"Fn::Join": ["", ["com.amazonaws.", {"Ref": "AWS::Region"}, f".{service}"]]}
    return (
        f"Ep{service.replace('.', '').replace('-', '')}",
        "AWS::EC2::VPCEndpoint",
        {"VpcId": {"Ref": "Vpc"}, "ServiceName": name},
    )


def _provider(**config: Any) -> Res:
    return (
        "Cp",
        "AWS::ECS::CapacityProvider",
        {"AutoScalingGroupProvider": {"AutoScalingGroupArn": {"Ref": "Asg"}, **config}},
    )


def _lb_service(port: int, *, target_type: str | None, mode: str | None) -> dict[str, Any]:
    group: dict[str, Any] = {"Port": 80, "Protocol": "HTTP"}
    if target_type:
        group["TargetType"] = target_type
    return _stack(
        _task(mode=mode, containers=[_container(PortMappings=[{"ContainerPort": 80}])]),
        _service(
            LoadBalancers=[{"ContainerName": "model", "ContainerPort": port, "TargetGroupArn": {"Ref": "Tg"}}],
            **(_NETWORK if mode == "awsvpc" else {}),
        ),
        ("Tg", "AWS::ElasticLoadBalancingV2::TargetGroup", group),
    )


_REGISTRY = {"RegistryArn": "arn:aws:servicediscovery:us-east-1:123456789012:service/srv-1"}
_MOUNT = {"SourceVolume": "weights", "ContainerPath": "/weights", "ReadOnly": True}


def _item(provider: str, weight: int | None = None, base: int | None = None) -> dict[str, Any]:
    """One capacity provider strategy item."""
    item: dict[str, Any] = {"CapacityProvider": provider}
    item |= {"Weight": weight} if weight is not None else {}
    return item | ({"Base": base} if base is not None else {})


_BREAKER = {"DeploymentCircuitBreaker": {"Enable": True, "Rollback": True}}


def _asg_provider() -> Res:
    return "Provider", "AWS::ECS::CapacityProvider", {"AutoScalingGroupProvider": {"AutoScalingGroupArn": "arn"}}


_MI_POLICY = {
    "Fn::Join": [
        "",
        ["arn:", {"Ref": "AWS::Partition"}, ":iam::aws:policy/AmazonECSInfrastructureRolePolicyForManagedInstances"],
    ]
}


def _managed_instances(
    role_name: str | None = None, infra: dict[str, Any] | None = None, profile: Any = None
) -> dict[str, Any]:
    """A Managed Instances capacity provider, its infrastructure role (AWS's managed policy unless ``infra``) and its
    instance profile's role (named ``role_name``; CloudFormation names it when None)."""
    host_role: dict[str, Any] = {"AssumeRolePolicyDocument": {}} | ({"RoleName": role_name} if role_name else {})
    provider = {
        "InfrastructureRoleArn": {"Fn::GetAtt": ["Infra", "Arn"]},
        "InstanceLaunchTemplate": {
            "Ec2InstanceProfileArn": profile if profile is not None else {"Fn::GetAtt": ["Profile", "Arn"]},
            "NetworkConfiguration": {"Subnets": ["s"]},
        },
    }
    return _stack(
        ("Provider", "AWS::ECS::CapacityProvider", {"ManagedInstancesProvider": provider}),
        ("Infra", "AWS::IAM::Role", infra if infra is not None else {"ManagedPolicyArns": [_MI_POLICY]}),
        ("Profile", "AWS::IAM::InstanceProfile", {"Roles": [{"Ref": "HostRole"}]}),
        ("HostRole", "AWS::IAM::Role", host_role),
    )


def _tg(**props: Any) -> Res:
    return "Tg", "AWS::ElasticLoadBalancingV2::TargetGroup", props


def _public_ip(value: str) -> dict[str, Any]:
    return {"NetworkConfiguration": {"AwsvpcConfiguration": {"Subnets": ["s"], "AssignPublicIp": value}}}


def _routed(*, depends: str | None, listener: str | None = "Listener", rule: bool = False) -> dict[str, Any]:
    """A service whose load balancer entry names target group Tg; a listener forwarding to Tg (by its default action,
    or by a rule of its), and the service depending on ``depends``."""
    resources: list[Res] = [
        _task(containers=[_container(PortMappings=[{"ContainerPort": 80}])]),
        ("Tg", "AWS::ElasticLoadBalancingV2::TargetGroup", {"Port": 80, "Protocol": "HTTP"}),
        ("Alb", "AWS::ElasticLoadBalancingV2::LoadBalancer", {}),
    ]
    forward = [{"Type": "forward", "TargetGroupArn": {"Ref": "Tg"}}]
    if listener:
        fixed = [{"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "404"}}]
        resources.append(
            (
                listener,
                "AWS::ElasticLoadBalancingV2::Listener",
                {"LoadBalancerArn": {"Ref": "Alb"}, "DefaultActions": fixed if rule else forward},
            )
        )
        if rule:
            resources.append(
                (
                    "Rule",
                    "AWS::ElasticLoadBalancingV2::ListenerRule",
                    {"ListenerArn": {"Ref": listener}, "Priority": 1, "Actions": forward, "Conditions": []},
                )
            )
    resources.append(
        _service(LoadBalancers=[{"ContainerName": "model", "ContainerPort": 80, "TargetGroupArn": {"Ref": "Tg"}}])
    )
    return _stack(*resources, attributes={"Svc": {"DependsOn": [depends]}} if depends else None)


def _target_groups(n: int) -> list[dict[str, Any]]:
    """``n`` load balancer entries of a service, each a target group of its own for the one container's port 80."""
    return [{"ContainerName": "model", "ContainerPort": 80, "TargetGroupArn": {"Ref": f"Tg{i}"}} for i in range(n)]


def _bucket_policy(principal: Any, *, kind: str = "AWS::S3::BucketPolicy", depends: list[str] | None = None) -> Any:
    """A bucket's (or a topic's) policy letting ``principal`` read it, beside role Runner (named model-runner)."""
    statement = {"Effect": "Allow", "Principal": {"AWS": principal}, "Action": "s3:GetObject", "Resource": "*"}
    props: dict[str, Any] = {"PolicyDocument": {"Statement": [statement]}}
    if kind == "AWS::ECR::Repository":
        props = {"RepositoryPolicyText": props["PolicyDocument"]}
    else:
        props.update({"Bucket": "models"} if kind == "AWS::S3::BucketPolicy" else {"Topics": [{"Ref": "Topic"}]})
    return _stack(
        ("Policy", kind, props),
        ("Runner", "AWS::IAM::Role", {"RoleName": "model-runner", "AssumeRolePolicyDocument": {}}),
        attributes={"Policy": {"DependsOn": depends}} if depends else None,
    )


def _warm_pool(user_data: Any, *, reuse: bool = False, provider: bool = True, library: bool = False) -> dict[str, Any]:
    """An Auto Scaling group with a warm pool and a launch template whose user data writes these lines to ecs.config;
    the group is a capacity provider's (``provider``), the library's GPU capacity's where ``library``."""
    text = user_data if not isinstance(user_data, str) else {"Fn::Base64": f"#!/bin/bash\necho {user_data} >> x\n"}
    pool: dict[str, Any] = {"AutoScalingGroupName": {"Ref": "Asg"}}
    if reuse:
        pool["InstanceReusePolicy"] = {"ReuseOnScaleIn": True}
    resources: list[Res] = [
        ("Cluster", "AWS::ECS::Cluster", {}),
        ("Lt", "AWS::EC2::LaunchTemplate", {"LaunchTemplateData": {"UserData": text}}),
        _group(LaunchTemplate={"LaunchTemplateId": {"Ref": "Lt"}, "Version": "1"}),
        ("Pool", "AWS::AutoScaling::WarmPool", pool),
    ]
    if provider:
        resources.append(_provider())
    template = _stack(*resources)
    if library:
        template["Resources"]["Cp"]["Metadata"] = {sr.CAPACITY_METADATA: "l4"}
    return template


def _user_data(user_data: Any, kind: str = "AWS::EC2::LaunchTemplate") -> dict[str, Any]:
    """A launch template, launch configuration or instance whose user data is ``user_data`` as written."""
    props: dict[str, Any] = {"LaunchTemplateData": {"UserData": user_data}}
    if kind != "AWS::EC2::LaunchTemplate":
        props = {"ImageId": "ami-1", "InstanceType": "m7i.large", "UserData": user_data}
    return _stack(("Cluster", "AWS::ECS::Cluster", {}), ("Host", kind, props))


def _efs(**config: Any) -> dict[str, Any]:
    """A task definition volume of EFS file system fs-1 with these options."""
    return {"Name": "weights", "EFSVolumeConfiguration": {"FilesystemId": "fs-1", **config}}


def _nfs_from(group: str | None = None, *, port: int = 2049, cidr: str | None = None) -> dict[str, Any]:
    """An ingress rule: TCP ``port`` from security group ``group`` of the template, or from ``cidr``."""
    peer = {"CidrIp": cidr} if cidr else {"SourceSecurityGroupId": {"Fn::GetAtt": [group, "GroupId"]}}
    return {"IpProtocol": "tcp", "FromPort": port, "ToPort": port, **peer}


def _efs_app(
    ingress: list[dict[str, Any]],
    *,
    host_egress: list[dict[str, Any]] | None = None,
    task_group: bool = False,
    mount_target: bool = True,
    file_system: Any = None,
) -> dict[str, Any]:
    """A service on a capacity provider whose hosts' group is HostSg, running a task that mounts EFS file system Fs,
    whose mount target's group FsSg admits ``ingress``; with ``task_group``, awsvpc tasks in TaskSg."""
    host_sg: dict[str, Any] = {"GroupDescription": "hosts", "VpcId": "vpc-1"}
    if host_egress is not None:
        host_sg["SecurityGroupEgress"] = host_egress
    volume = {"Name": "w", "EFSVolumeConfiguration": {"FilesystemId": file_system or {"Ref": "Fs"}}}
    service: dict[str, Any] = {"CapacityProviderStrategy": [{"CapacityProvider": {"Ref": "Cp"}}]}
    resources: list[Res] = [
        ("HostSg", "AWS::EC2::SecurityGroup", host_sg),
        ("FsSg", "AWS::EC2::SecurityGroup", {"GroupDescription": "efs", "SecurityGroupIngress": ingress}),
        (
            "Lt",
            "AWS::EC2::LaunchTemplate",
            {"LaunchTemplateData": {"SecurityGroupIds": [{"Fn::GetAtt": ["HostSg", "GroupId"]}]}},
        ),
        _group(LaunchTemplate={"LaunchTemplateId": {"Ref": "Lt"}, "Version": "1"}),
        _provider(),
        ("Fs", "AWS::EFS::FileSystem", {}),
        _task(mode="awsvpc" if task_group else None, Volumes=[volume]),
    ]
    if task_group:
        resources.append(("TaskSg", "AWS::EC2::SecurityGroup", {"GroupDescription": "tasks"}))
        groups = [{"Fn::GetAtt": ["TaskSg", "GroupId"]}]
        service["NetworkConfiguration"] = {"AwsvpcConfiguration": {"Subnets": ["s"], "SecurityGroups": groups}}
    if mount_target:
        target = {
            "FileSystemId": {"Ref": "Fs"},
            "SubnetId": "subnet-1",
            "SecurityGroups": [{"Fn::GetAtt": ["FsSg", "GroupId"]}],
        }
        resources.append(("Mt", "AWS::EFS::MountTarget", target))
    resources.append(_service(**service))
    return _stack(*resources)


def _key(principal: Any) -> dict[str, Any]:
    policy = {"Statement": [{"Effect": "Allow", "Principal": {"AWS": principal}, "Action": "kms:*", "Resource": "*"}]}
    return _stack(("Key", "AWS::KMS::Key", {"KeyPolicy": policy}), ("Role", "AWS::IAM::Role", {}))


def _logs_key(*extra: dict[str, Any]) -> dict[str, Any]:
    """A log group encrypted with a key whose policy lets the account's root use it, and ``extra`` statements."""
    root = {
        "Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
        "Action": "kms:*",
        "Resource": "*",
    }
    return _stack(
        ("Logs", "AWS::Logs::LogGroup", {"KmsKeyId": {"Fn::GetAtt": ["Key", "Arn"]}}),
        ("Key", "AWS::KMS::Key", {"KeyPolicy": {"Statement": [root, *extra]}}),
    )


_SLR = {
    "Fn::Join": [
        "",
        ["arn:", {"Ref": "AWS::Partition"}, ":iam::", {"Ref": "AWS::AccountId"}, ":role/aws-service-role/x/AWSSLR"],
    ]
}

_SSL_ONLY = {
    "Effect": "Deny",
    "Principal": "*",
    "Action": "sns:Publish",
    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
}
_CLOUDWATCH_PUBLISH = {"Effect": "Allow", "Principal": {"Service": "cloudwatch.amazonaws.com"}, "Action": "sns:Publish"}
_CLOUDWATCH_KEY = {
    "Effect": "Allow",
    "Principal": {"Service": "cloudwatch.amazonaws.com"},
    "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
}


def _alarm_topic(
    *statements: dict[str, Any], key: Any = None, key_statements: list[Any] | None = None
) -> dict[str, Any]:
    """An alarm notifying a topic; the topic's policy holds ``statements`` (no policy at all when there are none)."""
    topic: dict[str, Any] = {} if key is None else {"KmsMasterKeyId": key}
    resources: list[Res] = [
        ("Alarm", "AWS::CloudWatch::Alarm", {"AlarmActions": [{"Ref": "Topic"}]}),
        ("Topic", "AWS::SNS::Topic", topic),
    ]
    if statements:
        document = {"Version": "2012-10-17", "Statement": list(statements)}
        resources.append(
            ("Policy", "AWS::SNS::TopicPolicy", {"Topics": [{"Ref": "Topic"}], "PolicyDocument": document})
        )
    if key_statements is not None:
        resources.append(("Key", "AWS::KMS::Key", {"KeyPolicy": {"Statement": key_statements}}))
    return _stack(*resources)


def _associated(*runners: Res, depends: dict[str, Any] | None = None, default: bool = False) -> dict[str, Any]:
    """A cluster, an Auto Scaling provider associated with it by a resource of its own (with a default strategy when
    ``default``), and ``runners``; ``depends``: a runner's logical id -> its DependsOn."""
    association: dict[str, Any] = {"Cluster": {"Ref": "Cluster"}, "CapacityProviders": [{"Ref": "Cp"}]}
    association["DefaultCapacityProviderStrategy"] = [{"CapacityProvider": {"Ref": "Cp"}}] if default else []
    return _stack(
        ("Cluster", "AWS::ECS::Cluster", {}),
        ("Cp", "AWS::ECS::CapacityProvider", {"AutoScalingGroupProvider": {"AutoScalingGroupArn": "arn"}}),
        ("Assoc", "AWS::ECS::ClusterCapacityProviderAssociations", association),
        _task(),
        *runners,
        attributes={lid: {"DependsOn": d} for lid, d in (depends or {}).items()},
    )


_ON_CP = {"Cluster": {"Ref": "Cluster"}, "CapacityProviderStrategy": [{"CapacityProvider": {"Ref": "Cp"}}]}


_SECRET = {"Name": "HF_TOKEN", "ValueFrom": "arn:aws:ssm:us-east-1:123456789012:parameter/hf-token"}
_PRIVATE_REGISTRY = {"CredentialsParameter": "arn:aws:secretsmanager:us-east-1:123456789012:secret:registry"}
_FIRELENS = {"LogDriver": "awsfirelens", "Options": {"Name": "cloudwatch_logs"}}
_ROUTER = _container("log-router", FirelensConfiguration={"Type": "fluentbit"}, Essential=True)


def _awslogs(**options: Any) -> dict[str, Any]:
    """An awslogs log configuration as aws-cdk writes it, with these options over its own."""
    written = {"awslogs-group": {"Ref": "Logs"}, "awslogs-stream-prefix": "model", "awslogs-region": "us-east-1"}
    return {"LogDriver": "awslogs", "Options": {**written, **options}}


_NAMED_ROLE = ("Runner", "AWS::IAM::Role", {"RoleName": "model-runner", "AssumeRolePolicyDocument": {}})


def _trusting(principal: Any, *, depends: list[str] | None = None) -> dict[str, Any]:
    """A role Deployer trusting ``principal``, beside the role Runner the template names ``model-runner``."""
    trust = {"Statement": [{"Effect": "Allow", "Principal": {"AWS": principal}, "Action": "sts:AssumeRole"}]}
    attributes = {"Deployer": {"DependsOn": depends}} if depends else None
    return _stack(
        ("Deployer", "AWS::IAM::Role", {"AssumeRolePolicyDocument": trust}), _NAMED_ROLE, attributes=attributes
    )


# rule id -> (templates that keep the rule, templates that break it)
def _routes(*, second_balancer: str) -> list[Res]:
    """Balancer A's listener forwards to Tg by default; a rule of a listener of ``second_balancer`` forwards to it too,
    through a forward config."""
    forward = {"Type": "forward", "ForwardConfig": {"TargetGroups": [{"TargetGroupArn": {"Ref": "Tg"}}]}}
    return [
        ("A", "AWS::ElasticLoadBalancingV2::LoadBalancer", {}),
        ("B", "AWS::ElasticLoadBalancingV2::LoadBalancer", {}),
        ("Tg", "AWS::ElasticLoadBalancingV2::TargetGroup", {}),
        (
            "La",
            "AWS::ElasticLoadBalancingV2::Listener",
            {"LoadBalancerArn": {"Ref": "A"}, "DefaultActions": [{"Type": "forward", "TargetGroupArn": {"Ref": "Tg"}}]},
        ),
        ("L2", "AWS::ElasticLoadBalancingV2::Listener", {"LoadBalancerArn": {"Ref": second_balancer}}),
        (
            "R",
            "AWS::ElasticLoadBalancingV2::ListenerRule",
            {"Priority": 1, "ListenerArn": {"Ref": "L2"}, "Actions": [forward]},
        ),
    ]


CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    sr.SERVICE_CONNECT_TASK_MEMORY: (
        _stack(_task(memory="1088"), _service(**_CONNECT)),
        _stack(_task(), _service(**_CONNECT)),
    ),
    sr.SERVICE_CONNECT_TASKS: (
        _stack(_task(memory="1088"), _service(DesiredCount=1000, **_CONNECT)),
        _stack(_task(memory="1088"), _service(DesiredCount=1001, **_CONNECT)),
    ),
    sr.SERVICE_CONNECT_NAME_TWICE: (
        _stack(
            _task(memory="1088"),
            _service("A", **_connect({"PortName": "http", "DiscoveryName": "embedder"})),
            _service("B", **_connect({"PortName": "http", "DiscoveryName": "reranker"})),
            _service("C", **_connect({"PortName": "http"}, namespace="other")),  # another namespace
        ),
        _stack(
            _task(memory="1088"),
            _service("A", **_connect({"PortName": "http"})),
            _service("B", **_connect({"PortName": "http"})),  # both discovered as "http"
        ),
    ),
    sr.AWSVPC_NETWORK_CONFIGURATION: (
        _stack(_task(mode="awsvpc"), _service(**_NETWORK)),
        _stack(_task(mode="awsvpc"), _service()),
    ),
    sr.NETWORK_CONFIGURATION_NOT_AWSVPC: (
        _stack(_task(mode="bridge"), _service()),
        _stack(_task(mode="bridge"), _service(**_NETWORK)),
    ),
    sr.TARGET_TYPE_MATCHES_NETWORK_MODE: (
        _lb_service(80, target_type="ip", mode="awsvpc"),
        _lb_service(80, target_type=None, mode="awsvpc"),
    ),
    sr.LOAD_BALANCER_CONTAINER: (
        _lb_service(80, target_type=None, mode="bridge"),
        _lb_service(8080, target_type=None, mode="bridge"),
    ),
    sr.DEPLOYMENT_OPTIONS_OF_CONTROLLER: (
        _stack(_task(), _service(DeploymentController={"Type": "CODE_DEPLOY"}, LaunchType="EC2")),
        _stack(_task(), _service(DeploymentController={"Type": "CODE_DEPLOY"}, DeploymentConfiguration=_BREAKER)),
    ),
    sr.SERVICE_ROLE: (
        _stack(_task(), _service(LoadBalancers=_target_groups(1), Role="ecsServiceRole")),
        _stack(_task(), _service(Role="ecsServiceRole")),
    ),
    sr.SERVICE_REGISTRIES: (
        _stack(_task(), _service(ServiceRegistries=[_REGISTRY])),
        _stack(_task(), _service(ServiceRegistries=[_REGISTRY, _REGISTRY])),
    ),
    sr.NO_PUBLIC_IP_ON_EC2: (
        _stack(_task(mode="awsvpc"), _service(LaunchType="EC2", **_public_ip("DISABLED"))),
        _stack(_task(mode="awsvpc"), _service(LaunchType="EC2", **_public_ip("ENABLED"))),
    ),
    sr.TARGET_GROUPS_PER_SERVICE: (
        _stack(_task(), _service(LoadBalancers=_target_groups(5))),
        _stack(_task(), _service(LoadBalancers=_target_groups(6))),
    ),
    sr.AWSVPC_HOST_PORT: (
        _stack(_task(mode="awsvpc", containers=[_container(PortMappings=[{"ContainerPort": 80, "HostPort": 80}])])),
        _stack(_task(mode="awsvpc", containers=[_container(PortMappings=[{"ContainerPort": 80, "HostPort": 81}])])),
    ),
    sr.CONTAINER_MEMORY_ON_EC2: (
        _stack(_task(containers=[{"Name": "a", "MemoryReservation": 64}])),
        _stack(_task(containers=[{"Name": "a"}])),
    ),
    sr.MEMORY_RESERVATION_BELOW_LIMIT: (
        _stack(_task(containers=[_container(MemoryReservation=1023)])),
        _stack(_task(containers=[_container(MemoryReservation=1024)])),
    ),
    sr.ESSENTIAL_CONTAINER: (
        _stack(_task(containers=[_container(Essential=True), _container("side", Essential=False)])),
        _stack(_task(containers=[_container(Essential=False)])),
    ),
    sr.STRATEGY_WITH_LAUNCH_TYPE: (
        _stack(_task(), _service(CapacityProviderStrategy=[{"CapacityProvider": "a", "Weight": 1}])),
        _stack(_task(), _service(CapacityProviderStrategy=[{"CapacityProvider": "a"}], LaunchType="EC2")),
    ),
    sr.STRATEGY_WEIGHTS: (
        _stack(_task(), _service(CapacityProviderStrategy=[_item("a", 0), _item("b", 1)])),
        _stack(_task(), _service(CapacityProviderStrategy=[_item("a", 0), _item("b", 0)])),
    ),
    sr.STRATEGY_ONE_BASE: (
        _stack(
            _task(),
            _service(CapacityProviderStrategy=[{"CapacityProvider": "a", "Base": 1}, {"CapacityProvider": "b"}]),
        ),
        _stack(
            _task(),
            _service(
                CapacityProviderStrategy=[{"CapacityProvider": "a", "Base": 1}, {"CapacityProvider": "b", "Base": 2}]
            ),
        ),
    ),
    sr.NETWORK_MODE_OPTIONS: (
        _stack(
            _task(mode="bridge", containers=[_container(Hostname="h", ExtraHosts=[{"Hostname": "db"}], Links=["x"])])
        ),
        _stack(_task(mode="awsvpc", containers=[_container(Hostname="h")])),
    ),
    sr.PORT_MAPPING_NAME: (
        _stack(_task(containers=[_container(PortMappings=[{"ContainerPort": 80, "Name": "http_" + "a" * 59}])])),
        _stack(_task(containers=[_container(PortMappings=[{"ContainerPort": 80, "Name": "HTTP"}])])),
    ),
    sr.DEPENDENCIES_RESOLVE: (
        _stack(
            _task(
                containers=[
                    _container(DependsOn=[{"ContainerName": "proxy", "Condition": "HEALTHY"}]),
                    _container("proxy", HealthCheck={"Command": ["CMD-SHELL", "true"]}),
                ]
            )
        ),
        _stack(_task(containers=[_container(DependsOn=[{"ContainerName": "weights", "Condition": "START"}])])),
    ),
    sr.EXITING_DEPENDENCY_NOT_ESSENTIAL: (
        _stack(
            _task(
                containers=[
                    _container(DependsOn=[{"ContainerName": "weights", "Condition": "SUCCESS"}]),
                    _container("weights", Essential=False),
                ]
            )
        ),
        _stack(
            _task(
                containers=[
                    _container(DependsOn=[{"ContainerName": "weights", "Condition": "COMPLETE"}]),
                    _container("weights"),  # essential unless it says not
                ]
            )
        ),
    ),
    sr.HEALTH_CHECK_IN_RANGE: (
        _stack(
            _task(
                containers=[
                    _container(HealthCheck={"Command": ["CMD", "true"], "Interval": 5, "Timeout": 60, "Retries": 10}),
                    _container("side", HealthCheck={"Command": ["CMD-SHELL", "true"], "StartPeriod": 300}),
                ]
            )
        ),
        _stack(_task(containers=[_container(HealthCheck={"Command": ["CMD-SHELL", "true"], "StartPeriod": 600})])),
    ),
    sr.SYSCTL_NAMESPACED: (
        _stack(_task(containers=[_container(SystemControls=[{"Namespace": "net.core.somaxconn", "Value": "4096"}])])),
        _stack(_task(containers=[_container(SystemControls=[{"Namespace": "vm.swappiness", "Value": "0"}])])),
    ),
    sr.CONTAINER_NAMES: (
        _stack(_task(containers=[_container("model"), _container("metrics")])),
        _stack(_task(containers=[_container("model"), _container("model")])),
    ),
    sr.MOUNT_POINT_VOLUME: (
        _stack(_task(containers=[_container(MountPoints=[_MOUNT])], Volumes=[{"Name": "weights"}])),
        _stack(_task(containers=[_container(MountPoints=[_MOUNT])], Volumes=[{"Name": "cache"}])),
    ),
    sr.MANAGED_INSTANCES_ROLE_NAME: (_managed_instances(role_name="ecsInstanceRoleGpu"), _managed_instances()),
    sr.TASK_ROLE_TRUST: (
        _stack(_task(TaskRoleArn={"Fn::GetAtt": ["Role", "Arn"]}), _role("ecs-tasks.amazonaws.com")),
        _stack(_task(TaskRoleArn={"Fn::GetAtt": ["Role", "Arn"]}), _role("ec2.amazonaws.com")),
    ),
    sr.HOSTS_REACH_ECS: (
        _hosts_in(_route(NatGatewayId={"Ref": "Nat"})),
        _hosts_in(),
    ),
    sr.PLACEMENT_CONSTRAINTS: (
        _stack(
            _task(
                PlacementConstraints=[{"Type": "memberOf", "Expression": f"attribute:a{i} exists"} for i in range(4)]
            ),
            _service(PlacementConstraints=[{"Type": "distinctInstance"}] * 6),
        ),
        _stack(
            _task(
                PlacementConstraints=[{"Type": "memberOf", "Expression": f"attribute:a{i} exists"} for i in range(5)]
            ),
            _service(PlacementConstraints=[{"Type": "distinctInstance"}] * 6),
        ),
    ),
    sr.PLACEMENT_STRATEGIES: (
        _stack(_task(), _service(PlacementStrategies=[{"Type": "spread", "Field": "instanceId"}] * 5)),
        _stack(_task(), _service(PlacementStrategies=[{"Type": "spread", "Field": "instanceId"}] * 6)),
    ),
    sr.PROVIDER_ASSOCIATED_FIRST: (
        _associated(_service(**_ON_CP), depends={"Svc": ["Assoc"]}),
        _associated(_service(**_ON_CP)),  # created beside the association, in either order
    ),
    sr.PROVIDER_ONE_CLUSTER: (
        _associated(("Other", "AWS::ECS::Cluster", {"CapacityProviders": ["FARGATE"]})),
        _associated(("Other", "AWS::ECS::Cluster", {"CapacityProviders": [{"Ref": "Cp"}]})),
    ),
    sr.PROVIDER_NAME_PREFIX: (
        _stack(("Cp", "AWS::ECS::CapacityProvider", {"Name": "models-l4"})),
        _stack(("Cp", "AWS::ECS::CapacityProvider", {"Name": "ecs-l4"})),
    ),
    sr.TARGET_CAPACITY_RANGE: (
        _stack(_provider(ManagedScaling={"Status": "ENABLED", "TargetCapacity": 100})),
        _stack(_provider(ManagedScaling={"Status": "ENABLED", "TargetCapacity": 101})),
    ),
    sr.TERMINATION_PROTECTION: (
        _stack(
            _group(NewInstancesProtectedFromScaleIn=True),
            _provider(ManagedScaling={"Status": "ENABLED"}, ManagedTerminationProtection="ENABLED"),
        ),
        _stack(_group(), _provider(ManagedScaling={"Status": "ENABLED"}, ManagedTerminationProtection="ENABLED")),
    ),
    sr.ROLL_BELOW_MAX_SIZE: (
        _stack(_group(MinSize="2", MaxSize="3"), attributes=_roll(MinInstancesInService=2)),
        _stack(_group(MinSize="2", MaxSize="2"), attributes=_roll(MinInstancesInService=2)),
    ),
    sr.GROUP_SIZES: (
        _stack(_group(MinSize="1", MaxSize="1", DesiredCapacity="1")),
        _stack(_group(MinSize="2", MaxSize="1")),
    ),
    sr.ROLL_PAUSE_TIME: (
        _stack(_group(), attributes=_roll(PauseTime="PT1H")),
        _stack(_group(), attributes=_roll(PauseTime="PT61M")),
    ),
    sr.GROUP_ONE_LAUNCH_SOURCE: (
        _stack(_group()),
        _stack(_group(MixedInstancesPolicy={})),
    ),
    sr.HEALTH_CHECK_TIMEOUT: (
        _stack(
            (
                "Tg",
                "AWS::ElasticLoadBalancingV2::TargetGroup",
                {"HealthCheckTimeoutSeconds": 29, "HealthCheckIntervalSeconds": 30},
            )
        ),
        _stack(
            (
                "Tg",
                "AWS::ElasticLoadBalancingV2::TargetGroup",
                {"HealthCheckTimeoutSeconds": 30, "HealthCheckIntervalSeconds": 30},
            )
        ),
    ),
    sr.ELB_NAME_LENGTH: (
        _stack(("Tg", "AWS::ElasticLoadBalancingV2::TargetGroup", {"Name": "a" * 32})),
        _stack(("Tg", "AWS::ElasticLoadBalancingV2::TargetGroup", {"Name": "a" * 33})),
    ),
    sr.LISTENER_RULE_PRIORITY: (
        _stack(
            ("R1", "AWS::ElasticLoadBalancingV2::ListenerRule", {"Priority": 1, "ListenerArn": {"Ref": "L"}}),
            ("R2", "AWS::ElasticLoadBalancingV2::ListenerRule", {"Priority": 2, "ListenerArn": {"Ref": "L"}}),
            ("L", "AWS::ElasticLoadBalancingV2::Listener", {}),
        ),
        _stack(
            ("R1", "AWS::ElasticLoadBalancingV2::ListenerRule", {"Priority": 1, "ListenerArn": {"Ref": "L"}}),
            ("R2", "AWS::ElasticLoadBalancingV2::ListenerRule", {"Priority": 1, "ListenerArn": {"Ref": "L"}}),
            ("L", "AWS::ElasticLoadBalancingV2::Listener", {}),
        ),
    ),
    sr.TARGET_GROUP_ONE_BALANCER: (
        _stack(*_routes(second_balancer="A")),  # two listeners of one balancer may share a group
        _stack(*_routes(second_balancer="B")),  # a rule on another balancer's listener may not
    ),
    sr.TARGET_GROUP_HEALTH_CHECK: (
        _stack(_tg(Protocol="HTTP", HealthCheckProtocol="HTTP")),
        _stack(_tg(Protocol="HTTP", HealthCheckProtocol="TCP")),
    ),
    sr.ALB_TWO_ZONES: (
        _stack(("Alb", "AWS::ElasticLoadBalancingV2::LoadBalancer", {"Subnets": [{"Ref": "A"}, {"Ref": "B"}]})),
        _stack(("Alb", "AWS::ElasticLoadBalancingV2::LoadBalancer", {"Subnets": [{"Ref": "A"}]})),
    ),
    sr.DEREGISTRATION_DELAY: (
        _stack(
            (
                "Tg",
                "AWS::ElasticLoadBalancingV2::TargetGroup",
                {"TargetGroupAttributes": [{"Key": "deregistration_delay.timeout_seconds", "Value": "3600"}]},
            )
        ),
        _stack(
            (
                "Tg",
                "AWS::ElasticLoadBalancingV2::TargetGroup",
                {"TargetGroupAttributes": [{"Key": "deregistration_delay.timeout_seconds", "Value": "3601"}]},
            )
        ),
    ),
    sr.ALARM_PERIOD: (
        _stack(("A", "AWS::CloudWatch::Alarm", {"Period": 60, "EvaluationPeriods": 1440})),
        _stack(("A", "AWS::CloudWatch::Alarm", {"Period": 90, "EvaluationPeriods": 1})),
    ),
    sr.ALARM_DATAPOINTS: (
        _stack(("A", "AWS::CloudWatch::Alarm", {"DatapointsToAlarm": 3, "EvaluationPeriods": 3})),
        _stack(("A", "AWS::CloudWatch::Alarm", {"DatapointsToAlarm": 4, "EvaluationPeriods": 3})),
    ),
    sr.ALARM_TOPIC_PUBLISH: (
        _alarm_topic(_SSL_ONLY, _CLOUDWATCH_PUBLISH),
        _alarm_topic(_SSL_ONLY),  # enforce_ssl's policy alone: it replaces SNS's default, which admitted CloudWatch
    ),
    sr.RULE_TARGETS: (
        _stack(("E", "AWS::Events::Rule", {"Targets": [{"Id": str(i)} for i in range(5)]})),
        _stack(("E", "AWS::Events::Rule", {"Targets": [{"Id": str(i)} for i in range(6)]})),
    ),
    sr.LOG_RETENTION: (
        _stack(("G", "AWS::Logs::LogGroup", {"RetentionInDays": 30})),
        _stack(("G", "AWS::Logs::LogGroup", {"RetentionInDays": 31})),
    ),
    sr.LOG_GROUP_KEY: (
        _logs_key(
            {
                "Effect": "Allow",
                "Principal": {"Service": {"Fn::Join": ["", ["logs.", {"Ref": "AWS::Region"}, ".amazonaws.com"]]}},
                "Action": ["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"],
                "Resource": "*",
            }
        ),
        _logs_key(),  # the account's root alone: a service principal is not governed by IAM policies
    ),
    sr.NAME_CLAIMED_TWICE: (
        _stack(
            ("A", "AWS::Logs::LogGroup", {"LogGroupName": "/models/chat"}),
            ("B", "AWS::Logs::LogGroup", {"LogGroupName": "/models/embed"}),
            ("C", "AWS::IAM::Role", {"RoleName": "/models/chat"}),  # another kind of resource
        ),
        _stack(
            ("A", "AWS::Logs::LogGroup", {"LogGroupName": "/models/chat"}),
            ("B", "AWS::Logs::LogGroup", {"LogGroupName": "/models/chat"}),
        ),
    ),
    sr.KEY_POLICY_PRINCIPALS: (
        _key(
            [{"Fn::GetAtt": ["Role", "Arn"]}, {"Fn::Join": ["", ["arn:aws:iam::", {"Ref": "AWS::AccountId"}, ":root"]]}]
        ),
        _key(_SLR),
    ),
    sr.RESOURCE_POLICY_PRINCIPALS: (
        _bucket_policy({"Fn::GetAtt": ["Runner", "Arn"]}),
        _bucket_policy("arn:aws:iam::123456789012:role/model-runner"),
    ),
    sr.WARM_POOL_ON_ECS_CAPACITY: (_warm_pool("ECS_WARM_POOLS_CHECK=true"), _warm_pool("ECS_CLUSTER=models")),
    sr.USER_DATA_SIZE: (_user_data({"Fn::Base64": "#" * 16_384}), _user_data({"Fn::Base64": "#" * 16_385})),
    sr.EFS_VOLUME_OPTIONS: (
        _stack(_task(Volumes=[_efs(TransitEncryption="ENABLED", AuthorizationConfig={"IAM": "ENABLED"})])),
        _stack(_task(Volumes=[_efs(AuthorizationConfig={"IAM": "ENABLED"})])),
    ),
    sr.EFS_REACHABLE: (_efs_app([_nfs_from("HostSg")]), _efs_app([_nfs_from("HostSg", port=443)])),
    sr.TRUST_POLICY_PRINCIPALS: (
        _trusting({"Fn::GetAtt": ["Runner", "Arn"]}),
        _trusting("arn:aws:iam::123456789012:role/model-runner"),
    ),
    sr.EXECUTION_ROLE_FOR_SECRETS: (
        _stack(
            _task(containers=[_container(Secrets=[_SECRET])], ExecutionRoleArn={"Fn::GetAtt": ["Role", "Arn"]}),
            _role("ecs-tasks.amazonaws.com"),
        ),
        _stack(_task(containers=[_container(Secrets=[_SECRET])])),
    ),
    sr.FIRELENS_PAIRED: (
        _stack(_task(containers=[_ROUTER, _container(LogConfiguration=_FIRELENS)])),
        _stack(_task(containers=[_container(LogConfiguration=_FIRELENS)])),
    ),
    sr.AWSLOGS_OPTIONS: (
        _stack(_task(containers=[_container(LogConfiguration=_awslogs())])),
        _stack(_task(containers=[_container(LogConfiguration=_awslogs(**{"awslogs-create-group": "false"}))])),
    ),
    sr.TARGET_GROUP_ROUTED_FIRST: (_routed(depends="Listener"), _routed(depends=None)),
    sr.ECS_NAMES: (
        _stack(_task(Family="search-v2_" + "x" * 245)),
        _stack(_task(Family="search.v2")),
    ),
    sr.KEY_POLICY_SIZE: (
        _stack(("Key", "AWS::KMS::Key", {"KeyPolicy": "x" * 32_768})),
        _stack(("Key", "AWS::KMS::Key", {"KeyPolicy": "x" * 32_769})),
    ),
}


def test_a_second_container_of_one_name_is_told_to_rename_one() -> None:
    found = check_service_rules({"s": _stack(_task(containers=[_container("model"), _container("model")]))})
    (message,) = [v.message for v in found if v.rule_id == sr.CONTAINER_NAMES]
    assert "two containers are named 'model'" in message and "give one another name (container_name)" in message


@pytest.mark.parametrize(
    ("name", "refused"),
    [
        ("vllm-server_2", None),
        ("my model", "letters"),
        ("model.v1", "letters"),
        ("m" * 256, "255"),
        ({"Ref": "N"}, None),
    ],
)
def test_a_container_name_is_one_ecs_takes(name: Any, refused: str | None) -> None:
    found = check_service_rules({"s": _stack(_task(containers=[_container(name)]))})
    messages = [v.message for v in found if v.rule_id == sr.CONTAINER_NAMES]
    assert (refused is None and messages == []) or (refused is not None and refused in messages[0])


def test_a_mount_point_in_a_task_without_volumes_is_refused() -> None:
    """aws-ecs writes no Volumes where none was added: a mount point then names a volume the task does not have."""
    found = check_service_rules({"s": _stack(_task(containers=[_container(MountPoints=[_MOUNT])]))})
    assert [v.rule_id for v in found] == [sr.MOUNT_POINT_VOLUME]
    assert "its volumes: none" in found[0].message


def test_every_rule_has_a_case_and_the_table_has_at_least_twenty_sourced_rows() -> None:
    assert set(CASES) == {r.rule_id for r in SERVICE_RULES}
    assert len(SERVICE_RULES) >= 20
    for rule in SERVICE_RULES:
        assert rule.source and rule.requirement and rule.service, rule.rule_id
        assert "'" in rule.source or '"' in rule.source or "," in rule.source, rule.rule_id  # a page or a sentence


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_holds_at_its_bound(rule_id: str) -> None:
    good, _ = CASES[rule_id]
    assert [str(v) for v in check_service_rules({"s": good}) if v.rule_id == rule_id] == []


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_fails_past_it_naming_the_resource(rule_id: str) -> None:
    _, bad = CASES[rule_id]
    found = [v for v in check_service_rules({"s": bad}) if v.rule_id == rule_id]
    assert found, rule_id
    assert all(v.logical_id in bad["Resources"] and v.message.startswith(f"[{rule_id}]") for v in found)


def test_service_connect_message_gives_the_figures_to_set() -> None:
    bad = _stack(
        _task(containers=[_container(Cpu=512, Memory=2048), _container("side", Cpu=128, MemoryReservation=64)]),
        _service(**_CONNECT),
    )
    (violation,) = [v for v in check_service_rules({"s": bad}) if v.rule_id == sr.SERVICE_CONNECT_TASK_MEMORY]
    assert violation.logical_id == "Td"
    assert "memory 2176, cpu 896" in violation.message  # 2048 + 64 + the proxy's 64; 512 + 128 + the proxy's 256


def test_a_task_definition_in_another_stack_is_followed_through_its_output() -> None:
    tasks = {
        "Resources": dict([(_task()[0], {"Type": _task()[1], "Properties": _task()[2]})]),
        "Outputs": {"TdArn": {"Value": {"Ref": "Td"}}},
    }
    services = _stack(
        (
            "Svc",
            "AWS::ECS::Service",
            {"TaskDefinition": {"Fn::GetStackOutput": {"StackName": "tasks", "OutputName": "TdArn"}}, **_CONNECT},
        )
    )
    found = [
        v
        for v in check_service_rules({"tasks": tasks, "services": services})
        if v.rule_id == sr.SERVICE_CONNECT_TASK_MEMORY
    ]
    assert [(v.stack, v.logical_id) for v in found] == [("tasks", "Td")]


def test_a_managed_instances_task_is_not_held_to_the_ec2_rule() -> None:
    td = _task(RequiresCompatibilities=["MANAGED_INSTANCES"])
    assert not [
        v
        for v in check_service_rules({"s": _stack(td, _service(**_CONNECT))})
        if v.rule_id == sr.SERVICE_CONNECT_TASK_MEMORY
    ]


def test_a_check_that_crashes_is_a_finding_not_an_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(ctx: Any) -> Any:
        raise ValueError("boom")
        yield  # pragma: no cover

    rule = SERVICE_RULES[0]
    monkeypatch.setattr(sr, "SERVICE_RULES", (sr.ServiceRule(rule.rule_id, "x", "y", "z", broken),))
    (violation,) = check_service_rules({"s": _stack()})
    assert "the check failed (ValueError: boom)" in violation.message


def test_a_role_named_by_arn_that_may_exist_is_not_refused() -> None:
    """Only a service-linked role is known to be missing from a new account; an imported role's ARN may well exist."""
    imported = "arn:aws:iam::123456789012:role/team-deployer"
    assert not [v for v in check_service_rules({"s": _key(imported)}) if v.rule_id == sr.KEY_POLICY_PRINCIPALS]
    linked = "arn:aws:iam::123456789012:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling"
    assert [v for v in check_service_rules({"s": _key(linked)}) if v.rule_id == sr.KEY_POLICY_PRINCIPALS]


def test_the_docs_page_lists_every_rule() -> None:
    page = sr.markdown()
    for rule in SERVICE_RULES:
        assert f"`{rule.rule_id.removeprefix(sr.PREFIX)}`" in page


@pytest.mark.parametrize(
    ("template", "refused"),
    [
        (_alarm_topic(), None),  # no topic policy: SNS's default admits the account's services
        (_alarm_topic({"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "SNS:*"}), None),
        (_alarm_topic(_CLOUDWATCH_PUBLISH, key={"Fn::GetAtt": ["Key", "Arn"]}, key_statements=[_CLOUDWATCH_KEY]), None),
        (_alarm_topic(key="arn:aws:kms:us-east-1:123456789012:key/outside"), None),  # a key outside: not judged
        (
            _alarm_topic({**_CLOUDWATCH_PUBLISH, "Effect": "Deny"}),
            "allows no cloudwatch.amazonaws.com to sns:Publish",
        ),
        (
            _alarm_topic({**_CLOUDWATCH_PUBLISH, "Action": "sns:Subscribe"}),
            "allows no cloudwatch.amazonaws.com to sns:Publish",
        ),
        (_alarm_topic({**_SSL_ONLY, "Effect": "Allow", "Condition": {}, "Action": "sns:Pub*"}), None),
        (_alarm_topic({"Effect": "Allow", "Principal": "*", "NotAction": "sns:Subscribe"}), None),
        (
            _alarm_topic({"Effect": "Allow", "Principal": "*", "NotAction": ["sns:Publish"]}),
            "allows no cloudwatch.amazonaws.com to sns:Publish",
        ),
        (
            _alarm_topic(_CLOUDWATCH_PUBLISH, {**_CLOUDWATCH_PUBLISH, "Effect": "Deny"}),
            "allows no cloudwatch.amazonaws.com to sns:Publish",
        ),
        (
            _alarm_topic(
                key={"Ref": "Key"},
                key_statements=[
                    {**_CLOUDWATCH_KEY, "Action": "kms:Decrypt"},
                    {**_CLOUDWATCH_KEY, "Action": "KMS:GenerateDataKey*"},
                ],
            ),
            None,
        ),
        (_alarm_topic(key="alias/aws/sns"), "encrypted with the AWS managed key alias/aws/sns"),
        (
            _alarm_topic(key={"Ref": "Key"}, key_statements=[{**_CLOUDWATCH_KEY, "Action": "kms:Decrypt"}]),
            "its key Key does not let cloudwatch.amazonaws.com use it",
        ),
    ],
    ids=[
        "default-policy",
        "wildcard",
        "key-admits",
        "key-outside",
        "deny",
        "other-action",
        "action-wildcard",
        "not-action-other",
        "not-action-publish",
        "allowed-then-denied",
        "key-two-statements",
        "aws-managed-key",
        "no-key-use",
    ],
)
def test_an_alarms_topic_must_let_cloudwatch_publish(template: dict[str, Any], refused: str | None) -> None:
    found = [v for v in check_service_rules({"s": template}) if v.rule_id == sr.ALARM_TOPIC_PUBLISH]
    if refused is None:
        assert found == []
    else:
        (violation,) = found
        assert (
            violation.logical_id == "Topic"
            and refused in violation.message
            and "alarm Alarm notifies it" in violation.message
        )


def test_an_alarm_in_another_stack_is_followed_to_its_topic() -> None:
    topic = _alarm_topic(_SSL_ONLY)
    del topic["Resources"]["Alarm"]
    topic["Outputs"] = {"TopicArn": {"Value": {"Ref": "Topic"}}}
    alarms = _stack(
        (
            "Alarm",
            "AWS::CloudWatch::Alarm",
            {"AlarmActions": [{"Fn::GetStackOutput": {"StackName": "topic", "OutputName": "TopicArn"}}]},
        )
    )
    found = [v for v in check_service_rules({"topic": topic, "alarms": alarms}) if v.rule_id == sr.ALARM_TOPIC_PUBLISH]
    assert [(v.stack, v.logical_id) for v in found] == [("topic", "Topic")]


@pytest.mark.parametrize(
    ("a", "b", "clash"),
    [
        ({"PortName": "http", "DiscoveryName": "a"}, {"PortName": "http", "DiscoveryName": "b"}, None),
        ({"PortName": "http"}, {"PortName": "http"}, "discovery name 'http'"),
        (
            {"PortName": "api", "ClientAliases": [{"Port": 80, "DnsName": "models"}]},
            {"PortName": "web", "ClientAliases": [{"Port": 80, "DnsName": "models"}]},
            "client alias 'models:80'",
        ),
        (
            {"PortName": "api", "ClientAliases": [{"Port": 80, "DnsName": "models"}]},
            {"PortName": "web", "ClientAliases": [{"Port": 8080, "DnsName": "models"}]},
            None,
        ),
        (
            {"PortName": "api", "ClientAliases": [{"Port": 80}]},
            {"PortName": "api2", "DiscoveryName": "api"},
            "discovery name 'api'",
        ),
    ],
)
def test_service_connect_names_are_unique_in_a_namespace(
    a: dict[str, Any], b: dict[str, Any], clash: str | None
) -> None:
    """ECS API Reference: a discovery name (the port name unless given) must be unique within the Cloud Map namespace
    (ServiceConnectServiceResource), and so must each client alias's name and port (ServiceConnectClientAlias)."""
    stack = _stack(_task(memory="1088"), _service("A", **_connect(a)), _service("B", **_connect(b)))
    found = [v for v in check_service_rules({"s": stack}) if v.rule_id == sr.SERVICE_CONNECT_NAME_TWICE]
    if clash is None:
        assert found == []
    else:
        (violation,) = found
        assert violation.logical_id == "B" and clash in violation.message and "service A" in violation.message


def _waits(templates: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [
        (v.stack, v.logical_id) for v in check_service_rules(templates) if v.rule_id == sr.PROVIDER_ASSOCIATED_FIRST
    ]


_MI = {
    "Cluster": {"Ref": "Cluster"},
    "CapacityProviderStrategy": [{"CapacityProvider": {"Ref": "Mi"}}],
}


@pytest.mark.parametrize(
    ("templates", "refused"),
    [
        # ordered: through another resource that depends on the association
        (
            {
                "s": _associated(
                    _service(**_ON_CP), ("W", "AWS::SSM::Parameter", {}), depends={"Svc": "W", "W": "Assoc"}
                )
            },
            [],
        ),
        # ordered: through a property that reads the association (a Ref is a dependency)
        ({"s": _associated(_service(**_ON_CP, Tags=[{"Key": "after", "Value": {"Ref": "Assoc"}}]))}, []),
        # the cluster's default strategy: the service names neither a strategy nor a launch type
        ({"s": _associated(_service(Cluster={"Ref": "Cluster"}), default=True)}, [("s", "Svc")]),
        ({"s": _associated(_service(Cluster={"Ref": "Cluster"}), default=True, depends={"Svc": "Assoc"})}, []),
        # an empty strategy is the default one too (aws-ecs writes it for capacity_provider_strategies=[])
        (
            {"s": _associated(_service(Cluster={"Ref": "Cluster"}, CapacityProviderStrategy=[]), default=True)},
            [("s", "Svc")],
        ),
        # a launch type is not a strategy; no default strategy is written: nothing to wait for
        ({"s": _associated(_service(Cluster={"Ref": "Cluster"}, LaunchType="EC2"), default=True)}, []),
        ({"s": _associated(_service(Cluster={"Ref": "Cluster"}))}, []),
        # a task set names a strategy of its own
        (
            {"s": _associated(("Ts", "AWS::ECS::TaskSet", {**_ON_CP, "Service": "x", "TaskDefinition": "y"}))},
            [("s", "Ts")],
        ),
        # the provider and the cluster by their literal names
        (
            {
                "s": _stack(
                    ("Cluster", "AWS::ECS::Cluster", {"ClusterName": "gpu"}),
                    ("Cp", "AWS::ECS::CapacityProvider", {"Name": "l4", "AutoScalingGroupProvider": {}}),
                    (
                        "Assoc",
                        "AWS::ECS::ClusterCapacityProviderAssociations",
                        {"Cluster": "gpu", "CapacityProviders": ["l4"]},
                    ),
                    _service(Cluster="gpu", CapacityProviderStrategy=[{"CapacityProvider": "l4"}]),
                )
            },
            [("s", "Svc")],
        ),
        # a provider the templates do not make (FARGATE) is not judged
        (
            {
                "s": _associated(
                    _service(Cluster={"Ref": "Cluster"}, CapacityProviderStrategy=[{"CapacityProvider": "FARGATE"}])
                )
            },
            [],
        ),
        # a Managed Instances provider is made in its cluster: naming it by Ref orders the service after it
        (
            {
                "s": _stack(
                    ("Cluster", "AWS::ECS::Cluster", {}),
                    (
                        "Mi",
                        "AWS::ECS::CapacityProvider",
                        {"ClusterName": {"Ref": "Cluster"}, "ManagedInstancesProvider": {}},
                    ),
                    _service(**_MI),
                )
            },
            [],
        ),
        # providers set on the cluster itself: the service's reference to the cluster orders it
        (
            {
                "s": _stack(
                    ("Cluster", "AWS::ECS::Cluster", {"CapacityProviders": [{"Ref": "Cp"}]}),
                    ("Cp", "AWS::ECS::CapacityProvider", {"AutoScalingGroupProvider": {}}),
                    _service(**_ON_CP),
                )
            },
            [],
        ),
        # the cluster is in the templates and nothing associates the provider with it
        (
            {
                "s": _stack(
                    ("Cluster", "AWS::ECS::Cluster", {}),
                    ("Cp", "AWS::ECS::CapacityProvider", {"AutoScalingGroupProvider": {}}),
                    _service(**_ON_CP),
                )
            },
            [("s", "Svc")],
        ),
    ],
)
def test_a_strategy_waits_for_its_providers_association(templates: dict[str, Any], refused: list[Any]) -> None:
    assert _waits(templates) == refused


def test_a_service_in_a_later_stack_waits_for_the_association_through_its_outputs() -> None:
    """A service in another stack that reads the cluster's stack's outputs is deployed after that whole stack; one that
    reads nothing of it has no order the templates can show, and is not judged."""
    cluster = _associated()
    cluster["Outputs"] = {
        "ClusterName": {"Value": {"Ref": "Cluster"}, "Export": {"Name": "gpu-cluster"}},
        "Provider": {"Value": {"Ref": "Cp"}, "Export": {"Name": "gpu-cp"}},
    }
    imported = {
        "Cluster": {"Fn::ImportValue": "gpu-cluster"},
        "CapacityProviderStrategy": [{"CapacityProvider": {"Fn::ImportValue": "gpu-cp"}}],
    }
    services = _stack(_task(), _service(**imported))
    assert _waits({"cluster": cluster, "services": services}) == []
    named = _stack(
        ("Cluster", "AWS::ECS::Cluster", {"ClusterName": "gpu"}),
        ("Cp", "AWS::ECS::CapacityProvider", {"Name": "l4", "AutoScalingGroupProvider": {}}),
        ("Assoc", "AWS::ECS::ClusterCapacityProviderAssociations", {"Cluster": "gpu", "CapacityProviders": ["l4"]}),
    )
    by_name = _stack(_task(), _service(Cluster="gpu", CapacityProviderStrategy=[{"CapacityProvider": "l4"}]))
    # Read by name from another stack, nothing in the templates orders it: its stack may depend on the cluster's
    # through Stack.add_dependency, which the manifest holds and no template shows; not judged.
    assert _waits({"cluster": named, "services": by_name}) == []
    # The same service beside the association is judged.
    assert _waits({"s": {"Resources": {**named["Resources"], **by_name["Resources"]}}}) == [("s", "Svc")]


@pytest.mark.parametrize(
    "principal",
    [
        "logs.eu-west-1.amazonaws.com",
        "logs.us-gov-west-1.amazonaws.com",
        {"Fn::Sub": "logs.${AWS::Region}.amazonaws.com"},
    ],
)
def test_a_log_groups_key_names_cloudwatch_logs_by_its_regional_principal(principal: Any) -> None:
    allow = {"Effect": "Allow", "Principal": {"Service": principal}, "Action": "kms:*", "Resource": "*"}
    assert not [v for v in check_service_rules({"s": _logs_key(allow)}) if v.rule_id == sr.LOG_GROUP_KEY]
    for other in ("cloudwatch.amazonaws.com", "logs.amazonaws.com"):
        wrong = {**allow, "Principal": {"Service": other}}
        assert [v for v in check_service_rules({"s": _logs_key(wrong)}) if v.rule_id == sr.LOG_GROUP_KEY], other


_REGIONAL = {"Fn::Join": ["", ["models-", {"Ref": "AWS::Region"}, "-gpu"]]}


@pytest.mark.parametrize(
    ("resources", "attributes", "refused"),
    [
        # one name with the same references reads alike once deployed
        (
            [
                ("A", "AWS::CloudWatch::Dashboard", {"DashboardName": _REGIONAL}),
                ("B", "AWS::CloudWatch::Dashboard", {"DashboardName": _REGIONAL}),
            ],
            {},
            ["B"],
        ),
        # references to two resources read apart
        (
            [
                ("A", "AWS::SSM::Parameter", {"Name": {"Fn::Join": ["/", ["", {"Ref": "X"}]]}}),
                ("B", "AWS::SSM::Parameter", {"Name": {"Fn::Join": ["/", ["", {"Ref": "Y"}]]}}),
            ],
            {},
            [],
        ),
        # an Fn::Sub and an Fn::Join that write one name read alike
        (
            [
                ("A", "AWS::Logs::LogGroup", {"LogGroupName": {"Fn::Sub": "/models/${AWS::StackName}/chat"}}),
                (
                    "B",
                    "AWS::Logs::LogGroup",
                    {"LogGroupName": {"Fn::Join": ["", ["/models/", {"Ref": "AWS::StackName"}, "/chat"]]}},
                ),
            ],
            {},
            ["B"],
        ),
        # one Fn::Sub text with other variables reads apart
        (
            [
                ("A", "AWS::Logs::LogGroup", {"LogGroupName": {"Fn::Sub": ["/models/${m}", {"m": "chat"}]}}),
                ("B", "AWS::Logs::LogGroup", {"LogGroupName": {"Fn::Sub": ["/models/${m}", {"m": "embed"}]}}),
            ],
            {},
            [],
        ),
        # a part that cannot be read is not known to be alike
        (
            [
                ("A", "AWS::SSM::Parameter", {"Name": {"Fn::If": ["Prod", "a", "b"]}}),
                ("B", "AWS::SSM::Parameter", {"Name": {"Fn::If": ["Prod", "a", "b"]}}),
            ],
            {},
            [],
        ),
        # a service's name is unique within its cluster
        (
            [
                ("A", "AWS::ECS::Service", {"ServiceName": "chat", "Cluster": {"Ref": "One"}}),
                ("B", "AWS::ECS::Service", {"ServiceName": "chat", "Cluster": {"Ref": "Two"}}),
                ("C", "AWS::ECS::Service", {"ServiceName": "chat", "Cluster": {"Ref": "Two"}}),
            ],
            {},
            ["C"],
        ),
        # a resource created under a condition may never meet the other
        (
            [("A", "AWS::IAM::Role", {"RoleName": "r"}), ("B", "AWS::IAM::Role", {"RoleName": "r"})],
            {"B": {"Condition": "InProd"}},
            [],
        ),
        # no name: CloudFormation makes one for each
        ([("A", "AWS::SNS::Topic", {}), ("B", "AWS::SNS::Topic", {})], {}, []),
        # a type whose registry schema makes a written property its identifier: one set of associations a cluster
        (
            [
                ("A", "AWS::ECS::ClusterCapacityProviderAssociations", {"Cluster": {"Ref": "One"}}),
                ("B", "AWS::ECS::ClusterCapacityProviderAssociations", {"Cluster": {"Ref": "Two"}}),
                ("C", "AWS::ECS::ClusterCapacityProviderAssociations", {"Cluster": {"Ref": "One"}}),
            ],
            {},
            ["C"],
        ),
        # one policy a bucket
        (
            [
                ("A", "AWS::S3::BucketPolicy", {"Bucket": {"Ref": "Models"}, "PolicyDocument": {}}),
                ("B", "AWS::S3::BucketPolicy", {"Bucket": {"Ref": "Models"}, "PolicyDocument": {}}),
            ],
            {},
            ["B"],
        ),
        # an identifier of several properties: alike only when all are
        (
            [
                ("A", "AWS::ApplicationAutoScaling::ScalableTarget", _SCALABLE),
                ("B", "AWS::ApplicationAutoScaling::ScalableTarget", {**_SCALABLE, "ScalableDimension": "other"}),
                ("C", "AWS::ApplicationAutoScaling::ScalableTarget", _SCALABLE),
            ],
            {},
            ["C"],
        ),
        # an inline policy's name is unique within its role
        (
            [
                ("A", "AWS::IAM::RolePolicy", {"PolicyName": "p", "RoleName": {"Ref": "R1"}}),
                ("B", "AWS::IAM::RolePolicy", {"PolicyName": "p", "RoleName": {"Ref": "R2"}}),
            ],
            {},
            [],
        ),
    ],
)
def test_a_name_is_claimed_once_in_a_stack(
    resources: list[Res], attributes: dict[str, Any], refused: list[str]
) -> None:
    found = check_service_rules({"s": _stack(*resources, attributes=attributes)})
    assert [v.logical_id for v in found if v.rule_id == sr.NAME_CLAIMED_TWICE] == refused


def test_one_identifier_through_a_reference_is_judged_across_stacks() -> None:
    """A reference to a resource of the templates puts both stacks in that resource's account and region."""
    cluster = _stack(("Cluster", "AWS::ECS::Cluster", {}))
    cluster["Outputs"] = {"ClusterName": {"Value": {"Ref": "Cluster"}, "Export": {"Name": "c-name"}}}
    imported = {"Fn::ImportValue": "c-name"}
    associations = ("Assoc", "AWS::ECS::ClusterCapacityProviderAssociations", {"Cluster": imported})
    found = check_service_rules({"c": cluster, "s": _stack(associations), "t": _stack(associations)})
    refused = [v for v in found if v.rule_id == sr.NAME_CLAIMED_TWICE]
    assert [(v.stack, v.logical_id) for v in refused] == [("t", "Assoc")]
    assert "s/Assoc" in refused[0].message and "AlreadyExists" in refused[0].message


def test_the_schemas_file_is_what_cloudformations_schemas_say() -> None:
    module = load_script(REPO / "scripts" / "resource_schemas.py")
    written = json.loads(module.OUT.read_text())
    assert written == module.build(), "run scripts/resource_schemas.py"
    assert written["AWS::ECS::ClusterCapacityProviderAssociations"]["identifiers"] == [["Cluster"]]
    assert written["AWS::ECS::Service"]["identifiers"] == []  # its identifier is its ARN, which AWS makes
    assert "ServiceName" in written["AWS::ECS::Service"]["create_only"]


def test_one_name_in_two_stacks_is_not_judged() -> None:
    """Two stacks may go to two regions or accounts, which their templates do not say."""
    group = ("A", "AWS::Logs::LogGroup", {"LogGroupName": "/models/chat"})
    assert not [
        v for v in check_service_rules({"s": _stack(group), "t": _stack(group)}) if v.rule_id == sr.NAME_CLAIMED_TWICE
    ]


def test_the_default_strategy_case_says_what_a_service_made_first_misses() -> None:
    bad = _associated(_service(Cluster={"Ref": "Cluster"}), default=True)
    (found,) = [v for v in check_service_rules({"s": bad}) if v.rule_id == sr.PROVIDER_ASSOCIATED_FIRST]
    assert (
        "uses the cluster's default capacity provider strategy, set on its cluster by s/Assoc" in found.message
    )  # stack/logical id without a CDK path
    assert "one created first does not get it" in found.message


@pytest.mark.parametrize(
    ("mode", "container", "refused"),
    [
        ("awsvpc", {"ExtraHosts": [{"Hostname": "db", "IpAddress": "10.0.0.1"}]}, "extraHosts"),
        ("awsvpc", {"Links": ["side"]}, "links"),
        ("host", {"Links": ["side"]}, "links"),
        ("host", {"Hostname": "h", "ExtraHosts": [{"Hostname": "db"}]}, None),  # host mode takes both
        (None, {"Links": ["side"]}, None),  # bridge, ECS's default on EC2
    ],
)
def test_a_containers_network_options_follow_its_task_network_mode(
    mode: str | None, container: dict[str, Any], refused: str | None
) -> None:
    found = check_service_rules({"s": _stack(_task(mode=mode, containers=[_container(**container)]))})
    messages = [v.message for v in found if v.rule_id == sr.NETWORK_MODE_OPTIONS]
    assert (refused is None and messages == []) or (refused is not None and refused in messages[0])


@pytest.mark.parametrize(
    ("mode", "props", "refused"),
    [
        ("bridge", {"LoadBalancers": _target_groups(1)}, None),
        ("bridge", {"Role": "ecsServiceRole"}, "no load balancer"),
        ("awsvpc", {"LoadBalancers": _target_groups(1), "Role": "ecsServiceRole", **_NETWORK}, "awsvpc"),
        ("bridge", {"LoadBalancers": _target_groups(2), "Role": "ecsServiceRole"}, "2 target groups"),
        ("bridge", {"LoadBalancers": _target_groups(1), "Role": "r", "ServiceRegistries": [_REGISTRY]}, "discovery"),
        (
            "bridge",
            {"LoadBalancers": _target_groups(1), "Role": "r", "DeploymentController": {"Type": "EXTERNAL"}},
            "EXTERNAL",
        ),
    ],
)
def test_a_service_names_a_role_only_where_ecs_takes_one(mode: str, props: dict[str, Any], refused: str | None) -> None:
    template = _stack(_task(mode=mode), _service(**props))
    messages = [v.message for v in check_service_rules({"s": template}) if v.rule_id == sr.SERVICE_ROLE]
    assert (refused is None and messages == []) or (refused is not None and refused in messages[0])


@pytest.mark.parametrize(
    ("resource", "refused"),
    [
        (_service(CapacityProviderStrategy=[_item("a", 0)]), None),  # one provider: its weight does not matter
        (_service(CapacityProviderStrategy=[_item("a"), _item("b")]), "weight"),  # a weight left out is 0
        (_service(CapacityProviderStrategy=[_item(f"p{i}", 1) for i in range(21)]), "21 capacity providers"),
        (("C", "AWS::ECS::Cluster", {"DefaultCapacityProviderStrategy": [_item("a", 0), _item("b", 0)]}), "weight"),
        (
            (
                "A",
                "AWS::ECS::ClusterCapacityProviderAssociations",
                {
                    "Cluster": "c",
                    "CapacityProviders": ["a", "b"],
                    "DefaultCapacityProviderStrategy": [_item("a", 1, base=1), _item("b", 1, base=1)],
                },
            ),
            "base",
        ),
    ],
)
def test_every_capacity_provider_strategy_is_one_ecs_takes(resource: Res, refused: str | None) -> None:
    found = check_service_rules({"s": _stack(_task(), resource)})
    messages = [v.message for v in found if v.rule_id in (sr.STRATEGY_WEIGHTS, sr.STRATEGY_ONE_BASE)]
    assert (refused is None and messages == []) or (refused is not None and refused in messages[0])


_PASS_ROLE = {"Effect": "Allow", "Action": "iam:PassRole", "Resource": {"Fn::GetAtt": ["HostRole", "Arn"]}}


def _with_pass_role_policy(template: dict[str, Any]) -> dict[str, Any]:
    policy = {"PolicyDocument": {"Statement": [_PASS_ROLE]}, "PolicyName": "p", "Roles": [{"Ref": "Infra"}]}
    template["Resources"]["InfraPolicy"] = {"Type": "AWS::IAM::Policy", "Properties": policy}
    return template


@pytest.mark.parametrize(
    ("template", "refused"),
    [
        (_managed_instances(role_name="ecsInstanceRole-gpu"), None),
        (_managed_instances(), "CloudFormation names it"),
        (_managed_instances(role_name="gpu-hosts"), "gpu-hosts"),
        (  # the team's own grant of PassRole on the host role: any name
            _managed_instances(
                infra={
                    "ManagedPolicyArns": [_MI_POLICY],
                    "Policies": [{"PolicyName": "p", "PolicyDocument": {"Statement": [_PASS_ROLE]}}],
                }
            ),
            None,
        ),
        (_with_pass_role_policy(_managed_instances()), None),  # the grant as aws-iam's grant_pass_role writes it
        (_managed_instances(infra={"ManagedPolicyArns": ["arn:aws:iam::123456789012:policy/own"]}), None),
        (_managed_instances(profile="arn:aws:iam::123456789012:instance-profile/hosts"), None),
    ],
)
def test_a_managed_instances_host_role_is_one_the_infrastructure_role_may_pass(
    template: dict[str, Any], refused: str | None
) -> None:
    found = check_service_rules({"s": template})
    messages = [v.message for v in found if v.rule_id == sr.MANAGED_INSTANCES_ROLE_NAME]
    assert (refused is None and messages == []) or (refused is not None and refused in messages[0])


@pytest.mark.parametrize(
    ("resource", "refused"),
    [
        (_tg(Protocol="TCP", HealthCheckProtocol="TCP"), None),
        (_tg(Protocol="HTTPS", HealthCheckProtocol="TCP"), "TCP"),
        (_tg(HealthCheckEnabled=False), "always"),  # an instance target group, the default type
        (_tg(TargetType="ip", HealthCheckEnabled="false"), "always"),
        (_tg(TargetType="lambda", HealthCheckEnabled=False), None),
        (("Nlb", "AWS::ElasticLoadBalancingV2::LoadBalancer", {"Type": "network", "Subnets": [{"Ref": "A"}]}), None),
        (
            ("Alb", "AWS::ElasticLoadBalancingV2::LoadBalancer", {"SubnetMappings": [{"SubnetId": "subnet-1"}]}),
            "1 subnet",
        ),
        (("Alb", "AWS::ElasticLoadBalancingV2::LoadBalancer", {"Subnets": {"Fn::Split": [",", "a,b"]}}), None),
    ],
)
def test_a_target_groups_health_check_and_a_balancers_zones_are_what_elb_takes(
    resource: Res, refused: str | None
) -> None:
    found = check_service_rules({"s": _stack(resource)})
    messages = [v.message for v in found if v.rule_id in (sr.TARGET_GROUP_HEALTH_CHECK, sr.ALB_TWO_ZONES)]
    assert (refused is None and messages == []) or (refused is not None and refused in messages[0])


@pytest.mark.parametrize(
    ("props", "refused"),
    [
        ({"CapacityProviderStrategy": [{"CapacityProvider": {"Ref": "Provider"}}]}, "public IP"),  # ASG-backed
        ({"LaunchType": "FARGATE"}, None),
        ({}, None),  # the cluster's default strategy: not known here
    ],
)
def test_an_ec2_service_asks_for_no_public_ip(props: dict[str, Any], refused: str | None) -> None:
    template = _stack(_task(mode="awsvpc"), _asg_provider(), _service(**props, **_public_ip("ENABLED")))
    messages = [v.message for v in check_service_rules({"s": template}) if v.rule_id == sr.NO_PUBLIC_IP_ON_EC2]
    assert (refused is None and messages == []) or (refused is not None and refused in messages[0])


@pytest.mark.parametrize(
    ("controller", "props", "refused"),
    [
        ("ECS", {"DeploymentConfiguration": _BREAKER, "LaunchType": "EC2"}, None),
        ("CODE_DEPLOY", {"DeploymentConfiguration": _BREAKER}, "circuit breaker"),
        ("EXTERNAL", {"DeploymentConfiguration": _BREAKER}, "circuit breaker"),
        ("CODE_DEPLOY", {"DeploymentConfiguration": {"DeploymentCircuitBreaker": {"Enable": False}}}, None),
        ("CODE_DEPLOY", {"DeploymentConfiguration": {"MaximumPercent": 150}, "LaunchType": "EC2"}, "MaximumPercent"),
        (
            "CODE_DEPLOY",
            {
                "DeploymentConfiguration": {"MaximumPercent": 150},
                "CapacityProviderStrategy": [{"CapacityProvider": {"Ref": "Provider"}}],
            },
            "MaximumPercent",
        ),
        ("CODE_DEPLOY", {"DeploymentConfiguration": {"MaximumPercent": 200}, "LaunchType": "EC2"}, None),
        ("EXTERNAL", {"DeploymentConfiguration": {"MaximumPercent": 150}, "LaunchType": "FARGATE"}, None),
        ("ECS", {"DeploymentConfiguration": {"MaximumPercent": 150}, "LaunchType": "EC2"}, None),
        ("CODE_DEPLOY", {"DeploymentConfiguration": {"BakeTimeInMinutes": 5}}, "BakeTimeInMinutes"),
        ("ECS", {"DeploymentConfiguration": {"BakeTimeInMinutes": 5}}, None),
    ],
)
def test_a_services_deployment_options_are_its_controllers(
    controller: str, props: dict[str, Any], refused: str | None
) -> None:
    template = _stack(_task(), _asg_provider(), _service(DeploymentController={"Type": controller}, **props))
    found = check_service_rules({"s": template})
    messages = [v.message for v in found if v.rule_id == sr.DEPLOYMENT_OPTIONS_OF_CONTROLLER]
    assert (refused is None and messages == []) or (refused is not None and refused in messages[0])


@pytest.mark.parametrize(
    ("groups", "props", "refused"),
    [
        (2, {"DeploymentController": {"Type": "ECS"}}, None),
        (2, {"DeploymentController": {"Type": "CODE_DEPLOY"}}, "deployment controller CODE_DEPLOY"),
        (2, {"DeploymentController": {"Type": "EXTERNAL"}}, "deployment controller EXTERNAL"),
        (1, {"DeploymentController": {"Type": "CODE_DEPLOY"}}, None),
        (6, {"DeploymentController": {"Type": "ECS"}}, "6 target groups"),
    ],
)
def test_a_services_target_groups_are_what_ecs_takes(groups: int, props: dict[str, Any], refused: str | None) -> None:
    template = _stack(_task(), _service(LoadBalancers=_target_groups(groups), **props))
    messages = [v.message for v in check_service_rules({"s": template}) if v.rule_id == sr.TARGET_GROUPS_PER_SERVICE]
    assert (refused is None and messages == []) or (refused is not None and refused in messages[0])


@pytest.mark.parametrize(
    ("name", "ok"), [("http", True), ("grpc-1", True), ("-http", False), ("a" * 65, False), ("web.port", False)]
)
def test_a_port_mapping_name_is_what_ecs_takes(name: str, ok: bool) -> None:
    template = _stack(_task(containers=[_container(PortMappings=[{"ContainerPort": 80, "Name": name}])]))
    assert bool([v for v in check_service_rules({"s": template}) if v.rule_id == sr.PORT_MAPPING_NAME]) is not ok


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"Fn::Join": ["-", ["a", {"Ref": "AWS::Region"}]]}, "a-${AWS::Region}"),
        ({"Fn::Sub": "${Key.Arn}/${!Literal}"}, "${s/Key.Arn}/${Literal}"),
        ({"Fn::Sub": ["x-${v}", {"v": {"Ref": "Key"}}]}, "x-${s/Key}"),
        ({"Fn::Base64": {"Fn::GetAtt": ["Key", "Arn"]}}, "${s/Key.Arn}"),
        ({"Fn::Select": [0, ["a"]]}, sr.base.UNKNOWN_TEXT),
    ],
)
def test_a_value_reads_as_the_text_it_will_be(value: Any, text: str) -> None:
    ctx = sr.Templates({"s": _stack(("Key", "AWS::KMS::Key", {}))})
    assert ctx.text(value, "s") == text


def _depends(name: str, *on: tuple[str, str], **extra: Any) -> dict[str, Any]:
    """A container that waits for each (container, condition) of ``on``."""
    return _container(name, DependsOn=[{"ContainerName": c, "Condition": k} for c, k in on], **extra)


@pytest.mark.parametrize(
    ("containers", "refused"),
    [
        ([_depends("model", ("weights", "START")), _container("weights")], None),
        ([_depends("model", ("model", "START"))], "model → model"),  # itself
        (
            [_depends("a", ("b", "START")), _depends("b", ("c", "START")), _depends("c", ("a", "START"))],
            "a → b → c → a",
        ),
        ([_depends("model", ("weights", "START"))], "waits for 'weights', a container this task definition does not"),
        ([_depends("model", ("proxy", "HEALTHY")), _container("proxy")], "has no health check"),
        (
            [_depends("model", ("proxy", "HEALTHY")), _container("proxy", HealthCheck={"Command": ["NONE"]})],
            "has no health check",
        ),
    ],
)
def test_a_tasks_container_dependencies_can_all_be_met(containers: list[dict[str, Any]], refused: str | None) -> None:
    found = check_service_rules({"s": _stack(_task(containers=containers))})
    messages = [v.message for v in found if v.rule_id == sr.DEPENDENCIES_RESOLVE]
    assert (refused is None and messages == []) or (refused is not None and len(messages) == 1), messages
    assert refused is None or refused in messages[0]


@pytest.mark.parametrize(
    ("essential", "condition", "refused"),
    [
        (False, "COMPLETE", False),
        ("false", "SUCCESS", False),  # CloudFormation takes a boolean written as text
        (None, "SUCCESS", True),  # ECS's default: essential
        (True, "COMPLETE", True),
        (True, "START", False),
        (True, "HEALTHY", False),
    ],
)
def test_a_container_waited_on_to_exit_is_not_essential(essential: Any, condition: str, refused: bool) -> None:
    weights = _container("weights") if essential is None else _container("weights", Essential=essential)
    if condition == "HEALTHY":
        weights["HealthCheck"] = {"Command": ["CMD", "true"]}
    template = _stack(_task(containers=[_depends("model", ("weights", condition)), weights]))
    found = [
        v.message for v in check_service_rules({"s": template}) if v.rule_id == sr.EXITING_DEPENDENCY_NOT_ESSENTIAL
    ]
    assert bool(found) is refused
    assert not refused or ("weights" in found[0] and condition in found[0] and "essential=False" in found[0])


@pytest.mark.parametrize(
    ("check", "refused"),
    [
        ({"Command": ["NONE"]}, None),
        ({"Command": ["CMD", "true"], "Interval": "300", "StartPeriod": 0, "Retries": 1, "Timeout": 2}, None),
        ({"Command": ["CMD", "true"], "Interval": 4}, "interval 4"),
        ({"Command": ["CMD", "true"], "Timeout": 90}, "timeout 90"),  # aws-ecs takes up to 120
        ({"Command": ["CMD", "true"], "Retries": 0}, "retries 0"),
        ({"Command": ["CMD", "true"], "StartPeriod": "301"}, "startPeriod 301"),
        ({"Command": ["curl", "-f", "localhost"]}, "'curl'"),
        ({"Command": ["CMD", "true"], "StartPeriod": {"Ref": "Grace"}}, None),  # known at deploy: not judged
    ],
)
def test_a_container_health_check_is_in_ecss_ranges(check: dict[str, Any], refused: str | None) -> None:
    template = _stack(_task(containers=[_container(HealthCheck=check)]))
    found = [v.message for v in check_service_rules({"s": template}) if v.rule_id == sr.HEALTH_CHECK_IN_RANGE]
    assert (refused is None and found == []) or (refused is not None and len(found) == 1 and refused in found[0])


@pytest.mark.parametrize(
    ("namespace", "mode", "refused"),
    [
        ("net.ipv4.tcp_keepalive_time", "bridge", None),
        ("kernel.shmmax", "awsvpc", None),
        ("kernel.shm_rmid_forced", None, None),
        ("fs.mqueue.msg_max", "bridge", None),
        ({"Ref": "Sysctl"}, "bridge", None),  # not known at synth: not judged
        ("kernel.core_pattern", "bridge", "'kernel.core_pattern', which is not a namespaced"),
        ("kernel.shm", "bridge", "'kernel.shm', which is not a namespaced"),  # only ECS's list, not a prefix of it
        ("vm.overcommit_memory", "awsvpc", "'vm.overcommit_memory', which is not a namespaced"),
        ("net.core.somaxconn", "host", "in the host network mode"),
        ("kernel.domainname", "bridge", None),  # the container's own UTS namespace (runc's validator allows it)
        ("kernel.domainname", "host", None),  # Docker keeps a UTS namespace with host networking (moby: UTSMode only)
    ],
)
def test_a_containers_sysctls_are_namespaced(namespace: Any, mode: str | None, refused: str | None) -> None:
    sysctl = {"Namespace": namespace, "Value": "1"}
    template = _stack(_task(mode=mode, containers=[_container(SystemControls=[sysctl])]))
    found = [v.message for v in check_service_rules({"s": template}) if v.rule_id == sr.SYSCTL_NAMESPACED]
    assert (refused is None and found == []) or (refused is not None and len(found) == 1 and refused in found[0])


@pytest.mark.parametrize(
    ("prop", "role", "refused"),
    [
        ("ExecutionRoleArn", _role("ec2.amazonaws.com", "ecs-tasks.amazonaws.com"), False),
        ("TaskRoleArn", _role({"Fn::Join": ["", ["ecs-tasks.", {"Ref": "AWS::URLSuffix"}]]}), False),
        ("TaskRoleArn", _role("ecs-tasks.amazonaws.com", action=["sts:TagSession", "sts:AssumeRole"]), False),
        ("ExecutionRoleArn", _role("ecs.amazonaws.com"), True),  # ECS's service role's principal, not its tasks'
        ("TaskRoleArn", _role("ecs-tasks.amazonaws.com", action="sts:TagSession"), True),
        ("TaskRoleArn", _role("ecs-tasks.amazonaws.com", effect="Deny"), True),
    ],
)
def test_a_task_definitions_roles_trust_ecs_tasks(prop: str, role: Res, refused: bool) -> None:
    template = _stack(_task(**{prop: {"Fn::GetAtt": ["Role", "Arn"]}}), role)
    found = [v.message for v in check_service_rules({"s": template}) if v.rule_id == sr.TASK_ROLE_TRUST]
    assert bool(found) is refused
    assert not refused or (
        "ecs-tasks.amazonaws.com" in found[0] and ("execution" in found[0]) is (prop != "TaskRoleArn")
    )


def test_a_role_named_by_arn_is_not_judged_for_trust() -> None:
    template = _stack(_task(TaskRoleArn="arn:aws:iam::123456789012:role/models"))
    assert not [v for v in check_service_rules({"s": template}) if v.rule_id == sr.TASK_ROLE_TRUST]


def test_a_name_claimed_twice_is_said_with_its_scope() -> None:
    service = {"ServiceName": "chat", "Cluster": {"Ref": "Cluster"}}
    template = _stack(
        ("Cluster", "AWS::ECS::Cluster", {}), ("A", "AWS::ECS::Service", service), ("B", "AWS::ECS::Service", service)
    )
    (found,) = [v for v in check_service_rules({"s": template}) if v.rule_id == sr.NAME_CLAIMED_TWICE]
    assert "its ServiceName chat (within Cluster s/Cluster) is also s/A's" in found.message
    assert "give each its own name" in found.message


_ALL_ENDPOINTS = tuple(_endpoint(name) for name in sr.network.NEEDED_ENDPOINTS)


@pytest.mark.parametrize(
    ("template", "refused"),
    [
        (_hosts_in(_route(TransitGatewayId="tgw-1")), None),
        (_hosts_in(_route(GatewayId={"Ref": "Igw"}), ("Igw", "AWS::EC2::InternetGateway", {}), public=True), None),
        # an internet gateway, but the hosts get no public address: no way out
        (_hosts_in(_route(GatewayId={"Ref": "Igw"}), ("Igw", "AWS::EC2::InternetGateway", {})), "ecs, ecs-agent"),
        (_hosts_in(*_ALL_ENDPOINTS), None),  # isolated, with every endpoint a host needs
        (_hosts_in(*_ALL_ENDPOINTS[3:]), "no VPC endpoint for ecs, ecs-agent, ecs-telemetry:"),
    ],
)
def test_a_capacitys_hosts_have_a_way_to_ecs(template: dict[str, Any], refused: str | None) -> None:
    found = [v.message for v in check_service_rules({"s": template}) if v.rule_id == sr.HOSTS_REACH_ECS]
    assert (refused is None and found == []) or (refused is not None and len(found) == 1 and refused in found[0])


def test_hosts_in_subnets_of_the_account_are_left_to_fleet_egress() -> None:
    template = _hosts_in()
    template["Resources"]["Asg"]["Properties"]["VPCZoneIdentifier"] = ["subnet-0123456789abcdef0"]
    assert not [v for v in check_service_rules({"s": template}) if v.rule_id == sr.HOSTS_REACH_ECS]


def test_the_hand_list_of_names_holds_only_what_the_schemas_do_not_say() -> None:
    schemas = sr.names.resource_schemas()
    for kind, (prop, scope) in sr.names.NAMED.items():
        named = {prop} if scope is None else {prop, scope}
        assert not any(set(found) == named for found in schemas[kind]["identifiers"]), kind


def _second_association(cluster: Any) -> Res:
    return (
        "Assoc2",
        "AWS::ECS::ClusterCapacityProviderAssociations",
        {"Cluster": cluster, "CapacityProviders": [{"Ref": "Cp"}], "DefaultCapacityProviderStrategy": []},
    )


@pytest.mark.parametrize(
    ("templates", "refused"),
    [
        # aws-ecs's add_asg_capacity_provider on a second cluster of the stack: an association resource each
        ({"s": _associated(("Other", "AWS::ECS::Cluster", {}), _second_association({"Ref": "Other"}))}, True),
        # a cluster the templates do not make, named by its literal name
        ({"s": _associated(_second_association("legacy-cluster"))}, True),
        # the same cluster again, by the name it is given: one cluster, not this rule's
        ({"s": _associated(_second_association({"Ref": "Cluster"}))}, False),
        # a cluster of another stack that reads the provider's name through an export
        (
            {
                "s": {**_associated(), "Outputs": {"CpName": {"Value": {"Ref": "Cp"}, "Export": {"Name": "cp"}}}},
                "t": _stack(
                    ("Other", "AWS::ECS::Cluster", {"CapacityProviders": [{"Fn::ImportValue": "cp"}]}),
                ),
            },
            True,
        ),
    ],
)
def test_an_auto_scaling_provider_is_associated_with_one_cluster(templates: dict[str, Any], refused: bool) -> None:
    found = [(v.stack, v.logical_id) for v in check_service_rules(templates) if v.rule_id == sr.PROVIDER_ONE_CLUSTER]
    assert found == ([("s", "Cp")] if refused else [])


@pytest.mark.parametrize(
    ("principal", "depends", "refused"),
    [
        # the role the template creates, named by its ARN as text: nothing makes CloudFormation create it first
        ("arn:aws:iam::123456789012:role/model-runner", None, True),
        ({"Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:role/model-runner"}, None, True),
        ({"Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:role/model-runner"}, ["Runner"], False),
        ({"Fn::GetAtt": ["Runner", "Arn"]}, None, False),  # a reference: created first
        ("arn:aws:iam::123456789012:role/another-team", None, False),  # not the templates': may well exist
    ],
)
def test_a_key_policy_naming_a_role_the_templates_create_after_it_is_refused(
    principal: Any, depends: list[str] | None, refused: bool
) -> None:
    """KMS API Reference, CreateKey, Policy: "The principals in the key policy must exist and be visible to KMS"."""
    policy = {"Statement": [{"Effect": "Allow", "Principal": {"AWS": principal}, "Action": "kms:*", "Resource": "*"}]}
    stack = _stack(
        ("Key", "AWS::KMS::Key", {"KeyPolicy": policy}),
        _NAMED_ROLE,
        attributes={"Key": {"DependsOn": depends}} if depends else None,
    )
    found = [v.logical_id for v in check_service_rules({"s": stack}) if v.rule_id == sr.KEY_POLICY_PRINCIPALS]
    assert found == (["Key"] if refused else [])


@pytest.mark.parametrize(
    ("principal", "depends", "refused"),
    [
        ("arn:aws:iam::123456789012:role/model-runner", None, True),
        ("arn:aws:iam::123456789012:role/model-runner", ["Runner"], False),
        ({"Fn::GetAtt": ["Runner", "Arn"]}, None, False),
        ("arn:aws:iam::123456789012:role/another-team", None, False),
        ("arn:aws:iam::123456789012:root", None, False),
    ],
)
def test_a_trust_policy_naming_a_role_the_templates_create_after_it_is_refused(
    principal: Any, depends: list[str] | None, refused: bool
) -> None:
    found = [
        v.logical_id
        for v in check_service_rules({"s": _trusting(principal, depends=depends)})
        if v.rule_id == sr.TRUST_POLICY_PRINCIPALS
    ]
    assert found == (["Deployer"] if refused else [])


def test_a_role_that_trusts_itself_by_name_is_refused() -> None:
    """IAM saves a role principal as the role's unique id, so a role cannot name itself before it exists."""
    trust = {
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"AWS": {"Fn::Sub": "arn:aws:iam::${AWS::AccountId}:role/model-runner"}},
                "Action": "sts:AssumeRole",
            }
        ]
    }
    stack = _stack(("Runner", "AWS::IAM::Role", {"RoleName": "model-runner", "AssumeRolePolicyDocument": trust}))
    assert [v.logical_id for v in check_service_rules({"s": stack}) if v.rule_id == sr.TRUST_POLICY_PRINCIPALS] == [
        "Runner"
    ]


@pytest.mark.parametrize(
    ("container", "role", "refused"),
    [
        ({}, None, None),  # nothing to fetch before the task starts: the hosts pull and log with their own role
        ({"Secrets": [_SECRET]}, "arn:aws:iam::123456789012:role/exec", None),  # a role named by ARN is one
        ({"Secrets": []}, None, None),
        ({"Secrets": {"Fn::If": ["Prod", [_SECRET], {"Ref": "AWS::NoValue"}]}}, None, None),  # read at deploy
        ({"Secrets": [_SECRET]}, None, "reads secrets (HF_TOKEN)"),
        ({"RepositoryCredentials": _PRIVATE_REGISTRY}, None, "private registry"),
        ({"RepositoryCredentials": _PRIVATE_REGISTRY}, "", "private registry"),  # an empty ARN names no role
    ],
)
def test_a_task_that_reads_secrets_names_an_execution_role(
    container: dict[str, Any], role: str | None, refused: str | None
) -> None:
    extra = {} if role is None else {"ExecutionRoleArn": role}
    template = _stack(_task(containers=[_container(**container)], **extra))
    messages = [v.message for v in check_service_rules({"s": template}) if v.rule_id == sr.EXECUTION_ROLE_FOR_SECRETS]
    assert (refused is None and messages == []) or (refused is not None and refused in messages[0])
    assert refused is None or "execution_role" in messages[0]  # says what to set


@pytest.mark.parametrize(
    ("containers", "refused"),
    [
        ([_container(LogConfiguration={"LogDriver": "awslogs"})], None),  # no FireLens at all
        ([_ROUTER, _container(LogConfiguration=_FIRELENS), _container("side", LogConfiguration=_FIRELENS)], None),
        ([_container(LogConfiguration=_FIRELENS)], "no container routes them"),
        ([_ROUTER, _container(LogConfiguration={"LogDriver": "awslogs"})], "no container logs through it"),
        ([_ROUTER], "no container logs through it"),  # the router's own logs do not count without the driver
    ],
)
def test_firelens_comes_as_a_router_and_a_container_that_logs_through_it(
    containers: list[dict[str, Any]], refused: str | None
) -> None:
    template = _stack(_task(containers=containers))
    messages = [v.message for v in check_service_rules({"s": template}) if v.rule_id == sr.FIRELENS_PAIRED]
    assert (refused is None and messages == []) or (refused is not None and refused in messages[0])


@pytest.mark.parametrize(
    ("options", "refused"),
    [
        ({"awslogs-create-group": "true", "mode": "non-blocking", "max-buffer-size": "25m"}, None),
        ({"awslogs-datetime-format": "%Y-%m-%d", "awslogs-datetime-as-event-time": "true"}, None),
        ({"awslogs-create-group": {"Ref": "Create"}}, None),  # a token: read at deploy, not judged
        ({"awslogs-create-group": "false"}, "'awslogs-create-group' is 'false'"),
        ({"awslogs-group": ""}, "no 'awslogs-group'"),
        ({"awslogs-stream-prefx": "model"}, "'awslogs-stream-prefx'"),
        ({"awslogs_group": "x"}, "'awslogs_group'"),
        ({"awslogs-datetime-format": "%Y", "awslogs-multiline-pattern": "^x"}, "at the same time"),
    ],
)
def test_an_awslogs_configuration_takes_only_what_ecs_and_docker_take(
    options: dict[str, Any], refused: str | None
) -> None:
    template = _stack(_task(containers=[_container(LogConfiguration=_awslogs(**options))]))
    messages = [v.message for v in check_service_rules({"s": template}) if v.rule_id == sr.AWSLOGS_OPTIONS]
    assert (refused is None and messages == []) or (refused is not None and refused in messages[0]), messages


def test_awslogs_options_chosen_at_deploy_are_not_judged() -> None:
    chosen = {"Fn::If": ["Prod", {"awslogs-group": "a"}, {"awslogs-group": "b"}]}
    config = {"LogDriver": "awslogs", "Options": chosen}
    template = _stack(_task(containers=[_container(LogConfiguration=config)]))
    assert not [v for v in check_service_rules({"s": template}) if v.rule_id == sr.AWSLOGS_OPTIONS]


def test_an_awslogs_configuration_without_a_group_is_refused() -> None:
    config = {"LogDriver": "awslogs", "Options": {"awslogs-region": "us-east-1", "awslogs-stream-prefix": "m"}}
    template = _stack(_task(containers=[_container(LogConfiguration=config)]))
    messages = [v.message for v in check_service_rules({"s": template}) if v.rule_id == sr.AWSLOGS_OPTIONS]
    assert messages and "no 'awslogs-group'" in messages[0]


@pytest.mark.parametrize(
    ("template", "refused"),
    [
        (_routed(depends="Listener"), None),
        (_routed(depends="Rule", rule=True), None),
        (_routed(depends=None, listener=None), "no listener of the templates forwards"),
        (_routed(depends=None), "created before it"),
        (_routed(depends="Listener", rule=True), "created before it"),  # the listener, not the rule that routes
    ],
)
def test_a_services_target_group_is_routed_before_the_service_is_made(
    template: dict[str, Any], refused: str | None
) -> None:
    messages = [v.message for v in check_service_rules({"s": template}) if v.rule_id == sr.TARGET_GROUP_ROUTED_FIRST]
    assert (refused is None and messages == []) or (refused is not None and refused in messages[0]), messages


def test_a_target_group_the_templates_do_not_make_is_not_judged() -> None:
    entry = {"ContainerName": "model", "ContainerPort": 80, "TargetGroupArn": "arn:aws:elasticloadbalancing:x"}
    template = _stack(
        _task(containers=[_container(PortMappings=[{"ContainerPort": 80}])]), _service(LoadBalancers=[entry])
    )
    assert not [v for v in check_service_rules({"s": template}) if v.rule_id == sr.TARGET_GROUP_ROUTED_FIRST]


def test_a_listener_of_an_earlier_stack_routes_before_the_service() -> None:
    """The listener and its group in one stack, the service in another that reads the group's ARN from its outputs:
    CloudFormation deploys the first stack, listener included, before the second."""
    first = _routed(depends=None)
    svc = first["Resources"].pop("Svc")
    first["Resources"].pop("Td")
    first["Outputs"] = {"TgArn": {"Value": {"Ref": "Tg"}, "Export": {"Name": "lb:TgArn"}}}
    svc["Properties"]["LoadBalancers"][0]["TargetGroupArn"] = {"Fn::ImportValue": "lb:TgArn"}
    second = _stack(_task(containers=[_container(PortMappings=[{"ContainerPort": 80}])]))
    second["Resources"]["Svc"] = svc
    found = check_service_rules({"lb": first, "svc": second})
    assert not [v for v in found if v.rule_id == sr.TARGET_GROUP_ROUTED_FIRST]


_STACK_NAMED = {"Fn::Join": ["-", [{"Ref": "AWS::StackName"}, "search"]]}


@pytest.mark.parametrize(
    ("resource", "refused"),
    [
        (("C", "AWS::ECS::Cluster", {"ClusterName": "gpu_fleet-1"}), None),
        (("C", "AWS::ECS::Cluster", {"ClusterName": "gpu.fleet"}), "cluster name 'gpu.fleet'"),
        (_service(ServiceName=_STACK_NAMED), None),  # the stack's name is letters, digits and hyphens
        (_service(ServiceName={"Fn::Join": ["", [{"Ref": "AWS::StackName"}, "/search"]]}), "'/'"),
        (_service(ServiceName="search v2"), "service name 'search v2'"),
        (_service(ServiceName="s" * 256), "256 characters"),
        (_task(Family={"Ref": "FamilyParameter"}), None),  # a parameter: its value is not known here
        (("Cp", "AWS::ECS::CapacityProvider", {"Name": "gpu:l4"}), "capacity provider name 'gpu:l4'"),
    ],
)
def test_ecs_names_are_letters_digits_underscores_and_hyphens(resource: Res, refused: str | None) -> None:
    found = check_service_rules({"s": _stack(resource)})
    messages = [v.message for v in found if v.rule_id == sr.ECS_NAMES]
    assert (refused is None and messages == []) or (refused is not None and refused in messages[0]), messages


@pytest.mark.parametrize("kind", ["AWS::S3::BucketPolicy", "AWS::SNS::TopicPolicy", "AWS::ECR::Repository"])
@pytest.mark.parametrize(
    ("principal", "depends", "refused"),
    [
        ("arn:aws:iam::123456789012:role/model-runner", None, "by its name"),
        ("arn:aws:iam::123456789012:role/model-runner", ["Runner"], None),  # made to wait for the role
        ({"Fn::GetAtt": ["Runner", "Arn"]}, None, None),
        ("arn:aws:iam::123456789012:role/another-team", None, None),  # not the templates': may well exist
        (_SLR, None, "service-linked"),
    ],
)
def test_a_bucket_or_topic_policy_naming_a_role_that_may_not_exist_yet_is_refused(
    kind: str, principal: Any, depends: list[str] | None, refused: str | None
) -> None:
    """S3 answers MalformedPolicy "Invalid principal in policy", SNS "Policy Error: PrincipalNotFound"."""
    found = check_service_rules({"s": _bucket_policy(principal, kind=kind, depends=depends)})
    messages = [v.message for v in found if v.rule_id == sr.RESOURCE_POLICY_PRINCIPALS]
    assert (refused is None and messages == []) or (refused is not None and refused in messages[0]), messages


@pytest.mark.parametrize(("line", "refused"), [("ECS_WARM_POOLS_CHECK=true", False), ("ECS_CLUSTER=x", True)])
def test_a_warm_pool_reads_a_launch_configurations_user_data(line: str, refused: bool) -> None:
    """aws-autoscaling writes a launch configuration unless its feature flag asks for a launch template."""
    template = _warm_pool(line)
    lt = template["Resources"].pop("Lt")
    config = {
        "ImageId": "ami-1",
        "InstanceType": "m7i.large",
        "UserData": lt["Properties"]["LaunchTemplateData"]["UserData"],
    }
    template["Resources"]["Lc"] = {"Type": "AWS::AutoScaling::LaunchConfiguration", "Properties": config}
    group = template["Resources"]["Asg"]["Properties"]
    del group["LaunchTemplate"]
    group["LaunchConfigurationName"] = {"Ref": "Lc"}
    found = [v for v in check_service_rules({"s": template}) if v.rule_id == sr.WARM_POOL_ON_ECS_CAPACITY]
    assert bool(found) is refused


@pytest.mark.parametrize(
    ("template", "refused"),
    [
        (_warm_pool("ECS_WARM_POOLS_CHECK=true"), None),
        (_warm_pool("ECS_CLUSTER=x", provider=False), None),  # no capacity provider's group: ECS places nothing there
        (_warm_pool({"Fn::Base64": {"Ref": "UserDataParameter"}}), None),  # user data chosen at deploy
        (_warm_pool("ECS_CLUSTER=x"), "ECS_WARM_POOLS_CHECK"),
        (  # the cluster's name by reference, as aws-ecs writes it: a resource's name sets no agent setting
            _warm_pool({"Fn::Base64": {"Fn::Join": ["", ["echo ECS_CLUSTER=", {"Ref": "Cluster"}, " >> x"]]}}),
            "ECS_WARM_POOLS_CHECK",
        ),
        (_warm_pool("ECS_WARM_POOLS_CHECK=true", reuse=True), "ReuseOnScaleIn"),
        (_warm_pool("ECS_WARM_POOLS_CHECK=true", library=True), "GpuCapacity"),
    ],
)
def test_a_warm_pool_on_an_ecs_capacity_keeps_its_hosts_out_of_ecs_until_they_serve(
    template: dict[str, Any], refused: str | None
) -> None:
    found = check_service_rules({"s": template})
    messages = [v.message for v in found if v.rule_id == sr.WARM_POOL_ON_ECS_CAPACITY]
    assert (refused is None and messages == []) or (refused is not None and refused in messages[0]), messages


_SCRIPT = "#!/bin/bash\n" + "echo model-cache >> /etc/fstab\n" * 560  # 17,372 bytes


@pytest.mark.parametrize(
    ("template", "refused"),
    [
        (_user_data({"Fn::Base64": _SCRIPT[:16_384]}, "AWS::AutoScaling::LaunchConfiguration"), None),
        (_user_data({"Fn::Base64": _SCRIPT}, "AWS::AutoScaling::LaunchConfiguration"), "17,372 bytes"),
        (_user_data({"Fn::Base64": _SCRIPT}, "AWS::EC2::Instance"), "17,372 bytes"),
        (_user_data(base64.b64encode(_SCRIPT[:16_384].encode()).decode()), None),  # written encoded: its decoded size
        (_user_data(base64.b64encode(_SCRIPT.encode()).decode()), "17,372 bytes"),
        (_user_data({"Fn::Base64": "\u00e9" * 8_192}), None),  # bytes, not characters: two each in UTF-8
        (_user_data({"Fn::Base64": "\u00e9" * 8_193}), "16,386 bytes"),
        (  # a reference's text is not known here: counted as nothing, so a script at the limit with one passes
            _user_data({"Fn::Base64": {"Fn::Join": ["", [_SCRIPT[:16_384], {"Ref": "Cluster"}]]}}),
            None,
        ),
        (
            _user_data({"Fn::Base64": {"Fn::Sub": [_SCRIPT + "${Name}", {"Name": {"Ref": "Cluster"}}]}}),
            "references counted as empty",
        ),
        (_user_data({"Fn::Base64": {"Ref": "UserDataParameter"}}), None),  # chosen at deploy: not judged
        (_user_data({"Fn::If": ["Big", {"Fn::Base64": _SCRIPT}, {"Ref": "AWS::NoValue"}]}), None),  # unreadable
    ],
)
def test_user_data_is_at_most_what_ec2_launches(template: dict[str, Any], refused: str | None) -> None:
    messages = [v.message for v in check_service_rules({"s": template}) if v.rule_id == sr.USER_DATA_SIZE]
    assert (refused is None and messages == []) or (refused is not None and refused in messages[0]), messages


_ACCESS_POINT = {"AccessPointId": "fsap-1"}


@pytest.mark.parametrize(
    ("config", "refused"),
    [
        ({}, None),
        ({"RootDirectory": "/models"}, None),
        ({"TransitEncryption": "ENABLED", "AuthorizationConfig": _ACCESS_POINT, "RootDirectory": "/"}, None),
        ({"AuthorizationConfig": {"IAM": "ENABLED"}, "TransitEncryption": "DISABLED"}, "IAM authorization"),
        ({"AuthorizationConfig": _ACCESS_POINT}, "access point"),
        ({"TransitEncryption": "ENABLED", "AuthorizationConfig": _ACCESS_POINT, "RootDirectory": "/models"}, "/models"),
    ],
)
def test_an_efs_volumes_options_are_ones_ecs_takes_together(config: dict[str, Any], refused: str | None) -> None:
    found = check_service_rules({"s": _stack(_task(Volumes=[_efs(**config)]))})
    messages = [v.message for v in found if v.rule_id == sr.EFS_VOLUME_OPTIONS]
    assert (refused is None and messages == []) or (refused is not None and refused in messages[0]), messages


_NO_EGRESS = [{"CidrIp": "255.255.255.255/32", "IpProtocol": "icmp", "FromPort": 252, "ToPort": 86}]  # aws-ec2's


@pytest.mark.parametrize(
    ("template", "refused"),
    [
        (_efs_app([_nfs_from("HostSg")]), None),
        (_efs_app([_nfs_from(cidr="10.0.0.0/16")]), None),  # an address range: not judged (the hosts' may be in it)
        (_efs_app([{"IpProtocol": "-1", "SourceSecurityGroupId": {"Fn::GetAtt": ["HostSg", "GroupId"]}}]), None),
        (_efs_app([_nfs_from("TaskSg")], task_group=True), None),
        (_efs_app([], file_system="fs-0123456789abcdef0"), None),  # a file system of the account: not judged
        (_efs_app([]), "admit no NFS"),
        (_efs_app([_nfs_from("HostSg", port=443)]), "admit no NFS"),
        (_efs_app([_nfs_from("HostSg")], mount_target=False), "no mount target"),
        (_efs_app([_nfs_from("HostSg")], host_egress=_NO_EGRESS), "let no NFS"),
        (_efs_app([_nfs_from("HostSg")], host_egress=[_nfs_from(cidr="0.0.0.0/0", port=2049)]), None),
        (_efs_app([_nfs_from("TaskSg")], host_egress=_NO_EGRESS, task_group=True), None),  # the tasks' group: all out
    ],
)
def test_a_task_mounting_efs_reaches_its_mount_targets(template: dict[str, Any], refused: str | None) -> None:
    found = check_service_rules({"s": template})
    messages = [v.message for v in found if v.rule_id == sr.EFS_REACHABLE]
    assert (refused is None and messages == []) or (refused is not None and refused in messages[0]), messages


def test_efs_is_not_judged_where_the_hosts_cannot_be_read() -> None:
    """On EC2 the host mounts the file system: a service on its cluster's default strategy names no hosts here, so
    its tasks' own group being refused says nothing."""
    template = _efs_app([_nfs_from("HostSg")], task_group=True)
    del template["Resources"]["Svc"]["Properties"]["CapacityProviderStrategy"]
    assert not [v for v in check_service_rules({"s": template}) if v.rule_id == sr.EFS_REACHABLE]


def test_a_hosts_groups_egress_adds_up() -> None:
    """A host in two groups, one with its egress closed and one with none written (EC2's default, all out): NFS
    leaves."""
    template = _efs_app([_nfs_from("HostSg")], host_egress=_NO_EGRESS)
    resources = template["Resources"]
    resources["OpenSg"] = {"Type": "AWS::EC2::SecurityGroup", "Properties": {"GroupDescription": "open"}}
    resources["Lt"]["Properties"]["LaunchTemplateData"]["SecurityGroupIds"].append(
        {"Fn::GetAtt": ["OpenSg", "GroupId"]}
    )
    assert not [v for v in check_service_rules({"s": template}) if v.rule_id == sr.EFS_REACHABLE]


def test_an_efs_ingress_rule_of_its_own_is_read() -> None:
    template = _efs_app([])
    rule = {"GroupId": {"Fn::GetAtt": ["FsSg", "GroupId"]}, **_nfs_from("HostSg")}
    template["Resources"]["Nfs"] = {"Type": "AWS::EC2::SecurityGroupIngress", "Properties": rule}
    assert not [v for v in check_service_rules({"s": template}) if v.rule_id == sr.EFS_REACHABLE]
