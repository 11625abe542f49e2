"""tools/house_plan.py counts the arrows no import shows: plug-ins a room reaches through core's lookups."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _tool():
    spec = importlib.util.spec_from_file_location("house_plan", ROOT / "tools" / "house_plan.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write(root: Path, files: dict[str, str]) -> Path:
    package = root / "chaosdb"
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return package


def test_run_time_arrows_through_core_lookups_make_a_circle_no_import_shows(tmp_path):
    package = _write(tmp_path, {
        "__init__.py": "", "core/__init__.py": "",
        "core/adapters.py": "def split_role(r):\n    return r\n",
        "core/engines.py": "def engine_action(e, n):\n    return e\n",
        "core/lookups.py": "from chaosdb.core.adapters import split_role\n\n"
                           "def where(c):\n    return split_role(c)\n",
        "db/__init__.py": "",
        "db/adapter.py": "from chaosdb.core.engines import engine_action\n\n"
                         "def kill():\n    return engine_action('host', 'kill')\n",
        "host/__init__.py": "", "host/engine.py": "ENGINE = 'host'\n",
        "host/actions.py": "from chaosdb.core.lookups import where\n\ndef act(t):\n    return where(t)\n",
    })
    figures = _tool().measure(package)
    assert figures["circles"] == []  # the imports alone: db and host know only core
    assert figures["runtime_arrows_of_room"] == {"db": ["host"], "host": ["db"]}
    assert figures["runtime_circles"] == [["db", "host"]]
