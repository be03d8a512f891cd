#!/usr/bin/env bash
# The telemetry daemon's sampler against a real NVIDIA GPU under MPS: a check for a person with one GPU (not CI).
#
#   bash scripts/gpu_check.sh            # about 2-5 minutes: a virtualenv with nvidia-ml-py, then the checks
#
# It starts an MPS control daemon of its own (pipe and log folders in a temporary directory, a pinned memory limit
# per client), runs two CUDA clients that each allocate a known amount through the driver API
# (scripts/cuda_client.py: libcuda.so.1 by ctypes, no CUDA toolkit needed), runs the daemon's own sampler
# (operations/telemetry: read_gpus, with NVML's compute and MPS client lists) against them, and checks that each
# client's memory is attributed to its process;
# a third client asks for more than the pinned limit and must be refused. It prints a pass/fail table and exits
# non-zero when a check fails. Needs: an NVIDIA driver with nvidia-smi and nvidia-cuda-mps-control, python3 >= 3.10,
# and a GPU no other MPS daemon or exclusive-process job holds.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
telemetry="$here/../constructs/ecs_gpu_sharing/operations/telemetry"
work="$(mktemp -d)"
limit_mib=2048
sizes_mib=(512 1024)
over_mib=3072
pids=()

cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    if [[ -S "$work/pipes/control" || -p "$work/pipes/control" ]]; then
        echo quit | CUDA_MPS_PIPE_DIRECTORY="$work/pipes" nvidia-cuda-mps-control || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

for tool in nvidia-smi nvidia-cuda-mps-control python3; do
    command -v "$tool" >/dev/null || { echo "gpu_check: $tool not found; run this on a host with an NVIDIA driver" >&2; exit 2; }
done

echo "gpu_check: a virtualenv with nvidia-ml-py (pinned as in the daemon's image)"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet "$(grep '^nvidia-ml-py==' "$telemetry/requirements.txt")"
mkdir -p "$work/pkg/telemetry" "$work/pipes" "$work/logs"
cp "$telemetry/__init__.py" "$telemetry/sampling.py" "$telemetry/daemon.py" "$work/pkg/telemetry/"

echo "gpu_check: an MPS control daemon with a pinned limit of ${limit_mib} MiB per client"
export CUDA_MPS_PIPE_DIRECTORY="$work/pipes" CUDA_MPS_LOG_DIRECTORY="$work/logs"
nvidia-cuda-mps-control -d
echo "set_default_device_pinned_mem_limit 0 ${limit_mib}M" | nvidia-cuda-mps-control >/dev/null

wait_ready() {  # $1: the client's output file; waits up to 60 s for "ready" or "refused"
    for _ in $(seq 1 120); do
        if grep -qE '^(ready|refused)' "$1" 2>/dev/null; then return 0; fi
        sleep 0.5
    done
    return 1
}

for i in "${!sizes_mib[@]}"; do
    "$work/venv/bin/python" "$here/cuda_client.py" "${sizes_mib[$i]}" >"$work/client$i.out" 2>&1 &
    pids+=("$!")
    wait_ready "$work/client$i.out" || { echo "gpu_check: client $i did not start" >&2; cat "$work/client$i.out" >&2; exit 1; }
done
"$work/venv/bin/python" "$here/cuda_client.py" "$over_mib" >"$work/over.out" 2>&1 &
over_pid=$!
pids+=("$over_pid")
wait_ready "$work/over.out" || true
sleep 2  # NVML's process lists catch up with new contexts

# The daemon's sampler, as it runs on a host: NVML's compute and MPS client lists, each process once.
PYTHONPATH="$work/pkg" "$work/venv/bin/python" - "$work" "${pids[0]}" "${sizes_mib[0]}" "${pids[1]}" "${sizes_mib[1]}" <<'PY'
import pathlib, sys
import pynvml
from telemetry.daemon import read_gpus, mps_up

work = pathlib.Path(sys.argv[1])
clients = {int(sys.argv[2]): int(sys.argv[3]), int(sys.argv[4]): int(sys.argv[5])}
pynvml.nvmlInit()
gpus = read_gpus(pynvml)
seen = {pid: mib for gpu in gpus for pid, mib in gpu.processes}
rows = []
for pid, want in clients.items():
    got = seen.get(pid)
    # A context costs some memory of its own; the allocation must be there, and not much more.
    ok = got is not None and want <= got <= want + 1024
    rows.append((f"client {pid} attributed", f"{want}..{want + 1024} MiB", "absent" if got is None else f"{got} MiB", ok))
over = (work / "over.out").read_text().strip()
rows.append(("allocation past the pinned limit refused", "refused cuMemAlloc", over or "(nothing)", over.startswith("refused cuMemAlloc")))
rows.append(("MPS control daemon seen in /proc", "up", "up" if mps_up(pathlib.Path("/proc")) else "down", mps_up(pathlib.Path("/proc"))))
width = max(len(r[0]) for r in rows)
print(f"{'check':<{width}}  {'expected':<22}  {'got':<24}  result")
for name, want, got, ok in rows:
    print(f"{name:<{width}}  {want:<22}  {got[:24]:<24}  {'PASS' if ok else 'FAIL'}")
pynvml.nvmlShutdown()
sys.exit(0 if all(r[3] for r in rows) else 1)
PY
