"""Secret files by name, one definition (engine/secret_files.is_env_file) read by the env-file rule,
the sandbox's mask and read_file; each name asked has a control that is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from codingcode_jupyter.engine.secret_files import is_env_file, secret_file
from tests.engine.approval_helpers import evaluate, make_project

SECRET_NAMES = [".env", ".env.local", "config/prod.env", "secrets.env", "#.env#", ".#.env", ".env~", ".env.swp",
                ".envrc", ".flaskenv", "app/.env.production.bak"]
ORDINARY = ["env.py", "environment.yml", "docs/a.md", "src/envelope.py", ".environment"]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_env_like_names(name: str) -> None:
    assert is_env_file(name.rsplit("/", 1)[-1])


@pytest.mark.parametrize("name", ORDINARY)
def test_ordinary_names(name: str) -> None:
    assert not is_env_file(name.rsplit("/", 1)[-1])


@pytest.mark.parametrize("name", SECRET_NAMES)
async def test_read_file_of_a_secret_name_is_asked_in_default_mode(tmp_path: Path, name: str) -> None:
    project = make_project(tmp_path)
    result = await evaluate(project, "read_file", {"path": name}, mode="default")
    assert result.kind == "ask" and result.rule == "builtin:env-file", result.model_dump()
    control = await evaluate(project, "read_file", {"path": "docs/a.md"}, mode="default")
    assert control.kind == "allow"


@pytest.mark.parametrize("command", ["git show HEAD:config/prod.env", "git cat-file -p HEAD:secrets.env",
                                     "cat '#.env#'"])
async def test_git_show_of_a_secret_name_is_asked(tmp_path: Path, command: str) -> None:
    project = make_project(tmp_path)
    result = await evaluate(project, "execute_command", {"command": command}, mode="bypass")
    assert result.kind == "ask", result.model_dump()


# ----- web_search queries are egress (issue 33, point 6) ------------------------------------------

@pytest.mark.parametrize("mode", ["default", "acceptEdits"])
async def test_web_search_is_asked_unless_a_rule_allows_it(tmp_path: Path, mode: str) -> None:
    project = make_project(tmp_path)
    result = await evaluate(project, "web_search", {"query": "KEY=1 leaked"}, mode=mode)
    assert result.kind == "ask" and "KEY=1 leaked" in result.reason, result.model_dump()
    # Control: the person's own allow rule restores the old behaviour.
    (project / ".codingcode" / "settings.json").write_text('{"permissions": {"allow": ["web_search"]}}')
    allowed = await evaluate(project, "web_search", {"query": "KEY=1 leaked"}, mode=mode)
    assert allowed.kind == "allow", allowed.model_dump()


# ----- secret files beyond dotenv (issue 33, point 4): names, key extensions, key content ----------

KEY = "-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----\n"


@pytest.mark.parametrize("name", ["secrets.yaml", "config/credentials.json", "client_secret.json", "id_rsa",
                                  "id_ed25519", "tls/server.key", "app.p12", "store.jks", ".git-credentials",
                                  "AWS_CREDENTIALS", "secrets.yaml~", "missing.pem"])
def test_secret_files_by_name(tmp_path: Path, name: str) -> None:
    assert secret_file(tmp_path / name) is not None, name


@pytest.mark.parametrize("name", ["secrets.py", "test_credentials.py", "docs/credentials.md", "id_rsa.pub",
                                  "server.crt", "keys.txt", "config.yaml"])
def test_ordinary_files_are_not_secret(tmp_path: Path, name: str) -> None:
    assert secret_file(tmp_path / name) is None, name


def test_a_private_key_is_found_by_its_content(tmp_path: Path) -> None:
    pem, cert, note = tmp_path / "bundle.pem", tmp_path / "cert.pem", tmp_path / "notes.txt"
    pem.write_text("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n" + KEY)
    cert.write_text("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n")
    note.write_text(KEY)
    assert secret_file(pem) and secret_file(note)
    assert secret_file(cert) is None  # control: a certificate alone is not a secret


# ----- recursive reads over a tree holding files named for secrets (issue 33, guard33c) ------------

def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, body in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body)
    return root


def test_find_secret_named_by_name_not_by_every_files_content(tmp_path: Path) -> None:
    from codingcode_jupyter.engine.secret_files import find_secret_named

    key = "-----BEGIN RSA PRIVATE KEY-----\nx\n"
    clean = _tree(tmp_path / "clean", {"a.py": "x", "sub/b.txt": "y", "certs/server.pem": "-----BEGIN CERTIFICATE-----\n",
                                       "hidden_key.txt": key})
    assert find_secret_named(clean) is None, "control: no name for secrets (a key only by content is not searched)"
    assert find_secret_named(_tree(tmp_path / "a", {"x/config/secrets.yaml": "k"})) == (
        tmp_path / "a/x/config/secrets.yaml", "a file named for secrets or credentials")
    assert find_secret_named(_tree(tmp_path / "b", {"id_ed25519": key}))[0].name == "id_ed25519"
    assert find_secret_named(_tree(tmp_path / "c", {"tls/server.pem": key}))[0].name == "server.pem"
    assert find_secret_named(_tree(tmp_path / "d", {"prod.env": "K=1"}))[0].name == "prod.env"
    dotted = _tree(tmp_path / "e", {"conf/.secrets.yaml": "t", "src/a.py": "x"})
    assert find_secret_named(dotted) is not None and find_secret_named(dotted, dotfiles=False) is None
    # A tree too large to search is not proven free of them.
    big = _tree(tmp_path / "f", {f"n{i}.txt": "" for i in range(30)})
    assert find_secret_named(big, limit=10) == (big, "a directory too large to search for files named for secrets")


@pytest.mark.parametrize("command", ["grep -rn token config", "rg token config", "cat config/*",
                                     "find config -type f -exec cat {} +"])
async def test_a_recursive_read_names_the_secret_file_it_would_read(tmp_path: Path, command: str) -> None:
    project = _tree(make_project(tmp_path), {"config/deploy_credentials.yaml": "k: 1\n", "config/app.yaml": "a\n",
                                             "lib/util.py": "x\n", "lib/data/table.csv": "a,b\n"})
    result = await evaluate(project, "execute_command", {"command": command}, mode="bypass")
    assert result.kind == "ask" and "deploy_credentials.yaml" in result.reason, result.model_dump()
    control = await evaluate(project, "execute_command", {"command": command.replace("config", "lib")}, mode="bypass")
    assert control.kind == "allow", control.model_dump()


# ----- listing a .env file shows its name, not what it holds ------------------------------------

@pytest.mark.parametrize("command", ["ls -la .env", "ls .env .env.example", "stat .env", "find . -name '.env*' -print",
                                     "du -sh .env"])
async def test_listing_a_dotenv_file_is_not_asked(tmp_path: Path, command: str) -> None:
    project = make_project(tmp_path)
    result = await evaluate(project, "execute_command", {"command": command}, mode="default")
    assert result.kind == "allow", result.model_dump()


@pytest.mark.parametrize("command", ["cat .env", "wc -c .env", "find . -name .env -exec cat {} +",
                                     "find . -name .env | xargs cat", "grep -r KEY ."])
async def test_reading_a_dotenv_file_is_still_asked(tmp_path: Path, command: str) -> None:
    project = make_project(tmp_path)
    result = await evaluate(project, "execute_command", {"command": command}, mode="default")
    assert result.kind == "ask", result.model_dump()
