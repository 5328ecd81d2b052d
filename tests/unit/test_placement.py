"""GPU placement: the split between vLLM server and training, the refusals and the server's port, before
anything starts."""

import socket

import pytest

from trainer_core.contract.config.inspection_key import config_key
from trainer_core.contract.config.placement import parse_gpus, plan
from trainer_core.contract.config.ports import check_port, free_port
from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.generation.vllm_server import server_command

BASE = dict(model="m", rl_env_module="e", rl_env_class="E")
SERVER = RunConfig(**BASE, use_vllm=True, vllm_mode="server", vllm_server_gpus=2, vllm_tensor_parallel_size=2)


def test_cpu_machine_trains_on_one_process_by_default():
    p = plan(RunConfig(**BASE), available=[])
    assert (p.train_gpus, p.server_gpus, p.num_processes, p.train_env()) == ([], [], 1, {})
    assert plan(RunConfig(**BASE), available=[], num_processes=2).num_processes == 2


def test_all_visible_gpus_train_by_default():
    p = plan(RunConfig(**BASE), available=[0, 1, 2, 3])
    assert p.num_processes == 4 and p.train_env() == {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}


def test_server_takes_the_first_gpus_and_processes_shrink_to_match():
    p = plan(SERVER, available=[0, 1, 2, 3], gpus=[3, 2, 1, 0], num_processes=4)
    assert p.server_gpus == [3, 2] and p.train_gpus == [1, 0] and p.num_processes == 2
    assert p.server_env() == {"CUDA_VISIBLE_DEVICES": "3,2"} and p.notes


def test_server_url_means_no_server_gpus():
    config = RunConfig(**BASE, use_vllm=True, vllm_mode="server", vllm_server_url="http://127.0.0.1:8000")
    assert plan(config, available=[0, 1]).server_gpus == []


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(gpus=[4]), "GPU 4 does not exist; this machine has GPUs 0, 1, 2, 3"),
        (dict(gpus=[1, 1]), "lists a GPU twice"),
        (dict(gpus=[0, 1], num_processes=3), "--num-processes 3 needs 3 GPUs"),
        (dict(num_processes=0), "--num-processes must be >= 1"),
    ],
)
def test_refusals(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        plan(RunConfig(**BASE), available=[0, 1, 2, 3], **kwargs)


def test_server_needs_a_gpu_left_to_train():
    with pytest.raises(ConfigError, match=r"needs 2 GPU.s. for the server and at least 1 to train"):
        plan(SERVER, available=[0, 1])


def test_parse_gpus():
    assert parse_gpus("0, 2") == [0, 2] and parse_gpus(None) is None and parse_gpus("all") is None
    with pytest.raises(ConfigError, match="comma-separated"):
        parse_gpus("0;1")


def test_server_command_binds_loopback_only():
    cmd = server_command(SERVER, 8011, executable=["trl", "vllm-serve"])
    assert cmd == [
        "trl",
        "vllm-serve",
        "--model",
        "m",
        "--tensor-parallel-size",
        "2",
        "--host",
        "127.0.0.1",
        "--port",
        "8011",
    ]
    four = RunConfig(
        **{**BASE, "use_vllm": True, "vllm_mode": "server", "vllm_server_gpus": 4, "vllm_tensor_parallel_size": 2}
    )
    assert server_command(four, 1, executable=["x"])[-2:] == ["--data-parallel-size", "2"]


def test_a_free_port_is_local_and_a_taken_one_is_refused_with_the_fix():
    port = free_port()
    check_port(port)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        with pytest.raises(ConfigError, match=f"port {port} on 127.0.0.1 is already taken; pass another --vllm-port"):
            check_port(port)


def test_the_inspection_key_names_only_what_an_inspection_measures():
    base = config_key(RunConfig(**BASE))
    assert base == config_key(RunConfig(**BASE, lr=0.5, max_steps=7, project_name="other"))
    assert base != config_key(RunConfig(**BASE, rl_temperature=0.5))
    assert base != config_key(RunConfig(**{**BASE, "model": "other"}))
    assert len(base) == 16 and int(base, 16) >= 0
