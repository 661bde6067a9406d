"""Ordinary developer work, run unsandboxed and in a sandbox backend, compared (issue 44).

Each scenario starts from a fresh copy of a small Python project (a package under src/, its tests,
a Makefile, a secret in config/.env) and runs its commands one by one, as execute_command runs
them: through :func:`run_process` (own session, closed stdin, the grace it gives background
output), and in the sandbox compared after each command with nobody to ask. What is compared per
command: the exit code and the output, normalised only for what differs between any two runs
(the project's and the home's paths, temp directories, durations, commit ids).

``python -m tests.engine.parity_corpus BACKEND [--no-secret] [SCENARIO...]`` prints the differences
as JSON: the container test runs it where only Landlock can start.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from codingcode_jupyter.engine.approval.host_files import settle_host_files
from codingcode_jupyter.engine.processes import run_process
from codingcode_jupyter.engine.sandbox import CommandSandbox
from codingcode_jupyter.engine.settings import SandboxSettings

PY = sys.executable
GIT_ENV = {"GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.com", "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
           "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.com",
           "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z"}
PIP = "PIP_DISABLE_PIP_VERSION_CHECK=1 .venv/bin/python -m pip install -q --no-index --no-build-isolation"

# (name, commands): each command is one execute_command call.
SCENARIOS: list[tuple[str, list[str]]] = [
    ("git", ["git init -q && git add -A && git commit -qm init && git log --oneline | wc -l",
             "git checkout -qb feature && echo more >> README.md && git commit -qam two && git log --format=%s",
             "git reset -q --hard HEAD~1 && git status --short && git branch --list | wc -l"]),
    ("mkdir", ["mkdir -p results/run1 && echo done > results/run1/out.txt && cat results/run1/out.txt",
               "ls results/run1 && rm -r results && ls"]),
    ("heredoc", ["cat <<'EOF' > hello.py\nprint(1 + 1)\nEOF\n" + f"{PY} hello.py", f"{PY} hello.py && rm hello.py"]),
    ("redirect", ["echo hello > out.txt && wc -c < out.txt && mv out.txt kept.txt && cat kept.txt"]),
    ("pytest", [f"{PY} -m pytest -q -p no:randomly tests 2>&1 | tail -1", "ls -a .pytest_cache | sort | head -3",
                f"{PY} -m pytest -q -p no:randomly --lf tests 2>&1 | tail -1"]),
    ("venv", [f"{PY} -m venv .venv && .venv/bin/python -c 'import sys; print(sys.prefix != sys.base_prefix)'",
              ".venv/bin/python -c 'import sys; print(sys.version_info[0])'"]),
    ("pip-editable", [f"{PY} -m venv .venv && {PIP} --no-deps -e . && .venv/bin/python -c 'import demo; print(demo.VALUE)'",
                      ".venv/bin/python -c 'import demo; print(demo.VALUE)'"]),
    ("npm", ["npm init -y >/dev/null 2>&1; echo rc=$? && node -e \"console.log(require('./package.json').name)\""]),
    ("make", ["make && cat build/out.txt", "make clean && ls"]),
    ("formatters", ["ruff format -q src && ruff check -q --fix --select I,F401 src; echo rc=$? && cat src/demo/__init__.py"]),
    ("archives", ["tar czf src.tgz src && tar tzf src.tgz | sort", "zip -qr src.zip src && unzip -Z1 src.zip | sort"]),
    ("search", ["grep -rn VALUE . --include=*.py | sort", "grep -rln VALUE . | sort"]),
    ("listing", ["ls -a && ls -a config"]),
    ("background", ["(sleep 0.2; echo late) & echo now"]),
]
if shutil.which("uv"):
    SCENARIOS.append(("uv-venv", ["uv venv -q .venv && .venv/bin/python -c 'import sys; print(sys.prefix != sys.base_prefix)'"]))

_FILES = {
    # An in-tree build backend: `pip install -e .` works offline, with nothing but pip in the venv.
    "pyproject.toml": ('[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["_build"]\n\n'
                       '[project]\nname = "demo"\nversion = "0.1"\n'),
    "_build/backend.py": (
        "import os, zipfile\n"
        "def _wheel(directory, editable):\n"
        "    name = 'demo-0.1-py3-none-any.whl'\n"
        "    info = 'demo-0.1.dist-info/'\n"
        "    files = {info + 'METADATA': 'Metadata-Version: 2.1\\nName: demo\\nVersion: 0.1\\n',\n"
        "             info + 'WHEEL': 'Wheel-Version: 1.0\\nGenerator: demo\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n'}\n"
        "    if editable:\n"
        "        files['demo.pth'] = os.path.abspath('src') + '\\n'\n"
        "    files[info + 'RECORD'] = ''.join(f + ',,\\n' for f in files) + info + 'RECORD,,\\n'\n"
        "    with zipfile.ZipFile(os.path.join(directory, name), 'w') as wheel:\n"
        "        for path, text in files.items():\n"
        "            wheel.writestr(path, text)\n"
        "    return name\n"
        "def build_wheel(directory, config_settings=None, metadata_directory=None):\n"
        "    return _wheel(directory, False)\n"
        "def build_editable(directory, config_settings=None, metadata_directory=None):\n"
        "    return _wheel(directory, True)\n"
    ),
    "src/demo/__init__.py": "import os\nimport sys\nVALUE = 42\n\n\ndef double(x):\n    return  x*2\n",
    "tests/test_demo.py": "import sys\nsys.path.insert(0, 'src')\nfrom demo import VALUE\n\n\ndef test_value():\n    assert VALUE == 42\n",
    "Makefile": "build/out.txt:\n\tmkdir -p build\n\techo built > build/out.txt\n\nclean:\n\trm -rf build\n",
    "README.md": "# demo\n",
    "config/settings.yaml": "debug: false\n",
}
SECRET_FILE = ("config/.env", "API_KEY=parity-secret-4b1f\n")


def make_project(root: Path, secret: bool = True) -> Path:
    """The corpus's project; ``secret``: with a hidden file (config/.env) in it, as most projects have."""
    for rel, text in [*_FILES.items(), *([SECRET_FILE] if secret else [])]:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@dataclass
class Outcome:
    scenario: str
    step: int
    code: int | None
    out: str
    err: str


def _normalise(text: str, project: Path, home: Path) -> str:
    text = text.replace(str(project), "<P>").replace(str(home), "<H>")
    text = re.sub(r"/tmp/[\w./-]+", "<T>", text)
    text = re.sub(r"\b[0-9a-f]{7,40}\b", "<HASH>", text)
    return re.sub(r"\b\d+\.\d+s\b", "<D>", text)


def _env(home: Path) -> dict[str, str]:
    env = {"PATH": os.path.dirname(PY) + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "LANG": "C.UTF-8", "TERM": "dumb", "NO_COLOR": "1", "PAGER": "cat", "GIT_PAGER": "cat", **GIT_ENV}
    return env


async def run_scenario(name: str, commands: list[str], root: Path, backend: str | None,
                       secret: bool = True) -> list[Outcome]:
    """One scenario in a fresh project: unsandboxed (``backend`` None) or in that sandbox backend."""
    where = root / f"{name}-{backend or 'bare'}"
    project, home = make_project(where / "proj", secret), where / "home"
    home.mkdir(parents=True)
    env = _env(home)
    sandbox = None
    if backend is not None:
        settings = SandboxSettings.model_validate({"backend": backend, "env": ["GIT_AUTHOR_*", "GIT_COMMITTER_*"]})
        sandbox = CommandSandbox.create(project, settings, home=home)
        if not sandbox.active:
            raise RuntimeError(f"no {backend} sandbox: {sandbox.unavailable_reason}")
    outcomes: list[Outcome] = []
    try:
        for step, command in enumerate(commands):
            result = await _one(sandbox, command, project, env)
            outcomes.append(Outcome(name, step, result[0], _normalise(result[1], project, home),
                                    _normalise(result[2], project, home)))
    finally:
        if sandbox is not None:
            await sandbox.aclose()
    return outcomes


async def _one(sandbox: CommandSandbox | None, command: str, project: Path, env: dict[str, str]) -> tuple[int | None, str, str]:
    if sandbox is None:
        done = await run_process(["bash", "-c", command], cwd=project, env=env, timeout=180)
        return done.returncode, done.stdout.render(), done.stderr.render()
    with sandbox.command():
        watch = sandbox.watch_host()
        # As execute_command starts it (bwrap without the launcher, its descriptors passed; Landlock from
        # the launcher kept warm).
        spawn = sandbox.spawn_for(command, project, env, watch=watch)
        try:
            done = await run_process(spawn.argv, cwd=project, env=spawn.env, timeout=180, pass_fds=spawn.pass_fds,
                                     on_start=spawn.close, start=spawn.start)
        finally:
            spawn.close()
        notes = await settle_host_files(watch, command, None)
    return done.returncode, done.stdout.render(), done.stderr.render() + "".join(f"\n[note] {n}" for n in notes)


async def differences(backend: str, root: Path, only: list[str] | None = None,
                      secret: bool = True) -> list[dict[str, object]]:
    """Every command whose exit code or output differs between unsandboxed and ``backend``."""
    found: list[dict[str, object]] = []
    for name, commands in SCENARIOS:
        if only is not None and name not in only:
            continue
        bare = await run_scenario(name, commands, root, None, secret)
        boxed = await run_scenario(name, commands, root, backend, secret)
        for plain, confined in zip(bare, boxed):
            if (plain.code, plain.out, plain.err) != (confined.code, confined.out, confined.err):
                found.append({"bare": asdict(plain), "sandboxed": asdict(confined)})
    return found


if __name__ == "__main__":
    scratch = Path(tempfile.mkdtemp(prefix="codingcode-parity-", dir=os.environ.get("PARITY_DIR") or "/var/tmp"))
    try:
        names = [arg for arg in sys.argv[2:] if arg != "--no-secret"]
        print(json.dumps(asyncio.run(differences(sys.argv[1], scratch, names or None, "--no-secret" not in sys.argv))))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
