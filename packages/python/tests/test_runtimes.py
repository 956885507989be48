"""The tool composed with a seam plug (`ask-user component --plug`) in
wasmtime-py with no seam of the test's own: WASI p2 from wasmtime-py's
linker is all it imports."""

import json
import os
import pathlib
import subprocess

import wasmtime
from wasmtime.component import Component, Linker

from conftest import REPO

TOOL = "dsh:ask-user/tool@0.1.0"


def composed(plug: str, tmp_path: pathlib.Path) -> bytes:
    command = os.environ.get("ASK_USER_COMMAND")
    assert command, "set ASK_USER_COMMAND to the ask-user command (scripts/test does)"
    out = tmp_path / f"{plug}.wasm"
    subprocess.run([command, "component", "--plug", plug, "--out", str(out)], check=True)
    return out.read_bytes()


def execute(wasm: bytes, env: list, arguments: str):
    engine = wasmtime.Engine()
    linker = Linker(engine)
    linker.add_wasip2()
    store = wasmtime.Store(engine)
    wasi = wasmtime.WasiConfig()
    wasi.env = env
    store.set_wasi(wasi)
    instance = linker.instantiate(store, Component(engine, wasm))
    tool = instance.get_export_index(store, TOOL)
    func = instance.get_func(store, instance.get_export_index(store, "execute", tool))
    outcome = func(store, arguments)
    func.post_return(store)
    return outcome


def test_the_answers_plug_answers_in_wasmtime_py_with_no_seam_of_ours(tmp_path):
    wasm = composed("answers", tmp_path)
    arguments = (REPO / "examples" / "deploy.json").read_text()
    answers = (REPO / "examples" / "deploy.answers.json").read_text()
    outcome = execute(wasm, [("ASK_USER_ANSWERS", answers)], arguments)
    assert outcome.tag == "ok"
    assert json.loads(outcome.payload.text) == json.loads(answers)

    outcome = execute(wasm, [], arguments)
    assert outcome.tag == "err"
    assert outcome.payload.code == "NO_PROVIDER"
    assert "ASK_USER_ANSWERS is not set" in outcome.payload.message
