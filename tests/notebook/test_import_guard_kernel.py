"""End to end in a real kernel: a module planted in the project under any name the package imports
after %load_ext never runs; the same plant imported by the person's own cell does (the control).

The names come from the package's code (tests/lazy_imports.py), not a list kept by hand.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from codingcode_jupyter.import_guard import ProjectShadowGuard
from tests.lazy_imports import lazy_imports
from tests.notebook.kernel_harness import Kernel

PLANT = "import pathlib as _p\n_p.Path({marker!r}).joinpath({name!r}).write_text('ran')\n"


def _plant(directory: Path, names: list[str], marker: Path) -> None:
    for name in names:
        (directory / f"{name}.py").write_text(PLANT.format(marker=str(marker), name=name))


def test_the_guard_finds_the_lazy_imports_from_the_code() -> None:
    names = lazy_imports()
    # Positive control on the finder itself: the imports issue 33 names are among what it finds.
    assert {"markdownify", "nbformat", "keyring", "cairosvg", "bs4"} <= set(names), sorted(names)


def test_clean_path_drops_the_project_and_the_working_directory_but_keeps_its_virtualenv(tmp_path: Path,
                                                                                           monkeypatch) -> None:
    project = tmp_path / "p"
    site = project / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (project / ".venv" / "pyvenv.cfg").write_text("home = /usr\n")
    (project / "src").mkdir()
    monkeypatch.chdir(project)
    guard = ProjectShadowGuard(str(project))
    kept = guard.clean_path(["", ".", str(project), str(project / "src"), str(site), "/usr/lib/python3.11"])
    assert kept == [str(site), "/usr/lib/python3.11"]


@pytest.fixture
def kernel(tmp_path: Path):
    project = tmp_path / "project"
    project.mkdir()
    k = Kernel(sys.executable, project, {"CODINGCODE_PRECONNECT": "0"}, tmp_path / "jupyter")
    k.project = project
    try:
        yield k
    finally:
        k.close()


def test_a_planted_module_never_runs_in_the_kernel(kernel: Kernel, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    marker.mkdir()
    names = sorted(set(lazy_imports(everywhere=True)) | {"zz_person_module"})
    other = tmp_path / "elsewhere"
    other.mkdir()
    _plant(kernel.project, names, marker)
    _plant(other, names, marker)
    kernel.ok("%load_ext codingcode_jupyter")
    # The kernel moves to another working directory holding the same plants, and the person
    # puts the project on the path themselves: both are ignored for the package's imports.
    kernel.ok(f"import os, sys; os.chdir({str(other)!r}); sys.path.insert(0, {str(kernel.project)!r})")
    # A real path through a tool: fetch_url's HTML conversion imports bs4 and markdownify on first use.
    kernel.ok("from codingcode_jupyter.engine.tools.web import html_to_markdown\n"
              "assert html_to_markdown('<title>t</title><p>x</p>')[1] == 'x'")
    # Every other name, imported from a module of the package (as its lazy import does).
    probe = (
        "import sys, json\n"
        "import codingcode_jupyter.engine.tools.web as _owner\n"
        f"_names = {json.dumps(names)}\n"
        "_result = {}\n"
        "for _n in _names:\n"
        "    if _n in sys.modules or _n == 'zz_person_module':\n"
        "        continue\n"
        "    try:\n"
        "        exec(compile('import ' + _n, _owner.__file__, 'exec'), {'__name__': _owner.__name__})\n"
        "        _result[_n] = getattr(sys.modules[_n], '__file__', None)\n"
        "    except ImportError as e:\n"
        "        _result[_n] = 'missing: ' + str(e)\n"
        "print(json.dumps(_result))\n"
    )
    reply = kernel.ok(probe)
    resolved = json.loads(reply["output"].strip().splitlines()[-1])
    assert sorted(p.name for p in marker.iterdir()) == [], resolved
    for name, where in resolved.items():
        assert where is None or where.startswith("missing") or str(tmp_path) not in where, (name, where)
    # Control: the person's own import from a cell still finds the project's module, and runs it.
    kernel.ok("import zz_person_module")
    assert (marker / "zz_person_module").exists()
