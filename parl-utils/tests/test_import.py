from __future__ import annotations

import subprocess
import sys

import parl.utils


def test_import_keeps_paddle_and_gymnasium_out() -> None:
    code = (
        "import sys\n"
        "import parl.utils\n"
        "from parl.plugins import get_plugin_manager\n"
        "names = {n for n, _ in get_plugin_manager().list_name_plugin()}\n"
        "assert {'csv', 'tensorboard'} <= names, names\n"
        "assert 'paddle' not in sys.modules, 'paddle imported'\n"
        "assert 'gymnasium' not in sys.modules, 'gymnasium imported eagerly'\n"
        "parl.utils.LegacyGymWrapper\n"
        "assert 'paddle' not in sys.modules, 'paddle imported by the wrappers'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_public_names_resolve() -> None:
    for name in parl.utils.__all__:
        assert getattr(parl.utils, name) is not None
    assert set(parl.utils.__all__) <= set(dir(parl.utils))


def test_unknown_attribute_is_attribute_error() -> None:
    try:
        parl.utils.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")
