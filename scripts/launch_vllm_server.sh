#!/usr/bin/env bash
# The vLLM server of an RL run in server mode (VLLM_MODE=server in scripts/launch_rl_full.sh): one engine over the
# GPUs of this node, which the trainers on the other nodes reach at VLLM_HOST:VLLM_PORT and push their weights into
# after every update. Run it on a node of its own, before the trainers (scripts/slurm_full.sbatch does both):
#   STAGE=math MODEL=/ckpt/sft/final bash scripts/launch_vllm_server.sh
#
# The command is the one `trl vllm-serve` (deprecated in TRL 1.16) builds: vLLM's dev-mode server with the NCCL
# weight transfer and processed log-probs, which GPPOTrainer's importance-sampling correction reads. One engine,
# tensor-parallel over the node (VLLM_TP, default all its GPUs): TRL 1.16 connects to one server, and its wrapper
# refuses data parallelism for dense models. The server owns its GPUs, so it takes VLLM_SERVER_MEM = 0.9 of their
# memory (vLLM's default); colocated vLLM shares the trainers' GPUs and takes RLConfig.vllm_gpu_memory_utilization.
# DRY_RUN=1 prints the command.
set -euo pipefail

STAGE=${STAGE:-math}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
VLLM_PORT=${VLLM_PORT:-8000}
VLLM_TP=${VLLM_TP:-$GPUS_PER_NODE}       # UNVERIFIED: ours; the paper's TP = 2 is verl's colocated engines (§2.4)
VLLM_SERVER_MEM=${VLLM_SERVER_MEM:-0.9}
RL_SET=${RL_SET:-}
PYTHON=${PYTHON:-python}
: "${MODEL:?set MODEL to the checkpoint the RL stage starts from}"

# The context the trainers ask for: prompt + completion of the stage (4K + 32K at full, docs/paper.md §2.4).
# shellcheck disable=SC2086
LENGTHS=$("$PYTHON" -m klear_lib.configs "rl_$STAGE" full --set $RL_SET \
  --show max_prompt_length max_completion_length) || exit 1
for pair in $LENGTHS; do declare "$pair"; done
MAX_MODEL_LEN=$((max_prompt_length + max_completion_length))

CMD=(env VLLM_SERVER_DEV_MODE=1 vllm serve "$MODEL"
  --host 0.0.0.0 --port "$VLLM_PORT"
  --tensor-parallel-size "$VLLM_TP" --data-parallel-size 1
  --gpu-memory-utilization "$VLLM_SERVER_MEM" --max-model-len "$MAX_MODEL_LEN" --dtype bfloat16
  --enable-scale-out --weight-transfer-config '{"backend": "nccl"}'
  --logprobs-mode processed_logprobs --max-logprobs -1)

if [ "${DRY_RUN:-0}" = 1 ]; then
  printf '%q ' "${CMD[@]}"
  echo
  exit 0
fi
exec "${CMD[@]}"
