"""The Slurm script quotes every path it writes into a #SBATCH line, as sbatch reads those lines back."""

from __future__ import annotations

from pathlib import Path

import pytest

from grpo_tui.services.slurm.batch import job_script, sbatch_word
from tests.helpers import wait_for
from tests.slurm_cluster import slurm  # noqa: F401
from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.contract.run.folder import RunFolder

AWKWARD = "runs with spaces 'single' \"double\" #hash 100%j $(touch owned)"


def _option(script: str, name: str) -> str:
    return next(line for line in script.splitlines() if line.startswith(f"#SBATCH --{name}="))


def test_the_output_path_and_job_name_are_quoted_for_sbatch(tmp_path):
    folder = RunFolder.create(tmp_path / AWKWARD)
    script = job_script(folder, RunConfig(slurm={"time": 5}), python="python")
    expected = str(folder.path.resolve() / "slurm").replace("%", "%%") + "/slurm-%j.out"
    assert _option(script, "output") == f"#SBATCH --output={sbatch_word(expected)}"
    assert _option(script, "output").endswith("%%j $(touch owned)/" + folder.run_id + '/slurm/slurm-%j.out"')
    assert _option(script, "job-name") == f'#SBATCH --job-name="grpo-{folder.run_id}"'
    assert sbatch_word('a "b" \\c') == '"a \\"b\\" \\\\c"'


@pytest.mark.parametrize("name", ["line\nbreak", "carriage\rreturn", "back\\slash"])
def test_a_path_no_sbatch_line_can_hold_is_refused_with_the_fix(tmp_path, name):
    folder = RunFolder.create(tmp_path / name)
    with pytest.raises(ConfigError) as refused:
        job_script(folder, RunConfig(slurm={"time": 5}), python="python")
    assert refused.value.field == "slurm" and "--runs-dir" in str(refused.value)


def test_sbatch_writes_the_output_into_a_folder_with_spaces_quotes_and_a_percent(slurm, tmp_path):  # noqa: F811
    """The script's own header, given to the real sbatch (the command swapped for an echo): the job's output lands
    in the run folder, whatever its path holds."""
    folder = RunFolder.create(tmp_path / AWKWARD)
    (folder.path / "slurm").mkdir()
    script = job_script(folder, RunConfig(slurm={"time": 5}), python="python")
    header = [line for line in script.splitlines() if line.startswith("#")]
    path = tmp_path / "job.sh"
    path.write_text("\n".join([*header, "echo quoted-ok", ""]))
    done = slurm.run("sbatch", "--parsable", str(path))
    assert done.returncode == 0, done.stderr
    job = done.stdout.strip().split(";")[0]
    out = folder.path / "slurm" / f"slurm-{job}.out"
    wait_for(
        lambda: out.exists() and "quoted-ok" in out.read_text(),
        60,
        0.2,
        what=f"the job's output in {out}",
        show=lambda: sorted(Path(folder.path).rglob("*")),
    )
    assert slurm.job_info(job).get("JobName") == f"grpo-{folder.run_id}"
    assert not (tmp_path / "owned").exists()
