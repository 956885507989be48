"""An MCP client of wassette, with the official Python SDK (`mcp` on
PyPI): starts `wassette run` over stdio on a component folder, prints the
tools it lists as one JSON line, calls the tool named in argv with the
arguments given (JSON), and prints the call's result as one JSON line.

    python wassette_client.py WASSETTE COMPONENT_DIR TOOL ARGUMENTS [--env K=V]...
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

# Seconds any step may take: a person answers within it in the test.
BOUND = 60


async def loaded(session: ClientSession):
    """The tools, once there are any: asked again every 50 ms."""
    while True:
        listed = await session.list_tools()
        if listed.tools:
            return listed
        await asyncio.sleep(0.05)


def not_loaded(result) -> bool:
    """Whether wassette refused the call because it has not loaded the
    component yet: it lists tools from the metadata it cached when the
    component was loaded, before its background load of the component is
    done, and a call in between finds no tool. Nothing ran."""
    return result.is_error and any(
        part.type == "text" and "Tool not found" in part.text for part in result.content
    )


async def called(session: ClientSession, tool: str, arguments: dict):
    """The call's result, once the component is loaded: a call refused as
    not loaded is made again every 50 ms."""
    while True:
        result = await session.call_tool(tool, arguments)
        if not not_loaded(result):
            return result
        await asyncio.sleep(0.05)


async def main() -> None:
    wassette, folder, tool, arguments, *env = sys.argv[1:]
    params = StdioServerParameters(
        command=wassette,
        args=["run", "--disable-builtin-tools", "--component-dir", folder, *env],
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await asyncio.wait_for(session.initialize(), BOUND)
            # wassette loads its components in the background: their tools
            # are listed once loaded.
            listed = await asyncio.wait_for(loaded(session), BOUND)
            tools = [tool.model_dump(mode="json", by_alias=True) for tool in listed.tools]
            print(json.dumps(tools), flush=True)
            result = await asyncio.wait_for(called(session, tool, json.loads(arguments)), BOUND)
            print(json.dumps(result.model_dump(mode="json", by_alias=True)), flush=True)


asyncio.run(main())
