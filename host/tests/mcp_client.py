"""An MCP client on the official Python SDK (`mcp` on PyPI) that launches
`ask-user mcp` over stdio, lists its tool, calls it, and answers the form
as the user would. Prints one JSON object: the tool names, the forms it was
shown, and the tool result.

usage: mcp_client.py ASK_USER MODE USER ARGUMENTS_FILE
  MODE   legacy (the initialize handshake, 2025-11-25) or 2026-07-28
  USER   the form's content as JSON to accept it, or decline, or cancel
"""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters, types


async def main(ask_user, mode, user, arguments_file):
    forms = []

    async def elicit(context, params):
        forms.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        if user in ("decline", "cancel"):
            return types.ElicitResult(action=user)
        return types.ElicitResult(action="accept", content=json.loads(user))

    server = StdioServerParameters(command=ask_user, args=["mcp", "--config", "/dev/null"])
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
