"""The greedy's builder stops its fill once no task of any item fits what the host has left (``_Builder._full``): the
hosts it builds are those of ``add`` called for every item of the order, at every boundary of CPU, memory, network
interfaces, GPU memory, MPS clients and idle GPUs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_gpu_sharing.core import host_lp
from ecs_gpu_sharing.core.host_lp.patterns import _Builder

_ITEM = st.tuples(
    st.sampled_from(("", "g1", "g2")),  # isolation group
    st.sampled_from((0, 2, 3, 4, 6)),  # GPU memory (0: no GPU, or a whole GPU below)
    st.integers(1, 3),  # MPS clients
    st.sampled_from((0, 0, 0, 1, 2)),  # whole GPUs
    st.integers(1, 4),  # CPU
    st.integers(1, 4),  # memory
    st.integers(0, 2),  # interfaces
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_ITEM, min_size=1, max_size=6),
    st.tuples(st.integers(1, 3), st.integers(4, 8), st.integers(0, 10), st.integers(0, 10), st.integers(0, 3)),
    st.data(),
)
def test_a_fill_that_stops_when_nothing_fits_builds_what_adding_every_item_builds(
    drawn: list[tuple[str, int, int, int, int, int, int]], room: tuple[int, int, int, int, int], data: st.DataObject
) -> None:
    gpus, usable, cpu, mem, enis = room
    items = [
        host_lp.Item(f"s{k}", group, 0 if whole else size, clients if size and not whole else 0, whole, c, m, e, 9)
        for k, (group, size, clients, whole, c, m, e) in enumerate(drawn)
    ]
    host = host_lp.HostSpec(gpus, usable, cpu, mem, enis)
    order = data.draw(st.lists(st.integers(0, len(items) - 1), max_size=10))
    most = data.draw(st.lists(st.integers(0, 6), min_size=len(items), max_size=len(items)))
    filled, added = _Builder(items, host), _Builder(items, host)
    filled.fill(order, most)
    for i in order:
        added.add(i, most[i] - added.counts[i])
    assert filled.pattern() == added.pattern()
    assert (filled.cpu, filled.mem, filled.enis) == (added.cpu, added.mem, added.enis)


def _mps(size: int, clients: int = 1, cpu: int = 1, mem: int = 1, enis: int = 0) -> host_lp.Item:
    return host_lp.Item("m", "", size, clients, 0, cpu, mem, enis, 9)


def _bare(cpu: int, mem: int, enis: int = 0) -> host_lp.Item:
    return host_lp.Item("b", "", 0, 0, 0, cpu, mem, enis, 9)


def _whole(gpus: int = 1) -> host_lp.Item:
    return host_lp.Item("w", "", 0, 0, gpus, 1, 1, 0, 9)


@pytest.mark.parametrize(
    ("items", "host"),
    [
        # after the first item, the second fits exactly what is left of one need, nothing else fits
        ([_mps(4, cpu=2, mem=2), _bare(2, 2, 1)], host_lp.HostSpec(1, 4, 4, 4, 1)),  # CPU, memory and interfaces
        ([_mps(2), _mps(2, cpu=2)], host_lp.HostSpec(1, 4, 9, 9, 9)),  # the GPU's memory
        ([_mps(1, clients=47), _mps(1)], host_lp.HostSpec(1, 10, 9, 9, 9)),  # the GPU's last client
        ([_mps(1, cpu=8), _mps(1, cpu=1)], host_lp.HostSpec(1, 10, 9, 9, 9)),  # an MPS task's CPU
        ([_mps(1, mem=8), _mps(1, mem=1)], host_lp.HostSpec(1, 10, 9, 9, 9)),  # its memory
        ([_mps(1, enis=2), _mps(1, enis=1)], host_lp.HostSpec(1, 10, 9, 9, 3)),  # its interfaces
        ([_whole(), _whole()], host_lp.HostSpec(2, 10, 9, 9, 9)),  # the last idle GPU
        ([_whole(), _whole()], host_lp.HostSpec(2, 10, 2, 2, 9)),  # a whole-GPU task's CPU and memory
        ([_whole(), _whole(2), _whole()], host_lp.HostSpec(2, 10, 9, 9, 9)),  # one too few for two, one for one
    ],
)
def test_a_fill_goes_on_while_a_task_fits_exactly_what_is_left(
    items: list[host_lp.Item], host: host_lp.HostSpec
) -> None:
    order = list(range(len(items)))
    most = [1] * len(items)
    filled, added = _Builder(items, host), _Builder(items, host)
    filled.fill(order, most)
    for i in order:
        added.add(i, most[i] - added.counts[i])
    assert filled.counts == added.counts and filled.counts[-1] == 1
