#!/usr/bin/env bash
# Paper-scale GPPO RL (docs/paper.md §2.4) with GPPOTrainer on a GPU cluster: accelerate + DeepSpeed ZeRO-3,
# vLLM rollouts colocated with training (default) or on a separate vLLM server. Not run in CI (no GPU there).
#
# Run on EVERY node, from the repository root, with the same variables and its own NODE_RANK
# (scripts/slurm_full.sbatch does this under Slurm):
#   NNODES=4 NODE_RANK=0 MASTER_ADDR=10.0.0.1 MODEL=/ckpt/klear-sft TRAIN_FILE=/data/math_rl.parquet \
#   OUTPUT_DIR=/ckpt/rl-math STAGE=math bash scripts/launch_rl_full.sh
# then the code stage from the math result:
#   ... MODEL=/ckpt/rl-math/final TRAIN_FILE=/data/code_rl.parquet OUTPUT_DIR=/ckpt/rl-code STAGE=code ...
#
# A killed job is restarted with the same command: it resumes from the last checkpoint in OUTPUT_DIR
# (saved every 5 RL steps, docs/paper.md §2.4). Extra RLConfig overrides: RL_SET="max_steps=300 dual_clip=10".
#
# The batch layout follows from NNODES x GPUS_PER_NODE (klear_lib.configs, RLConfig): any world size dividing the
# mini-batch's rollouts (128 math, 256 code), and math on 256 ranks (the official 32 nodes) with padded updates
# (RLConfig.padded). Any other size stops here with the sizes that work, before a GPU is taken.
#
# Server mode (VLLM_MODE=server): start scripts/launch_vllm_server.sh first on a node the trainers do not use
# (docs/stack.md §5: trainer and server on one GPU fail), then launch the trainers on the other nodes with
# VLLM_MODE=server VLLM_HOST=<server node address>; NNODES counts the trainer nodes only.
# Environment: environment.gpu.yml (trl 1.16.0, vllm 0.31.0, torch 2.13.0, transformers 5.17, deepspeed).
set -euo pipefail

NNODES=${NNODES:-4}
NODE_RANK=${NODE_RANK:-0}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
MASTER_ADDR=${MASTER_ADDR:-127.0.0.1}
MASTER_PORT=${MASTER_PORT:-29500}
STAGE=${STAGE:-math}                       # math | code (code: LR 5e-7, mini-batch 32 prompts)
VLLM_MODE=${VLLM_MODE:-colocate}           # colocate | server
VLLM_HOST=${VLLM_HOST:-127.0.0.1}
VLLM_PORT=${VLLM_PORT:-8000}
VLLM_TIMEOUT=${VLLM_TIMEOUT:-900}          # s the trainers wait for the server (TRL: 240); UNVERIFIED, ours
RL_SET=${RL_SET:-}
: "${MODEL:?set MODEL to the SFT checkpoint (or the math-RL result for STAGE=code)}"
: "${TRAIN_FILE:?set TRAIN_FILE to verl-schema RL rows (.parquet or .jsonl)}"
: "${OUTPUT_DIR:?set OUTPUT_DIR}"
RUN_RECORD=${RUN_RECORD:-$OUTPUT_DIR/run_record.csv}

WORLD=$((NNODES * GPUS_PER_NODE))
PYTHON=${PYTHON:-python}
TRL_SET=()
if [ "$VLLM_MODE" = server ]; then  # vllm_mode is an RLConfig field; the server's address is TRL's alone
  RL_SET="vllm_mode=server $RL_SET"
  TRL_SET=("vllm_server_host=$VLLM_HOST" "vllm_server_port=$VLLM_PORT" "vllm_server_timeout=$VLLM_TIMEOUT")
fi
# The batch layout (accumulation steps, rollouts per rank) is derived from the world size by
# klear_lib.configs.get_config(..., world_size=WORLD), the one place it is computed; print it, and stop here when
# the mini-batch does not split over the ranks (before any GPU is taken).
# shellcheck disable=SC2086  # RL_SET is a list of key=value words
LAYOUT=$("$PYTHON" -m klear_lib.configs "rl_$STAGE" full --world-size "$WORLD" --set $RL_SET \
  --show gradient_accumulation_steps per_device_rollouts padded) || exit 1
echo "layout over $WORLD ranks: $LAYOUT" >&2

CMD=(accelerate launch
  --config_file configs/accelerate/zero3.yaml
  --num_machines "$NNODES" --num_processes "$WORLD" --machine_rank "$NODE_RANK"
  --main_process_ip "$MASTER_ADDR" --main_process_port "$MASTER_PORT"
  -m klear_lib.training.gppo_trainer
  --preset full --stage "$STAGE" --model "$MODEL" --train-file "$TRAIN_FILE"
  --output-dir "$OUTPUT_DIR" --run-record "$RUN_RECORD"
  --set $RL_SET
  --trl "${TRL_SET[@]}")

if [ "${DRY_RUN:-0}" = 1 ]; then
  printf '%q ' "${CMD[@]}"
  echo
  exit 0
fi
exec "${CMD[@]}"
