"""The shared table of tool calls: this host gives each case's result, as
the Rust host does (tests/tests/component/cases.rs)."""

import json

import pytest

from ask_user import AskError, Host
from conftest import REPO

TABLE = json.loads((REPO / "tests" / "cases" / "tool_calls.json").read_text())["cases"]


@pytest.mark.parametrize("case", TABLE, ids=[case["name"] for case in TABLE])
def test_the_case_gives_its_result(component, case):
    host = Host(component)
    reply = case["reply"]

    @host.answerer
    def canned(request):
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
    assert host.execute(json.dumps(case["arguments"]), caller=caller) == case["expected"]


def test_the_table_covers_every_kind_of_outcome():
    codes = {case["expected"].get("error", {}).get("code") for case in TABLE}
    assert {None, "NO_PROVIDER", "ASK_CANCELLED", "DELEGATED_CALLER", "CALLER_NOT_LIVE",
            "EMPTY_QUESTIONS", "INVALID_ARGS", "INVALID_ANSWER"} <= codes
