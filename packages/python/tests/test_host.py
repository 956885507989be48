"""What the package does beyond the table: the definition, async answerers,
cancellation, time limits, answerer failures, the order of answerers."""

import asyncio
import gc
import json
import threading

import wasmtime

from ask_user import AskError, Host

ONE = json.dumps({"questions": [{"id": "q", "question": "Which?",
                                 "options": [{"label": "A"}, {"label": "B"}]}]})


def test_the_definition_is_the_tools(component):
    definition = Host(component).definition()
    assert definition["name"] == "ask_user_question"
    assert definition["inputSchema"]["type"] == "object"
    assert "questions" in definition["inputSchema"]["properties"]


def test_answerers_are_tried_in_order_and_see_the_seam_request(component):
    host = Host(component)
    seen = []

    @host.answerer
    def first(request):
        seen.append(request)
        return None  # passes

    host.answerer(lambda request: [{"id": "q", "selected": ["B"]}])
    result = host.execute(ONE, caller=host.agents.root("s"))
    assert result["structuredContent"] == {"answers": [{"id": "q", "selected": ["B"]}]}
    assert seen == [{"questions": [{"id": "q", "question": "Which?",
                                    "options": [{"label": "A"}, {"label": "B"}]}]}]


def test_an_async_answerer_is_awaited_on_the_hosts_loop(component):
    host = Host(component)

    @host.answerer
    async def human(request):
        await asyncio.sleep(0.01)
        return [{"id": "q", "selected": ["A"]}]

    async def main():
        return await host.execute_async(ONE, caller=host.agents.root("s"))

    assert asyncio.run(main())["content"][0]["text"] == '{"answers":[{"id":"q","selected":["A"]}]}'


def test_half_a_surrogate_pair_is_invalid_answer_from_an_async_answerer_too(component):
    # A UI that cut an emoji in two: never raised out of the call.
    host = Host(component)

    @host.answerer
    async def cut(request):
        return [{"id": "q", "selected": [], "custom": "ok \ud83d"}]

    async def main():
        return await host.execute_async(
            json.dumps({"questions": [{"id": "q", "question": "Why?"}]}),
            caller=host.agents.root("s"))

    result = asyncio.run(main())
    assert result["error"]["code"] == "INVALID_ANSWER", result
    assert "half of a surrogate pair" in result["content"][0]["text"]


def test_cancelling_the_call_is_ask_aborted(component):
    host = Host(component)
    started = asyncio.Event()

    @host.answerer
    async def never(request):
        started.set()
        await asyncio.Event().wait()

    async def main():
        call = asyncio.create_task(host.execute_async(ONE, caller=host.agents.root("s")))
        await asyncio.wait_for(started.wait(), 30)
        call.cancel()
        try:
            await call
        except asyncio.CancelledError:
            return "cancelled"

    assert asyncio.run(main()) == "cancelled"
    # A cancel event set before the call: the human is never asked.
    host = Host(component)
    host.answerer(lambda request: [{"id": "q", "selected": ["A"]}])
    cancel = threading.Event()
    cancel.set()
    result = host.execute(ONE, caller=host.agents.root("s"), cancel=cancel)
    assert result["error"] == {"name": "UserQuestionError", "code": "ASK_ABORTED"}


def test_a_question_still_waiting_is_withdrawn_when_its_agent_or_one_above_it_ends(component):
    # A relayed sub-agent's question, its root ending while it waits (as the
    # Rust host does): the answerer's task is cancelled, the call ends
    # CALLER_NOT_LIVE.
    host = Host(component, delegated="relay")
    started, withdrawn = asyncio.Event(), []

    @host.answerer
    async def human(request):
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            withdrawn.append(request["askedBy"])
            raise

    root = host.agents.root("session-1")
    reviewer = host.agents.delegate("reviewer", root)

    async def main():
        call = asyncio.create_task(host.execute_async(ONE, caller=reviewer))
        await asyncio.wait_for(started.wait(), 30)
        host.agents.end(root)
        return await asyncio.wait_for(call, 30)

    result = asyncio.run(main())
    assert result["error"] == {"name": "UserQuestionError", "code": "CALLER_NOT_LIVE"}, result
    assert "while its question waited" in result["content"][0]["text"]
    assert withdrawn == [["session-1", "reviewer"]]
    # A blocking call's sync answerer cannot be interrupted: what it gives
    # once its agent has ended is withdrawn all the same.
    host = Host(component)
    agent = host.agents.root("s")

    def ends_meanwhile(request):
        host.agents.end(agent)
        return [{"id": "q", "selected": ["A"]}]

    host.answerer(ends_meanwhile)
    result = host.execute(ONE, caller=agent)
    assert result["error"] == {"name": "UserQuestionError", "code": "CALLER_NOT_LIVE"}, result


def test_a_time_limit_is_ask_timed_out(component):
    host = Host(component)

    @host.answerer
    async def slow(request):
        await asyncio.sleep(30)

    async def main():
        return await host.execute_async(ONE, caller=host.agents.root("s"), timeout=0.2)

    result = asyncio.run(main())
    assert result["error"] == {"name": "UserQuestionError", "code": "ASK_TIMED_OUT"}
    assert "0.2s" in result["content"][0]["text"]


def test_an_answerers_own_failure_is_passed_through_uncoded(component):
    host = Host(component)

    @host.answerer
    def broken(request):
        raise ConnectionError("the UI went away")

    result = host.execute(ONE, caller=host.agents.root("s"))
    assert result == {"content": [{"type": "text", "text": "Error: the UI went away"}],
                      "isError": True, "error": {"name": "ConnectionError"}}
    host = Host(component)
    host.answerer(lambda request: (_ for _ in ()).throw(AskError("ASK_CANCELLED", "no")))
    assert host.execute(ONE, caller=host.agents.root("s"))["error"]["code"] == "ASK_CANCELLED"


def test_a_cancelled_turn_is_ask_aborted_before_the_caller_is_checked(component):
    host = Host(component)
    root = host.agents.root("s")
    cancel = threading.Event()
    cancel.set()
    result = host.execute(ONE, caller=host.agents.delegate("helper", root), cancel=cancel)
    assert result["error"] == {"name": "UserQuestionError", "code": "ASK_ABORTED"}


def test_answers_of_the_wrong_shape_are_invalid_answer_saying_what_was_wrong(component):
    for reply, says in [
        ({"q": "A"}, "dict, not a list"),
        ([{"id": "q", "selected": "A"}], '"q" whose selected is not a list of strings'),
        ([{"selected": ["A"]}], "without a string id at 0"),
        ([{"id": "q", "selected": [], "custom": 7}], '"q" whose custom is not a string'),
    ]:
        host = Host(component)
        host.answerer(lambda request, reply=reply: reply)
        result = host.execute(ONE, caller=host.agents.root("s"))
        assert result["error"] == {"name": "UserQuestionError", "code": "INVALID_ANSWER"}
        assert says in result["content"][0]["text"]


def test_a_call_past_max_calls_is_host_busy(component):
    host = Host(component, max_calls=1)

    async def main():
        asked = asyncio.Event()
        answer = asyncio.Event()

        @host.answerer
        async def human(request):
            asked.set()
            await answer.wait()
            return [{"id": "q", "selected": ["A"]}]

        first = asyncio.create_task(host.execute_async(ONE, caller=host.agents.root("first")))
        await asyncio.wait_for(asked.wait(), 60)
        busy = await host.execute_async(ONE, caller=host.agents.root("second"))
        answer.set()
        return busy, await first, await host.execute_async(ONE, caller=host.agents.root("third"))

    busy, first, third = asyncio.run(main())
    assert busy["error"] == {"name": "ToolSandboxError", "code": "HOST_BUSY"}
    assert "at most 1 calls" in busy["content"][0]["text"]
    assert not first["isError"] and not third["isError"]


def test_under_a_relay_a_root_and_its_sub_agents_ask_one_at_a_time_the_roots_first(component):
    host = Host(component, delegated="relay")
    root = host.agents.root("session-1")
    reviewer = host.agents.delegate("reviewer", root)
    tester = host.agents.delegate("tester", root)

    async def main():
        order, release, first_in = [], asyncio.Event(), asyncio.Event()

        @host.answerer
        async def human(request):
            order.append(request.get("askedBy", ["(root)"])[-1])
            first_in.set()
            if len(order) == 1:
                await release.wait()
            return [{"id": "q", "selected": ["A"]}]

        first = asyncio.create_task(host.execute_async(ONE, caller=reviewer))
        await asyncio.wait_for(first_in.wait(), 30)
        later = [asyncio.create_task(host.execute_async(ONE, caller=tester)),
                 asyncio.create_task(host.execute_async(ONE, caller=root))]
        # Both wait for the floor: each queues in its first step on the loop
        # (its run and its ask do not yield before the floor), so the loop is
        # given turns, no time, until both are queued; at most 1,000 turns.
        for _ in range(1000):
            if len(host._floors._floors[root].waiting) == 2:
                break
            await asyncio.sleep(0)
        assert len(host._floors._floors[root].waiting) == 2, "the later asks never queued"
        release.set()
        return order, await asyncio.gather(first, *later)

    order, results = asyncio.run(main())
    assert [r["isError"] for r in results] == [False] * 3
    assert order == ["reviewer", "(root)", "tester"]


def test_a_new_turn_gives_the_roots_sub_agents_their_budget_again(component):
    host = Host(component, delegated="relay", max_delegated_asks=1)
    host.answerer(lambda request: [{"id": "q", "selected": ["A"]}])
    root = host.agents.root("session-1")
    helper = host.agents.delegate("helper", root)
    assert not host.execute(ONE, caller=helper)["isError"]
    assert host.execute(ONE, caller=helper)["error"]["code"] == "DELEGATED_ASK_LIMIT"
    host.agents.start_turn(root)
    assert not host.execute(ONE, caller=helper)["isError"]
    try:
        Host(component, delegated="allow")
    except ValueError as error:
        assert "relay" in str(error)
    else:
        raise AssertionError("an unknown policy was taken")


def test_calls_waiting_for_the_human_hold_no_thread_and_no_instance(component):
    # More calls than the loop's default executor has threads (min(32,
    # cores + 4)), each answered.
    host = Host(component)
    calls = 200

    async def main():
        asked, all_asked, answer = 0, asyncio.Event(), asyncio.Event()

        @host.answerer
        async def human(request):
            nonlocal asked
            asked += 1
            if asked == calls:
                all_asked.set()
            await answer.wait()
            return [{"id": "q", "selected": ["B"]}]

        before = threading.active_count()
        waiting = [asyncio.create_task(host.execute_async(ONE, caller=host.agents.root(f"s{i}")))
                   for i in range(calls)]
        await asyncio.wait_for(all_asked.wait(), 60)
        during = threading.active_count()
        gc.collect()
        stores = sum(isinstance(o, wasmtime.Store) for o in gc.get_objects())
        answer.set()
        return before, during, stores, await asyncio.gather(*waiting)

    before, during, stores, results = asyncio.run(main())
    assert during == before, f"{during - before} threads for {calls} waiting calls"
    assert stores == 0, f"{stores} stores alive for {calls} waiting calls"
    assert all(r["structuredContent"] == {"answers": [{"id": "q", "selected": ["B"]}]}
               for r in results)


def test_a_component_that_asks_something_else_when_run_again_is_stopped(component):
    host = Host(component)
    other = {"questions": [{"id": "q", "question": "Something else?"}]}
    result = host._run(ONE, [(other, ("answers", [{"id": "q", "selected": ["A"]}]))], None)
    assert result["error"] == {"name": "ToolSandboxError", "code": "GUEST_CONTRACT_VIOLATION"}
    assert "asked something else when run again (ask 1 of the call)" in result["content"][0]["text"]
