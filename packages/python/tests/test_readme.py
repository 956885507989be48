"""The README's quick start for this package, run as written: in a folder of
its own where ``ask_user`` is this package and ask_user_tool.wasm is the
component."""

import os
import re
import subprocess
import sys

from conftest import HERE, REPO


def quick_start() -> str:
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("### From Python"):]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block, 'the README has no python block under "From Python"'
    return block.group(1)


def test_the_readme_quick_start_works_as_written(tmp_path):
    (tmp_path / "ask_user_tool.wasm").write_bytes(
        open(os.environ["ASK_USER_COMPONENT"], "rb").read())
    (tmp_path / "quickstart.py").write_text(quick_start())
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))  # as `pip install ./packages/python`
    done = subprocess.run([sys.executable, "quickstart.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"the quick start failed:\n{done.stderr}"
    assert done.stdout == '{"answers":[{"id":"q","selected":["Yes"]}]}\n'
