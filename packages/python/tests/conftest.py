import os
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
REPO = HERE.parents[2]


@pytest.fixture(scope="session")
def component() -> bytes:
    """The component `ask-user component --out` wrote (scripts/test does)."""
    path = os.environ.get("ASK_USER_COMPONENT")
    if not path:
        pytest.fail("set ASK_USER_COMPONENT to a .wasm from `ask-user component --out FILE`")
    return pathlib.Path(path).read_bytes()
