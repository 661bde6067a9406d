"""`%agent undo` puts the person's variables back, in a real kernel (issue 49, item 1): a dict changed in
place, a rebound float, a new name, a DataFrame changed in place, and an object that cannot be copied
named as not restorable before the person confirms; a variable the turn did not touch stays as the
person left it. Both ways the agent's code runs: in the kernel itself, and in its confined fork
(where only the kept names come back, so only they are undone)."""

from __future__ import annotations

import json

import pytest

from tests.fakes.anthropic_server import Reply, text
from tests.notebook.test_confined_fork_kernel import _run, _value
from tests.notebook.test_kernel import kernel  # noqa: F401 (fixture)

pytestmark = pytest.mark.kernel

SETUP = "import threading\ndata = {'a': 1}\nalias = data\nrate = 0.5\nlock = threading.Lock()\nuntouched = [1, 2, 3]\n"


def _in_the_kernel(kernel) -> None:
    """The person's own settings: the agent's code runs in the kernel itself, allowed outright."""
    kernel.ok(
        "import json\nfrom codingcode_jupyter.engine.user_dir import user_dir\n"
        "user_dir().mkdir(parents=True, exist_ok=True)\np = user_dir() / 'settings.json'\n"
        "s = json.loads(p.read_text()) if p.exists() else {}\n"
        "s.setdefault('sandbox', {})['confineKernelCode'] = False\n"
        "s.setdefault('permissions', {}).setdefault('allow', []).append('run_python')\np.write_text(json.dumps(s))"
    )


def _audit(kernel) -> list[dict]:
    path = kernel.project / ".codingcode" / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_undo_restores_the_variables_the_turn_changed_in_the_kernel(kernel):
    _in_the_kernel(kernel)
    kernel.ok(SETUP)
    try:
        import pandas  # noqa: F401

        has_pandas = True
        kernel.ok("import pandas as pd\ndf = pd.DataFrame({'x': [1, 2, 3]})")
    except ImportError:
        has_pandas = False
    code = "data['b'] = 2\nrate = 9.0\nmade = 'new'\nlock.acquire()\n" + ("df['y'] = df.x * 2\n" if has_pandas else "")
    result = _run(kernel, code)
    assert "[error]" not in result, result
    assert _value(kernel, "sorted(data)") == "['a', 'b']" and _value(kernel, "rate") == "9.0"  # it ran in the kernel

    dry = kernel.ok("%agent undo --dry-run")["output"]
    assert "Variables" in dry, dry
    for line in (
        "restore         data (mutated)",
        "restore         rate (rebound)",
        "remove          made (new)",
        "not restorable  lock",
    ):
        assert line in dry, dry
    assert "cannot be copied" in dry and "untouched" not in dry, dry
    if has_pandas:
        assert "restore         df (mutated)" in dry, dry
    assert "kernel's variables" not in dry  # no longer a limit: they are restored
    assert _value(kernel, "rate") == "9.0"  # a dry run changes nothing

    done = kernel.ok("%agent undo --yes")["output"]
    assert "variables restored" in done and "not restorable: lock" in done, done
    assert _value(kernel, "data") == "{'a': 1}" and _value(kernel, "alias is data") == "True"
    assert _value(kernel, "rate") == "0.5" and _value(kernel, "'made' in dir()") == "False"
    assert _value(kernel, "untouched") == "[1, 2, 3]"
    if has_pandas:
        assert _value(kernel, "list(df.columns)") == "['x']"
    else:
        pytest.skip("pandas is not installed: the DataFrame case was left out (the others passed)")
    record = _audit(kernel)[-1]
    assert record["event"] == "undo" and {n["name"] for n in record["names"]} >= {"data", "rate", "made", "lock"}


def test_undo_restores_the_names_the_fork_kept(kernel):
    kernel.ok(SETUP)
    result = _run(kernel, "rate = 2.0\ndata['c'] = 3\nfresh = 1", keep=["rate", "fresh"])
    if "confined copy" not in result:
        pytest.skip(f"no confined fork on this machine: {result[-300:]}")
    assert _value(kernel, "rate") == "2.0" and _value(kernel, "fresh") == "1"
    assert _value(kernel, "data") == "{'a': 1}"  # not kept: the fork's change stayed in the fork
    dry = kernel.ok("%agent undo --dry-run")["output"]
    assert "restore         rate (rebound)" in dry and "remove          fresh (new)" in dry, dry
    assert "data" not in dry.split("Variables", 1)[1], dry
    kernel.ok("fresh = 5")  # the person's own cell, after the turn
    stopped = kernel.execute("%agent undo --yes")
    assert kernel.reply(stopped)["status"] == "error" and "fresh changed after the turn" in kernel.text_output(stopped)
    assert _value(kernel, "rate") == "2.0" and _value(kernel, "fresh") == "5"  # nothing was changed
    kernel.ok("%agent undo --yes --force")
    assert _value(kernel, "rate") == "0.5" and _value(kernel, "'fresh' in dir()") == "False"
    # Nothing is left to undo of that turn, and the next turn works.
    kernel.fake.add(Reply([text("ok")]))
    kernel.ok("%%agent\nhello")
    told = json.dumps(kernel.fake.requests[-1]["messages"][-1]["content"])
    assert "variables are back too: restored rate; removed fresh" in told, told
    again = kernel.execute("%agent undo")
    assert kernel.reply(again)["status"] == "error" and "Nothing to undo" in kernel.text_output(again)
