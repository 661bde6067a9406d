"""A hook for the tests, in Claude Code's contract: it appends what it was told to a log and answers
as $CC_TEST_ANSWER says (a JSON object printed on stdout, or "exit:N" to exit with N and a message)."""
import json
import os
import sys

event = sys.argv[1] if len(sys.argv) > 1 else "?"
payload = json.load(sys.stdin)
log = os.environ.get("CC_TEST_LOG")
if log:
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"argv": event, "payload": payload,
                                 "CLAUDE_PROJECT_DIR": os.environ.get("CLAUDE_PROJECT_DIR")}) + "\n")
answers = json.loads(os.environ.get("CC_TEST_ANSWERS", "{}"))
answer = answers.get(event)
if isinstance(answer, str) and answer.startswith("exit:"):
    print(f"{event} says no", file=sys.stderr)
    sys.exit(int(answer[5:]))
if isinstance(answer, str):
    print(answer)
elif answer is not None:
    print(json.dumps(answer))
