"""The prompts of a dataset run: ``--dataset`` loaded the way `trl grpo` loads it, shaped as training wants it.

A run that names a dataset instead of an environment class still goes through the environment path's
checks (``trl_setup.prepare_dataset``: a prompt column, not empty, ``max_prompt_length``), so this module
only stands where ``build_dataset`` stands: it finds the data (a file by its suffix, a folder written by
``save_to_disk`` or holding data files, or a Hub id), renames the prompt column to ``prompt``, and puts
the system prompt in front (a text prompt then becomes a chat, as open-r1's recipes do).
"""

from __future__ import annotations

from pathlib import Path

from trainer_core.contract.config.checks import ConfigError
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.recipes.reader import FILE_BUILDERS
from trainer_core.environment.user_code import UserCodeError


def _builder(path: Path) -> str | None:
    return next((b for b, suffixes in FILE_BUILDERS.items() if path.suffix.lower() in suffixes), None)


def _looks_local(spec: str) -> bool:
    return spec.startswith(("/", "./", "../", "~")) or Path(spec).suffix.lower() in {
        s for suffixes in FILE_BUILDERS.values() for s in suffixes
    }


def load_rows(config: RunConfig, spec: str | None = None, split: str | None = None, field: str = "dataset"):
    """The dataset split named by the config (or ``spec``/``split``: the held-out set's), as a ``datasets.Dataset``."""
    import datasets

    spec = spec or config.dataset
    split = split or config.dataset_split
    if spec is None:  # RunConfig.validate refuses a dataset run without one
        raise ConfigError("dataset", "dataset is required: pass --dataset.")
    path = Path(spec).expanduser()
    try:
        if path.is_file():
            builder = _builder(path)
            if builder is None:
                raise UserCodeError(
                    f"dataset file {spec} is not a .json/.jsonl, .csv or .parquet file; convert it, or give a "
                    "folder or a Hub id."
                )
            return datasets.load_dataset(builder, data_files=str(path), split=split)
        if path.is_dir() and ((path / "state.json").exists() or (path / "dataset_dict.json").exists()):
            loaded = datasets.load_from_disk(str(path))
            if isinstance(loaded, datasets.DatasetDict):
                if split not in loaded:
                    raise UserCodeError(
                        f"dataset {spec} has no split '{split}' (splits: {', '.join(map(str, loaded))}). "
                        f"Set {field}_split."
                    )
                return loaded[split]
            return loaded
        if not path.exists() and _looks_local(spec):
            raise UserCodeError(
                f"dataset {spec} not found (looked at {path.resolve()}). Give an existing file or folder, or a "
                "Hub dataset id."
            )
        return datasets.load_dataset(spec, name=config.dataset_config, split=split)
    except UserCodeError:
        raise
    except Exception as exc:
        where = (
            ""
            if path.exists()
            else " A Hub id needs the Hub to be reachable from this machine; elsewhere, save "
            "the dataset (Dataset.save_to_disk or a .jsonl file) and name that."
        )
        raise UserCodeError(
            f"loading dataset {spec!r} (split {split!r}) failed: {type(exc).__name__}: {exc}.{where}"
        ) from exc


def shape_prompts(dataset, config: RunConfig, name: str | None = None):
    """``prompt_column`` renamed to ``prompt``, and the system prompt put in front of every prompt."""
    columns = dataset.column_names or []
    if config.prompt_column not in columns:
        raise UserCodeError(
            f"dataset {name or config.dataset} has no column '{config.prompt_column}' (columns: "
            f"{', '.join(columns) or 'none'}). Set prompt_column to the column holding the prompts."
        )
    if config.prompt_column != "prompt":
        if "prompt" in columns:
            dataset = dataset.remove_columns("prompt")
        dataset = dataset.rename_column(config.prompt_column, "prompt")
    if config.system_prompt:
        system = {"role": "system", "content": config.system_prompt}

        def with_system(row):
            prompt = row["prompt"]
            messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
            row["prompt"] = [system, *messages]
            return row

        dataset = dataset.map(with_system)
    return dataset


class DatasetSource:
    """Stands where an environment stands for ``prepare_dataset``: ``build_dataset`` returns the run's prompts."""

    def __init__(self, config: RunConfig):
        self.config = config

    def build_dataset(self, tokenizer=None):
        return shape_prompts(load_rows(self.config), self.config)


class HeldOutSource:
    """``--eval-dataset``, shaped as the training prompts are: stands where ``build_dataset`` stands."""

    def __init__(self, config: RunConfig):
        self.config = config

    def build_dataset(self, tokenizer=None):
        spec = self.config.eval_dataset
        assert spec is not None
        split = self.config.eval_split or ("train" if Path(spec).expanduser().is_file() else "test")
        return shape_prompts(load_rows(self.config, spec, split, "eval"), self.config, f"--eval-dataset {spec}")
