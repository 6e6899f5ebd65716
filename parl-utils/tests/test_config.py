"""parse_args / save_config / load_config: one settings dataclass, the command line and YAML."""

from __future__ import annotations

import dataclasses
from typing import Literal

from parl.utils import ConfigError, load_config, parse_args, save_config

import pytest


@dataclasses.dataclass(frozen=True)
class Args:
    """Settings of a test run."""

    env_id: str = "CartPole-v1"
    """Gymnasium id."""
    algo: Literal["DQN", "DDQN"] = "DQN"
    """Algorithm."""
    total_steps: int = 1000
    """Budget."""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """Hidden layers."""
    target: float | None = 475.0
    """Target return."""
    anneal_lr: bool = True
    """Anneal."""


def test_every_field_is_a_flag_with_its_type():
    args = parse_args(
        Args,
        ["--algo", "DDQN", "--total-steps", "5", "--hidden-sizes", "8", "4", "--no-anneal-lr"],
    )
    assert args == Args(algo="DDQN", total_steps=5, hidden_sizes=(8, 4), anneal_lr=False)
    assert parse_args(Args, []) == Args()


def test_bad_flags_exit_with_usage(capsys):
    with pytest.raises(SystemExit):
        parse_args(Args, ["--algo", "PPO"])
    with pytest.raises(SystemExit):
        parse_args(Args, ["--total-steps", "many"])


def test_a_saved_config_reloads_exactly_and_flags_override_it(tmp_path):
    args = Args(algo="DDQN", hidden_sizes=(32,), target=None)
    path = save_config(args, tmp_path / "run")
    assert path == tmp_path / "run" / "config.yaml"
    assert "hidden_sizes:\n- 32\n" in path.read_text()
    assert load_config(Args, path) == args
    assert parse_args(Args, ["--total-steps", "7", "--config", str(path)]) == dataclasses.replace(
        args, total_steps=7
    )


def test_a_partial_file_keeps_the_other_defaults(tmp_path):
    (tmp_path / "c.yaml").write_text("total_steps: 20\n")
    assert load_config(Args, tmp_path / "c.yaml") == Args(total_steps=20)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (
            "total_step: 10\n",
            r"unknown Args setting\(s\) 'total_step' \(did you mean 'total_steps'",
        ),
        ("speed: 1\n", r"'speed'; remove them or use one of: env_id, algo"),
        ("total_steps: many\n", r"total_steps: .*got 'many'"),
        ("algo: PPO\n", r"algo: .*'DQN'.*got 'PPO'"),
        ("- 1\n- 2\n", r"expected a mapping of Args settings .*, got a list"),
    ],
)
def test_a_bad_config_file_names_what_is_wrong(tmp_path, text, match):
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_config(Args, tmp_path / "bad.yaml")


def test_only_dataclasses_are_settings(tmp_path):
    with pytest.raises(TypeError, match="dataclass"):
        parse_args(dict, [])
    with pytest.raises(TypeError, match="dataclass"):
        save_config({"a": 1}, tmp_path)
    with pytest.raises(FileNotFoundError):
        load_config(Args, tmp_path / "missing.yaml")
