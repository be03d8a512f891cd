"""Measures, on one NVIDIA GPU, the MPS facts the planner and the docs stand on (not CI; a GPU host only).

    python3 scripts/mps_facts.py [--json OUT.json]      # about 1-3 minutes; stdlib only, no CUDA toolkit

Each phase starts an MPS control daemon of its own (pipe and log folders in a temporary directory), runs CUDA clients
that create a context and allocate through the driver API (scripts/cuda_client.py, the one gpu_check.sh runs), reads
`nvidia-smi`, and quits the daemon. It measures:

- memory: what ECS registers for the GPU (NVML's total less its reserve) on this driver;
- overhead: GPU memory used with no MPS, with the MPS server and one client that allocates nothing, and per client
  (the context) as nvidia-smi lists it;
- context: under a pinned limit of 2048 MiB (`set_default_device_pinned_mem_limit`), the largest single allocation a
  client gets, so whether the client's context counts against its limit;
- seen: what cuMemGetInfo tells a client under a limit (what a framework sizing itself by "total memory" sees);
- environment: whether `CUDA_MPS_PINNED_DEVICE_MEM_LIMIT` in a client's environment limits it with no daemon limit,
  lowers a daemon limit, and lifts one;
- floor: whether a context can be created at all under limits smaller than one;
- framework: a PyTorch client (where torch is installed): its memory beyond its tensors once cuBLAS has run, and what
  torch.cuda.mem_get_info tells it under a limit;
- fault: what a client's illegal memory access (a kernel writing to an address it does not own) does to a busy and
  an idle client on the same GPU, and how soon a new client connects after it (torch and cupy, where installed);
- cap: a bf16 matrix product's speed under CUDA_MPS_ACTIVE_THREAD_PERCENTAGE of 100, 50, 25 and 10 (torch);
- utilization: whether NVML's per-process utilization tells two busy clients apart (torch and nvidia-ml-py);
- clients: how many clients one GPU's MPS server takes (NVIDIA documents 48 on Volta and newer, CUDA 13.0).

It prints one line a measurement and, with --json, writes them. Needs an NVIDIA driver with nvidia-smi and
nvidia-cuda-mps-control, python3 >= 3.10, and a GPU no other MPS daemon or exclusive-process job holds.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLIENT = Path(__file__).resolve().parent / "cuda_client.py"  # the CUDA client gpu_check.sh runs too


class Mps:
    """An MPS control daemon of this script's own, with its folders in a temporary directory."""

    def __init__(self, work: Path, name: str, default_limit_mib: int | None = None) -> None:
        self.folder = work / name
        (self.folder / "pipes").mkdir(parents=True)
        (self.folder / "logs").mkdir()
        self.env = dict(
            os.environ,
            CUDA_MPS_PIPE_DIRECTORY=str(self.folder / "pipes"),
            CUDA_MPS_LOG_DIRECTORY=str(self.folder / "logs"),
        )
        self.env.pop("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", None)
        self.clients: list[subprocess.Popen[bytes]] = []
        subprocess.run(["nvidia-cuda-mps-control", "-d"], env=self.env, check=True)
        if default_limit_mib is not None:
            self.control(f"set_default_device_pinned_mem_limit 0 {default_limit_mib}M")

    def control(self, command: str) -> str:
        done = subprocess.run(
            ["nvidia-cuda-mps-control"], input=command + "\n", env=self.env, capture_output=True, text=True, timeout=30
        )
        return done.stdout.strip()

    def spawn(self, program: str | Path, *args: str, **variables: str) -> subprocess.Popen[bytes]:
        """A client of this daemon: ``program`` (Python source, or a script's path) with ``args``, and ``variables``
        added to its environment; its output is read with :func:`first_line`, and :meth:`close` ends it."""
        source = ["-c", program] if isinstance(program, str) else [str(program)]
        process = subprocess.Popen(
            [sys.executable, *source, *args],
            env=dict(self.env, **variables),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self.clients.append(process)
        return process

    def client(self, mib: int, limit: str | None = None, wait: bool = True) -> tuple[subprocess.Popen[bytes], str]:
        """The CUDA client with ``mib`` allocated, under ``limit`` (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT) when given."""
        variables = {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": limit} if limit is not None else {}
        process = self.spawn(CLIENT, str(mib), **variables)
        return process, (first_line(process) if wait else "")

    def stop(self, process: subprocess.Popen[bytes]) -> None:
        process.kill()
        process.wait()

    def close(self) -> None:
        for process in self.clients:
            if process.poll() is None:
                process.kill()
                process.wait()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.control("quit")
        time.sleep(1)


def first_line(process: subprocess.Popen[bytes], seconds: float = 60) -> str:
    """The client's first line ("ready ..." or "refused ..."), or how it ended."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    deadline = time.monotonic() + seconds
    text = b""
    while b"\n" not in text and time.monotonic() < deadline:
        readable, _, _ = select.select([fd], [], [], 0.2)
        if readable:
            chunk = os.read(fd, 4096)
            if not chunk:  # the client ended
                process.wait()
                return text.decode(errors="replace").strip() or f"exited {process.returncode}"
            text += chunk
    if b"\n" in text:
        return text.split(b"\n")[0].decode(errors="replace").strip()
    return f"no answer in {seconds:.0f} s"


def smi(query: str, kind: str = "gpu") -> list[list[str]]:
    done = subprocess.run(
        ["nvidia-smi", f"--query-{kind}={query}", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=True,
    )
    return [[cell.strip() for cell in line.split(",")] for line in done.stdout.strip().splitlines() if line.strip()]


def used_mib() -> int:
    return int(smi("memory.used")[0][0])


def apps() -> dict[str, int]:
    """Compute processes nvidia-smi lists, by name and pid, with their used memory (MiB)."""
    return {
        f"{Path(name).name}:{pid}": int(mib) if mib.isdigit() else -1
        for pid, name, mib in smi("pid,process_name,used_memory", kind="compute-apps")
    }


def settle() -> None:
    time.sleep(2)  # nvidia-smi's process list catches up with new contexts


def overhead(work: Path, facts: dict[str, object]) -> None:
    facts["used_without_mps_mib"] = before = used_mib()
    mps = Mps(work, "overhead")
    try:
        _, line = mps.client(0)
        settle()
        facts["first_client"] = line
        facts["used_with_server_and_one_empty_client_mib"] = used_mib() - before
        facts["apps_with_one_empty_client"] = apps()
        _, line = mps.client(1024)
        settle()
        facts["used_with_a_second_client_of_1024_mib"] = used_mib() - before
        facts["apps_with_two_clients"] = apps()
    finally:
        mps.close()


def context(work: Path, facts: dict[str, object]) -> None:
    """Binary search for the largest allocation under a daemon limit of 2048 MiB."""
    mps = Mps(work, "context", default_limit_mib=2048)
    answers: dict[int, str] = {}
    try:
        low, high = 0, 4096  # low is granted; high is refused (checked below)
        for mib in (2048, 2047, 1536, 1024, high):
            process, answers[mib] = mps.client(mib)
            mps.stop(process)
        if not answers[high].startswith("refused"):
            facts["context_limit_search"] = f"{high} MiB under a 2048 MiB limit was not refused: {answers[high]}"
            return
        while high - low > 8:
            middle = (low + high) // 2
            process, answers[middle] = mps.client(middle)
            mps.stop(process)
            if answers[middle].startswith("ready"):
                low = middle
            else:
                high = middle
        facts["largest_allocation_under_2048_mib"] = low
        facts["context_answers"] = {str(k): v for k, v in sorted(answers.items())}
    finally:
        mps.close()


def environment(work: Path, facts: dict[str, object]) -> None:
    results: dict[str, str] = {}
    mps = Mps(work, "env-only")
    try:
        for mib in (768, 1536):
            process, results[f"no daemon limit, env 0=1024M, allocate {mib}"] = mps.client(mib, limit="0=1024M")
            mps.stop(process)
        process, results["no daemon limit, no env, allocate 8192"] = mps.client(8192)
        mps.stop(process)
    finally:
        mps.close()
    mps = Mps(work, "env-lower", default_limit_mib=2048)
    try:
        process, results["daemon 2048M, env 0=1024M, allocate 768"] = mps.client(768, limit="0=1024M")
        mps.stop(process)
        process, results["daemon 2048M, no env, allocate 768"] = mps.client(768)
        mps.stop(process)
        process, results["daemon 2048M, env 0=8192M, allocate 4096"] = mps.client(4096, limit="0=8192M")
        mps.stop(process)
        process, results["daemon 2048M, no env, allocate 4096"] = mps.client(4096)
        mps.stop(process)
    finally:
        mps.close()
    facts["environment"] = results


def floor(work: Path, facts: dict[str, object]) -> None:
    """Whether a client can create a context at all under limits smaller than a context."""
    mps = Mps(work, "floor")
    answers: dict[str, str] = {}
    try:
        for limit in (64, 256, 400, 512, 520, 600):
            process, answers[f"env 0={limit}M, allocate nothing"] = mps.client(0, limit=f"0={limit}M")
            mps.stop(process)
    finally:
        mps.close()
    facts["context_under_small_limits"] = answers


TORCH_CLIENT = r"""
import sys
import torch
mib = int(sys.argv[1])
x = torch.empty(mib * 2**20, dtype=torch.uint8, device="cuda")
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
(a @ a).sum().item()
free, total = torch.cuda.mem_get_info()
print(f"ready free={free // 2**20} total={total // 2**20} reserved={torch.cuda.memory_reserved() // 2**20}", flush=True)
import time
time.sleep(900)
"""


def framework(work: Path, facts: dict[str, object]) -> None:
    """A PyTorch client (when torch is importable): its process's memory beyond its tensors, and what it sees."""
    if importlib.util.find_spec("torch") is None:
        facts["torch"] = "not installed"
        return
    mps = Mps(work, "framework")
    try:
        results: dict[str, object] = {}
        for limit in (None, "0=4096M"):
            variables = {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": limit} if limit else {}
            process = mps.spawn(TORCH_CLIENT, "1024", **variables)
            line = first_line(process, seconds=120)
            settle()
            mine = {k: v for k, v in apps().items() if k.endswith(f":{process.pid}")}
            results[f"limit {limit}, 1024 MiB tensor and a bf16 matmul"] = {"answer": line, "nvidia-smi": mine}
            mps.stop(process)
        facts["torch"] = results
    finally:
        mps.close()


VICTIM = r"""
import sys, time
import torch
busy = sys.argv[1] == "busy"
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
print("ready", flush=True)
try:
    end = time.monotonic() + 20
    while time.monotonic() < end:
        if busy:
            (a @ a).sum().item()
        else:
            time.sleep(0.1)
    (a @ a).sum().item()
    print("survived", flush=True)
except Exception as error:
    print(f"failed {type(error).__name__}: {str(error).splitlines()[0]}", flush=True)
"""

FAULT = r"""
import cupy
kernel = cupy.RawKernel(r'extern "C" __global__ void bad(int* p) { p[threadIdx.x] = 1; }', "bad")
try:
    kernel((1,), (32,), (cupy.uint64(16),))
    cupy.cuda.Device().synchronize()
    print("no fault", flush=True)
except Exception as error:
    print(f"faulted {type(error).__name__}: {str(error).splitlines()[0]}", flush=True)
"""


def fault(work: Path, facts: dict[str, object]) -> None:
    """A client that writes to an address it does not own, beside a busy and an idle client on the same GPU."""
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("cupy") is None:
        facts["fault"] = "torch or cupy not installed"
        return
    mps = Mps(work, "fault")
    try:
        victims = {mode: mps.spawn(VICTIM, mode) for mode in ("busy", "idle")}
        ready = {mode: first_line(process, seconds=120) for mode, process in victims.items()}
        faulter = subprocess.run(
            [sys.executable, "-c", FAULT], env=mps.env, capture_output=True, text=True, timeout=120
        )
        after = {mode: first_line(process, seconds=60) for mode, process in victims.items()}
        faulted = time.monotonic()
        _, newcomer = mps.client(0)
        first = newcomer
        while not newcomer.startswith("ready") and time.monotonic() - faulted < 90:
            time.sleep(0.5)
            _, line = mps.client(0)
            newcomer = f"{line} after {time.monotonic() - faulted:.1f} s" if line.startswith("ready") else newcomer
        facts["fault"] = {
            "victims before": ready,
            "faulting client": (faulter.stdout.strip() or faulter.stderr.strip()[-300:]),
            "victims after": after,
            "a new client at once": first,
            "a new client later": newcomer,
        }
    finally:
        mps.close()


def memory(work: Path, facts: dict[str, object]) -> None:
    """What ECS registers for this GPU: NVML's total less its reserve (DeviceGetMemoryInfo_v2), and nvidia-smi -q."""
    query = subprocess.run(["nvidia-smi", "-q", "-d", "MEMORY"], capture_output=True, text=True, check=True).stdout
    block = query.split("FB Memory Usage")[1].split("BAR1")[0] if "FB Memory Usage" in query else query
    facts["nvidia_smi_fb_memory"] = " ".join(block.split())
    if importlib.util.find_spec("pynvml") is None:
        return
    import pynvml  # type: ignore[import-not-found,import-untyped,unused-ignore]  # nvidia-ml-py, where installed

    pynvml.nvmlInit()
    try:
        info = pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(0), version=pynvml.nvmlMemory_v2)
        facts["nvml_memory_v2_mib"] = {
            "total": info.total // 2**20,
            "reserved": info.reserved // 2**20,
            "total_less_reserved": (info.total - info.reserved) // 2**20,
        }
        facts["nvml_driver"] = str(pynvml.nvmlSystemGetDriverVersion())
    finally:
        pynvml.nvmlShutdown()


CAPPED = r"""
import time
import torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
for _ in range(3):
    a @ a
torch.cuda.synchronize()
count, began = 0, time.perf_counter()
while time.perf_counter() - began < 2:
    a @ a
    count += 1
torch.cuda.synchronize()
print(f"ready {2 * 8192**3 * count / (time.perf_counter() - began) / 1e12:.0f} TFLOP/s", flush=True)
"""


def cap(work: Path, facts: dict[str, object]) -> None:
    """A bf16 matrix product's speed under CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (ECS's compute cap), one client alone."""
    if importlib.util.find_spec("torch") is None:
        facts["cap"] = "torch not installed"
        return
    mps = Mps(work, "cap")
    results: dict[str, str] = {}
    try:
        for percent in (100, 50, 25, 10):
            process = mps.spawn(CAPPED, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=str(percent))
            results[f"{percent}%"] = first_line(process, seconds=90)
            process.wait()
    finally:
        mps.close()
    facts["cap"] = results


BUSY = r"""
import time
import torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
print("ready", flush=True)
end = time.monotonic() + 20
while time.monotonic() < end:
    a @ a
torch.cuda.synchronize()
"""


def utilization(work: Path, facts: dict[str, object]) -> None:
    """Whether NVML tells one MPS client's GPU use from another's: two busy clients (caps 60% and 20%), NVML's
    per-process utilization samples and `nvidia-smi pmon`."""
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("pynvml") is None:
        facts["utilization"] = "torch or nvidia-ml-py not installed"
        return
    import pynvml  # type: ignore[import-not-found,import-untyped,unused-ignore]  # nvidia-ml-py, where installed

    mps = Mps(work, "utilization")
    try:
        busy = {}
        for percent in (60, 20):
            process = mps.spawn(BUSY, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=str(percent))
            busy[process.pid] = percent
        ready = [first_line(process, seconds=90) for process in mps.clients]
        time.sleep(5)
        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            try:
                samples = [
                    {"pid": s.pid, "sm": s.smUtil, "mem": s.memUtil}
                    for s in pynvml.nvmlDeviceGetProcessUtilization(handle, 0)
                ]
            except pynvml.NVMLError as error:
                samples = [{"error": str(error)}]
            gpu = pynvml.nvmlDeviceGetUtilizationRates(handle).gpu
        finally:
            pynvml.nvmlShutdown()
        pmon = subprocess.run(["nvidia-smi", "pmon", "-c", "1"], capture_output=True, text=True, timeout=30)
        facts["utilization"] = {
            "clients (pid: cap %)": {str(pid): cap for pid, cap in busy.items()},
            "ready": ready,
            "nvml process samples": samples,
            "nvml gpu utilization %": gpu,
            "nvidia-smi pmon": " | ".join(line.strip() for line in pmon.stdout.splitlines()),
        }
    finally:
        mps.close()


def clients(work: Path, facts: dict[str, object], most: int = 64) -> None:
    mps = Mps(work, "clients")
    answers: list[str] = []
    try:
        for start in range(0, most, 8):
            batch = [mps.client(0, wait=False)[0] for _ in range(start, min(most, start + 8))]
            answers += [first_line(process, seconds=20) for process in batch]
        facts["clients_ready"] = sum(answer.startswith("ready") for answer in answers)
        facts["clients_tried"] = len(answers)
        facts["first_client_refused"] = next(
            (f"#{i + 1}: {a}" for i, a in enumerate(answers) if not a.startswith("ready")), "none"
        )
        settle()
        facts["used_with_clients_mib"] = used_mib()
    finally:
        mps.close()


PHASES = (memory, overhead, context, environment, floor, framework, fault, cap, utilization, clients)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path, help="write the measurements here")
    parser.add_argument("--phase", action="append", choices=[p.__name__ for p in PHASES], help="only these phases")
    args = parser.parse_args()
    for tool in ("nvidia-smi", "nvidia-cuda-mps-control"):
        if shutil.which(tool) is None:
            print(f"mps_facts: {tool} not found; run this on a host with an NVIDIA driver", file=sys.stderr)
            return 2
    facts: dict[str, object] = {
        "gpu": smi("name,driver_version,memory.total,compute_mode")[0],
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    failed = []
    with tempfile.TemporaryDirectory() as folder:
        for phase in [p for p in PHASES if not args.phase or p.__name__ in args.phase]:
            began = time.monotonic()
            try:
                phase(Path(folder), facts)
            except Exception as error:  # one phase's failure is a measurement too; the others still run
                facts[f"{phase.__name__}_error"] = repr(error)
                failed.append(phase.__name__)
            print(f"mps_facts: {phase.__name__} done in {time.monotonic() - began:.1f} s", flush=True)
    for key, value in facts.items():
        print(f"{key}: {json.dumps(value)}")
    if args.json:
        args.json.write_text(json.dumps(facts, indent=2) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
