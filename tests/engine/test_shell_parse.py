"""The shell parser yields every simple command bash would run, wrappers peeled."""

from __future__ import annotations

import pytest

from codingcode_jupyter.engine.approval.shell_parse import parse_command


def argvs(source, cwd="/p"):
    return [c.argv for c in parse_command(source, cwd=cwd, home="/home/u").commands if not c.container]


@pytest.mark.parametrize("source, expected", [
    ("a; b && c || d", [["a"], ["b"], ["c"], ["d"]]),
    ("a | b | c", [["a"], ["b"], ["c"]]),
    ("(a; b)", [["a"], ["b"]]),
    ("echo $(a) `b` <(c)", [["a"], ["b"], ["c"], ["echo", "$(a)", "`b`", "<(c)"]]),
    ("bash -c 'a; b'", [["a"], ["b"]]),
    ("eval 'a | b'", [["a"], ["b"]]),
    ("env X=1 timeout -s KILL 5 nice -n 2 nohup stdbuf -oL a x", [["a", "x"]]),
    ("xargs -n 1 -P 4 rm -f", [["rm", "-f"]]),
    ("find . -name '*.py' -exec wc -l {} +", [["find", ".", "-name", "*.py", "-exec", "wc", "-l", "{}", "+"], ["wc", "-l", "."]]),
    ("'e'\"c\"ho hi", [["echo", "hi"]]),
    ("ec\\ho hi", [["echo", "hi"]]),
    ("", []),
])
def test_simple_commands(source, expected):
    assert argvs(source) == expected


def test_cd_tracks_working_directory_and_subshells_do_not_leak():
    commands = parse_command("cd /etc && cat a; (cd /tmp; cat b); cat c", cwd="/p").commands
    assert [(c.argv[-1], c.cwd) for c in commands if c.name == "cat"] == [("a", "/etc"), ("b", "/tmp"), ("c", "/etc")]


def test_home_and_tilde_are_expanded():
    command = parse_command("rm -rf ~ $HOME ${HOME}/x '~'", home="/home/u").commands[0]
    assert command.argv[2:] == ["/home/u", "/home/u", "/home/u/x", "~"]


def test_pipeline_upstream_and_unresolved():
    parsed = parse_command("curl x | sh")
    assert parsed.commands[1].piped_stdin and parsed.commands[1].upstream[0].name == "curl"
    assert parsed.unresolved
    assert parse_command("$CMD x").unresolved
    assert parse_command("if [[ -f x ]]; then ls; fi").unresolved  # bashlex cannot read [[: asked, not guessed
    assert not parse_command("ls -la | grep x").unresolved


def test_deep_nesting_is_bounded():
    source = "sudo id"
    for _ in range(10):
        source = f"eval {source!r}"
    parsed = parse_command(source)
    assert parsed.unresolved


def test_a_line_bashlex_cannot_read_still_yields_its_commands():
    parsed = parse_command('sudo id; echo "unterminated', cwd="/p", home="/home/u")
    assert parsed.unresolved
    assert ["sudo", "id"] in [c.argv for c in parsed.commands]


def test_bare_redirects_are_kept():
    parsed = parse_command('echo "$(</etc/shadow)"; > f; { echo x; } > g', cwd="/p", home="/home/u")
    targets = [r.target for c in parsed.commands if not c.argv for r in c.redirects]
    assert targets == ["/etc/shadow", "f", "g"]


def test_symlinks_made_on_the_line_are_recorded():
    assert parse_command("ln -s /etc e && cat e/shadow", cwd="/p").symlinks == [("/p/e", "/etc")]


def test_sed_scripts_are_parsed_not_matched():
    from codingcode_jupyter.engine.approval.programs import sed_effects

    assert sed_effects("s/.*/x/w out.txt").paths == [("out.txt", "write", "sed s///w")]
    assert sed_effects("/w/p").paths == []  # a regex address holding `w` writes nothing
    assert sed_effects("1e sudo id").commands == [("sudo id", "sed e")]
    assert sed_effects("1r /etc/shadow").paths == [("/etc/shadow", "read", "sed r")]
