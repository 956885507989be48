"""The inbox beside awaithumans on one workload, printing figures and ratios.

Run by `bench/awaithumans/run`, which installs awaithumans and builds the
command. Each round starts each server afresh in a folder of its own (one
at a time, interleaved: inbox, awaithumans, inbox, …) and measures, through
each one's own HTTP API, what an agent host feels:

- ready ms: from starting the server to its first answered request;
- asks/s: questions asked, `--asks` of them, 64 at a time;
- MiB per 1,000 waiting: the server's resident memory with `--agents`
  agents each long-polling its own question, over its memory before them;
- wake p50/p99: from the answer's request returning to its waiting agent's
  poll returning, for `--wakes` of those agents, one at a time;
- asks failed: asks the server refused (an error reply, a refused
  connection), of the `--asks` and the `--agents`' asks;
- waits failed: waiting agents whose poll failed (an error, a refused
  connection) before their question was answered.

The inbox is one user's (`ask-user inbox serve`, SQLite, its API on a Unix
socket); awaithumans is `awaithumans dev` (SQLite, uvicorn on 127.0.0.1).
Both are asked a single-choice question and answered "yes".
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import resource
import secrets
import socket
import statistics
import subprocess
import time
from pathlib import Path

import httpx

BOUND = 120.0  # the longest anything here is waited for, in seconds

# Every waiting agent holds a connection of its own.
UNLIMITED = httpx.Limits(max_connections=None, max_keepalive_connections=None)


def rss_mib(pid: int) -> float:
    """The process's resident memory, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A server under test: how to start it, and its API."""

    name = ""

    def __init__(self, folder: Path):
        self.folder = folder
        self.process: subprocess.Popen | None = None

    def client(self) -> httpx.AsyncClient:
        raise NotImplementedError

    async def ready(self, client: httpx.AsyncClient) -> bool:
        raise NotImplementedError

    async def ask(self, client: httpx.AsyncClient, n: int) -> str:
        raise NotImplementedError

    async def wait(self, client: httpx.AsyncClient, id: str) -> None:
        """Returns once `id` was answered; raises on any failure."""
        raise NotImplementedError

    async def answer(self, client: httpx.AsyncClient, id: str) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class AskUser(Server):
    name = "ask-user"

    def __init__(self, folder: Path, program: str):
        super().__init__(folder)
        self.program = program
        self.state = folder / "state"

    def start(self) -> None:
        env = dict(os.environ, ASK_USER_STATE_DIR=str(self.state), XDG_CONFIG_HOME="/nonexistent")
        self.process = subprocess.Popen(
            [self.program, "inbox", "serve"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def client(self) -> httpx.AsyncClient:
        # A transport of its own takes the limits (the client's are not
        # passed on to it).
        transport = httpx.AsyncHTTPTransport(uds=str(self.state / "inbox.sock"), limits=UNLIMITED)
        return httpx.AsyncClient(transport=transport, base_url="http://inbox", timeout=90)

    async def ready(self, client: httpx.AsyncClient) -> bool:
        try:
            return (await client.get("/api/questions")).status_code == 200
        except httpx.TransportError:
            return False

    async def ask(self, client: httpx.AsyncClient, n: int) -> str:
        body = {
            "session": f"bench-{n}-{secrets.token_hex(4)}",
            "agent": "bench",
            "request": {
                "questions": [
                    {"id": "q", "question": "Deploy?", "options": [{"label": "Yes"}, {"label": "No"}]}
                ]
            },
        }
        reply = await client.post("/api/questions", json=body)
        reply.raise_for_status()
        return reply.json()["id"]

    async def wait(self, client: httpx.AsyncClient, id: str) -> None:
        while True:
            reply = await client.get(f"/api/questions/{id}", params={"wait": 60})
            reply.raise_for_status()
            if reply.json()["state"] != "waiting":
                return

    async def answer(self, client: httpx.AsyncClient, id: str) -> None:
        body = {"answers": [{"id": "q", "selected": ["Yes"]}]}
        (await client.post(f"/api/questions/{id}/answer", json=body)).raise_for_status()


class AwaitHumans(Server):
    name = "awaithumans"

    def __init__(self, folder: Path, program: str):
        super().__init__(folder)
        self.program = program
        self.port = free_port()
        self.token = secrets.token_urlsafe(32)

    def start(self) -> None:
        home = self.folder / "home"
        home.mkdir(parents=True)
        env = dict(
            os.environ,
            HOME=str(home),
            AWAITHUMANS_ADMIN_API_TOKEN=self.token,
            AWAITHUMANS_PAYLOAD_KEY=secrets.token_urlsafe(32),
        )
        self.process = subprocess.Popen(
            [
                self.program, "dev", "--host", "127.0.0.1", "--port", str(self.port),
                "--db-path", str(self.folder / "dev.db"), "--log-level", "WARNING",
            ],
            env=env,
            cwd=self.folder,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{self.port}",
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=90,
            limits=UNLIMITED,
        )

    async def ready(self, client: httpx.AsyncClient) -> bool:
        try:
            return (await client.get("/api/health")).status_code == 200
        except httpx.TransportError:
            return False

    async def ask(self, client: httpx.AsyncClient, n: int) -> str:
        body = {
            "task": "Deploy?",
            "payload": {},
            "payload_schema": {"type": "object"},
            "response_schema": {"type": "object", "properties": {"yes": {"type": "boolean"}}},
            "timeout_seconds": 3600,
            "idempotency_key": f"bench-{n}-{secrets.token_hex(4)}",
        }
        reply = await client.post("/api/tasks", json=body)
        reply.raise_for_status()
        return reply.json()["id"]

    async def wait(self, client: httpx.AsyncClient, id: str) -> None:
        while True:
            reply = await client.get(f"/api/tasks/{id}/poll", params={"timeout": 25})
            reply.raise_for_status()
            if reply.json()["status"] == "completed":
                return

    async def answer(self, client: httpx.AsyncClient, id: str) -> None:
        body = {"response": {"yes": True}}
        (await client.post(f"/api/tasks/{id}/complete", json=body)).raise_for_status()


async def until(what: str, check) -> None:
    """Waits until `check()` (a bool, or an awaitable of one) holds."""
    start = time.monotonic()
    while True:
        holds = check()
        if inspect.isawaitable(holds):
            holds = await holds
        if holds:
            return
        if time.monotonic() - start > BOUND:
            raise TimeoutError(f"waited {BOUND} s for {what}")
        await asyncio.sleep(0.001)


async def measure(server: Server, asks: int, agents: int, wakes: int) -> dict[str, float]:
    started = time.monotonic()
    server.start()
    figures: dict[str, float] = {}
    try:
        async with server.client() as client:
            await until(f"{server.name} to answer", lambda: server.ready(client))
            figures["ready ms"] = (time.monotonic() - started) * 1000

            gate = asyncio.Semaphore(64)
            refused = 0

            async def one(n: int) -> str | None:
                nonlocal refused
                async with gate:
                    try:
                        return await server.ask(client, n)
                    except httpx.HTTPError:
                        refused += 1
                        return None

            start = time.monotonic()
            asked = await asyncio.gather(*(one(n) for n in range(asks)))
            figures["asks/s"] = sum(1 for id in asked if id) / (time.monotonic() - start)

            asked = await asyncio.gather(*(one(asks + n) for n in range(agents)))
            figures["asks failed"] = refused
            ids = [id for id in asked if id]
            before = rss_mib(server.process.pid)
            returned: dict[str, float] = {}
            sent = failed = 0

            async def agent(id: str) -> None:
                nonlocal sent, failed
                sent += 1
                try:
                    await server.wait(client, id)
                    returned[id] = time.monotonic()
                except httpx.HTTPError:
                    failed += 1

            waiting = [asyncio.create_task(agent(id)) for id in ids]
            await until("every agent to poll", lambda: sent == len(ids))
            # Their requests reach the server: give it a moment to hold them all.
            await asyncio.sleep(3)
            figures["MiB/1000 waiting"] = (rss_mib(server.process.pid) - before) * 1000 / len(ids)

            latencies = []
            for id in [id for id in ids if id not in returned][:wakes]:
                await server.answer(client, id)
                answered = time.monotonic()
                await until("the agent to wake", lambda: id in returned)
                latencies.append((returned[id] - answered) * 1000)
            latencies.sort()
            figures["wake p50 ms"] = statistics.median(latencies)
            figures["wake p99 ms"] = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
            figures["waits failed"] = failed
            for task in waiting:
                task.cancel()
            await asyncio.gather(*waiting, return_exceptions=True)
    finally:
        server.stop()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ask-user", required=True)
    parser.add_argument("--awaithumans", required=True)
    parser.add_argument("--work", required=True, type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--asks", type=int, default=1000)
    parser.add_argument("--wakes", type=int, default=100)
    args = parser.parse_args()
    # Every waiting agent holds a connection: one descriptor each.
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    results: dict[str, list[dict[str, float]]] = {"ask-user": [], "awaithumans": []}
    for round in range(args.rounds):
        for server in (
            AskUser(args.work / f"ask-user-{round}", args.ask_user),
            AwaitHumans(args.work / f"awaithumans-{round}", args.awaithumans),
        ):
            server.folder.mkdir(parents=True)
            figures = asyncio.run(measure(server, args.asks, args.agents, args.wakes))
            results[server.name].append(figures)
            shown = "  ".join(f"{k} {v:,.1f}" for k, v in figures.items())
            print(f"round {round + 1} {server.name:12} {shown}", flush=True)

    print(f"\nmedians of {args.rounds} rounds ({args.agents:,} waiting agents, {args.asks:,} asks, {args.wakes} wakes):")
    keys = list(results["ask-user"][0])
    medians = {
        name: {k: statistics.median(r[k] for r in rounds) for k in keys}
        for name, rounds in results.items()
    }
    print(f"{'':22}{'ask-user':>14}{'awaithumans':>14}{'ratio':>10}")
    for k in keys:
        ours, theirs = medians["ask-user"][k], medians["awaithumans"][k]
        # The ratio is how many times better the inbox is, whichever way
        # better points.
        higher_is_better = k == "asks/s"
        if k in ("waits failed", "asks failed"):
            ratio = "-"
        elif higher_is_better:
            ratio = f"{ours / theirs:.1f}x" if theirs else "-"
        else:
            ratio = f"{theirs / ours:.1f}x" if ours else "-"
        print(f"{k:22}{ours:>14,.1f}{theirs:>14,.1f}{ratio:>10}")


if __name__ == "__main__":
    main()
