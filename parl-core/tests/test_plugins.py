"""Hook specs and the loading of hook plugins from the entry-point group ``parl``."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

from parl.core.errors import PluginLoadError
from parl.plugins import get_plugin_manager, hookspecs

import pytest

SINK = """
from parl import hookimpl

RECORDED = []

@hookimpl
def parl_log_metrics(metrics, step):
    RECORDED.append((dict(metrics), step))
"""

SPEC_NAMES = sorted(n for n in dir(hookspecs) if n.startswith("parl_"))


def test_entry_point_hook_plugin_is_loaded_and_called(fake_dist, tmp_path: Path) -> None:
    fake_dist("acme-sink", {"parl": {"acme_sink": "acme_sink_mod"}}, {"acme_sink_mod": SINK})
    get_plugin_manager().hook.parl_log_metrics(metrics={"charts/x": 1.5}, step=3, logdir=tmp_path)
    import acme_sink_mod

    assert acme_sink_mod.RECORDED == [({"charts/x": 1.5}, 3)]


def test_disabled_plugin_is_not_loaded(fake_dist, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARL_DISABLED_PLUGINS", "other, acme_off")
    fake_dist("acme-off", {"parl": {"acme_off": "acme_off_mod"}}, {"acme_off_mod": SINK})
    manager = get_plugin_manager()
    assert manager.is_blocked("acme_off") and manager.get_plugin("acme_off") is None
    assert "acme_off_mod" not in sys.modules


def test_autoload_can_be_switched_off(fake_dist, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARL_DISABLE_PLUGIN_AUTOLOAD", "1")
    fake_dist("acme-auto", {"parl": {"acme_auto": "acme_auto_mod"}}, {"acme_auto_mod": SINK})
    assert get_plugin_manager().list_name_plugin() == []


def test_plugin_with_unknown_hook_names_its_distribution(fake_dist) -> None:
    bad = "from parl import hookimpl\n@hookimpl\ndef parl_log_metric(metrics):\n    pass\n"
    fake_dist("acme-typo", {"parl": {"acme_typo": "acme_typo_mod"}}, {"acme_typo_mod": bad}, "1.2")
    with pytest.raises(PluginLoadError, match=r"acme_typo.*acme-typo==1\.2.*parl_log_metric"):
        get_plugin_manager()


def test_hook_plugin_failing_to_import_names_entry_point_distribution_version(fake_dist) -> None:
    broken = "raise RuntimeError('sink misconfigured')\n"
    fake_dist("acme-bad", {"parl": {"acme_bad": "acme_bad_mod"}}, {"acme_bad_mod": broken}, "4.5")
    with pytest.raises(PluginLoadError) as info:
        get_plugin_manager()
    message = str(info.value)
    assert "acme_bad = 'acme_bad_mod' of acme-bad==4.5" in message
    assert "sink misconfigured" in message and "PARL_DISABLED_PLUGINS=acme_bad" in message
    assert isinstance(info.value.__cause__, RuntimeError)


def test_broken_hook_plugin_never_fails_a_finished_save(
    fake_dist, tiny_model_cls: type, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import parl

    class Alg(parl.Algorithm):
        pass

    agent = parl.Agent(Alg(tiny_model_cls()))
    broken = "raise RuntimeError('sink misconfigured')\n"
    fake_dist("acme-bad", {"parl": {"acme_bad": "acme_bad_mod"}}, {"acme_bad_mod": broken}, "4.5")
    agent.save(tmp_path / "model.pdparams")
    assert "acme-bad==4.5" in caplog.text and "weights saved to" in caplog.text
    restored = parl.Agent(Alg(tiny_model_cls()))
    restored.restore(tmp_path / "model.pdparams")
    assert restored.get_weights().keys() == agent.get_weights().keys()


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_hookspec_is_documented_and_versioned(name: str) -> None:
    spec = getattr(hookspecs, name)
    doc = inspect.getdoc(spec) or ""
    assert "versionadded" in doc
    for parameter in inspect.signature(spec).parameters:
        assert f"{parameter}:" in doc, f"{name} does not document {parameter}"
