"""The book's quick start for this package (docs/src/embedding/python.md),
run as written where a user
would run it: the wheel built from this folder, installed into a fresh
virtual environment outside the repository, with no component file and no
Rust binary beside it."""

import re
import subprocess
import sys
import venv
import zipfile

from conftest import HERE, REPO


def quick_start() -> str:
    page = (REPO / "docs/src/embedding/python.md").read_text()
    block = re.search(r"```python\n(.*?)```", page, re.S)
    assert block, "the book's page for Python has no python block"
    return block.group(1)


def run(*command, cwd=None):
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}\n{done.stderr}"
    return done


def test_the_wheel_carries_the_component_and_the_quick_start_works_as_written(tmp_path):
    dist = tmp_path / "dist"
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(HERE.parent))
    wheels = list(dist.glob("ask_user-*.whl"))
    assert len(wheels) == 1, wheels
    shipped = (REPO / "host/runtime/component/ask_user_tool.wasm").read_bytes()
    with zipfile.ZipFile(wheels[0]) as wheel:
        assert wheel.read("ask_user/ask_user_tool.wasm") == shipped, "the wheel's component"
    env = tmp_path / "env"
    venv.create(env, with_pip=True)
    python = str(env / "bin" / "python")
    run(python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheels[0]))
    work = tmp_path / "work"
    work.mkdir()
    (work / "quickstart.py").write_text(quick_start())
    done = run(python, "quickstart.py", cwd=work)
    assert done.stdout == '{"answers":[{"id":"q","selected":["Yes"]}]}\n'
    assert sorted(p.name for p in work.iterdir()) == ["quickstart.py"], "nothing else was needed"
