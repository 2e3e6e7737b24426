#!/usr/bin/env bash
# Paper-scale long-CoT SFT (docs/paper.md §2.2) with TRL's SFTTrainer on a GPU cluster: accelerate + DeepSpeed ZeRO-3.
# Not run in CI (no GPU there); DRY_RUN=1 prints the batch layout and the command instead of running it.
#
# Run on EVERY node, from the repository root, with the same variables and its own NODE_RANK
# (scripts/slurm_full.sbatch does this under Slurm):
#   NNODES=4 NODE_RANK=0 MASTER_ADDR=10.0.0.1 MODEL=Qwen/Qwen3-8B-Base TRAIN_FILE=/data/sft.jsonl \
#   OUTPUT_DIR=/ckpt/sft bash scripts/launch_sft_full.sh
#
# The global batch (256 rows, UNVERIFIED: the paper gives none) is the same on any number of ranks that divides it:
# klear_lib.configs spreads it over the world size (accumulation steps first) and stops here, before any GPU is
# taken, when it cannot. A killed job restarts with the same command and resumes from the newest complete
# checkpoint in OUTPUT_DIR. Extra SFTConfig overrides: SFT_SET="num_epochs=2 save_steps=200".
set -euo pipefail

NNODES=${NNODES:-1}
NODE_RANK=${NODE_RANK:-0}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
MASTER_ADDR=${MASTER_ADDR:-127.0.0.1}
MASTER_PORT=${MASTER_PORT:-29500}
SFT_SET=${SFT_SET:-}
: "${MODEL:?set MODEL to the base model (Qwen/Qwen3-8B-Base, docs/paper.md §2.1) or its directory}"
: "${TRAIN_FILE:?set TRAIN_FILE to SFT rows with a messages column (.jsonl or .parquet)}"
: "${OUTPUT_DIR:?set OUTPUT_DIR}"
RUN_RECORD=${RUN_RECORD:-$OUTPUT_DIR/run_record.csv}

WORLD=$((NNODES * GPUS_PER_NODE))
PYTHON=${PYTHON:-python}
# shellcheck disable=SC2086  # SFT_SET is a list of key=value words
LAYOUT=$("$PYTHON" -m klear_lib.configs sft full --world-size "$WORLD" --set $SFT_SET \
  --show global_batch per_device_batch_size gradient_accumulation_steps) || exit 1
echo "layout over $WORLD ranks: $LAYOUT" >&2

# shellcheck disable=SC2206
CMD=(accelerate launch
  --config_file configs/accelerate/zero3.yaml
  --num_machines "$NNODES" --num_processes "$WORLD" --machine_rank "$NODE_RANK"
  --main_process_ip "$MASTER_ADDR" --main_process_port "$MASTER_PORT"
  -m klear_lib.training.sft
  --preset full --model "$MODEL" --train-file "$TRAIN_FILE"
  --output-dir "$OUTPUT_DIR" --run-record "$RUN_RECORD"
  --set $SFT_SET)

if [ "${DRY_RUN:-0}" = 1 ]; then
  printf '%q ' "${CMD[@]}"
  echo
  exit 0
fi
exec "${CMD[@]}"
