"""PARL 2.x's helper modules: ``utils``, ``machine_info``, ``np_utils``, ``path_utils``,
``globvars``, ``logger.add_stdout_handler``/``remove_handler``, ``summary.add_histogram``, and
``logger.set_dir`` on a folder with files."""

from __future__ import annotations

import argparse
import importlib
import io
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from types import SimpleNamespace

from parl.utils import logger, machine_info, summary

import numpy as np
import pytest
from tensorboardX.proto import event_pb2

from .conftest import read_events


def test_parl_helpers_import_from_their_modules_and_the_package() -> None:
    import parl.utils as package
    from parl.utils.globvars import global_config
    from parl.utils.machine_info import get_free_tcp_port, get_gpu_count, get_ip_address
    from parl.utils.np_utils import np_softmax
    from parl.utils.path_utils import format_uniform_path
    from parl.utils.utils import check_model_method

    for function in (check_model_method, get_gpu_count, get_ip_address, get_free_tcp_port):
        assert getattr(package, function.__name__) is function
    assert package.np_softmax is np_softmax and package.global_config is global_config
    assert package.format_uniform_path is format_uniform_path


def test_importing_parl_utils_loads_no_framework() -> None:
    code = (
        "import sys, parl.utils, parl.utils.utils, parl.utils.machine_info\n"
        "from parl.utils.utils import _HAS_PADDLE, _HAS_FLUID\n"
        "assert _HAS_PADDLE and not _HAS_FLUID\n"
        "assert 'paddle' not in sys.modules and 'torch' not in sys.modules, 'framework imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_check_model_method_is_the_core_check() -> None:
    import parl
    from parl.core.errors import ModelContractError
    from parl.utils.utils import check_model_method

    class NoForward(parl.Model):
        def value(self, obs):
            return obs

    class WithForward(NoForward):
        def forward(self, obs):
            return obs

    check_model_method(WithForward(), "forward", "DQN")
    check_model_method(NoForward(), "value", "A2C")
    with pytest.raises(ModelContractError, match="DQN needs its model to implement 'forward'"):
        check_model_method(NoForward(), "forward", "DQN")
    with pytest.raises(TypeError, match="'policy'"):
        check_model_method(WithForward(), "policy", "A2C")


def test_small_helpers() -> None:
    from parl.utils import utils

    assert utils.has_func(logger, "info") and not utils.has_func(logger, "LOG_FILE_NAME")
    assert utils.to_str(utils.to_byte("héllo")) == "héllo" and utils.to_byte("a") == b"a"
    assert utils.MAX_INT32 == 2**31 - 1
    assert utils._IS_WINDOWS is (sys.platform == "win32") and utils.isnotebook() is False
    import paddle

    major, minor, patch = paddle.__version__.split(".")[:3]
    assert utils.get_fluid_version() == int(major + minor + "".join(filter(str.isdigit, patch)))
    utils.check_version_for_xpu()  # paddle 3 >= 2.0
    with pytest.raises(RuntimeError, match="port it to paddle's 2.x API"):
        utils.check_version_for_fluid()


def test_kill_process_kills_only_matching_processes_of_this_user() -> None:
    from parl.utils.utils import kill_process

    marker = f"parl-kill-{uuid.uuid4().hex}"
    code = "import sys, time; time.sleep(60)"
    target = subprocess.Popen([sys.executable, "-c", code, marker])
    bystander = subprocess.Popen([sys.executable, "-c", code, "bystander"])
    try:
        assert kill_process(marker) == [target.pid]
        assert target.wait(timeout=30) == -9
        assert bystander.poll() is None
    finally:
        for process in (target, bystander):
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)


def _interface(address: str, family: int = socket.AF_INET) -> SimpleNamespace:
    return SimpleNamespace(family=family, address=address)


def test_get_ip_address_reads_interfaces_without_dialling(monkeypatch) -> None:
    def no_connect(*args, **kwargs):
        raise AssertionError("get_ip_address opened a connection")

    monkeypatch.setattr(socket.socket, "connect", no_connect)
    address = machine_info.get_ip_address()
    assert socket.inet_aton(address)  # a dotted IPv4 address, from this machine's interfaces

    interfaces = {
        "lo": [_interface("127.0.0.1")],
        "down0": [_interface("10.1.2.3")],
        "eth0": [_interface("fe80::1", socket.AF_INET6), _interface("192.168.5.7")],
    }
    stats = {name: SimpleNamespace(isup=name != "down0") for name in interfaces}
    monkeypatch.setattr(machine_info.psutil, "net_if_addrs", lambda: interfaces)
    monkeypatch.setattr(machine_info.psutil, "net_if_stats", lambda: stats)
    assert machine_info.get_ip_address() == "192.168.5.7"


def test_get_ip_address_on_a_loopback_only_machine(monkeypatch, caplog) -> None:
    monkeypatch.setattr(
        machine_info.psutil, "net_if_addrs", lambda: {"lo": [_interface("127.0.0.1")]}
    )
    monkeypatch.setattr(machine_info.psutil, "net_if_stats", lambda: {})
    monkeypatch.setattr(logger._logger, "propagate", True)
    assert machine_info.get_ip_address() == "127.0.0.1"
    assert "no active network interface besides loopback" in caplog.text


@pytest.mark.parametrize(
    ("visible", "count"),
    [("0,1", 2), ("", 0), ("-1", 0), ("3", 1), ("0,-1,1", 1), ("GPU-8a1b,GPU-77ff", 2)],
)
def test_gpu_count_follows_cuda_visible_devices(monkeypatch, visible, count) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert machine_info.get_gpu_count() == count


def test_gpu_count_asks_nvidia_smi(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert machine_info.get_gpu_count() == 0  # no nvidia-smi at all
    script = tmp_path / "nvidia-smi"
    listing = "GPU 0: NVIDIA H100 (UUID: GPU-1)\nGPU 1: NVIDIA H100 (UUID: GPU-2)"
    script.write_text(f"#!/bin/sh\necho '{listing}'\n")
    script.chmod(0o700)
    assert machine_info.get_gpu_count() == 2
    script.write_text("#!/bin/sh\nexit 9\n")
    assert machine_info.get_gpu_count() == 0  # nvidia-smi fails: no GPU


def test_is_gpu_available_needs_a_cuda_paddle(monkeypatch) -> None:
    import paddle

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert machine_info.is_gpu_available() is False
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert machine_info.is_gpu_available() is paddle.is_compiled_with_cuda()
    monkeypatch.delenv("FLAGS_selected_xpus", raising=False)
    assert machine_info.is_xpu_available() is False


def test_ports_are_probed_on_loopback() -> None:
    port = machine_info.get_free_tcp_port()
    assert isinstance(port, str) and machine_info.is_port_available(port)
    with socket.socket() as server:
        server.bind(("127.0.0.1", int(port)))
        server.listen()
        assert machine_info.is_port_available(int(port)) is False
        with pytest.raises(RuntimeError, match="no free port"):
            machine_info.get_port_from_range(int(port), int(port))
    assert machine_info.get_port_from_range(int(port), int(port)) == int(port)
    free = machine_info.get_port_from_range(20000, 60000)
    assert 20000 <= free <= 60000


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: machine_info.is_port_available(70000), ValueError),
        (lambda: machine_info.is_port_available("http"), TypeError),
        (lambda: machine_info.get_port_from_range(9000, 8000), ValueError),
    ],
)
def test_bad_ports_are_refused(call, error) -> None:
    with pytest.raises(error):
        call()


def test_np_softmax_and_cross_entropy() -> None:
    from parl.utils.np_utils import np_cross_entropy, np_softmax

    probs = np_softmax(np.array([[1000.0, 1000.0], [0.0, np.log(3.0)]]))
    np.testing.assert_allclose(probs, [[0.5, 0.5], [0.25, 0.75]])
    sparse = np_cross_entropy(probs, np.array([[0], [1]]))
    dense = np_cross_entropy(probs, np.array([[1.0, 0.0], [0.0, 1.0]]))
    np.testing.assert_allclose(sparse, [[np.log(2.0)], [-np.log(0.75)]])
    np.testing.assert_allclose(sparse, dense)
    with pytest.raises(ValueError, match="sparse labels"):
        np_cross_entropy(probs, np.array([[2], [0]]))
    with pytest.raises(ValueError, match="do not fit"):
        np_cross_entropy(probs, np.ones((2, 3)))


def test_format_uniform_path() -> None:
    from parl.utils.path_utils import format_uniform_path

    assert format_uniform_path("a//b/c\\d") == os.sep.join("abcd")


def test_global_config_loads_arguments(caplog, monkeypatch) -> None:
    from parl.utils import global_config as config

    monkeypatch.setattr(logger._logger, "propagate", True)
    config.load_argument(argparse.Namespace(embed_dim=128, n_head=1))
    assert (config.embed_dim, config.n_head) == (128, 1)
    config.load_argument(argparse.Namespace(n_head=2))
    assert config.n_head == 2 and "global_config.n_head is overwritten" in caplog.text
    with pytest.raises(TypeError, match="argparse.Namespace"):
        config.load_argument({"n_head": 3})


def test_stdout_handler_follows_a_redirected_stdout(monkeypatch) -> None:
    redirected = io.StringIO()
    monkeypatch.setattr(sys, "stdout", redirected)
    handler = logger.add_stdout_handler()
    try:
        logger.info("to the job's stdout")
    finally:
        logger.remove_handler(handler)
    logger.info("after removal")
    assert "to the job's stdout" in redirected.getvalue()
    assert "after removal" not in redirected.getvalue()


def test_set_dir_keeps_existing_files_and_says_so(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    logger.set_dir(fresh)
    assert "already holds files" not in (fresh / "log.log").read_text()
    used = tmp_path / "used"
    used.mkdir()
    (used / "model.ckpt").write_text("keep me")
    logger.set_dir(used)
    assert (used / "model.ckpt").read_text() == "keep me"
    lines = [line for line in (used / "log.log").read_text().splitlines() if "already" in line]
    assert len(lines) == 1 and "kept (PARL 2.x emptied it)" in lines[0]


def read_histograms(logdir: Path) -> list[tuple[int, str, event_pb2.HistogramProto]]:
    events = read_events(logdir)
    return [
        (e.step, v.tag, v.histo) for e in events for v in e.summary.value if v.HasField("histo")
    ]


def test_add_histogram_reaches_tensorboard(tmp_path: Path) -> None:
    summary.set_logdir(tmp_path)
    values = np.random.default_rng(0).normal(size=(10, 100))
    summary.add_histogram("weights/fc1", values, step=5)
    summary.close()
    [(step, tag, histogram)] = read_histograms(tmp_path)
    assert (step, tag, histogram.num) == (5, "weights/fc1", 1000)
    assert histogram.min == values.min() and histogram.max == values.max()
    np.testing.assert_allclose(histogram.sum, values.sum())
    np.testing.assert_allclose(histogram.sum_squares, (values**2).sum())
    counts, edges = np.histogram(values, bins="auto")  # bucket i: (limit[i-1], limit[i]]
    assert list(histogram.bucket_limit) == list(edges)
    assert list(histogram.bucket) == [0.0, *counts]


@pytest.mark.parametrize(
    ("values", "step", "error"),
    [
        (["a", "b"], 1, TypeError),
        ([], 1, ValueError),
        ([1.0, np.nan], 1, ValueError),
        ([1.0], 1.5, TypeError),
    ],
)
def test_add_histogram_refuses_bad_input(tmp_path: Path, values, step, error) -> None:
    summary.set_logdir(tmp_path)
    with pytest.raises(error):
        summary.add_histogram("h", values, step)


@pytest.mark.parametrize("module", ["tensorboard", "visualdl"])
def test_parl_2_writer_modules_write_through_the_metric_sinks(module: str, tmp_path: Path) -> None:
    # PARL 2.x: AlphaZero's Coach (torch: tensorboard, paddle: visualdl), the quadrotor tutorial
    tensorboard = importlib.import_module(f"parl.utils.{module}")

    from .test_summary import read_tensorboard_scalars

    logger.set_dir(str(tmp_path / "run"))
    tensorboard.add_scalar("train/episode_reward", 21.5, 100)
    tensorboard.add_histogram("actions", [0.1, -0.4], 100)
    tensorboard.flush()
    assert (100, "train/episode_reward", 21.5) in read_tensorboard_scalars(tmp_path / "run")
    tensorboard.close()
    assert tensorboard.add_scalar is summary.add_scalar
