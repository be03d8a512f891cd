"""A deploy rehearsal: the synthesized app deployed by the CDK CLI into moto's AWS emulator on loopback, then every
resource of every template accounted for.

moto's CloudFormation creates what it has a model for and quietly skips the rest while still reporting
CREATE_COMPLETE. The rehearsal therefore never trusts the stack status: for each resource it records one of

- ``created``: moto's CloudFormation made it and boto3 reads it back (``read back``) or, where no read-back is
  written here, moto lists it with a physical id (``listed``);
- ``adapted``: moto's CloudFormation has no model for the type, so the rehearsal made the same request through
  boto3 against moto's API (botocore checks the request against AWS's model; moto applies it);
- ``not checked``: neither; the report lists these, with why.

A security group rule declared twice fails the rehearsal, as EC2 would fail the deploy. What a rehearsal cannot
show (IAM evaluation, real placement on GPUs, the AMI's behaviour) is in docs/app.md.
"""

# This module completes moto (an emulator) at run time: it replaces methods of moto's models and registers models
# of its own, which mypy cannot type against moto's classes.
# mypy: disable-error-code="assignment,method-assign,attr-defined,abstract,arg-type,call-overload,unused-ignore,misc"
from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.shape import camel_keys
from ..core.template_limits import duplicate_security_group_rules

ACCOUNT = "123456789012"  # moto's account
REGION = "us-east-1"

CREATED = "created"
ADAPTED = "adapted"
NOT_CHECKED = "not checked"


@dataclass(frozen=True)
class ResourceCheck:
    stack: str
    logical_id: str
    type: str
    status: str  # CREATED, ADAPTED or NOT_CHECKED
    detail: str

    def __str__(self) -> str:
        return f"{self.stack}/{self.logical_id} ({self.type}): {self.status}: {self.detail}"


@dataclass
class Report:
    checks: list[ResourceCheck] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seeded: list[str] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(c.status == status for c in self.checks)

    def summary(self) -> str:
        return (
            f"{len(self.checks)} resources: {self.count(CREATED)} created by moto's CloudFormation, "
            f"{self.count(ADAPTED)} adapted through moto's API, {self.count(NOT_CHECKED)} not checked"
        )


# --- seeding what moto's copy of AWS's public data lacks ------------------------------------------------------------

_AMI_PARAMETER = re.compile(r"^/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/(?P<name>[^/]+)/image_id$")


def seed_public_amis(templates: Mapping[str, Any], *, account: str = ACCOUNT, region: str = REGION) -> list[str]:
    """Registers the pinned AMI releases that moto's copy of AWS's public SSM parameters does not have (it stops at
    release 20260922), with their public parameter, inside the in-process moto backend. Returns what was seeded."""
    import boto3
    from moto.ssm.models import Parameter, ssm_backends

    ec2 = boto3.client("ec2", region_name=region)
    ssm = boto3.client("ssm", region_name=region)
    seeded = []
    for template in templates.values():
        for parameter in (template.get("Parameters") or {}).values():
            match = _AMI_PARAMETER.match(str(parameter.get("Default", "")))
            if match is None:
                continue
            name = parameter["Default"]
            try:
                ssm.get_parameter(Name=name)
                continue
            except ssm.exceptions.ParameterNotFound:
                pass
            image = ec2.register_image(
                Name=match["name"], Architecture="x86_64", RootDeviceName="/dev/xvda", VirtualizationType="hvm"
            )["ImageId"]
            from moto.ec2.models import ec2_backends

            ec2_backends[account][region].amis[image].architecture = "x86_64"  # moto's RegisterImage drops it
            # AWS reserves /aws/ names, and so does moto's API: add it the way moto loads its public parameters.
            store = ssm_backends[account][region]._parameters
            store._check_loading_status(name)
            super(type(store), store).__getitem__(name).append(
                Parameter(
                    account_id=account,
                    name=name,
                    value=image,
                    parameter_type="String",
                    description=None,
                    allowed_pattern=None,
                    keyid=None,
                    last_modified_date=0,
                    version=1,
                    data_type="aws:ec2:image",
                )
            )
            seeded.append(f"AMI {match['name']} as {image}, with its public SSM parameter (newer than moto's copy)")
    return seeded


def seed_certificates(templates: Mapping[str, Any], *, account: str = ACCOUNT, region: str = REGION) -> list[str]:
    """Puts each ACM certificate a listener names into moto's ACM under that ARN (AWS would hold the team's own
    certificate there), as a self-signed certificate for the listener's host."""
    from moto.acm.models import CertBundle, acm_backends

    backend = acm_backends[account][region]
    seeded = []
    for template in templates.values():
        for resource in (template.get("Resources") or {}).values():
            for certificate in (resource.get("Properties") or {}).get("Certificates") or []:
                arn = certificate.get("CertificateArn")
                if (
                    not isinstance(arn, str)
                    or not arn.startswith(f"arn:aws:acm:{region}:")
                    or arn in backend._certificates
                ):
                    continue
                bundle = CertBundle.generate_cert("rehearsal.example.com", account_id=account, region=region)
                bundle.arn = arn
                backend._certificates[arn] = bundle
                seeded.append(f"certificate {arn} (self-signed; AWS would hold your own)")
    return seeded


def seed_container_images(assembly: Path, *, region: str = REGION) -> list[str]:
    """Puts a manifest under each Docker image asset's tag in moto's ECR, so cdk-assets finds it published and does
    not build it (no Docker daemon here): the image's contents are not rehearsed."""
    import boto3

    ecr = boto3.client("ecr", region_name=region)
    seeded = []
    for assets in sorted(assembly.glob("*.assets.json")):
        for asset_id, asset in (json.loads(assets.read_text()).get("dockerImages") or {}).items():
            for destination in asset["destinations"].values():
                repository = (
                    destination["repositoryName"]
                    .replace("${AWS::AccountId}", ACCOUNT)
                    .replace("${AWS::Region}", region)
                )
                manifest = {
                    "schemaVersion": 2,
                    "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                    "config": {
                        "mediaType": "application/vnd.docker.container.image.v1+json",
                        "size": 0,
                        "digest": "sha256:" + asset_id[:64].ljust(64, "0"),
                    },
                    "layers": [],
                }
                try:
                    ecr.put_image(
                        repositoryName=repository, imageManifest=json.dumps(manifest), imageTag=destination["imageTag"]
                    )
                except ecr.exceptions.ImageAlreadyExistsException:
                    continue
                seeded.append(f"image {asset.get('displayName', asset_id)} tagged in ECR, not built (no Docker here)")
    return seeded


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
}

_MODELS: list[type] = []

ADAPTED_IDS: dict[tuple[str, str], str] = {}
"""(stack id, logical id) -> physical id of every resource an adapter made, for the account."""


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


def _client(service: str) -> Any:
    import boto3

    return boto3.client(service, region_name=REGION)


MODEL_GAPS = (
    "moto keeps a change set's outputs from the empty template of a stack under review: outputs are parsed again",
    "moto teaches no Fn::GetStackOutput: read from moto's stacks in the region",
    "moto's target group answers no Fn::GetAtt: TargetGroupFullName, TargetGroupName, LoadBalancerArns",
    "moto's KMS key from CloudFormation keeps its policy as a JSON object, not text: stored as text",
    "moto's KMS takes a key policy naming a role that does not exist; KMS refuses it "
    "(MalformedPolicyDocumentException): the rehearsal refuses it too, so a key policy naming a service-linked role "
    "a new account lacks fails the deploy",
    "moto keeps an Auto Scaling group's scale-in-protected instances when the group is deleted; CloudFormation "
    "deletes a group with its instances (ForceDelete): they are terminated with it",
    "moto keeps a terminated instance's primary network interface and a deleted NAT gateway's interface, which "
    "EC2 deletes: deleted with them, so the VPC can go",
    "moto's stack deletion skips NAT gateways and route tables: deleted (with their subnet associations)",
    "moto looks change sets up by name across all stacks, and `cdk deploy` names every one cdk-deploy-change-set: "
    "looked up within the stack named, ChangeSetNotFound when it has none, as CloudFormation does",
    "moto resolves an SSM-typed parameter's previous value again on update, though it holds the resolved value: "
    "a value that names no parameter is kept as it is",
    "moto's task definition update reads ContainerDefinitions and Volumes as CloudFormation writes them (PascalCase), "
    "where its create path turns them into the API's camelCase first; an edited task definition then fails "
    "registration (SharingStrategy must have one and only one member set): the update turns them first too",
    "moto models Auto Scaling group capacity providers only: a Managed Instances provider's request is checked against "
    "botocore's ECS model, and the provider is held in moto's ECS backend by name",
)
"""Where the rehearsal completes moto itself; docs/app.md lists them. None makes a resource the template lacks."""


def _scope_change_sets() -> None:
    from moto.cloudformation.exceptions import CloudFormationError
    from moto.cloudformation.responses import CloudFormationResponse

    class ChangeSetNotFound(CloudFormationError):
        code = "ChangeSetNotFound"

    for method in ("describe_change_set", "delete_change_set", "execute_change_set"):
        original = getattr(CloudFormationResponse, method)

        def scoped(self: Any, original: Any = original) -> Any:
            name, stack = self._get_param("ChangeSetName"), self._get_param("StackName")
            if name and stack and not str(name).startswith("arn:"):
                matches = [
                    arn
                    for arn, change_set in self.cloudformation_backend.change_sets.items()
                    if change_set.change_set_name == name and stack in (change_set.stack_name, change_set.stack_id)
                ]
                if not matches:
                    raise ChangeSetNotFound(f"ChangeSet [{name}] does not exist")
                self.querystring["ChangeSetName"] = [matches[-1]]
            return original(self)

        setattr(CloudFormationResponse, method, scoped)


def _task_definition_update() -> None:
    """moto's TaskDefinition update with the key conversion its create path does (MODEL_GAPS)."""
    from moto.core.utils import pascal_to_camelcase, remap_nested_keys
    from moto.ecs.models import TaskDefinition

    update = TaskDefinition.update_from_cloudformation_json.__func__  # type: ignore[attr-defined]
    if getattr(update, "_camel_keys", False):
        return

    def converted(cls: Any, *, cloudformation_json: Any, **kwargs: Any) -> Any:
        # moto's CloudFormation calls it by keyword (parsing.parse_and_update_resource)
        properties = dict(cloudformation_json.get("Properties") or {})
        for key in ("ContainerDefinitions", "Volumes"):
            if key in properties:
                properties[key] = remap_nested_keys(properties[key], pascal_to_camelcase)
        return update(cls, cloudformation_json={**cloudformation_json, "Properties": properties}, **kwargs)

    converted._camel_keys = True  # type: ignore[attr-defined]
    TaskDefinition.update_from_cloudformation_json = classmethod(converted)  # type: ignore[method-assign,assignment]


def _fill_model_gaps() -> None:
    _scope_change_sets()
    from moto.cloudformation.parsing import ResourceMap
    from moto.ssm.models import ssm_backends

    parse_ssm = ResourceMap.parse_ssm_parameter

    def parse_ssm_parameter(self: Any, value: str, value_type: str) -> Any:
        if ssm_backends[self._account_id][self._region_name].get_parameter(value) is None:
            return value  # already resolved: the previous value of the parameter, kept on an update
        return parse_ssm(self, value, value_type)

    ResourceMap.parse_ssm_parameter = parse_ssm_parameter
    _task_definition_update()
    from moto.elbv2.models import FakeTargetGroup
    from moto.kms import models as kms

    def target_group_attribute(self: Any, name: str) -> Any:
        attributes = {
            "TargetGroupFullName": self.arn.split(":", 5)[-1],
            "TargetGroupName": self.name,
            "TargetGroupArn": self.arn,
            "LoadBalancerArns": list(self.load_balancer_arns),
        }
        if name not in attributes:
            from moto.cloudformation.exceptions import UnformattedGetAttTemplateException

            raise UnformattedGetAttTemplateException()
        return attributes[name]

    FakeTargetGroup.get_cfn_attribute = target_group_attribute

    create_key = kms.Key.create_from_cloudformation_json.__func__  # type: ignore[attr-defined]

    def key_from_cloudformation(
        cls: Any, resource_name: str, cloudformation_json: Any, *args: Any, **kwargs: Any
    ) -> Any:
        properties = cloudformation_json.get("Properties") or {}
        if isinstance(properties.get("KeyPolicy"), dict):
            properties["KeyPolicy"] = json.dumps(properties["KeyPolicy"])
        account = args[0] if args else kwargs.get("account_id", ACCOUNT)
        missing = missing_key_policy_roles(properties.get("KeyPolicy"), account_id=account)
        if missing:  # as KMS refuses it: the deploy fails, naming the role
            from moto.cloudformation.exceptions import ValidationError

            raise ValidationError(
                message=f"CreateKey {resource_name}: MalformedPolicyDocumentException: the policy names "
                f"{', '.join(missing)}, which does not exist in the account (KMS checks every principal)"
            )
        return create_key(cls, resource_name, cloudformation_json, *args, **kwargs)

    kms.Key.create_from_cloudformation_json = classmethod(key_from_cloudformation)

    from moto.autoscaling.models import AutoScalingBackend

    delete_group = AutoScalingBackend.delete_auto_scaling_group

    def force_delete(self: Any, group_name: str) -> None:
        group = self.autoscaling_groups.get(group_name)
        for state in group.instance_states if group is not None else []:
            state.protected_from_scale_in = False
        delete_group(self, group_name)

    AutoScalingBackend.delete_auto_scaling_group = force_delete

    from moto.ec2.models.instances import Instance
    from moto.ec2.models.nat_gateways import NatGatewayBackend

    terminate = Instance.terminate

    def terminate_with_interface(self: Any) -> Any:
        primary = self.nics.get(0)
        if primary is not None:
            primary.delete_on_termination = True  # EC2's default for an instance's primary interface
        return terminate(self)

    Instance.terminate = terminate_with_interface
    delete_nat = NatGatewayBackend.delete_nat_gateway

    def delete_nat_with_interface(self: Any, nat_gateway_id: str) -> Any:
        nat = delete_nat(self, nat_gateway_id)
        if getattr(nat, "_eni", None) is not None and nat._eni.id in self.enis:
            self.delete_network_interface(nat._eni.id)
        return nat

    NatGatewayBackend.delete_nat_gateway = delete_nat_with_interface
    from moto.ec2.models import ec2_backends
    from moto.ec2.models.nat_gateways import NatGateway

    def delete_nat_from_stack(self: Any, account_id: str, region_name: str) -> None:
        ec2_backends[account_id][region_name].delete_nat_gateway(self.id)  # moto's stack deletion skips it

    NatGateway.delete = delete_nat_from_stack
    from moto.ec2.models.route_tables import RouteTable

    def delete_route_table_from_stack(self: Any, account_id: str, region_name: str) -> None:
        backend = ec2_backends[account_id][region_name]
        for association in list(self._associations):
            backend.disassociate_route_table(association)
        backend.delete_route_table(self.id)

    RouteTable.delete = delete_route_table_from_stack


DELETERS: dict[str, Callable[[Callable[[str], Any], str], None]] = {
    "AWS::ECS::Service": _delete_ecs_service,
    "AWS::ECS::CapacityProvider": lambda c, name: c("ecs").delete_capacity_provider(capacityProvider=name),
    "AWS::ElasticLoadBalancingV2::LoadBalancer": lambda c, arn: c("elbv2").delete_load_balancer(LoadBalancerArn=arn),
    "AWS::ServiceDiscovery::PrivateDnsNamespace": lambda c, ns: c("servicediscovery").delete_namespace(Id=ns),
}


def install_adapters() -> None:
    """Registers a CloudFormation model in moto for each type of ``ADAPTERS`` (replacing moto's own where it has a
    thinner one), and teaches moto's
    template parser ``Fn::GetStackOutput`` (an output of another stack in the region, read from moto's stacks)."""
    from moto.cloudformation import models, parsing
    from moto.cloudformation.exceptions import ValidationError
    from moto.cloudformation.models import cloudformation_backends
    from moto.core.common_models import CloudFormationModel

    for kind, (name_property, handler) in ADAPTERS.items():

        class Adapted(CloudFormationModel):  # type: ignore[misc]
            _kind, _name_property, _handler = kind, name_property, staticmethod(handler)

            def __init__(self, physical: str, attributes: dict[str, Any]) -> None:
                self._physical, self._attributes = physical, attributes

            @property
            def physical_resource_id(self) -> str:
                return self._physical

            @classmethod
            def has_cfn_attr(cls, attr: str) -> bool:
                return True

            def get_cfn_attribute(self, attribute_name: str) -> Any:
                if attribute_name not in self._attributes:
                    raise ValidationError(message=f"the rehearsal's adapter for {self._kind} has no {attribute_name}")
                return self._attributes[attribute_name]

            @staticmethod
            def cloudformation_name_type() -> str:
                return ""

            @classmethod
            def create_from_cloudformation_json(  # type: ignore[override]
                cls,
                resource_name: str,
                cloudformation_json: dict[str, Any],
                account_id: str,
                region_name: str,
                **kwargs: Any,
            ) -> Adapted:
                props = cloudformation_json.get("Properties") or {}
                physical, attributes = cls._handler(_client, props, props.get(cls._name_property) or resource_name)
                ADAPTED_IDS[(kwargs.get("StackId", ""), kwargs.get("LogicalId", ""))] = physical
                return cls(physical, attributes)

            @classmethod
            def update_from_cloudformation_json(  # type: ignore[override]
                cls,
                original_resource: Any,
                new_resource_name: str,
                cloudformation_json: dict[str, Any],
                account_id: str,
                region_name: str,
            ) -> Any:
                return original_resource  # the rehearsal checks creation; an update keeps what was made

            @classmethod
            def delete_from_cloudformation_json(  # type: ignore[override]
                cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str
            ) -> None:
                return None

            def delete(self, account_id: str, region_name: str) -> None:
                deleter = DELETERS.get(self._kind)
                if deleter is not None:
                    deleter(_client, self._physical)

            def is_created(self) -> bool:
                return True

        Adapted.cloudformation_type = staticmethod(lambda kind=kind: kind)  # type: ignore[method-assign]
        Adapted.__name__ = f"Rehearsal{kind.replace(':', '')}"
        _MODELS.append(Adapted)  # moto finds models through __subclasses__, which holds them weakly
    parsing.get_model_list.cache_clear()
    parsing.get_model_map.cache_clear()
    parsing.get_name_type_map.cache_clear()
    model_map = parsing.get_model_map()  # cached: the adapters replace moto's thinner models in it
    for model in _MODELS:
        model_map[model.cloudformation_type()] = model  # type: ignore[attr-defined]

    original = parsing.clean_json
    if getattr(original, "_rehearsal", False):
        return

    # moto applies a change set's resources but keeps the outputs it parsed from the empty template of a stack under
    # review, so a stack created by `cdk deploy` (through a change set) would have no outputs: parse them again.
    change_set_apply = models.ChangeSet.apply

    def apply(self: Any) -> None:
        change_set_apply(self)
        self.stack.template = self.template
        self.stack._parse_template()
        self.stack.output_map = self.stack._create_output_map()

    models.ChangeSet.apply = apply
    _fill_model_gaps()

    def clean_json(resource_json: Any, resources_map: Any) -> Any:
        if isinstance(resource_json, dict) and "Fn::GetStackOutput" in resource_json:
            arg = original(resource_json["Fn::GetStackOutput"], resources_map)
            backend = cloudformation_backends[resources_map._account_id][resources_map._region_name]
            for stack in backend.stacks.values():
                if stack.name == arg["StackName"] and not stack.status.startswith("DELETE"):
                    for output in stack.outputs or []:
                        if output["OutputKey"] == arg["OutputName"]:
                            return output["OutputValue"]
            raise ValidationError(
                message=f"Fn::GetStackOutput: stack {arg['StackName']} has no output {arg['OutputName']}"
            )
        return original(resource_json, resources_map)

    clean_json._rehearsal = True  # type: ignore[attr-defined]
    parsing.clean_json = clean_json


# --- read-backs: what moto's CloudFormation made, read back through its API -------------------------------------------


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
