#!/usr/bin/env python3
"""An ask-user bridge in plain Python: answers over JSON lines on stdin/stdout.

Started by the host from a config file (`ask-user ask FILE --config config.toml`):

    [[answerer]]
    kind = "bridge"
    command = ["python3", "bridge.py"]   # runs in the config file's folder

Frames down (one JSON object per line): ready {clientId}, waterfall {eventId,
agentId, request}, cancel {eventId}. Frames up: {eventId, outcome} where
outcome is {"kind":"next"}, {"kind":"result","value":{"answers":[...]}} or
{"kind":"rejected","error":{"name","message","code"}}.

This one answers each question with its recommended option (a label ending in
"(Recommended)") and passes the request on when a question has none. Replace
`answer` with your own UI, chat bot or policy. Log to stderr: stdout is the
protocol.
"""
import json
import sys

RECOMMENDED = ("(Recommended)", "(推荐)", "（推荐）")


def answer(request):
    """Answers for every question, or None to pass the request on."""
    answers = []
    for question in request["questions"]:
        labels = [option["label"] for option in question.get("options") or []]
        chosen = [label for label in labels if label.rstrip().endswith(RECOMMENDED)][:1]
        if not chosen:
            return None
        answers.append({"id": question["id"], "selected": chosen})
    return answers


def send(frame):
    sys.stdout.write(json.dumps(frame, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def main():
    for line in sys.stdin:
        frame = json.loads(line)
        kind = frame.get("type")
        if kind == "waterfall":
            answers = answer(frame["request"])
            if answers is None:
                outcome = {"kind": "next"}
            else:
                outcome = {"kind": "result", "value": {"answers": answers}}
            send({"eventId": frame["eventId"], "outcome": outcome})
        elif kind == "cancel":
            print(f"bridge.py: question {frame['eventId']} withdrawn", file=sys.stderr)


if __name__ == "__main__":
    main()
