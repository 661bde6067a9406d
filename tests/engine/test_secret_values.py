"""Which values are known secrets, and finding them in every form (issue 45, item 5).

Every attack keeps its positive control beside it: a value of the same length that is no secret
goes through untouched, so a check that redacted everything (or nothing) would fail here.
"""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest

from codingcode_jupyter.engine.redaction import RUN, Matcher, forms
from codingcode_jupyter.engine.secret_values import (
    KnownSecrets,
    could_be_secret,
    from_dotenv,
    from_environ,
    from_json_store,
    looks_like_token,
    secret_name,
)

# Made at run time: a key-shaped literal in the repository would itself be a leak to scanners.
KEY = "sk-ant-api03-" + secrets.token_urlsafe(72) + "AA"
# The control: as long as the key, the same alphabet, never made known.
OTHER = "sk-ant-api03-" + secrets.token_urlsafe(72) + "AA"
MARK = "[redacted: ANTHROPIC_API_KEY"


def matcher(*pairs: tuple[str, str]) -> Matcher:
    return Matcher(pairs or [("ANTHROPIC_API_KEY", KEY)])


def shows(text: str, value: str = KEY) -> bool:
    """Whether any run of RUN characters of ``value`` (or the whole of a shorter one) is in ``text``."""
    need = min(RUN, len(value))
    return any(value[i:i + need] in text for i in range(len(value) - need + 1))


# -- which names and values ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["ANTHROPIC_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD",
                                  "db_pass", "apiKey", "OPENAI_APIKEY", "GH_PAT", "accessToken", "refresh_token",
                                  "SMTP_PASSWD", "client_secret", "JUPYTERHUB_API_TOKEN", "GPG_PASSPHRASE"])
def test_names_that_say_secret(name):
    assert secret_name(name)


@pytest.mark.parametrize("name", ["PATH", "HOME", "PWD", "OLDPWD", "KEYBOARD_LAYOUT", "DEBUG", "PASSENGER_COUNT", "SSH_AUTH_SOCK", "DATABASE_URL"])
def test_names_that_do_not(name):
    assert not secret_name(name)


def test_values_that_could_be_secrets_and_those_too_plain():
    for value in ("Passw0rd!x", "hunter2hunter2", "correct horse battery", KEY):
        assert could_be_secret(value), value
    for value in ("1", "true", "8000", "12345678901", "postgres", "changeme", "/run/secrets/db", "~/.ssh/id_rsa",
                  "https://example.com/token", "short"):
        assert not could_be_secret(value), value


def test_a_url_is_a_secret_when_the_name_says_so_and_not_when_it_names_a_place():
    hook = "https://hooks.slack.com/services/T000/B000/" + "Xy9" * 8
    env = {"SLACK_WEBHOOK_SECRET": hook, "OAUTH_TOKEN_URL": "https://auth.example.com/oauth/token?client=abc123xyz",
           "API_KEY_FILE": "/run/secrets/api_key"}
    assert dict(from_environ(env)) == {"SLACK_WEBHOOK_SECRET": hook}


def test_values_that_look_like_tokens_whatever_their_name():
    assert looks_like_token(KEY) and looks_like_token("a" * 16 + "0123456789abcdef" * 2)
    for value in ("my-great-app-v2-production", "db-primary-01.internal.example.com", "2026-01-01T00:00:00Z",
                  "550e8400-e29b-41d4-a716-446655440000", "Hello World 2026 edition", "/srv/app/Data2026Files"):
        assert not looks_like_token(value), value


def test_the_environment_rule():
    env = {"ANTHROPIC_API_KEY": KEY, "DEBUG": "1", "PATH": "/usr/bin:/bin", "AWS_REGION": "eu-west-1",
           "AWS_ACCESS_KEY_ID": "AKIA" + "Q" * 16, "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
           "AWS_SOMETHING": "Ab1" * 8, "UNRELATED_BLOB": OTHER, "PGPASSWORD": "postgres",
           "DATABASE_URL": "postgres://app:S3cret-Pw-9@db:5432/app", "LOCAL_DB": "postgres://postgres:postgres@db/x"}
    assert dict(from_environ(env)) == {
        "ANTHROPIC_API_KEY": KEY, "AWS_ACCESS_KEY_ID": "AKIA" + "Q" * 16,
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AWS_SOMETHING": "Ab1" * 8,
        "DATABASE_URL (its password)": "S3cret-Pw-9"}


def test_a_dotenv_file():
    text = (f"# keys\nexport ANTHROPIC_API_KEY={KEY}\nDEBUG=1\nEMPTY_TOKEN=\nNAME_ONLY_KEY\nSTRIPE=\"{OTHER}\"\n"
            "APP_NAME=my-great-app\nPEM_KEY=\"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n"
            "-----END PRIVATE KEY-----\"\nbroken line without equals\nDB_PASSWORD='Passw0rd!x'\n")
    found = dict(from_dotenv(text, ".env"))
    assert found[".env:ANTHROPIC_API_KEY"] == KEY and found[".env:STRIPE"] == OTHER
    assert found[".env:DB_PASSWORD"] == "Passw0rd!x" and "MIIEvQIBADANBgkq" in found[".env:PEM_KEY"]
    assert set(found) == {".env:ANTHROPIC_API_KEY", ".env:STRIPE", ".env:DB_PASSWORD", ".env:PEM_KEY"}


def test_token_stores():
    claude = {"claudeAiOauth": {"accessToken": "sk-ant-oat01-" + "x1Y" * 20, "refreshToken": "sk-ant-ort01-" + "z9W" * 20,
                                "expiresAt": 1790000000000, "scopes": ["user:inference"], "subscriptionType": "pro"}}
    mcp = {"server_url": "https://mcp.example.com/mcp", "tokens": {"access_token": "tok" + "A1b" * 10,
           "token_type": "Bearer", "expires_in": 3600}, "client_info": {"client_id": "abc"}}
    assert dict(from_json_store(claude, "C")) == {"C claudeAiOauth.accessToken": claude["claudeAiOauth"]["accessToken"],
                                                  "C claudeAiOauth.refreshToken": claude["claudeAiOauth"]["refreshToken"]}
    assert dict(from_json_store(mcp, "M")) == {"M tokens.access_token": mcp["tokens"]["access_token"]}


# -- the forms of a value ------------------------------------------------------------------------------


def test_every_form_is_found_and_the_control_is_not():
    m = matcher()
    raw = KEY.encode()
    written = {
        "as is": KEY, "hex": raw.hex(), "HEX": raw.hex().upper(), "URL-encoded": quote(KEY + "/+=", safe=""),
        "JSON": json.dumps({"k": KEY}), "base64": base64.b64encode(raw).decode(),
        "base64 at offset 1": base64.b64encode(b"x" + raw).decode(), "base64 at offset 2": base64.b64encode(b"xy" + raw).decode(),
        "URL-safe base64": base64.urlsafe_b64encode(b"?" + raw).decode(),
    }
    for how, text in written.items():
        redacted, found = m.redact(f"before {text} after")
        assert found and found[0][0] == "ANTHROPIC_API_KEY", how
        assert MARK in redacted and redacted.startswith("before ") and redacted.endswith(" after"), how
        assert not shows(redacted) and not shows(redacted, raw.hex()), how
    # Control: the same forms of a value nobody made known are left as they are.
    for text in (OTHER, OTHER.encode().hex(), base64.b64encode(b"x" + OTHER.encode()).decode()):
        assert m.redact(f"before {text} after") == (f"before {text} after", [])


def test_base64_of_a_dotenv_file_wrapped_at_76_columns():
    """`base64 .env`: the key sits at any offset of the stream, cut across lines."""
    env = f"FOO=bar\nANTHROPIC_API_KEY={KEY}\nDEBUG=1\n".encode()
    wrapped = subprocess.run(["base64"], input=env, capture_output=True, check=True).stdout.decode()
    redacted, found = matcher().redact(wrapped)
    assert found == [("ANTHROPIC_API_KEY", "base64")]
    decoded = base64.b64decode("".join(line for line in redacted.splitlines() if "[" not in line) or "AAAA" + "==")
    assert KEY.encode()[:RUN] not in decoded
    # What is left of the key at the edges of the lines is shorter than a run: not the key.
    assert not shows(redacted, base64.b64encode(KEY.encode()).decode()[4:])
    control = subprocess.run(["base64"], input=env.replace(KEY.encode(), OTHER.encode()), capture_output=True).stdout
    assert matcher().redact(control.decode()) == (control.decode(), [])


def test_a_key_split_across_two_results_is_caught_in_each_piece_and_short_pieces_are_not():
    m = matcher()
    first, second = KEY[:50], KEY[50:]
    assert MARK in m.redact(f"part one: {first}")[0] and MARK in m.redact(f"part two: {second}")[0]
    # The documented limit: pieces shorter than RUN characters are each too short to tell from chance.
    pieces = [KEY[i:i + RUN - 1] for i in range(0, len(KEY), RUN - 1)]
    assert all(m.redact(piece) == (piece, []) for piece in pieces)


def test_short_values_match_whole_and_only_whole():
    m = matcher(("DB_PASSWORD", "Passw0rd!x"))
    assert m.redact("pw=Passw0rd!x;")[0] == "pw=[redacted: DB_PASSWORD];"
    assert m.redact("pw=Passw0rd!y;") == ("pw=Passw0rd!y;", [])


def test_a_jwt_header_and_a_pem_frame_are_not_secret():
    header = base64.urlsafe_b64encode(b'{"alg":"RS256","typ":"JWT"}').decode().rstrip("=")
    payload = base64.urlsafe_b64encode(b'{"sub":"me-and-only-me-42"}').decode().rstrip("=")
    jwt = f"{header}.{payload}.{secrets.token_urlsafe(40)}"
    m = matcher(("MCP token x tokens.access_token", jwt))
    other_jwt = f"{header}.eyJzdWIiOiJzb21lb25lLWVsc2UifQ.{secrets.token_urlsafe(40)}"
    assert m.redact(other_jwt) == (other_jwt, [])
    assert m.redact(jwt)[0] == f"{header}.[redacted: MCP token x tokens.access_token]"
    body = "\n".join(secrets.token_urlsafe(48) for _ in range(3))
    pem = f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----"
    m = matcher(("KEY_PEM", pem))
    assert m.redact("-----BEGIN PRIVATE KEY-----\nother\n") == ("-----BEGIN PRIVATE KEY-----\nother\n", [])
    assert not shows(m.redact(pem)[0], body)


def test_forms_are_not_repeated_and_never_empty():
    made = forms("K", "abcdefgh12345678")
    assert len({form.text for form in made}) == len(made) and all(form.text for form in made)


def test_outbound_finds_encoded_spaced_and_split_values():
    m = matcher()
    assert m.leaving({"url": f"http://127.0.0.1:9/?k={quote(quote(KEY, safe=''), safe='')}"}) == [
        ("ANTHROPIC_API_KEY", "")]
    password = Matcher([("DB_PASSWORD", "p@ss/w0rd+x=y! 42")])
    assert password.leaving(f"https://x.test/?p={quote(quote('p@ss/w0rd+x=y! 42', safe=''), safe='')}") == [
        ("DB_PASSWORD", "URL-encoded")]
    spaced = " ".join(f"{byte:02x}" for byte in KEY.encode())
    assert m.leaving({"q": spaced})[0][0] == "ANTHROPIC_API_KEY"
    assert m.leaving({"a": KEY[:10], "b": KEY[10:20], "c": KEY[20:]})[0][0] == "ANTHROPIC_API_KEY"
    assert m.leaving({"q": f"how to rotate ANTHROPIC_API_KEY {OTHER}"}) == []
    # A short value counts as it is written, not pieced together by chance from separate pieces.
    short = Matcher([("DB_PASSWORD", "abc12345")])
    assert short.leaving({"q": "pw abc12345"}) == [("DB_PASSWORD", "")]
    assert short.leaving({"url": "https://x.test/a/bc1/2345"}) == [] and short.leaving(["abc1", "2345"]) == []


def test_non_ascii_text_is_searched_too():
    redacted, found = matcher().redact(f"é€ {KEY} ü")
    assert redacted == f"é€ {MARK}] ü" and found


def test_redact_value_leaves_base64_sources_and_the_input_untouched():
    content = [{"type": "text", "text": f"k={KEY}"},
               {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR" + KEY}}]
    redacted, found = matcher().redact_value(content)
    assert redacted[0]["text"] == f"k={MARK}]" and redacted[1] == content[1] and found
    assert content[0]["text"] == f"k={KEY}"  # a copy
    assert matcher().redact_value(["nothing"]) == (["nothing"], [])


# -- the session's registry ------------------------------------------------------------------------------


def test_known_secrets_follow_the_files_and_the_environment(tmp_path: Path, monkeypatch):
    project = tmp_path / "p"
    (project / "sub").mkdir(parents=True)
    (project / "sub" / ".env.local").write_text(f"STRIPE_SECRET_KEY={OTHER}\nDEBUG=1\n")
    environ = {"GITHUB_TOKEN": "ghp_" + "Z9y" * 12}
    known = KnownSecrets(project, environ=environ)
    assert known.redact(f"{OTHER} {environ['GITHUB_TOKEN']}") == \
        "[redacted: sub/.env.local:STRIPE_SECRET_KEY] [redacted: GITHUB_TOKEN]"
    # A dotenv file edited is read again at the next use; a new one at the next turn's walk.
    (project / "sub" / ".env.local").write_text("DEBUG=1\n")
    assert known.redact(OTHER) == OTHER
    (project / ".env").write_text(f"ANTHROPIC_API_KEY={KEY}\n")
    assert known.redact(KEY) == KEY
    known.walk_next()
    assert known.redact(KEY) == "[redacted: .env:ANTHROPIC_API_KEY]"
    environ["NEW_TOKEN"] = "n3w-T0ken-value"
    assert known.redact("n3w-T0ken-value") == "[redacted: NEW_TOKEN]"


def test_known_secrets_read_the_token_stores(tmp_path: Path, monkeypatch):
    claude = tmp_path / "claude"
    claude.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    tokens = tmp_path / "tokens"
    tokens.mkdir()
    known = KnownSecrets(None, environ={})
    known.add_token_dir(tokens)
    access = "mcpTok" + secrets.token_hex(20)
    assert known.redact(access) == access
    (tokens / "github.json").write_text(json.dumps({"tokens": {"access_token": access}}))
    assert known.redact(access) == "[redacted: MCP token github tokens.access_token]"
    oauth = "sk-ant-oat01-" + secrets.token_urlsafe(40)
    (claude / ".credentials.json").write_text(json.dumps({"claudeAiOauth": {"accessToken": oauth}}))
    assert known.redact(oauth) == "[redacted: Claude Code's .credentials.json claudeAiOauth.accessToken]"
    known.hold("held by the session", "in-Memory-0nly-token")
    assert known.redact("in-Memory-0nly-token") == "[redacted: held by the session]"


def test_one_value_in_two_places_has_one_name(tmp_path: Path):
    project = tmp_path / "p"
    project.mkdir()
    (project / ".env").write_text(f"ANTHROPIC_API_KEY={KEY}\n")
    known = KnownSecrets(project, environ={"ANTHROPIC_API_KEY": KEY})
    assert known.redact(KEY) == "[redacted: ANTHROPIC_API_KEY]"


def test_a_value_beyond_ascii_in_ascii_and_other_text():
    m = matcher(("DB_PASSWORD", "pässwörd-Ünïcode-42"))
    assert m.redact("é pässwörd-Ünïcode-42")[0] == "é [redacted: DB_PASSWORD]"
    assert m.redact(quote("pässwörd-Ünïcode-42"))[0] == "[redacted: DB_PASSWORD (URL-encoded)]"
    assert m.redact("pässwörd-Ünïcode-42".encode().hex())[0] == "[redacted: DB_PASSWORD (hex)]"


def test_looking_for_secrets_is_not_counted_as_judging(tmp_path, monkeypatch):
    """The first look of a turn walks the project for dotenv files: that is not the call's judging, so a
    large project does not turn an MCP call or a fetch into a question for want of time."""
    import time

    from codingcode_jupyter.engine import budget, secret_values

    def slow_walk(root: Path, limit: int = 20_000) -> tuple[list[Path], bool]:
        time.sleep(0.2)
        budget.check()  # as the real walk does every 512 entries
        return [], False

    monkeypatch.setattr(secret_values, "find_env_files", slow_walk)
    known = KnownSecrets(tmp_path, environ={"GITHUB_TOKEN": "ghp_" + "Z9y" * 12})
    judging = budget.Budget(0.1)
    with judging.running():
        assert known.leaving("ghp_" + "Z9y" * 12) == [("GITHUB_TOKEN", "")]
    judging.check()


def test_a_value_shorter_than_an_anchor_is_found_whole():
    known = KnownSecrets(None, environ={})
    known.hold("PIN", "4x7q2")
    assert known.redact("pin 4x7q2 and 4x7q") == "pin [redacted: PIN] and 4x7q"
