"""Hardening warnings: what a container opts out of, each acknowledgeable by id with a reason. Pure Python."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from .rule_family import Family, Level, Source
from .tokens import is_token

AUTO_SCALING_SERVICE_ROLE_PATH = "aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling"
"""Amazon EC2 Auto Scaling's service-linked role, under ``arn:<partition>:iam::<account>:role/``: it launches the hosts
and publishes the groups' notifications, and a new account has it only once its first group exists."""

ECS_SERVICE_ROLE_PATH = "aws-service-role/ecs.amazonaws.com/AWSServiceRoleForECS"
"""Amazon ECS's service-linked role, under ``arn:<partition>:iam::<account>:role/``: a capacity provider cannot be made
without it, and ECS creates it only when a cluster is made by a caller who may create it (ECS API Reference,
CreateCluster)."""

RULES = Family("hardening")
_W, _TD = Level.WARNING, Source.TASK_DEFINITION
MUTABLE_IMAGE_TAG = RULES.declare(
    "ecs-gpu-sharing:MutableImageTag",
    _W,
    "container",
    _TD,
    "an image named by a tag can move to another build than the one its GPU budget was measured for",
)
DOCKER_HUB_WITHOUT_CREDENTIALS = RULES.declare(
    "ecs-gpu-sharing:DockerHubWithoutCredentials",
    _W,
    "container",
    _TD,
    "Docker Hub allows 10 pulls an hour per IP address without credentials, and the hosts behind a NAT gateway share "
    "one: past them, a new host cannot start the task",
)
ROOT_USER = RULES.declare(
    "ecs-gpu-sharing:ContainerUserNotSet",
    _W,
    "container",
    _TD,
    "a container without a user (or with root) runs as root",
)
WRITABLE_ROOT_FILESYSTEM = RULES.declare(
    "ecs-gpu-sharing:WritableRootFilesystem",
    _W,
    "container",
    _TD,
    "a container's root filesystem should be read-only, with writable paths where the server writes",
)
SECRET_IN_ENVIRONMENT = RULES.declare(
    "ecs-gpu-sharing:SecretInEnvironment",
    _W,
    "container",
    _TD,
    "environment values are written in plain text into the template and the task definition",
)
MANAGED_POLICY_ON_TASK_ROLE = RULES.declare(
    "ecs-gpu-sharing:ManagedPolicyOnTaskRole",
    _W,
    "task definition",
    _TD,
    "an AWS managed policy on a task role is broader than a model needs",
)

HARDENING_WARNINGS = (
    MUTABLE_IMAGE_TAG,
    DOCKER_HUB_WITHOUT_CREDENTIALS,
    ROOT_USER,
    WRITABLE_ROOT_FILESYSTEM,
    SECRET_IN_ENVIRONMENT,
    MANAGED_POLICY_ON_TASK_ROLE,
)

# Words of a variable name (split at "_") that say it holds a secret; TOKENIZERS_PARALLELISM or MAX_TOKENS do not.
_SECRET_WORDS = frozenset({"SECRET", "SECRETS", "PASSWORD", "PASSWD", "TOKEN", "APIKEY", "CREDENTIAL", "CREDENTIALS"})
_SECRET_PAIRS = frozenset({("API", "KEY"), ("PRIVATE", "KEY"), ("ACCESS", "KEY"), ("AUTH", "KEY")})


def secret_looking(names: Iterable[str]) -> list[str]:
    """The names among ``names`` that look like they hold a secret (a token, a key, a password)."""
    out = []
    for name in names:
        words = str(name).upper().split("_")
        if _SECRET_WORDS.intersection(words) or _SECRET_PAIRS.intersection(itertools.pairwise(words)):
            out.append(str(name))
    return sorted(out)


def secret_in_environment_message(where: str, names: Sequence[str]) -> str:
    return (
        f"{where}: environment {', '.join(names)} looks like a secret, and environment values are written into the "
        "template and the task definition in plain text; move it to secrets (SSM or Secrets Manager), or "
        "acknowledge the warning with a reason"
    )


def managed_policy_message(where: str, name: str) -> str:
    return (
        f"{where}: task_role_managed_policies {name} is an AWS managed policy, written for many uses and broader than "
        "a model needs; prefer task_role_statements naming the actions and resources, or acknowledge the warning "
        "with a reason"
    )


_MANAGED_POLICY = re.compile(r":iam::aws:policy/([A-Za-z0-9+=,.@_/-]+)")


def managed_policies(arns: Any) -> list[str]:
    """The names of the AWS managed policies among a role's ``ManagedPolicyArns`` as resolved (strings, or the
    ``Fn::Join`` aws-iam writes for ``arn:${Partition}:iam::aws:policy/<name>``)."""
    return sorted(set(_MANAGED_POLICY.findall(json.dumps(arns)))) if arns else []


def mutable_tag(image: str) -> str | None:
    """Why ``image`` may change under its GPU budget (a tag, not a digest), or ``None`` when it is pinned.

    An image wholly chosen at deploy time (a token: an asset, a parameter) cannot be judged, and passes; an image
    with a literal tag does not: the budget was measured for one build, and a tag can move to another.
    """
    if "@sha256:" in image:
        return None
    if is_token(image) and image.startswith("${Token[") and image.endswith("]}"):
        return None
    return (
        f"image {image} is named by a tag, not a digest: a tag can move to another build than the one its GPU "
        "budget was measured for; pin it as name@sha256:<digest>, or acknowledge the warning with a reason"
    )


_DOCKER_HUB = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io"})


def docker_hub(image: str) -> bool:
    """Whether Docker pulls ``image`` from Docker Hub: its name starts with Docker Hub's own host, or with no host at
    all. As Docker reads a name (distribution/reference, ``splitDockerDomain``), its first part is a registry host only
    when it holds a ``.`` or a ``:`` or is ``localhost``; ``vllm/vllm-openai`` and ``python:3.12`` are Docker Hub's."""
    first, slash, _ = image.split("@", 1)[0].partition("/")
    if not slash:
        return True
    return first in _DOCKER_HUB or not ("." in first or ":" in first or first == "localhost")


def docker_hub_message(container: str, image: str) -> str:
    return (
        f"container {container}: image {image} is pulled from Docker Hub without credentials, which allows 10 pulls "
        "an hour per IP address (Docker Hub usage and limits), and the hosts of private subnets share their NAT "
        "gateway's; the ECS agent pulls at each task start, so past ten an hour a new host cannot start the task "
        "(CannotPullContainerError). Copy the image to Amazon ECR (or pull it through an ECR pull through cache rule) "
        "and name that, or acknowledge the warning with a reason"
    )


def root_user_message(container: str) -> str:
    return (
        f"container {container} runs as the image's user, often root; give it a user (such as 1000:1000) where the "
        "image allows, or acknowledge the warning with a reason"
    )


def is_root(user: str) -> bool:
    """Whether a container user (``uid[:gid]`` or ``name[:group]``) is root: the name root, or a number that is 0 as
    Docker reads a numeric user (runc's libcontainer/user: a name no user has that parses as an integer with Go's
    strconv.Atoi is a uid, so 00 and +0 are uid 0)."""
    name = user.split(":", 1)[0]
    return name == "root" or re.fullmatch(r"[+-]?0+", name) is not None


def root_user_stated_message(container: str, user: str) -> str:
    return (
        f"container {container} runs as {user}, which is root: stating it does not make it safer; give it a user "
        "(such as 1000:1000) where the image allows, or acknowledge the warning with a reason"
    )


def writable_root_message(container: str) -> str:
    return (
        f"container {container} has a writable root filesystem; make it read-only with writable paths where the "
        "server writes, or acknowledge the warning with a reason"
    )
