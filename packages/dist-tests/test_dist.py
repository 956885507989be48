"""What a release publishes (scripts/dist's dist/), installed as people
install it: in folders outside the repository, with no Rust toolchain on
PATH and a home folder of its own. The wheel into a fresh virtual
environment, the npm tarballs through npx; each runs `ask-user ask` and
`ask-user mcp` under the official MCP Python SDK (the tool listed, called,
its form answered). scripts/test-dist runs this after scripts/dist."""

import json
import os
import pathlib
import platform
import re
import select
import shutil
import signal
import subprocess
import sys
import time
import tomllib
import venv
import zipfile

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
DIST = pathlib.Path(os.environ.get("ASK_USER_DIST", REPO / "dist"))
VERSION = tomllib.loads((REPO / "packages/python/pyproject.toml").read_text())["project"]["version"]
# The goal for the wheel (issue 36); docs/src/performance.md has its size.
MAX_WHEEL_BYTES = 15 * 1024 * 1024
# The oldest glibc the command runs on: the wheel's manylinux_2_28 tag.
GLIBC = (2, 28)
ARCH = {"x86_64": ("x86_64", "x64"), "aarch64": ("aarch64", "arm64")}[platform.machine()]
EXAMPLES = REPO / "examples"
ANSWERED = json.loads((EXAMPLES / "deploy.answers.json").read_text())["answers"]


def one(folder: str, pattern: str) -> pathlib.Path:
    found = sorted((DIST / folder).glob(pattern))
    assert len(found) == 1, f"one {pattern} in {DIST / folder} (run scripts/dist): {found}"
    return found[0]


@pytest.fixture
def user(tmp_path):
    """A user's machine without Rust: the environment, a home folder and a
    working folder outside the repository with the example's files."""
    home = tmp_path / "home"
    work = tmp_path / "work"
    home.mkdir()
    work.mkdir()
    for name in ("deploy.json", "deploy.answers.json"):
        shutil.copy(EXAMPLES / name, work / name)
    rustless = [d for d in os.environ["PATH"].split(os.pathsep)
                if d and not any((pathlib.Path(d) / tool).exists() for tool in ("cargo", "rustc", "rustup"))]
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("CARGO", "RUSTUP", "ASK_USER_", "npm_", "XDG_"))}
    env.update(PATH=os.pathsep.join(rustless), HOME=str(home),
               PIP_CACHE_DIR=os.environ.get("PIP_CACHE_DIR", str(pathlib.Path.home() / ".cache/pip")),
               PIP_DISABLE_PIP_VERSION_CHECK="1", npm_config_update_notifier="false",
               npm_config_fund="false", npm_config_audit="false")
    assert shutil.which("cargo", path=env["PATH"]) is None, "cargo is off PATH"
    assert shutil.which("rustc", path=env["PATH"]) is None, "rustc is off PATH"
    return {"env": env, "home": home, "work": work}


def run(command, user, check=True, timeout=300):
    done = subprocess.run(command, cwd=user["work"], env=user["env"], capture_output=True, text=True,
                          timeout=timeout)
    if check:
        assert done.returncode == 0, f"{command} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


def asks_and_serves_mcp(command: list, user):
    """`command` (the installed ask-user) is the release's version, answers
    the example from its answers file, and serves MCP to the official SDK:
    one tool, its form answered."""
    assert run([*command, "--version"], user).stdout == f"ask-user {VERSION}\n"
    asked = run([*command, "ask", "deploy.json", "--answers", "deploy.answers.json"], user)
    assert json.loads(asked.stdout)["structuredContent"]["answers"] == ANSWERED

    content = {"q01_target": "Production", "q02_checks": ["Unit tests"], "q03_note": "From the wheel"}
    client = run([sys.executable, REPO / "host/tests/mcp_client.py", " ".join(command), "2026-07-28",
                  json.dumps(content), "deploy.json"], user)
    ran = json.loads(client.stdout)
    assert ran["tools"] == ["ask_user_question"]
    assert len(ran["forms"]) == 1 and ran["forms"][0]["mode"] == "form"
    assert ran["result"]["isError"] is False, ran["result"]
    assert ran["result"]["structuredContent"]["answers"] == [
        {"id": "target", "selected": ["Production"]},
        {"id": "checks", "selected": ["Unit tests"]},
        {"id": "note", "selected": [], "custom": "From the wheel"},
    ]


def test_the_wheel_is_tagged_for_glibc_2_28_and_within_its_size():
    wheel = one("python", "*.whl")
    tag = f"py3-none-manylinux_{GLIBC[0]}_{GLIBC[1]}_{ARCH[0]}"
    assert wheel.name == f"ask_user-{VERSION}-{tag}.whl"
    assert wheel.stat().st_size <= MAX_WHEEL_BYTES, f"{wheel.stat().st_size} bytes"
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read(f"ask_user-{VERSION}.dist-info/WHEEL").decode()
        assert f"Tag: {tag}" in metadata.splitlines()
        assert "Root-Is-Purelib: false" in metadata.splitlines()
        shipped = (REPO / "host/runtime/component/ask_user_tool.wasm").read_bytes()
        assert archive.read("ask_user/ask_user_tool.wasm") == shipped, "the host library's component"
        command = archive.read(f"ask_user-{VERSION}.data/scripts/ask-user")
    assert command.startswith(b"\x7fELF")
    # Every glibc symbol version the command needs is 2.28 or older.
    binary = DIST / "ask-user.elf"
    binary.write_bytes(command)
    try:
        symbols = subprocess.run(["objdump", "-T", binary], capture_output=True, text=True, check=True).stdout
    finally:
        binary.unlink()
    needed = {tuple(map(int, v.split("."))) for v in re.findall(r"GLIBC_([0-9.]+)", symbols)}
    assert needed and max(needed) <= GLIBC, f"needs glibc {max(needed)}"


def test_the_wheels_command_asks_and_serves_mcp_with_no_rust_anywhere(user):
    env = user["home"] / "venv"
    venv.create(env, with_pip=True)
    # --no-index: the command needs nothing from PyPI.
    run([env / "bin/python", "-m", "pip", "install", "--quiet", "--no-index", one("python", "*.whl")], user)
    asks_and_serves_mcp([str(env / "bin/ask-user")], user)
    # An installed copy is one to keep: hooks may name it.
    settings = user["home"] / "claude-settings.json"
    run([env / "bin/ask-user", "hook", "install", "claude-code", "--settings", settings], user)
    assert str(env / "bin/ask-user") in settings.read_text()


def test_the_wheels_host_library_asks_for_its_extra_then_runs_the_books_quick_start(user):
    env = user["home"] / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin/python"
    wheel = one("python", "*.whl")
    run([python, "-m", "pip", "install", "--quiet", "--no-index", wheel], user)
    bare = run([python, "-c", "import ask_user"], user, check=False)
    assert bare.returncode == 1
    assert "pip install 'ask-user[host]'" in bare.stderr, bare.stderr

    run([python, "-m", "pip", "install", "--quiet", f"{wheel}[host]"], user)
    page = (REPO / "docs/src/embedding/python.md").read_text()
    block = re.search(r"```python\n(.*?)```", page, re.S)
    assert block, "the book's page for Python has a python block"
    (user["work"] / "quickstart.py").write_text(block.group(1))
    done = run([python, "quickstart.py"], user)
    assert done.stdout == '{"answers":[{"id":"q","selected":["Yes"]}]}\n'


def test_uvx_runs_the_wheels_command_and_hooks_are_kept_out_of_its_cache(user):
    tools = user["home"] / "tools"
    venv.create(tools, with_pip=True)
    run([tools / "bin/python", "-m", "pip", "install", "--quiet", "uv==0.13.*"], user)
    # --offline: the wheel needs nothing from PyPI; uv runs it on this Python.
    uvx = [str(tools / "bin/uvx"), "--offline", "--python", sys.executable, "--from", str(one("python", "*.whl"))]
    asks_and_serves_mcp([*uvx, "ask-user"], user)
    settings = user["home"] / "claude-settings.json"
    refused = run([*uvx, "ask-user", "hook", "install", "claude-code", "--settings", settings], user, check=False)
    assert refused.returncode == 2, refused.stderr
    assert "uvx's cache" in refused.stderr and "uv tool install ask-user" in refused.stderr, refused.stderr
    assert not settings.exists()


def tarballs() -> list:
    """The npm packages: this platform's, and the launcher's that names it."""
    return [one("npm", f"ask-user-linux-{ARCH[1]}-gnu-{VERSION}.tgz"), one("npm", f"ask-user-{VERSION}.tgz")]


def npx(user):
    """`npx ask-user`, from the tarballs alone."""
    return ["npx", "--yes", *(f"--package={t}" for t in tarballs()), "--", "ask-user"]


def test_npx_runs_the_command_from_the_tarballs_and_hooks_are_kept_out_of_its_cache(user):
    asks_and_serves_mcp(npx(user), user)
    # npx's copy lives in a cache: what runs it later is refused, saying what to do.
    settings = user["home"] / "claude-settings.json"
    refused = run([*npx(user), "hook", "install", "claude-code", "--settings", settings], user, check=False)
    assert refused.returncode == 2, refused.stderr
    assert "npx's cache" in refused.stderr and "npm install -g ask-user" in refused.stderr, refused.stderr
    assert not settings.exists()


def test_the_launcher_passes_on_the_exit_status_sigterm_and_the_commands_end(user):
    (user["work"] / "package.json").write_text('{"private": true}')
    run(["npm", "install", "--silent", *map(str, tarballs())], user)
    launcher = user["work"] / "node_modules/.bin/ask-user"
    missing = run([launcher, "ask", "nowhere.json"], user, check=False)
    assert missing.returncode == 2 and "nowhere.json" in missing.stderr, missing

    # An MCP client stops its server with SIGTERM to the process it started:
    # the command stops as it does on its own (status 0), and the launcher with it.
    server = serving(launcher, user)
    try:
        children = child_pids(server.pid)
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 0, "the launcher ends as the command did"
        wait_for(lambda: not any(alive(pid) for pid in children), "the command ends too")
    finally:
        kill_group(server)
    # A command killed by a signal: the launcher ends by the same signal.
    server = serving(launcher, user)
    try:
        for pid in child_pids(server.pid):
            os.kill(pid, signal.SIGKILL)
        assert server.wait(timeout=30) == -signal.SIGKILL
    finally:
        kill_group(server)


def kill_group(server: subprocess.Popen):
    """Whatever is left of the launcher's process group."""
    try:
        os.killpg(server.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    server.wait(timeout=30)


def serving(launcher, user) -> subprocess.Popen:
    """`ask-user mcp` through the launcher, in a process group of its own,
    once it has answered MCP's initialize (so it is past setting itself up)."""
    server = subprocess.Popen([launcher, "mcp", "--config", "/dev/null"], cwd=user["work"], env=user["env"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}
    try:
        server.stdin.write(json.dumps(initialize).encode() + b"\n")
        server.stdin.flush()
        readable, _, _ = select.select([server.stdout], [], [], 30)
        assert readable, "within 30 s: the server answers initialize"
        assert json.loads(server.stdout.readline())["id"] == 1
        assert child_pids(server.pid), "the launcher runs the command as its child"
    except BaseException:
        kill_group(server)
        raise
    return server


def child_pids(pid: int) -> list:
    path = pathlib.Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def alive(pid: int) -> bool:
    stat = pathlib.Path(f"/proc/{pid}/stat")
    # A zombie (state Z) has ended; its parent, gone, cannot reap it here.
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def wait_for(state, what: str, bound: float = 30.0):
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if value := state():
            return value
        time.sleep(0.05)
    pytest.fail(f"within {bound} s: {what}")
