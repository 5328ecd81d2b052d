#!/usr/bin/env bash
# GPU checks anyone can run on a machine with NVIDIA GPUs, in a few minutes, with the tiny offline model:
#   1. 20 training steps on GPU 0 with mixed precision auto, ending `completed`, the model on CUDA
#   2. a launched run stopped gracefully, and NVML shows no process of the run holding GPU memory afterwards
#   3. two ranks over NCCL on GPUs 0 and 1 (only where two GPUs exist)
# One line per check: PASS or FAIL (or SKIP) and what was seen. Exit code: the number of failed checks.
# Usage: bench/gpu_check.sh [GRPO_TUI]   (default: grpo-tui on the PATH; from a checkout: .venv/bin/grpo-tui)
set -uo pipefail
GRPO=${1:-grpo-tui}
PY=$(dirname "$(command -v "$GRPO")")/python
[ -x "$PY" ] || PY=python3
WORK=$(mktemp -d -t grpo-gpu-check-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
failed=0
say() { printf '%-5s %-22s %s\n' "$1" "$2" "$3"; [ "$1" = FAIL ] && failed=$((failed + 1)); return 0; }

gpus=$("$PY" - <<'PY' 2>/dev/null
import pynvml
pynvml.nvmlInit()
print(pynvml.nvmlDeviceGetCount())
PY
)
if [ -z "$gpus" ] || [ "$gpus" = 0 ]; then
  say FAIL nvml "no NVIDIA GPU visible through NVML (nvidia-ml-py installed? driver loaded?)"
  exit 1
fi
say PASS nvml "$gpus GPU(s)"

MODEL="$WORK/tiny-model"
"$GRPO" tiny-model "$MODEL" >/dev/null 2>&1 || { say FAIL tiny-model "could not build it"; exit 1; }
ENV_FILE=$("$PY" -c 'from grpo_tui.resources import demo_env_file; print(demo_env_file())')
COMMON=(--model "$MODEL" --rl-env-module "$ENV_FILE" --rl-env-class PatternEnv --rl-num-generations 4
        --batch-size 8 --rl-max-new-tokens 12 --lr 0.002 --runs-dir "$WORK/runs")
status_of() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1])).get("status"))' "$1/state.json"; }

# 1. train on GPU 0, mixed precision auto
if timeout 240 "$GRPO" train "${COMMON[@]}" --gpus 0 --mixed-precision auto --max-steps 20 >"$WORK/train.out" 2>&1; then
  run=$(ls -d "$WORK"/runs/*/ | head -1)
  st=$(status_of "$run")
  placed=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1])).get("placement", {}).get("train_gpus"))' \
           "$run/state.json")
  if [ "$st" = completed ] && [ "$placed" = "[0]" ]; then
    say PASS train-gpu0 "20 steps on GPU $placed, status $st"
  else
    say FAIL train-gpu0 "status $st (see $run/trainer.log)"
  fi
else
  say FAIL train-gpu0 "grpo-tui train failed: $(tail -1 "$WORK/train.out")"
fi

# 2. launch, stop, and no process of the run holds GPU memory
out=$("$GRPO" launch "${COMMON[@]}" --gpus 0 --max-steps 100000 --save-steps 100000 --json 2>"$WORK/launch.err")
run=$("$PY" -c 'import json,sys; print(json.loads(sys.argv[1])["path"])' "$out" 2>/dev/null)
if [ -z "$run" ]; then
  say FAIL launch-stop "launch failed: $(tail -1 "$WORK/launch.err")"
else
  for _ in $(seq 120); do grep -q '"type": *"metrics"' "$run/events.jsonl" 2>/dev/null && break; sleep 1; done
  "$GRPO" stop "$run" --timeout 120 >"$WORK/stop.out" 2>&1
  sleep 2
  held=$("$PY" - "$run" <<'PY'
import sys, psutil, pynvml
run = sys.argv[1]
ours = set()
for p in psutil.process_iter(["environ"]):
    try:
        if (p.info["environ"] or {}).get("GRPO_TUI_RUN_DIR", "").rstrip("/") == run.rstrip("/"):
            ours.add(p.pid)
    except psutil.Error:
        pass
pynvml.nvmlInit()
held = []
for i in range(pynvml.nvmlDeviceGetCount()):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    for proc in pynvml.nvmlDeviceGetComputeRunningProcesses(h):
        if proc.pid in ours:
            held.append(f"gpu{i}:pid{proc.pid}")
print(" ".join(held) + ("" if held else f"none ({len(ours)} run process(es) alive)"))
PY
)
  st=$(status_of "$run")
  if [ "$st" = stopped ] && [[ "$held" == none* ]] && [[ "$held" == *"(0 run"* ]]; then
    say PASS launch-stop "stopped; no run process holds GPU memory"
  else
    say FAIL launch-stop "status $st; holding GPU memory: $held"
  fi
fi

# 3. two ranks over NCCL
if [ "$gpus" -ge 2 ]; then
  if timeout 300 "$GRPO" train "${COMMON[@]}" --gpus 0,1 --num-processes 2 --max-steps 10 >"$WORK/nccl.out" 2>&1; then
    run=$(ls -td "$WORK"/runs/*/ | head -1)
    st=$(status_of "$run")
    backend=$(grep -o -m1 -i 'nccl' "$run/trainer.log" || true)
    [ "$st" = completed ] && say PASS nccl-2-ranks "10 steps on GPUs 0,1, status $st ${backend:+(nccl in log)}" \
      || say FAIL nccl-2-ranks "status $st"
  else
    say FAIL nccl-2-ranks "grpo-tui train failed: $(tail -1 "$WORK/nccl.out")"
  fi
else
  say SKIP nccl-2-ranks "one GPU only"
fi
exit $failed
