"""The ask_user_question tool component in a Python agent host.

Load the component once, hand its definition to your model, and run each of
the model's tool calls with ``execute``: the component checks the arguments,
asks through the seam, checks the answers and renders the result. This
package supplies the seam: your answerers (plain functions, sync or async,
tried in order), the caller's identity (only a live root agent may ask the
human; a delegated sub-agent gets ``DELEGATED_CALLER``, unless the host
relays sub-agents' asks: ``delegated="relay"``), cancellation
(``ASK_ABORTED``) and an opt-in time limit (``ASK_TIMED_OUT``). Results are
MCP ``CallToolResult`` dicts, the same as the Rust host's.

    from ask_user import Host

    host = Host.load("ask_user_tool.wasm")   # `ask-user component --out …`
    host.answerer(lambda request: [{"id": q["id"], "selected": [q["options"][0]["label"]]}
                                   for q in request["questions"]])
    session = host.agents.root("session-1")
    result = host.execute('{"questions":[…]}', caller=session)
"""

from __future__ import annotations

import asyncio
import importlib.resources
import inspect
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Optional, Union

try:
    import wasmtime
    from wasmtime.component import Component, Linker, Record, Variant
except ImportError as missing:  # the command's users need no wasmtime-py
    raise ImportError(
        "ask_user's host library runs the component on wasmtime-py, which is not "
        "installed: pip install 'ask-user[host]' (the ask-user command needs nothing)"
    ) from missing

__all__ = ["Host", "Agents", "Agent", "AskError", "Answerer", "DEFAULT_MAX_DELEGATED_ASKS"]

# The tool component this package carries.
COMPONENT = importlib.resources.files(__name__) / "ask_user_tool.wasm"

SEAM = "dsh:ask-user/user-questions@0.1.0"
TOOL = "dsh:ask-user/tool@0.1.0"

#: Linear memory one call may use, as the Rust host's default.
MEMORY_CAP = 32 * 1024 * 1024
#: Work one call may do inside the component (wasm fuel); the tool needs
#: far less. A call past it ends with an error result, never a hang.
FUEL = 2_000_000_000

# The seam's error codes, as the WIT variant names them.
_CODES = [
    "ASK_ABORTED", "ASK_CANCELLED", "ASK_TIMED_OUT", "EMPTY_QUESTIONS", "CALLER_NOT_LIVE",
    "DELEGATED_CALLER", "BAD_INTENT", "NO_PROVIDER", "INVALID_ANSWER",
]

#: Sub-agent asks a relay allows per root per turn unless the host says
#: otherwise, as the Rust host's default.
DEFAULT_MAX_DELEGATED_ASKS = 3


class AskError(Exception):
    """An ask that failed: raise it from an answerer to end the ask with
    ``code`` (``ASK_CANCELLED`` when the human dismissed the questions, say)."""

    def __init__(self, code: Optional[str], message: str, name: str = "UserQuestionError"):
        super().__init__(message)
        self.code, self.message, self.name = code, message, name


#: An answerer: given the request (``{"questions": [...]}``, the seam's
#: spelling: ``multiSelect``; when the host relays a sub-agent's ask, also
#: ``"askedBy"``: its chain of agent ids, root first), returns the answers (``[{"id", "selected",
#: "custom"?}]``), or ``None`` to pass it on to the next answerer, or raises
#: ``AskError``. It may be ``async``.
Answerer = Callable[[dict], Union[Optional[list], Awaitable[Optional[list]]]]


@dataclass(eq=False)
class Agent:
    """An agent of the host: a root (a session, a turn) or a sub-agent it
    delegated to."""

    id: str
    owner: Optional["Agent"] = None
    live: bool = field(default=True, repr=False)
    # A root's: the asks its sub-agents were relayed this turn.
    _delegated_asks: int = field(default=0, repr=False)
    # Told when it ends: the waiting asks of it and of agents under it.
    _on_end: list = field(default_factory=list, repr=False)


class Agents:
    """The live agents. A live agent that no agent owns may ask; a sub-agent
    only when the host relays it and every agent above it is live."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def root(self, id: str) -> Agent:
        return Agent(id)

    def delegate(self, id: str, owner: Agent) -> Agent:
        return Agent(id, owner)

    def end(self, agent: Agent) -> None:
        """Ends ``agent``: a question of its, or of a sub-agent under it,
        still waiting is withdrawn (``CALLER_NOT_LIVE``)."""
        with self._lock:
            agent.live = False
            told = list(agent._on_end)
        for tell in told:
            tell()

    def _watch(self, agent: Agent, tell: Callable[[], None]) -> Callable[[], None]:
        """Calls ``tell`` once ``agent`` or an agent above it ends (at once
        if one has); returns what stops watching."""
        lineage = []
        with self._lock:
            ancestor: Optional[Agent] = agent
            while ancestor is not None:
                ancestor._on_end.append(tell)
                lineage.append(ancestor)
                ancestor = ancestor.owner
            gone = not all(a.live for a in lineage)
        if gone:
            tell()

        def stop() -> None:
            with self._lock:
                for a in lineage:
                    a._on_end.remove(tell)
        return stop

    def _still_live(self, agent: Agent) -> bool:
        with self._lock:
            ancestor: Optional[Agent] = agent
            while ancestor is not None:
                if not ancestor.live:
                    return False
                ancestor = ancestor.owner
            return True

    def start_turn(self, root: Agent) -> None:
        """A new turn of ``root``: its sub-agents may be relayed the host's
        ``max_delegated_asks`` asks again."""
        with self._lock:
            root._delegated_asks = 0

    def check(self, agent: Agent, delegated: str = "refuse",
              max_asks: int = DEFAULT_MAX_DELEGATED_ASKS) -> list:
        """Raises the seam's error when ``agent`` may not ask the human;
        else, for a relayed sub-agent, its chain of ids (root first), and
        for a root, ``[]``."""
        with self._lock:
            if not agent.live:
                raise AskError("CALLER_NOT_LIVE", (
                    f"agent {json.dumps(agent.id)} is not live (it ended, or its id now belongs to "
                    "a newer agent); only a running agent can ask the user"))
            if agent.owner is None:
                return []
            chain, ancestor = [agent.id], agent.owner
            while True:
                if not ancestor.live:
                    raise AskError("CALLER_NOT_LIVE", (
                        f"agent {json.dumps(agent.id)} is a sub-agent whose parent "
                        f"{json.dumps(ancestor.id)} has ended, so it is not live; a sub-agent can "
                        "ask only while every agent above it runs. Put the question into your "
                        "final result instead"))
                chain.append(ancestor.id)
                if ancestor.owner is None:
                    break
                ancestor = ancestor.owner
            root = ancestor
            if delegated != "relay":
                raise AskError("DELEGATED_CALLER", (
                    f"agent {json.dumps(agent.id)} is a sub-agent delegated by "
                    f"{json.dumps(agent.owner.id)} and cannot ask the user directly. Finish your "
                    "task without the answer: put the unresolved question or decision, with the "
                    "options you see, into your final result for your parent agent, which can "
                    "ask the user"))
            if root._delegated_asks >= max_asks:
                raise AskError("DELEGATED_ASK_LIMIT", (
                    f"the sub-agents of {json.dumps(root.id)} may ask the user at most "
                    f"{_times(max_asks)} per turn, and already have: do not ask again. Finish your "
                    "task without the answer: put the unresolved question, with the options you "
                    "see, into your final result for your parent agent"))
            root._delegated_asks += 1
            return list(reversed(chain))


def _times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def _root(agent: Agent) -> Agent:
    while agent.owner is not None:
        agent = agent.owner
    return agent


class _Floor:
    """A root's floor: whether an ask holds it, and the asks waiting for it
    (each with its ticket and how to wake it)."""

    def __init__(self) -> None:
        self.busy = False
        self.waiting: list = []


class _Floors:
    """One batch at a time per root under a relay: the root's own asks
    first, then its sub-agents' in the order they came. The floor is handed
    from one ask to the next, so an ask that leaves the queue (cancelled,
    timed out) at the moment it is handed the floor passes it on. A waiting
    ask of ``execute_async`` holds no thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._floors: dict = {}
        self._order = itertools.count()

    def _queue(self, root: Agent, own: bool, wake: Callable[[], None]) -> Optional[tuple]:
        """Takes the floor (``None``) or queues for it (its ticket)."""
        with self._lock:
            floor = self._floors.setdefault(root, _Floor())
            if not floor.busy and not floor.waiting:
                floor.busy = True
                return None
            ticket = (0 if own else 1, next(self._order))
            floor.waiting.append((ticket, wake))
            return ticket

    def _leave(self, root: Agent, ticket: tuple) -> None:
        """A queued ask gives up; if it was handed the floor meanwhile, it
        passes it on."""
        with self._lock:
            floor = self._floors[root]
            for entry in floor.waiting:
                if entry[0] == ticket:
                    floor.waiting.remove(entry)
                    return
        self.give_back(root)

    def give_back(self, root: Agent) -> None:
        with self._lock:
            floor = self._floors[root]
            if not floor.waiting:
                del self._floors[root]
                return
            entry = min(floor.waiting, key=lambda entry: entry[0])
            floor.waiting.remove(entry)
        entry[1]()

    def take(self, root: Agent, own: bool, cancel: threading.Event,
             deadline: Optional[float], timeout: Optional[float]) -> None:
        handed = threading.Event()
        ticket = self._queue(root, own, handed.set)
        if ticket is None:
            return
        # A blocking call: cancellation is an Event of its own, looked at
        # every 50 ms.
        while not handed.is_set():
            left = None if deadline is None else deadline - time.monotonic()
            if cancel.is_set() or (left is not None and left <= 0):
                self._leave(root, ticket)
                if cancel.is_set():
                    raise AskError("ASK_ABORTED", _ABORTED)
                raise AskError("ASK_TIMED_OUT", _timed_out(timeout or 0))
            handed.wait(0.05 if left is None else min(left, 0.05))

    async def take_async(self, root: Agent, own: bool) -> None:
        loop = asyncio.get_running_loop()
        handed = loop.create_future()

        def wake() -> None:
            loop.call_soon_threadsafe(lambda: handed.done() or handed.set_result(None))

        ticket = self._queue(root, own, wake)
        if ticket is None:
            return
        try:
            await handed
        except BaseException:
            self._leave(root, ticket)
            raise


_ABORTED = ("the turn was cancelled, so the question was not asked or was withdrawn; "
            "do not ask again in this turn")
_NO_PROVIDER = ("no answerer took the question: nobody is there to answer it right now. "
                "Continue without the answer, or end your turn with the question")


def _ended_while_waiting(agent: Agent) -> str:
    return (f"agent {json.dumps(agent.id)} ended, or an agent above it did, while its question "
            "waited; the question was withdrawn. Only a running agent can ask the user")


def _timed_out(seconds: float) -> str:
    return (f"no answer within the host's limit of {seconds:g}s; the question was withdrawn. "
            "Continue without the answer, or ask again later")


#: Asks one call may make, as the Rust host allows by default.
MAX_ASKS = 1


class _Suspended(Exception):
    """Ends a run of ``execute_async`` at an ask that must wait: the
    instance is dropped, and the call runs again with the answer."""

    def __init__(self, request: dict) -> None:
        super().__init__("the call waits for the human")
        self.request = request


class _Diverged(Exception):
    """A component that asked something else when run again."""


class Host:
    """The component, loaded once, and the seam it asks through.

    ``max_calls``: calls under way at once (default 10,000); one more gets
    ``HOST_BUSY``. A call of ``execute_async`` that waits for the human holds
    no instance and no thread: its run ends at the ask, its answerers are
    awaited on the loop, and the call runs again from the start with the
    answer (the tool is deterministic). ``delegated``: what a sub-agent's ask
    gets: ``"refuse"`` (``DELEGATED_CALLER``, the default) or ``"relay"``
    (asked, the answerers' request saying who asks in ``askedBy``; at most
    ``max_delegated_asks`` per root per turn, ``DELEGATED_ASK_LIMIT`` past
    it; a root's and its sub-agents' asks reach the answerers one at a time,
    the root's first)."""

    def __init__(self, component: bytes, *, max_calls: int = 10_000, delegated: str = "refuse",
                 max_delegated_asks: int = DEFAULT_MAX_DELEGATED_ASKS):
        if delegated not in ("refuse", "relay"):
            raise ValueError(f'delegated is "refuse" or "relay", not {delegated!r}')
        self._delegated, self._max_delegated_asks = delegated, max_delegated_asks
        self._floors = _Floors()
        config = wasmtime.Config()
        config.consume_fuel = True
        self._engine = wasmtime.Engine(config)
        self._component = Component(self._engine, component)
        self._answerers: list[Answerer] = []
        self._max_calls = max_calls
        self._calls = threading.BoundedSemaphore(max_calls)
        self.agents = Agents()

    @classmethod
    def load(cls, path: Optional[str] = None, **options: Any) -> "Host":
        """The component at ``path``; without one, the component this
        package carries (built from the same source as the Rust host's).
        ``options`` as for ``Host``."""
        if path is None:
            return cls(COMPONENT.read_bytes(), **options)
        with open(path, "rb") as file:
            return cls(file.read(), **options)

    def answerer(self, answerer: Answerer) -> Answerer:
        """Adds ``answerer`` at the end of the chain (usable as a decorator)."""
        self._answerers.append(answerer)
        return answerer

    def definition(self) -> dict:
        """The tool definition for the model: name, description, inputSchema,
        outputSchema."""
        store, tool = self._instance(lambda _store, _request: _error(AskError("NO_PROVIDER", _NO_PROVIDER)))
        definition = tool("definition")(store)
        return {
            "name": definition.name,
            "description": definition.description,
            "inputSchema": json.loads(getattr(definition, "input-schema")),
            "outputSchema": json.loads(getattr(definition, "output-schema")),
        }

    def execute(self, arguments: str, *, caller: Agent, cancel: Optional[threading.Event] = None,
                timeout: Optional[float] = None) -> dict:
        """Runs one tool call for ``caller``; its result as a CallToolResult
        dict. A blocking call: sync answerers run on this thread, inside the
        run (async answerers need ``execute_async``). ``cancel`` set ends a
        wait with ``ASK_ABORTED``; ``timeout`` (seconds) with ``ASK_TIMED_OUT``."""
        # A call in a turn already cancelled runs nothing, as a harness
        # dispatches no cancelled call (SPEC §1).
        if cancel is not None and cancel.is_set():
            return _failure("UserQuestionError", "ASK_ABORTED", _ABORTED)
        if not self._calls.acquire(blocking=False):
            return self._busy()
        cancel = cancel or threading.Event()
        try:
            return self._run(arguments, [], lambda request: _outcome(
                lambda: self._ask(request, caller, cancel, timeout)))
        finally:
            self._calls.release()

    async def execute_async(self, arguments: str, *, caller: Agent,
                            timeout: Optional[float] = None) -> dict:
        """``execute`` from asyncio, holding no thread while the human
        answers: async answerers run on this loop, sync ones (which may
        block) in the loop's default executor. Cancelling the task withdraws
        the question (the answerer's task is cancelled)."""
        if not self._calls.acquire(blocking=False):
            return self._busy()
        try:
            asked: list = []
            while True:
                try:
                    return self._run(arguments, asked, _suspend)
                except _Suspended as waiting:
                    # Out of the handler before waiting: the exception's
                    # traceback holds the run's frames, and so its store.
                    request = waiting.request
                outcome = await self._ask_async(dict(request), caller, timeout)
                asked.append((request, outcome))
        finally:
            self._calls.release()

    def _busy(self) -> dict:
        return _failure("ToolSandboxError", "HOST_BUSY", (
            f"the host is busy: this host runs at most {self._max_calls} calls of the tool at "
            "once. Try again shortly"))

    def _run(self, arguments: str, asked: list, new_ask: Callable[[dict], tuple]) -> dict:
        """One run of the call: the asks in ``asked`` (request, outcome) get
        their outcome again; a new one goes to ``new_ask``."""
        count = itertools.count()

        def ask(_store: Any, record: Any) -> Any:
            index = next(count)
            if index == MAX_ASKS:
                raise RuntimeError("the component asked twice in one call")
            request = _request(record)
            if index < len(asked):
                if asked[index][0] != request:
                    raise _Diverged(f"it asked something else when run again (ask {index + 1} of "
                                    "the call)")
                return _outcome_record(asked[index][1])
            return _outcome_record(new_ask(request))

        try:
            store, tool = self._instance(ask)
            outcome = tool("execute")(store, arguments)
        except _Diverged as error:
            return _failure("ToolSandboxError", "GUEST_CONTRACT_VIOLATION",
                            f"the component broke the contract: {error}; the call was stopped")
        except wasmtime.WasmtimeError as error:
            return _failure("GuestTrapError", None, f"the tool component failed: {error}")
        # result<tool-output, tool-failure>: both records, so tagged.
        value = outcome.payload
        if outcome.tag == "ok":
            answers = [_answer_dict(a) for a in value.answers]
            return {"content": [{"type": "text", "text": value.text}],
                    "structuredContent": {"answers": answers}, "isError": False}
        return _failure(value.name, value.code, value.message)

    def _ask(self, request: dict, caller: Agent, cancel: threading.Event,
             timeout: Optional[float]) -> list:
        # The order of the seam's checks: a cancelled turn asks nobody, then
        # the caller's identity.
        if cancel.is_set():
            raise AskError("ASK_ABORTED", _ABORTED)
        chain = self.agents.check(caller, self._delegated, self._max_delegated_asks)
        if chain:
            request["askedBy"] = chain
        deadline = None if timeout is None else time.monotonic() + timeout
        if self._delegated != "relay":
            return self._answered_while_live(self._answer(request), caller)
        root = _root(caller)
        self._floors.take(root, not chain, cancel, deadline, timeout)
        try:
            return self._answered_while_live(self._answer(request), caller)
        finally:
            self._floors.give_back(root)

    def _answered_while_live(self, answers: list, caller: Agent) -> list:
        """``answers``, unless ``caller`` or an agent above it ended while
        they were awaited (a sync answerer cannot be interrupted: what it
        gave then is withdrawn)."""
        if not self.agents._still_live(caller):
            raise AskError("CALLER_NOT_LIVE", _ended_while_waiting(caller))
        return answers

    def _answer(self, request: dict) -> list:
        """The answerers in order, on this thread: the first answers, or
        ``NO_PROVIDER``."""
        for answerer in self._answerers:
            answers = answerer(request)
            if inspect.isawaitable(answers):
                getattr(answers, "close", lambda: None)()
                raise RuntimeError("an async answerer needs execute_async")
            if answers is not None:
                return answers
        raise AskError("NO_PROVIDER", _NO_PROVIDER)

    async def _ask_async(self, request: dict, caller: Agent, timeout: Optional[float]) -> tuple:
        """The seam's pipeline for ``execute_async``: its outcome."""
        try:
            chain = self.agents.check(caller, self._delegated, self._max_delegated_asks)
            if chain:
                request["askedBy"] = chain
            async with asyncio.timeout(timeout):
                return ("answers", await self._while_live(caller, self._floor_and_answer(
                    request, caller, chain)))
        except TimeoutError:
            return ("error", AskError("ASK_TIMED_OUT", _timed_out(timeout or 0)))
        except AskError as error:
            return ("error", error)
        except Exception as error:  # an answerer's own failure, uncoded
            return ("error", AskError(None, str(error), name=type(error).__name__))

    async def _floor_and_answer(self, request: dict, caller: Agent, chain: list) -> list:
        if self._delegated != "relay":
            return await self._answer_async(request)
        root = _root(caller)
        await self._floors.take_async(root, not chain)
        try:
            return await self._answer_async(request)
        finally:
            self._floors.give_back(root)

    async def _while_live(self, caller: Agent, asking: Any) -> list:
        """``asking``'s answers; withdrawn (its task cancelled) with
        ``CALLER_NOT_LIVE`` once ``caller`` or an agent above it ends."""
        loop = asyncio.get_running_loop()
        gone = loop.create_future()
        stop = self.agents._watch(caller, lambda: loop.call_soon_threadsafe(
            lambda: gone.done() or gone.set_result(None)))
        task = asyncio.ensure_future(asking)
        try:
            await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
            if task.done():
                return task.result()
            raise AskError("CALLER_NOT_LIVE", _ended_while_waiting(caller))
        finally:
            stop()
            task.cancel()
            gone.cancel()

    async def _answer_async(self, request: dict) -> list:
        """The answerers in order: async ones on this loop, sync ones in the
        loop's default executor."""
        for answerer in self._answerers:
            if inspect.iscoroutinefunction(answerer):
                answers = await answerer(request)
            else:
                answers = await asyncio.to_thread(answerer, request)
                if inspect.isawaitable(answers):
                    answers = await answers
            if answers is not None:
                return answers
        raise AskError("NO_PROVIDER", _NO_PROVIDER)

    def _instance(self, ask: Callable[[Any, Any], Any]) -> tuple:
        store = wasmtime.Store(self._engine)
        store.set_limits(memory_size=MEMORY_CAP)
        store.set_fuel(FUEL)
        linker = Linker(self._engine)
        with linker.root() as root:
            with root.add_instance(SEAM) as seam:
                seam.add_func("ask", ask)
        instance = linker.instantiate(store, self._component)
        exports = instance.get_export_index(store, TOOL)

        def tool(name: str) -> Callable[..., Any]:
            func = instance.get_func(store, instance.get_export_index(store, name, exports))

            def call(store: Any, *args: Any) -> Any:
                result = func(store, *args)
                func.post_return(store)
                return result
            return call
        return store, tool


def _suspend(request: dict) -> tuple:
    raise _Suspended(request)


def _outcome(ask: Callable[[], list]) -> tuple:
    """What an ask got: ``("answers", list)`` or ``("error", AskError)``."""
    try:
        return ("answers", ask())
    except AskError as error:
        return ("error", error)
    except Exception as error:  # an answerer's own failure, uncoded
        return ("error", AskError(None, str(error), name=type(error).__name__))


def _outcome_record(outcome: tuple) -> Any:
    """An ask's outcome as the component takes it."""
    kind, value = outcome
    if kind == "error":
        return _error(value)
    try:
        return _answer_records(value)
    except AskError as error:
        return _error(error)


def _request(record: Any) -> dict:
    """The seam's request as a dict, in the seam's own spelling."""
    questions = []
    for q in record.questions:
        question = {"id": q.id, "question": q.question}
        for key, attr in (("detail", "detail"), ("header", "header"), ("multiSelect", "multi-select")):
            value = getattr(q, attr)
            if value is not None:
                question[key] = value
        if q.options is not None:
            question["options"] = []
            for o in q.options:
                option = {"label": o.label}
                if o.description is not None:
                    option["description"] = o.description
                extra = getattr(o, "extra-json")
                if extra is not None:
                    option.update(json.loads(extra))
                question["options"].append(option)
        questions.append(question)
    return {"questions": questions}


def _answer_records(answers: Any) -> list:
    """The answers as the component takes them. Their shape only: the
    component checks them against the questions itself (``INVALID_ANSWER``)."""
    def fail(what: str) -> None:
        raise AskError("INVALID_ANSWER", (
            f"the answerer returned {what}; an answerer returns a list of {{id, selected, "
            "custom?}} (strings; selected a list of labels), or None to pass the question on"))

    if not isinstance(answers, list):
        fail(f"{type(answers).__name__}, not a list")
    records = []
    for i, answer in enumerate(answers):
        if not isinstance(answer, dict):
            fail(f"a {type(answer).__name__} at {i}")
        if not isinstance(answer.get("id"), str):
            fail(f"an answer without a string id at {i}")
        selected = answer.get("selected", [])
        if not isinstance(selected, list) or not all(isinstance(s, str) for s in selected):
            fail(f"answer {json.dumps(answer['id'])} whose selected is not a list of strings")
        custom = answer.get("custom")
        if custom is not None and not isinstance(custom, str):
            fail(f"answer {json.dumps(answer['id'])} whose custom is not a string")
        texts = [answer["id"], *selected, *([custom] if custom is not None else [])]
        if not all(_whole(text) for text in texts):
            raise AskError("INVALID_ANSWER", (
                f"the answerer returned answer {json.dumps(answer['id'])} with half of a surrogate "
                "pair in its text (a character cut in two, such as an emoji); text must be whole "
                "Unicode characters"))
        record = Record()
        record.id, record.selected, record.custom = answer["id"], list(selected), custom
        records.append(record)
    return records


def _whole(text: str) -> bool:
    """Whether ``text`` is whole Unicode characters (no lone surrogate), as
    every host and the component's strings require."""
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _answer_dict(record: Any) -> dict:
    answer = {"id": record.id, "selected": list(record.selected)}
    if record.custom is not None:
        answer["custom"] = record.custom
    return answer


def _error(error: AskError) -> Record:
    record = Record()
    record.name = error.name
    if error.code is None:
        record.code = None
    elif error.code in _CODES:
        record.code = Variant(error.code.lower().replace("_", "-"))
    else:
        record.code = Variant("other", error.code)
    record.message = error.message
    return record


def _failure(name: str, code: Optional[str], message: str) -> dict:
    result: dict = {"content": [{"type": "text", "text": f"Error: {message}"}], "isError": True,
                    "error": {"name": name}}
    if code is not None:
        result["error"]["code"] = code
    return result
