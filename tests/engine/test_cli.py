"""`python -m codingcode_jupyter permissions check` prints one JSON decision."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from codingcode_jupyter.__main__ import main

from .approval_helpers import make_project


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_outputs_one_json_object(tmp_path, capsys):
    project = make_project(tmp_path)
    code, out, _ = run(capsys, "permissions", "check", "--project", str(project), "execute_command", '{"command": "sudo id"}')
    assert code == 0
    result = json.loads(out)
    assert result["decision"] == "deny" and result["rule"] == "builtin:privilege" and set(result) == {"decision", "layer", "rule", "reason", "mode", "sandbox"}
    code, out, _ = run(capsys, "permissions", "check", "--project", str(project), "execute_command", '{"command": "pytest -q"}')
    assert json.loads(out)["decision"] == "allow"
    code, out, _ = run(capsys, "permissions", "check", "--project", str(project), "execute_command", '{"command": "make"}')
    assert json.loads(out)["decision"] == "ask"
    code, out, _ = run(capsys, "permissions", "check", "--project", str(project), "--mode", "plan", "write_file",
                       '{"path": "a.py", "content": ""}')
    assert json.loads(out)["decision"] == "deny"
    code, out, _ = run(capsys, "permissions", "check", "--project", str(project), "everything:echo", '{"message": "x"}')
    assert json.loads(out)["decision"] == "allow"


def test_bad_input_is_a_clear_message(tmp_path, capsys):
    project = make_project(tmp_path)
    code, out, err = run(capsys, "permissions", "check", "--project", str(project), "read_file", "{not json")
    assert code == 2 and "not valid JSON" in err and out == ""
    code, out, err = run(capsys, "permissions", "check", "--project", str(project), "read_file", "[1]")
    assert code == 2 and "JSON object" in err
    # A deny rule that cannot be read is left out loudly; the file's other deny rules still hold.
    (project / ".codingcode" / "settings.json").write_text('{"permissions": {"deny": ["bad(", "read_file"]}}')
    code, out, err = run(capsys, "permissions", "check", "--project", str(project), "read_file", "{}")
    assert "warning" in err and "settings.json" in err and "permissions.deny.0" in err
    assert json.loads(out)["decision"] == "deny"
    # An allow rule that cannot be read is left out, and said so.
    (project / ".codingcode" / "settings.json").write_text('{"permissions": {"allow": ["bad("]}}')
    code, out, err = run(capsys, "permissions", "check", "--project", str(project), "read_file", "{}")
    assert code == 0 and "warning" in err and "settings.json" in err and "permissions.allow.0" in err


@pytest.mark.slow
def test_module_entry_point_imports_nothing_from_jupyter(tmp_path):
    project = make_project(tmp_path)
    script = (
        "import sys, runpy\n"
        f"sys.argv = ['codingcode', 'permissions', 'check', '--project', {str(project)!r}, 'read_file', '{{\"path\": \"/etc/shadow\"}}']\n"
        "try:\n    runpy.run_module('codingcode_jupyter', run_name='__main__')\nexcept SystemExit as e:\n    assert e.code == 0\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('IPython', 'ipykernel', 'ipywidgets')]\n"
        "assert not bad, bad\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["decision"] == "deny"
