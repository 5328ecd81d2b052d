"""How fast does ``metric_history`` answer on a 100,000-step run, beside a plain script reading the same series?

An agent asks for a metric's history over MCP; the answer must come fast even for a long run. This writes (once,
cached in the work dir) a finished run of ``--steps`` metrics events with the keys TRL logs
(``bench/app_runs.py``), then:

  plain script   reads events.jsonl line by line with ``json.loads`` and keeps the ``reward`` of each metrics
                 line: what an agent's own script does without the server
  mcp (first)    ``grpo-tui mcp`` started by the SDK's stdio client, then ``metric_history(run, ["reward"],
                 max_points=500)``: the server folds the run's events (``services/stream``) and answers blocks
  mcp (again)    the same call again: the folded stream is kept, so only what was appended is read

and prints each time and the ratios. Target: the first call under 0.5 s.

    python -m bench.mcp_history [--steps 100000] [--work-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from bench.app_runs import cached_run
from bench.common import ROOT

TARGET_S = 0.5


def plain_read(events_file: Path, key: str = "reward") -> tuple[float, int]:
    """Seconds to read ``key`` of every metrics line, and how many values were read."""
    t = time.perf_counter()
    values = []
    with open(events_file, encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            if record.get("type") == "metrics" and key in record:
                values.append(record[key])
    return time.perf_counter() - t, len(values)


async def mcp_calls(runs_dir: Path, run_id: str) -> tuple[float, float, int, int]:
    """Seconds of the first and the second ``metric_history`` call, the series' count and the points answered."""
    from mcp import types
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    command = str(Path(sys.executable).with_name("grpo-tui"))
    params = StdioServerParameters(command=command, args=["mcp", "--runs-dir", str(runs_dir)], cwd=str(ROOT))
    arguments = {"run": run_id, "keys": ["reward"], "max_points": 500}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, client_info=types.Implementation(name="bench", version="1")) as s:
            await s.initialize()
            times, answer = [], None
            for _ in range(2):
                t = time.perf_counter()
                result = await s.call_tool("metric_history", arguments)
                times.append(time.perf_counter() - t)
                if result.is_error or not isinstance(result.structured_content, dict):
                    raise SystemExit(f"metric_history failed: {result.content}")
                answer = result.structured_content
    assert answer is not None
    series = answer["series"][0]
    return times[0], times[1], series["count"], len(series["points"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.mcp_history", description="metric_history over MCP against a plain events.jsonl read"
    )
    parser.add_argument("--steps", type=int, default=100_000, help="metrics events in the run (default: 100000)")
    parser.add_argument("--work-dir", type=Path, default=None, help="keep the generated run here (default: a temp dir)")
    args = parser.parse_args(argv)
    import anyio

    work = args.work_dir or Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    folder = cached_run(work, "mcphist", args.steps)
    plain_s, plain_count = plain_read(folder.events_file)
    first_s, again_s, count, points = anyio.run(mcp_calls, folder.path.parent, folder.run_id)
    assert count == plain_count == args.steps, (count, plain_count)
    print(f"run: {args.steps:,} steps, {folder.events_file.stat().st_size / 1e6:.0f} MB of events.jsonl")
    rows = [
        ("plain script (json.loads per line)", plain_s, "-"),
        (f"mcp metric_history, first call ({points} points)", first_s, f"< {TARGET_S} s"),
        ("mcp metric_history, again", again_s, f"< {TARGET_S} s"),
    ]
    for name, seconds, target in rows:
        print(f"  {name:<48} {seconds:8.3f} s   target {target}")
    print(f"  ratio first call / plain script: {first_s / plain_s:.2f}; again / plain: {again_s / plain_s:.3f}")
    ok = first_s < TARGET_S
    print("PASS" if ok else f"FAIL: the first call took {first_s:.3f} s (target {TARGET_S} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
