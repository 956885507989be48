"""The ACP example (examples/acp_agent.py) started by an editor's side of
ACP on the official client library (host/tests/npm/acp-client.mjs), as an
editor starts an agent: the batch is one form in the editor, laid out by
the ``ask-user`` command the repository builds."""

import json
import os
import subprocess
import sys

import pytest

from conftest import HERE, REPO

CLIENT = REPO / "host/tests/npm/acp-client.mjs"
NODE = REPO / "host/tests/npm/node_modules/.bin/node"
AGENT = HERE.parent / "examples/acp_agent.py"
COMMAND = os.environ.get("ASK_USER_COMMAND", str(REPO / "target/debug/ask-user"))
DEPLOY = (REPO / "examples/deploy.json").read_text()


def run(tmp_path, mode, content=None):
    """The client's report of a run in ``mode`` (answering with ``content``)."""
    report = tmp_path / "report.json"
    env = dict(os.environ, ASK_USER_COMMAND=COMMAND,
               ACP_AGENT=json.dumps([sys.executable, str(AGENT)]),
               PYTHONPATH=str(HERE.parent))
    args = [str(NODE), str(CLIENT), str(report), mode, DEPLOY]
    if content is not None:
        args.append(json.dumps(content))
    subprocess.run(args, env=env, check=True, timeout=120)
    seen = json.loads(report.read_text())
    seen["result"] = json.loads(seen["message"])
    return seen


def test_the_editors_form_answers_the_batch_laid_out_as_the_rust_host_lays_it_out(tmp_path):
    seen = run(tmp_path, "accept", {"q01_target": "Production", "q02_checks": ["Load test"],
                                    "q03_note": "from the editor"})
    [form] = seen["forms"]
    assert form["mode"] == "form" and form["sessionId"] == "session-1"
    assert list(form["requestedSchema"]["properties"]) == [
        "q01_target", "q01_target_own", "q02_checks", "q02_checks_own", "q03_note"]
    assert seen["result"]["code"] is None, seen["result"]["text"]
    assert json.loads(seen["result"]["text"])["answers"] == [
        {"id": "target", "selected": ["Production"]},
        {"id": "checks", "selected": ["Load test"]},
        {"id": "note", "selected": [], "custom": "from the editor"},
    ]
    assert seen["stopReason"] == "end_turn"


def test_a_declined_form_ends_the_ask_cancelled(tmp_path):
    seen = run(tmp_path, "decline")
    assert seen["result"]["code"] == "ASK_CANCELLED"
    assert "declined the form" in seen["result"]["text"]


def test_an_editor_without_forms_is_passed_over(tmp_path):
    seen = run(tmp_path, "no-forms")
    assert seen["forms"] == []
    # The example's one answerer passed: nobody else was there.
    assert seen["result"]["code"] == "NO_PROVIDER"


def test_an_editor_that_fails_the_form_is_passed_over(tmp_path):
    seen = run(tmp_path, "fail")
    assert len(seen["forms"]) == 1
    # As the Rust host's answerer does: the next answerer's turn (here
    # nobody's), not an internal error.
    assert seen["result"]["code"] == "NO_PROVIDER", seen["result"]
