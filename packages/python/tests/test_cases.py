"""The shared table of tool calls: this host gives each case's result, as
the Rust host does (tests/tests/component/cases.rs)."""

import json
import threading

import pytest

from ask_user import DEFAULT_MAX_DELEGATED_ASKS, AskError, Host
from conftest import REPO

TABLE = json.loads((REPO / "tests" / "cases" / "tool_calls.json").read_text())["cases"]


@pytest.mark.parametrize("case", TABLE, ids=[case["name"] for case in TABLE])
def test_the_case_gives_its_result(component, case):
    policy = case.get("policy", {})
    host = Host(component, delegated=policy.get("delegated", "refuse"),
                max_delegated_asks=policy.get("maxDelegatedAsks", DEFAULT_MAX_DELEGATED_ASKS))
    reply = json.loads(case["replyJson"]) if "replyJson" in case else case["reply"]
    asked_by = []

    @host.answerer
    def canned(request):
        asked_by.append(request.get("askedBy", []))
        if reply.get("pass"):
            return None
        if "error" in reply:
            raise AskError(reply["error"]["code"], reply["error"]["message"])
        return reply["answers"]

    root = host.agents.root("session-1")
    caller = {"root": root, "delegate": host.agents.delegate("helper", root)}.get(
        case.get("caller", "root"))
    if case.get("caller") == "ended":
        caller = host.agents.root("gone")
        host.agents.end(caller)
    if case.get("caller") == "orphan":
        parent = host.agents.root("parent")
        caller = host.agents.delegate("orphan", parent)
        host.agents.end(parent)
    arguments = json.dumps(case["arguments"])
    for _ in range(case.get("asksBefore", 0)):
        assert not host.execute(arguments, caller=caller)["isError"]
    cancel = threading.Event()
    if case.get("cancelled"):
        cancel.set()
    assert host.execute(arguments, caller=caller, cancel=cancel) == case["expected"]
    assert all(seen == case.get("askedBy", []) for seen in asked_by), asked_by


def test_the_table_covers_every_kind_of_outcome():
    codes = {case["expected"].get("error", {}).get("code") for case in TABLE}
    assert {None, "NO_PROVIDER", "ASK_CANCELLED", "DELEGATED_CALLER", "CALLER_NOT_LIVE",
            "DELEGATED_ASK_LIMIT", "EMPTY_QUESTIONS", "INVALID_ARGS", "INVALID_ANSWER"} <= codes
