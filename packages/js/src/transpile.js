// jco's transpiler, for a component that is not pre-transpiled: an optional
// dependency, loaded only when one is transpiled.

/**
 * jco's output for `bytes`: `tool.js` (a module that imports nothing) and
 * its core modules (`*.wasm`). Rejects bytes that are not a component.
 * @param {Uint8Array} bytes
 * @returns {Promise<Record<string, Uint8Array>>}
 */
export async function transpile(bytes) {
  let jco;
  try {
    jco = await import('@bytecodealliance/jco-transpile');
  } catch {
    throw new Error('loading a component other than the one this package carries needs jco: '
      + 'npm install @bytecodealliance/jco-transpile@~0.15.0');
  }
  const { files } = await jco.transpileBytes(bytes, {
    name: 'tool',
    instantiation: 'sync',
    noComponentErrorWrapping: true,
    emitTypescriptDeclarations: false,
  });
  if (!files['tool.js']) throw new Error('jco made no module of the component');
  const out = {};
  for (const [name, data] of Object.entries(files)) {
    if (name === 'tool.js' || name.endsWith('.wasm')) out[name] = data;
  }
  return out;
}
