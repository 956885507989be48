// What every test file shares: the component `ask-user component --out`
// wrote (scripts/test does), transpiled once, and the shared case table.
import { readFileSync } from 'node:fs';
import { Component } from '../src/index.js';

const path = process.env.ASK_USER_COMPONENT;
if (!path) throw new Error('set ASK_USER_COMPONENT to a .wasm from `ask-user component --out FILE`');

/** The repository's root. */
export const REPO = new URL('../../../', import.meta.url);

/** The component, transpiled and compiled once for the file. */
export const component = await Component.load(path);

/** The shared table of tool calls (tests/cases/tool_calls.json). */
export const TABLE = JSON.parse(readFileSync(new URL('tests/cases/tool_calls.json', REPO))).cases;
