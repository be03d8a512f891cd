"""Hardening warnings: what a container opts out of, each acknowledgeable by id with a reason. Pure Python."""

from __future__ import annotations

from .tokens import is_token

MUTABLE_IMAGE_TAG = "ecs-gpu-sharing:MutableImageTag"
ROOT_USER = "ecs-gpu-sharing:ContainerUserNotSet"
WRITABLE_ROOT_FILESYSTEM = "ecs-gpu-sharing:WritableRootFilesystem"

HARDENING_WARNINGS = (MUTABLE_IMAGE_TAG, ROOT_USER, WRITABLE_ROOT_FILESYSTEM)


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


def root_user_message(container: str) -> str:
    return (
        f"container {container} runs as the image's user, often root; give it a user (such as 1000:1000) where the "
        "image allows, or acknowledge the warning with a reason"
    )


def writable_root_message(container: str) -> str:
    return (
        f"container {container} has a writable root filesystem; make it read-only with writable paths where the "
        "server writes, or acknowledge the warning with a reason"
    )
