"""An agent that speaks ACP (the Agent Client Protocol) to an editor, on
the ACP Python library (``agent-client-protocol`` on PyPI), with
ask_user_question answered in the editor's own form. The model is left
out: a prompt's text is the tool's arguments, and the tool's result is the
reply.

The form is the one ``ask-user mcp`` and the Rust host's ``acp`` answerer
show (``ask-user form schema``), and its content is read back by the same
code (``ask-user form answers``): the ``ask-user`` command (this package's,
or ``ASK_USER_COMMAND``) lays it out. An editor that did not declare form
elicitation, or fails the form request, is passed over: the next answerer
asks (the Rust host's ``acp`` answerer's rule); one that cancels it ends the
ask ``ASK_CANCELLED``.

    python examples/acp_agent.py      (an editor starts it, on its stdio)
"""

import asyncio
import contextvars
import json
import os
import sys
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    run_agent,
    text_block,
    update_agent_message,
)
from acp.schema import ElicitationFormSessionMode, ElicitationSchema

from ask_user import AskError, Host

COMMAND = os.environ.get("ASK_USER_COMMAND", "ask-user")

#: JSON-RPC's code for a request its receiver cancelled.
REQUEST_CANCELLED = -32800


def dismissed(how: str) -> AskError:
    """What a form the user declined or cancelled ends with."""
    return AskError(
        "ASK_CANCELLED",
        f"the user {how} the form without answering. Do not ask the same again; "
        "continue with what you know or end your turn",
    )

#: The session a call runs for, so that the answerer asks in its editor.
current: contextvars.ContextVar[str | None] = contextvars.ContextVar("session", default=None)


async def form(what: str, payload: Any) -> tuple[bool, Any]:
    """``ask-user form <what>`` on ``payload``: whether it succeeded, and its JSON."""
    child = await asyncio.create_subprocess_exec(
        COMMAND, "form", what, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await child.communicate(json.dumps(payload).encode())
    if child.returncode not in (0, 1):
        raise RuntimeError(f"ask-user form {what} failed ({child.returncode})")
    return child.returncode == 0, json.loads(out)


class Agent:
    def __init__(self) -> None:
        self.host = Host.load()
        self.host.answerer(self.ask_in_editor)
        self.editor: Any = None
        self.forms = False
        self.turns: dict[str, asyncio.Task] = {}

    def on_connect(self, conn: Any) -> None:
        self.editor = conn

    async def ask_in_editor(self, request: dict) -> list | None:
        session_id = current.get()
        if not self.forms or session_id is None:
            return None  # no forms: the next answerer
        _, shown = await form("schema", request)
        mode = ElicitationFormSessionMode(
            session_id=session_id,
            requested_schema=ElicitationSchema.model_validate(shown["requestedSchema"]),
        )
        try:
            reply = await self.editor.create_elicitation(message=shown["message"], mode=mode)
        except RequestError as error:
            if error.code == REQUEST_CANCELLED:
                raise dismissed("cancelled") from error
            # No form after all: the next answerer asks.
            print(f"the editor did not show the form ({error}); passing the question on",
                  file=sys.stderr)
            return None
        if reply.action != "accept":
            raise dismissed("declined" if reply.action == "decline" else "cancelled")
        content = reply.model_dump(mode="json").get("content") or {}
        ok, value = await form("answers", {"request": request, "content": content})
        if not ok:
            raise AskError(value["error"]["code"], value["error"]["message"])
        return value["answers"]

    async def initialize(self, protocol_version: int, client_capabilities: Any = None, **_: Any):
        elicitation = client_capabilities.elicitation if client_capabilities else None
        self.forms = elicitation is not None and elicitation.form is not None
        return InitializeResponse(protocol_version=PROTOCOL_VERSION)

    async def new_session(self, cwd: str, **_: Any):
        session_id = f"session-{len(self.turns) + 1}"
        self.host.agents.root(session_id)
        self.turns[session_id] = None
        return NewSessionResponse(session_id=session_id)

    async def prompt(self, session_id: str, prompt: list, **_: Any):
        text = next(block.text for block in prompt if block.type == "text")
        caller = self.host.agents.root(session_id)
        current.set(session_id)  # the call's task starts with this context
        turn = asyncio.ensure_future(self.host.execute_async(text, caller=caller))
        self.turns[session_id] = turn
        try:
            result = await turn
        except asyncio.CancelledError:
            return PromptResponse(stop_reason="cancelled")
        said = json.dumps({"code": (result.get("error") or {}).get("code"),
                           "text": result["content"][0]["text"]})
        await self.editor.session_update(session_id, update_agent_message(text_block(said)))
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **_: Any) -> None:
        turn = self.turns.get(session_id)
        if turn is not None:
            turn.cancel()


if __name__ == "__main__":
    asyncio.run(run_agent(Agent()))
