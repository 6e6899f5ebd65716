"""The algorithm registry against real and fake installed distributions."""

from __future__ import annotations

import os
import subprocess
import sys

import parl
from parl.algorithms import (
    DuplicateAlgorithmError,
    PluginLoadError,
    UnknownAlgorithmError,
    _registry,
)
from parl.core.base import AlgorithmBase

import pytest

GOOD_PLUGIN = '''
import parl
from parl.core.config import AlgorithmConfig

class EchoConfig(AlgorithmConfig):
    scale: float = 1.0
    """How much to scale."""

class Echo(parl.Algorithm):
    """Echo: returns its input, for registry tests."""
    Config = EchoConfig
'''


def test_first_party_algorithm_found_by_name() -> None:
    cls = parl.algorithms.get("PolicyGradient")
    assert issubclass(cls, AlgorithmBase)  # written once: not the paddle parl.Algorithm's
    assert cls is parl.algorithms.get("PolicyGradient", backend="torch")
    from parl.algorithms import PolicyGradient

    assert PolicyGradient is cls is parl.algorithms.PolicyGradient


def test_unknown_name_suggests_close_names_and_lists_installed() -> None:
    with pytest.raises(UnknownAlgorithmError) as info:
        parl.algorithms.get("PolicyGradien")
    message = str(info.value)
    assert isinstance(info.value, LookupError)
    assert "Did you mean 'PolicyGradient'" in message
    assert "Installed algorithms:" in message and "DQN" in message


@pytest.fixture
def planned_family(monkeypatch: pytest.MonkeyPatch) -> str:
    """A first-party family that is not installed, shipping the algorithm ``Planned``."""
    monkeypatch.setitem(_registry.FIRST_PARTY, "Planned", "parl-algos-planned")
    return "Planned"


def test_unknown_first_party_name_gives_the_install_line(planned_family: str) -> None:
    with pytest.raises(UnknownAlgorithmError) as info:
        parl.algorithms.get(planned_family)
    message = str(info.value)
    assert (
        "pip install parl-algos-planned" in message
        and "pip install ./parl-algos-planned" in message
    )
    assert "Did you mean 'Planned'" not in message  # never the very name asked for


def test_from_import_of_a_missing_algorithm_keeps_the_helpful_message(planned_family: str) -> None:
    with pytest.raises(ImportError, match="pip install parl-algos-planned") as info:
        from parl.algorithms import Planned  # noqa: F401
    assert isinstance(info.value, UnknownAlgorithmError) and isinstance(info.value, LookupError)
    assert not hasattr(parl.algorithms, "Planned")


def test_family_installed_without_the_algorithm_says_so(fake_dist, monkeypatch) -> None:
    fake_dist(
        "parl-algos-fake",
        {"parl.algorithms": {"Echo": "acme_fake_echo:Echo"}},
        {"acme_fake_echo": GOOD_PLUGIN},
        version="0.3",
    )
    monkeypatch.setitem(_registry.FIRST_PARTY, "QMIXish", "parl-algos-fake")
    with pytest.raises(UnknownAlgorithmError) as info:
        parl.algorithms.get("QMIXish")
    message = str(info.value)
    assert "parl-algos-fake family, which is installed (parl-algos-fake 0.3)" in message
    assert "it provides Echo" in message and "pip install" not in message


def test_parl2_algorithms_without_a_family_get_no_install_line() -> None:
    for name in _registry.PARL2_ONLY:
        with pytest.raises(UnknownAlgorithmError) as info:
            parl.algorithms.get(name)
        assert "pip install" not in str(info.value) and name in str(info.value)


def test_install_hints_name_only_distributions_of_this_repository() -> None:
    built_here = {
        "parl-algos-dqn",
        "parl-algos-pg",
        "parl-algos-ac",
        "parl-algos-impala",
        "parl-algos-es",
        "parl-algos-marl",
    }
    assert set(_registry.FIRST_PARTY.values()) <= built_here


def test_wrong_case_suggests_the_right_name_and_its_family() -> None:
    with pytest.raises(UnknownAlgorithmError, match="Did you mean 'PPO'") as info:
        parl.algorithms.get("ppo")
    assert "pip install" not in str(info.value)  # PPO is installed


def test_unknown_module_attribute_is_attribute_error() -> None:
    with pytest.raises(AttributeError, match="Did you mean 'PPO'"):
        parl.algorithms.PPo  # noqa: B018


def test_third_party_entry_point_is_found(fake_dist) -> None:
    fake_dist(
        "acme-echo",
        {"parl.algorithms": {"Echo": "acme_echo_ok:Echo"}},
        {"acme_echo_ok": GOOD_PLUGIN},
    )
    assert "Echo" in parl.algorithms.names()
    entry = parl.algorithms.entries()["Echo"][0]
    assert (entry.distribution, entry.version) == ("acme-echo", "1.0")
    assert parl.algorithms.get("Echo").__name__ == "Echo"


def test_broken_plugin_names_entry_point_distribution_version_and_cause(fake_dist) -> None:
    fake_dist(
        "acme-broken",
        {"parl.algorithms": {"Broken": "acme_broken_mod:Broken"}},
        {"acme_broken_mod": "raise RuntimeError('boom at import')\n"},
        version="2.3",
    )
    assert "Broken" in parl.algorithms.names()
    with pytest.raises(PluginLoadError) as info:
        parl.algorithms.get("Broken")
    message = str(info.value)
    assert "Broken = 'acme_broken_mod:Broken'" in message
    assert "acme-broken==2.3" in message and "boom at import" in message
    assert isinstance(info.value.__cause__, RuntimeError)
    assert "PolicyGradient" in parl.algorithms.names()


def test_plugin_that_is_not_an_algorithm_is_refused(fake_dist) -> None:
    fake_dist(
        "acme-notalg",
        {"parl.algorithms": {"NotAlg": "acme_notalg_mod:NotAlg"}},
        {"acme_notalg_mod": "class NotAlg:\n    pass\n"},
    )
    with pytest.raises(PluginLoadError, match="not a subclass of parl.Algorithm"):
        parl.algorithms.get("NotAlg")


def test_same_name_from_two_distributions_names_both(fake_dist) -> None:
    fake_dist(
        "acme-one",
        {"parl.algorithms": {"Twin": "acme_twin_one:Echo"}},
        {"acme_twin_one": GOOD_PLUGIN},
    )
    fake_dist(
        "acme-two",
        {"parl.algorithms": {"Twin": "acme_twin_two:Echo"}},
        {"acme_twin_two": GOOD_PLUGIN},
    )
    with pytest.raises(DuplicateAlgorithmError) as info:
        parl.algorithms.get("Twin")
    assert "acme-one==1.0" in str(info.value) and "acme-two==1.0" in str(info.value)


def test_refresh_sees_a_newly_installed_plugin(fake_dist) -> None:
    assert "Late" not in parl.algorithms.names()
    fake_dist(
        "acme-late",
        {"parl.algorithms": {"Late": "acme_late_mod:Echo"}},
        {"acme_late_mod": GOOD_PLUGIN},
    )
    assert "Late" in parl.algorithms.names()


def test_every_paddle_algorithm_loads_while_torch_is_the_selected_backend() -> None:
    """A family's paddle classes name ``parl.core.paddle``'s bases, not ``parl.Algorithm`` (which
    follows ``PARL_BACKEND``), so a torch-selected process can still ask for them explicitly."""
    script = (
        "import parl.algorithms as a\n"
        "for name in a.names(backend='paddle'):\n"
        "    a.get(name, backend='paddle')\n"
        "print(len(a.names(backend='paddle')))\n"
    )
    env = {**os.environ, "PARL_BACKEND": "torch"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout.split()[-1]) >= len(parl.algorithms.names(backend="paddle")) > 0
