"""The full-scale launchers without a GPU or Slurm: DRY_RUN=1 prints each command, and the batch layout they print
keeps the paper's batch at every world size from one GPU to the official 256 (or stops, naming the sizes that work)."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

from klear_lib.paths import REPO

SCRIPTS = REPO / "scripts"
ENV = {"DRY_RUN": "1", "MODEL": "/ckpt/in", "TRAIN_FILE": "/data/rows.parquet", "OUTPUT_DIR": "/ckpt/out",
       "PYTHON": sys.executable}
SIZES = [(1, 1), (1, 2), (1, 8), (8, 8), (16, 8), (32, 8)]  # (nodes, GPUs a node): 1, 2, 8, 64, 128, 256 ranks


def _run(script: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPTS / script)], cwd=REPO, env={**os.environ, **ENV, **env},
                          capture_output=True, text=True, timeout=60)


def _layout(stderr: str) -> dict[str, str]:
    line = next(ln for ln in stderr.splitlines() if ln.startswith("layout over"))
    return dict(pair.split("=") for pair in line.split(": ", 1)[1].split())


@pytest.mark.parametrize("nodes,gpus", SIZES)
def test_sft_launch_keeps_the_global_batch(nodes, gpus):
    out = _run("launch_sft_full.sh", NNODES=str(nodes), GPUS_PER_NODE=str(gpus), NODE_RANK="0")
    assert out.returncode == 0, out.stderr
    layout, world = _layout(out.stderr), nodes * gpus
    assert layout["global_batch"] == "256"
    assert int(layout["per_device_batch_size"]) * int(layout["gradient_accumulation_steps"]) * world == 256
    argv = shlex.split(out.stdout)
    assert argv[:2] == ["accelerate", "launch"] and "klear_lib.training.sft" in argv
    assert argv[argv.index("--num_processes") + 1] == str(world) and argv[argv.index("--preset") + 1] == "full"


@pytest.mark.parametrize("nodes,gpus", SIZES)
@pytest.mark.parametrize("stage,rollouts", [("math", 128), ("code", 256)])
def test_rl_launch_keeps_the_mini_batch(stage, rollouts, nodes, gpus):
    out = _run("launch_rl_full.sh", NNODES=str(nodes), GPUS_PER_NODE=str(gpus), STAGE=stage)
    if (stage, nodes * gpus) == ("code", 256):  # 4 rollouts a rank a step: the trainer's group filter would refuse
        assert out.returncode == 1 and "not whole groups of 8" in out.stderr and out.stdout == ""
        return
    assert out.returncode == 0, out.stderr
    layout, world = _layout(out.stderr), nodes * gpus
    slots = int(layout["per_device_rollouts"]) * int(layout["gradient_accumulation_steps"]) * world
    padded = layout["padded"] == "True"
    assert padded == (world > rollouts) and (slots == rollouts or padded and slots == 2 * rollouts)
    assert f"--num_processes {world}" in out.stdout


def test_launchers_stop_on_a_world_that_loses_the_batch():
    sft = _run("launch_sft_full.sh", NNODES="64")
    assert sft.returncode == 1 and "sft (full): a global batch of 256 rows does not split over 512" in sft.stderr
    code = _run("launch_rl_full.sh", NNODES="64", STAGE="code")
    assert code.returncode == 1 and "rl_code (full): a mini-batch of 256 rollouts" in code.stderr
    assert sft.stdout == code.stdout == ""  # no command printed


def test_vllm_server_command_serves_the_stage_context():
    out = _run("launch_vllm_server.sh", STAGE="math", VLLM_PORT="8123")
    argv = shlex.split(out.stdout)
    assert argv[:4] == ["env", "VLLM_SERVER_DEV_MODE=1", "vllm", "serve"] and argv[4] == "/ckpt/in"
    assert argv[argv.index("--max-model-len") + 1] == str(4096 + 32768)  # docs/paper.md §2.4
    assert argv[argv.index("--port") + 1] == "8123" and argv[argv.index("--data-parallel-size") + 1] == "1"
    assert argv[argv.index("--gpu-memory-utilization") + 1] == "0.9"
    assert argv[argv.index("--weight-transfer-config") + 1] == '{"backend": "nccl"}'


def _nodes(stdout: str) -> list[tuple[str, list[str]]]:
    """(header, argv) per '# host (...)' block of the Slurm script's dry run."""
    lines = stdout.splitlines()
    return [(lines[i], shlex.split(lines[i + 1])) for i, line in enumerate(lines) if line.startswith("# ")]


def test_slurm_sft_runs_one_launcher_per_node_with_the_first_as_rendezvous():
    out = _run("slurm_full.sbatch", JOB="sft", HOSTS="gpu01 gpu02 gpu03 gpu04")
    assert out.returncode == 0, out.stderr
    srun = shlex.split(out.stdout.splitlines()[0])
    assert srun[:4] == ["srun", "--nodes=4", "--ntasks=4", "--ntasks-per-node=1"]
    assert "--nodelist=gpu01,gpu02,gpu03,gpu04" in srun and "NODE_RANK=$SLURM_PROCID" in srun[-1]
    blocks = _nodes(out.stdout)
    assert [h for h, _ in blocks] == [f"# gpu0{r + 1} (node rank {r}):" for r in range(4)]
    for rank, (_, argv) in enumerate(blocks):
        assert argv[argv.index("--machine_rank") + 1] == str(rank) and "klear_lib.training.sft" in argv
        assert argv[argv.index("--main_process_ip") + 1] == "gpu01" and argv[argv.index("--num_processes") + 1] == "32"


def test_slurm_rl_at_32_nodes_colocates_over_256_ranks():
    hosts = " ".join(f"n{i:02d}" for i in range(32))
    out = _run("slurm_full.sbatch", JOB="rl", STAGE="math", HOSTS=hosts)
    assert out.returncode == 0, out.stderr
    blocks = _nodes(out.stdout)
    assert len(blocks) == 32 and all(argv[argv.index("--num_processes") + 1] == "256" for _, argv in blocks)
    assert "vllm serve" not in out.stdout and "vllm_server_host" not in out.stdout


def test_slurm_rl_server_mode_gives_the_last_node_to_vllm():
    out = _run("slurm_full.sbatch", JOB="rl", STAGE="code", VLLM_MODE="server", HOSTS="a b c")
    assert out.returncode == 0, out.stderr
    assert re.match(r"srun --nodes=1 --ntasks=1 --nodelist=c bash scripts/launch_vllm_server.sh &", out.stdout)
    (server_head, server), *trainers = _nodes(out.stdout)
    assert server_head == "# c (vLLM server):" and server[2:4] == ["vllm", "serve"]
    assert [h for h, _ in trainers] == ["# a (node rank 0):", "# b (node rank 1):"]
    for _, argv in trainers:
        assert argv[argv.index("--num_processes") + 1] == "16" and "vllm_server_host=c" in argv
        assert argv[argv.index("--set") + 1] == "vllm_mode=server"  # an RLConfig field, not a --trl one


def test_slurm_stops_before_srun_on_a_bad_layout_or_job():
    bad = _run("slurm_full.sbatch", JOB="rl", STAGE="math", VLLM_MODE="server",
               HOSTS=" ".join(f"n{i}" for i in range(4)))  # 3 trainer nodes: 24 ranks
    assert bad.returncode == 1 and "does not split over 24 ranks" in bad.stderr and "srun" not in bad.stdout
    alone = _run("slurm_full.sbatch", JOB="rl", VLLM_MODE="server", HOSTS="a")
    assert alone.returncode == 2 and "needs a node for the vLLM server" in alone.stderr
    assert _run("slurm_full.sbatch", JOB="eval", HOSTS="a").returncode == 2
