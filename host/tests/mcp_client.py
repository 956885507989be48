"""An MCP client on the official Python SDK (`mcp` on PyPI) that launches
`ask-user mcp` over stdio, lists its tool, calls it, and answers the form
as the user would. Prints one JSON object: the tool names, the forms it was
shown, and the tool result.

usage: mcp_client.py SERVER MODE USER ARGUMENTS_FILE
  SERVER the ask-user command (launched as `ask-user mcp`; a command line
         such as `npx --yes ask-user` is split as a shell does), or the URL
         of `ask-user mcp --http` (the token in $ASK_USER_MCP_TOKEN)
  MODE   legacy (the initialize handshake, 2025-11-25) or 2026-07-28
  USER   the form's content as JSON to accept it, or decline, or cancel
"""

import asyncio
import json
import os
import shlex
import sys

import httpx2
from mcp import Client, StdioServerParameters, types
from mcp.client.streamable_http import streamable_http_client


async def main(ask_user, mode, user, arguments_file):
    forms = []

    async def elicit(context, params):
        forms.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        if user in ("decline", "cancel"):
            return types.ElicitResult(action=user)
        return types.ElicitResult(action="accept", content=json.loads(user))

    if ask_user.startswith("http://"):
        token = os.environ["ASK_USER_MCP_TOKEN"]
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        server = streamable_http_client(ask_user, http_client=http)
    else:
        command, *args = [ask_user] if os.path.exists(ask_user) else shlex.split(ask_user)
        server = StdioServerParameters(command=command, args=[*args, "mcp", "--config", "/dev/null"])
    async with Client(server, elicitation_callback=elicit, mode=mode) as client:
        tools = await client.list_tools()
        with open(arguments_file) as file:
            arguments = json.load(file)
        result = await client.call_tool("ask_user_question", arguments)
    print(json.dumps({
        "tools": [tool.name for tool in tools.tools],
        "forms": forms,
        "result": result.model_dump(mode="json", by_alias=True, exclude_none=True),
    }))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
