"""A PreToolUse hook for the Bash tool, written for these tests to Claude Code's documented contract
(Claude Code's own example script is not copied: its licence does not allow it).

Like that example it steers the agent from `grep` and `find -name` to ripgrep: it reads the call as
JSON on stdin, ignores every tool but Bash, and blocks a matching command by exiting 2 with the
reasons on stderr, which Claude Code feeds back to the model. Unreadable input exits 1, a
non-blocking error in Claude Code's contract.
"""
import json
import re
import sys

CHECKS = (
    (re.compile(r"^grep\b(?!.*\|)"), "Use 'rg' (ripgrep) instead of 'grep': it is faster and skips ignored files"),
    (re.compile(r"^find\s+\S+\s+-name\b"), "Use 'rg --files -g PATTERN' instead of 'find -name'"),
)

try:
    call = json.load(sys.stdin)
except ValueError as error:
    print(f"cannot read the hook input: {error}", file=sys.stderr)
    sys.exit(1)

if call.get("tool_name") != "Bash":
    sys.exit(0)
command = (call.get("tool_input") or {}).get("command") or ""
problems = [message for pattern, message in CHECKS if pattern.search(command)]
if problems:
    print("\n".join(f"- {message}" for message in problems), file=sys.stderr)
    sys.exit(2)
