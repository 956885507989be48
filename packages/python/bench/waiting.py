"""What calls waiting for the human weigh: 1,000 calls of ``execute_async``
wait at once on an async answerer; prints the process's memory growth and
its threads, then answers them all. A bench, not a test.

    python bench/waiting.py [COMPONENT]   # default: $ASK_USER_COMPONENT, else the carried one
"""

import asyncio
import gc
import json
import os
import sys
import threading

from ask_user import Host

CALLS = 1000
ARGUMENTS = json.dumps({"questions": [{"id": "q", "question": "Which one?", "options": [
    {"label": "A", "description": "the first"}, {"label": "B", "description": "the second"}]}]})


def rss() -> int:
    """Resident memory of this process, in bytes."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def main(host: Host) -> None:
    asked, all_asked, answer = 0, asyncio.Event(), asyncio.Event()

    @host.answerer
    async def human(request):
        nonlocal asked
        asked += 1
        if asked == CALLS:
            all_asked.set()
        await answer.wait()
        return [{"id": "q", "selected": ["B"]}]

    # One call first, so that what every call shares is counted before.
    answer.set()
    await host.execute_async(ARGUMENTS, caller=host.agents.root("warm"))
    answer.clear()
    asked = 0
    before, threads = rss(), threading.active_count()
    calls = [asyncio.create_task(host.execute_async(ARGUMENTS, caller=host.agents.root(f"s{i}")))
             for i in range(CALLS)]
    await asyncio.wait_for(all_asked.wait(), 120)
    gc.collect()
    grown, during = rss() - before, threading.active_count()
    answer.set()
    results = await asyncio.gather(*calls)
    assert all(not r["isError"] for r in results), results[0]
    mib = grown / (1 << 20)
    print(f"{CALLS} waiting calls: {mib:.1f} MiB (RSS growth), {grown / 1024 / CALLS:.1f} KiB each; "
          f"threads: {threads} before, {during} while they wait; "
          f"goal no thread per waiting call: {'met' if during == threads else 'NOT met'}")


if __name__ == "__main__":
    path = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("ASK_USER_COMPONENT")
    asyncio.run(main(Host.load(path)))
