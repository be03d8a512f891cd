"""Requests through boto3 for the resource types moto's CloudFormation has no model for."""

# This module completes moto (an emulator) at run time: it replaces methods of moto's models and registers models
# of its own, which mypy cannot type against moto's classes.
# mypy: disable-error-code="assignment,method-assign,attr-defined,abstract,arg-type,call-overload,unused-ignore,misc"
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ecs_gpu_sharing.core.shape import camel_keys

from .report import ACCOUNT, REGION

# --- adapters: what moto's CloudFormation has no model for, made through moto's API ---------------------------------
#
# Each handler takes the resource's properties as moto's CloudFormation resolved them and makes the same request
# through boto3 against the emulator, so botocore checks the request against AWS's API model and moto applies it.
# It returns the physical id and the attributes Fn::GetAtt may read.

Handler = Callable[[Callable[[str], Any], dict[str, Any], str], tuple[str, dict[str, Any]]]


def _camel(value: Any) -> Any:
    """CloudFormation's PascalCase property names, all the way down, as the API's camelCase."""
    if isinstance(value, Mapping):
        return {k[0].lower() + k[1:]: _camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def _managed_instances_provider(
    c: Callable[[str], Any], props: dict[str, Any], name: str
) -> tuple[str, dict[str, Any]]:
    """A Managed Instances capacity provider: the request is checked against botocore's ECS model (moto would take
    it and fail: it models Auto Scaling group providers only), then the provider is held in moto's ECS backend under
    its name, so the cluster association and the services that name it deploy (MODEL_GAPS)."""
    from botocore.validate import ParamValidator
    from moto.ecs.models import CapacityProvider, ecs_backends

    request = {"name": name, "managedInstancesProvider": _camel(props["ManagedInstancesProvider"])}
    if props.get("ClusterName"):
        request["cluster"] = props["ClusterName"]
    shape = c("ecs").meta.service_model.operation_model("CreateCapacityProvider").input_shape
    report = ParamValidator().validate(request, shape)
    if report.has_errors():  # as CloudFormation reports a request ECS refuses: the deploy fails, saying why
        from moto.cloudformation.exceptions import ValidationError

        raise ValidationError(message=f"CreateCapacityProvider {name}: {report.generate_report()}")
    backend = ecs_backends[ACCOUNT][REGION]
    backend.capacity_providers[name] = CapacityProvider(ACCOUNT, REGION, name, {}, None)
    return name, {}


def _capacity_provider(c: Callable[[str], Any], props: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    if "ManagedInstancesProvider" in props:
        return _managed_instances_provider(c, props, name)
    provider = props["AutoScalingGroupProvider"]
    scaling = provider.get("ManagedScaling") or {}
    c("ecs").create_capacity_provider(
        name=name,
        autoScalingGroupProvider={
            "autoScalingGroupArn": provider["AutoScalingGroupArn"],
            "managedScaling": {
                k: int(v) if k == "targetCapacity" else v
                for k, v in camel_keys(scaling).items()
                if k in ("status", "targetCapacity")
            },
            "managedTerminationProtection": provider.get("ManagedTerminationProtection", "DISABLED"),
            **({"managedDraining": provider["ManagedDraining"]} if "ManagedDraining" in provider else {}),
        },
    )
    return name, {}


def _associations(c: Callable[[str], Any], props: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    strategy = [
        {k: int(v) if k in ("base", "weight") else v for k, v in camel_keys(s).items()}
        for s in props.get("DefaultCapacityProviderStrategy", [])
    ]
    c("ecs").put_cluster_capacity_providers(
        cluster=props["Cluster"], capacityProviders=props["CapacityProviders"], defaultCapacityProviderStrategy=strategy
    )
    return str(props["Cluster"]), {}


def _namespace(c: Callable[[str], Any], props: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    discovery = c("servicediscovery")
    operation = discovery.create_private_dns_namespace(Name=props["Name"], Vpc=props["Vpc"])
    namespace_id = discovery.get_operation(OperationId=operation["OperationId"])["Operation"]["Targets"]["NAMESPACE"]
    namespace = discovery.get_namespace(Id=namespace_id)["Namespace"]
    hosted_zone = namespace.get("Properties", {}).get("DnsProperties", {}).get("HostedZoneId", "")
    return namespace_id, {"Id": namespace_id, "Arn": namespace["Arn"], "HostedZoneId": hosted_zone}


def _scalable_target(c: Callable[[str], Any], props: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    c("application-autoscaling").register_scalable_target(
        ServiceNamespace=props["ServiceNamespace"],
        ResourceId=props["ResourceId"],
        ScalableDimension=props["ScalableDimension"],
        MinCapacity=int(props["MinCapacity"]),
        MaxCapacity=int(props["MaxCapacity"]),
    )
    physical = f"{props['ResourceId']}|{props['ScalableDimension']}|{props['ServiceNamespace']}"
    return physical, {}


def _numbers(value: Any) -> Any:
    """CloudFormation passes numbers as strings or numbers; the API model wants numbers."""
    if isinstance(value, dict):
        return {
            k: (
                float(v)
                if k in ("TargetValue",)
                else int(v)
                if k in ("ScaleInCooldown", "ScaleOutCooldown")
                else _numbers(v)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    return value


def _scaling_policy(c: Callable[[str], Any], props: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    resource_id, dimension, namespace = (
        props.get("ResourceId"),
        props.get("ScalableDimension"),
        props.get("ServiceNamespace"),
    )
    if "ScalingTargetId" in props:
        resource_id, dimension, namespace = str(props["ScalingTargetId"]).split("|")
    response = c("application-autoscaling").put_scaling_policy(
        PolicyName=props.get("PolicyName", name),
        ServiceNamespace=namespace,
        ResourceId=resource_id,
        ScalableDimension=dimension,
        PolicyType=props["PolicyType"],
        TargetTrackingScalingPolicyConfiguration=_numbers(props["TargetTrackingScalingPolicyConfiguration"]),
    )
    return str(response["PolicyARN"]), {"Arn": response["PolicyARN"]}


_ALARM_KEYS = (
    "AlarmDescription",
    "ActionsEnabled",
    "OKActions",
    "AlarmActions",
    "InsufficientDataActions",
    "MetricName",
    "Namespace",
    "Statistic",
    "ExtendedStatistic",
    "Dimensions",
    "Period",
    "Unit",
    "EvaluationPeriods",
    "DatapointsToAlarm",
    "Threshold",
    "ComparisonOperator",
    "TreatMissingData",
    "Metrics",
)


def _alarm(c: Callable[[str], Any], props: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    args = {k: props[k] for k in _ALARM_KEYS if k in props}
    for key in ("Period", "EvaluationPeriods", "DatapointsToAlarm"):
        if key in args:
            args[key] = int(args[key])
    if "Threshold" in args:
        args["Threshold"] = float(args["Threshold"])
    c("cloudwatch").put_metric_alarm(AlarmName=props.get("AlarmName", name), **args)
    arn = f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{props.get('AlarmName', name)}"
    return str(props.get("AlarmName", name)), {"Arn": arn}


def _transformation(item: Mapping[str, Any]) -> dict[str, Any]:
    out = camel_keys(item)
    if "dimensions" in out:  # a list of {Key, Value} in CloudFormation, a map in the API
        out["dimensions"] = {d["Key"]: d["Value"] for d in out["dimensions"]}
    if "defaultValue" in out:
        out["defaultValue"] = float(out["defaultValue"])
    return out


def _metric_filter(c: Callable[[str], Any], props: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    c("logs").put_metric_filter(
        logGroupName=props["LogGroupName"],
        filterName=props.get("FilterName", name),
        filterPattern=props["FilterPattern"],
        metricTransformations=[_transformation(t) for t in props["MetricTransformations"]],
    )
    return str(props.get("FilterName", name)), {}


def _topic_policy(c: Callable[[str], Any], props: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    for topic in props["Topics"]:
        c("sns").set_topic_attributes(
            TopicArn=topic, AttributeName="Policy", AttributeValue=json.dumps(props["PolicyDocument"])
        )
    return name, {}


def _egress(c: Callable[[str], Any], props: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    permission: dict[str, Any] = {"IpProtocol": str(props["IpProtocol"])}
    for key in ("FromPort", "ToPort"):
        if key in props:
            permission[key] = int(props[key])
    if "DestinationSecurityGroupId" in props:
        permission["UserIdGroupPairs"] = [{"GroupId": props["DestinationSecurityGroupId"]}]
    if "CidrIp" in props:
        permission["IpRanges"] = [{"CidrIp": props["CidrIp"]}]
    # EC2 refuses a rule that exists (InvalidPermission.Duplicate), and so does moto: the deploy fails as AWS's would.
    c("ec2").authorize_security_group_egress(GroupId=props["GroupId"], IpPermissions=[permission])
    return name, {}


def _api_shape(value: Any, *, key: str = "") -> Any:
    """CloudFormation's PascalCase property tree as the ECS API's camelCase request (maps keep their keys)."""
    if isinstance(value, dict):
        if key in ("Options", "DockerLabels"):
            return dict(value)
        return {k[0].lower() + k[1:]: _api_shape(v, key=k) for k, v in value.items()}
    if isinstance(value, list):
        return [_api_shape(v, key=key) for v in value]
    if key in ("Base", "Weight", "ContainerPort", "Port", "MaximumPercent", "MinimumHealthyPercent"):
        return int(value)
    return value


def _ecs_service(c: Callable[[str], Any], props: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    request = _api_shape({k: v for k, v in props.items() if k not in ("ServiceName",)})
    if "placementStrategies" in request:  # CloudFormation's plural is the API's placementStrategy (botocore's model)
        request["placementStrategy"] = request.pop("placementStrategies")
    for key in ("desiredCount", "healthCheckGracePeriodSeconds"):
        if key in request:
            request[key] = int(request[key])
    service = c("ecs").create_service(serviceName=props.get("ServiceName") or name, **request)["service"]
    return service["serviceArn"], {"Name": service["serviceName"], "ServiceArn": service["serviceArn"]}


def _load_balancer(c: Callable[[str], Any], props: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    elbv2 = c("elbv2")
    request = {
        "Name": props.get("Name") or name[:32].rstrip("-"),
        "Subnets": props.get("Subnets"),
        "SecurityGroups": props.get("SecurityGroups"),
        "Scheme": props.get("Scheme", "internet-facing"),
        "Type": props.get("Type", "application"),
    }
    balancer = elbv2.create_load_balancer(**{k: v for k, v in request.items() if v})["LoadBalancers"][0]
    arn = balancer["LoadBalancerArn"]
    attributes = [{"Key": a["Key"], "Value": str(a["Value"])} for a in props.get("LoadBalancerAttributes") or []]
    if attributes:
        elbv2.modify_load_balancer_attributes(LoadBalancerArn=arn, Attributes=attributes)
    return arn, {
        "DNSName": balancer["DNSName"],
        "LoadBalancerFullName": arn.split(":loadbalancer/", 1)[1],
        "LoadBalancerName": balancer["LoadBalancerName"],
        "CanonicalHostedZoneID": balancer.get("CanonicalHostedZoneId", ""),
        "SecurityGroups": balancer.get("SecurityGroups", []),
    }


def _secret(c: Callable[[str], Any], props: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    """A Secrets Manager secret (a construct-road app's own), its value given or generated as the template asks."""
    value = props.get("SecretString")
    generate = props.get("GenerateSecretString")
    if value is None:
        generate = generate or {}
        options = {k: generate[k] for k in ("PasswordLength", "ExcludeCharacters") if k in generate}
        for flag in ("ExcludePunctuation", "IncludeSpace", "RequireEachIncludedType"):
            if flag in generate:
                options[flag] = str(generate[flag]).lower() == "true"
        if "PasswordLength" in options:
            options["PasswordLength"] = int(options["PasswordLength"])
        value = c("secretsmanager").get_random_password(**options)["RandomPassword"]
        if generate.get("SecretStringTemplate") and generate.get("GenerateStringKey"):
            value = json.dumps({**json.loads(generate["SecretStringTemplate"]), generate["GenerateStringKey"]: value})
    request = {"Name": props.get("Name") or name, "SecretString": value}
    for key in ("Description", "KmsKeyId"):
        if props.get(key):
            request[key] = props[key]
    arn = c("secretsmanager").create_secret(**request)["ARN"]
    return arn, {"Id": arn}


def _delete_ecs_service(c: Callable[[str], Any], physical: str) -> None:
    cluster = physical.split("/")[-2]
    c("ecs").delete_service(cluster=cluster, service=physical, force=True)


ADAPTERS: dict[str, tuple[str, Handler]] = {
    # moto's own model of a service keeps only its cluster, task definition and count; this one sends the whole
    # request (capacity providers, placement, Service Connect, load balancers, tags) through botocore's model.
    "AWS::ECS::Service": ("ServiceName", _ecs_service),
    # moto's own model of a load balancer makes every one an application load balancer, whatever its Type.
    "AWS::ElasticLoadBalancingV2::LoadBalancer": ("Name", _load_balancer),
    # CloudFormation type: (its name property, handler)
    "AWS::ECS::CapacityProvider": ("Name", _capacity_provider),
    "AWS::ECS::ClusterCapacityProviderAssociations": ("", _associations),
    "AWS::ServiceDiscovery::PrivateDnsNamespace": ("", _namespace),
    "AWS::ApplicationAutoScaling::ScalableTarget": ("", _scalable_target),
    "AWS::ApplicationAutoScaling::ScalingPolicy": ("PolicyName", _scaling_policy),
    "AWS::CloudWatch::Alarm": ("AlarmName", _alarm),
    "AWS::Logs::MetricFilter": ("FilterName", _metric_filter),
    "AWS::SNS::TopicPolicy": ("", _topic_policy),
    "AWS::EC2::SecurityGroupEgress": ("", _egress),
    "AWS::SecretsManager::Secret": ("Name", _secret),
}

_MODELS: list[type] = []

ADAPTED_IDS: dict[tuple[str, str], str] = {}
"""(stack id, logical id) -> physical id of every resource an adapter made, for the account."""
