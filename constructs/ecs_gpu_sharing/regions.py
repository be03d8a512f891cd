"""The AWS regions botocore's endpoint data knows, read from botocore's bundled data: no session, no credentials, no
call, and no boto3 (the synth imports this; boto3 stays in ``operations``)."""

from __future__ import annotations

import functools

import botocore.loaders


@functools.cache
def known_regions() -> tuple[str, ...]:
    """Every region botocore's endpoint data knows, sorted."""
    endpoints = botocore.loaders.create_loader().load_data("endpoints")
    return tuple(sorted({region for partition in endpoints["partitions"] for region in partition["regions"]}))
