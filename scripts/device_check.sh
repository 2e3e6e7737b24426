#!/usr/bin/env bash
# The device check on a fresh one-GPU Linux machine, installation from the package registry included, in 10 minutes:
#
#   bash scripts/device_check.sh [OUT]        # OUT (default device_check/) gets gpu_check.json and install.log
#
# It installs environment.gpu.yml's pins that the check imports into a venv (VENV, default /tmp/klear-gpu-venv;
# the notebook, test and DeepSpeed pins are left out: the check needs none of them), then runs
# scripts/gpu_check.py with what is left of BUDGET_S (default 600 s). The JSON is written after every phase, so a
# check cut at the limit still tells how far it got. Exit status: gpu_check.py's (0 pass, 1 a threshold failed,
# 2 no usable CUDA), 124 when the time ran out. INSTALL=0 uses PYTHON (default python3) as it is; PHASES=memory
# runs the phases that need no vLLM (with env): for a machine where vLLM cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-device_check}
VENV=${VENV:-/tmp/klear-gpu-venv}
BUDGET_S=${BUDGET_S:-600}
SKIP='^(papermill|nbval|nbstripout|jupyterlab|nbconvert|ipykernel|pytest|pytest-xdist|deepspeed)[=<>]'
start=$(date +%s)
mkdir -p "$OUT"

if [ "${INSTALL:-1}" = 1 ]; then
  mapfile -t PINS < <(sed -n 's/^      - \([A-Za-z][^ ]*\)$/\1/p' environment.gpu.yml | grep -Ev "$SKIP")
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip >"$OUT/install.log" 2>&1
  "$VENV/bin/pip" install -q "${PINS[@]}" >>"$OUT/install.log" 2>&1
  "$VENV/bin/pip" install -q --no-deps -e . >>"$OUT/install.log" 2>&1
  PY="$VENV/bin/python"
else
  PY=${PYTHON:-python3}
fi

left=$(( BUDGET_S - ($(date +%s) - start) ))
echo "installed in $(( BUDGET_S - left )) s; $left s left for the check"
[ "$left" -gt 60 ] || { echo "no time left for the check" >&2; exit 124; }
export PYTHONUNBUFFERED=1
timeout "$left" "$PY" scripts/gpu_check.py --out "$OUT" ${PHASES:+--phases "$PHASES"}
