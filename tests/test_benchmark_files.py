"""The benchmarks' fleets written as fleet files (``benchmarks/fleet_generator.fleet_file``), as the ``plan`` command
reads them: what the in-process figures plan is what the command's timings plan."""

from __future__ import annotations

import tomllib

import pytest

from ecs_gpu_sharing.core import fleet

from conftest import benchmarks_on_path


def test_shaped_fleets_written_as_one_file_of_two_capacities_keep_their_tasks_and_isolation_groups() -> None:
    """An ``iso`` fleet (isolation groups, some keeping their hosts) and a ``clients`` fleet (sidecars with budgets),
    written as one file, each on a capacity of its own: the parser reads every task back, each service on its
    capacity, in its group, keeping its hosts where it did, with its containers' budgets; the first file's name only."""
    with benchmarks_on_path():
        from fleet_generator import Fleet, fleet_file
        from shaped_fleets import fleet as shaped

        drawn = [shaped("iso", 335, 60_000)[:2], shaped("clients", 331, 1_000)[:2]]
        text = "".join(
            fleet_file(Fleet(0, 0, cap, services, "", 0.0), capacity=f"gpu{n}", prefix=f"c{n}", named=n == 0)
            for n, (cap, services) in enumerate(drawn)
        )
    spec = fleet.parse(tomllib.loads(text))
    assert text.count('name = "generated"') == 1 and set(spec.capacities) == {"gpu0", "gpu1"}
    for n, (cap, services) in enumerate(drawn):
        assert spec.capacities[f"gpu{n}"].instance_types == (cap.instance_type,)
        for s in services:
            parts = [p for name, p in spec.services.items() if name.rsplit("p", 1)[0] == f"c{n}{s.name}"]
            assert sum(p.desired_count for p in parts) == s.tasks, s.name
            written = {
                (
                    p.capacity,
                    p.allocation.isolation_group if p.allocation else "",
                    p.allocation is not None and p.allocation.isolate_host,
                    (p.gpu_budget_mib, *(c.gpu_budget_mib for c in p.sidecars)),
                )
                for p in parts
            }
            assert written == {(f"gpu{n}", s.isolation_group, s.isolate_host, s.shape.gpu_budgets_mib)}, s.name
    assert any(s.isolate_host for _, services in drawn for s in services)
    assert any(len(s.shape.gpu_budgets_mib) > 1 for _, services in drawn for s in services)


def test_a_service_that_asks_for_no_gpu_is_not_written_as_a_fleet_file() -> None:
    """``shaped_fleets.py gpuless`` puts services that ask for no GPU on the GPU hosts, as the construct road may (with
    a TaskTakesNoGpu warning); a fleet file gives every service a GPU budget, so ``fleet_file`` refuses the fleet, naming
    the service, where it once wrote a whole GPU's budget for it. ``bimodal`` has none, and is written."""
    with benchmarks_on_path():
        from fleet_generator import Fleet, fleet_file
        from shaped_fleets import fleet as shaped

        cap, services, _ = shaped("gpuless", 404, 1_000)
        gpuless = [s.name for s in services if not s.shape.uses_gpu]
        assert gpuless and len(gpuless) < len(services)
        with pytest.raises(ValueError, match=f"service {gpuless[0]} asks for no GPU"):
            fleet_file(Fleet(0, 0, cap, services, "", 0.0))
        cap, services, _ = shaped("bimodal", 404, 1_000)
        text = fleet_file(Fleet(0, 0, cap, services, "", 0.0))
    spec = fleet.parse(tomllib.loads(text))
    assert sum(s.desired_count for s in spec.services.values()) == 1_000
    budgets = sorted(s.gpu_budget_mib for s in spec.services.values())
    assert budgets[0] < cap.usable_gpu_memory_mib * 0.16 and budgets[-1] > cap.usable_gpu_memory_mib * 0.5
