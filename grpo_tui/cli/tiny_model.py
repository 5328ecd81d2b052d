"""``grpo-tui tiny-model``: a tiny causal LM and tokenizer, built offline (tests and the demo use it).

Built in a child process, so this one stays torch-free. The child also decides whether a cached model is
current (``trainer_core.commands.tiny_model.is_built``), so the format of the cache is known in one place.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from trainer_core.contract.config.user_files import user_cache_dir

from .common import BadInput, needs_trainer

# argv: the folder, 'pretrained' or 'random', then the variant: 'vllm', 'agent' or nothing
BUILD = (
    "import sys; from trainer_core.commands.tiny_model import build_tiny_model\n"
    "v = sys.argv[3:]\n"
    "print(build_tiny_model(sys.argv[1], pretrain=sys.argv[2] == 'pretrained', for_vllm=v == ['vllm'], "
    "for_agent=v == ['agent']))"
)
# builds the demo's model unless the cache already holds a current one, and says so before it does
ENSURE = (
    "import sys; from trainer_core.commands.tiny_model import build_tiny_model, is_built\n"
    "kind = dict(pretrain=True, for_vllm=sys.argv[2:] == ['vllm'], for_agent=sys.argv[2:] == ['agent'])\n"
    "if not is_built(sys.argv[1], **kind):\n"
    "    print(f'building the tiny demo model in {sys.argv[1]} ...', flush=True)\n"
    "    build_tiny_model(sys.argv[1], **kind)"
)
VARIANT_DIRS = {None: "tiny-model", "vllm": "tiny-model-vllm", "agent": "tiny-model-agent"}


def register(sub) -> None:
    parser = sub.add_parser(
        "tiny-model",
        help="write a tiny causal LM and tokenizer, trained for a few seconds on "
        "synthetic sentences (no network needed)",
    )
    parser.add_argument("output_dir", type=Path)
    parser.add_argument(
        "--random",
        action="store_true",
        help="skip the pre-training and keep the random weights: it builds faster and writes byte "
        "soup that never ends, which is what tests of the truncation and KL warnings want",
    )
    parser.add_argument(
        "--for-vllm",
        action="store_true",
        help="build it 128 wide (attention heads of 32), so that vLLM can serve it on a CPU: vLLM's CPU attention "
        "needs head_dim 32 or more, and the default model's heads are 16",
    )
    parser.add_argument(
        "--for-agent",
        action="store_true",
        help="build the agentic demo's model: pre-trained (about a minute on a CPU) on the hotel agent's tool-call "
        "transcripts alone, so that it copies a request's room and nights into a call, but seldom calls",
    )
    parser.set_defaults(handler=run)


def run(args) -> int:
    needs_trainer("tiny-model")
    if args.for_vllm and args.for_agent:
        raise BadInput("--for-vllm and --for-agent build different models; choose one")
    if args.random and args.for_agent:
        raise BadInput("--for-agent is a pre-trained model; drop --random")
    kind = "random" if args.random else "pretrained"
    variant = ["vllm"] if args.for_vllm else ["agent"] if args.for_agent else []
    return subprocess.call([sys.executable, "-c", BUILD, str(args.output_dir), kind, *variant])


def cached_tiny_model(variant: str | None = None) -> Path:
    """The demo's tiny pre-trained model, built once into the cache (and again when its format changes); each
    variant (``"vllm"``: head_dim 32; ``"agent"``: the agentic demo's) is cached apart from it."""
    path = user_cache_dir() / VARIANT_DIRS[variant]
    sys.stdout.flush()
    subprocess.run([sys.executable, "-c", ENSURE, str(path), *([variant] if variant else [])], check=True)
    return path
