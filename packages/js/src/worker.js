// The component's own thread. It runs one call at a time, each on a fresh
// instance. The component's `ask` import is synchronous (Node has no JSPI),
// so `ask` posts the request to the host's thread and blocks on
// `Atomics.wait` until the host has put its reply on the reply port; the
// host's thread, free meanwhile, awaits the answerers.
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';

const { url, modules, replies, signal } = workerData;
const woken = new Int32Array(signal);
const { instantiate } = await import(url);

parentPort.on('message', ({ op, args }) => {
  let asked = false;
  const ask = (request) => {
    // One ask per call, as every host of this component allows by default.
    if (asked) throw new Error('the component asked twice in one call');
    asked = true;
    Atomics.store(woken, 0, 0);
    parentPort.postMessage({ asking: request });
    Atomics.wait(woken, 0, 0);
    return receiveMessageOnPort(replies).message;
  };
  // jco's instantiation reads the import without its version.
  const seam = { ask };
  try {
    const tool = instantiate((name) => modules[name], {
      'dsh:ask-user/user-questions': seam,
      'dsh:ask-user/user-questions@0.1.0': seam,
    })['dsh:ask-user/tool@0.1.0'];
    parentPort.postMessage({ done: op === 'definition' ? tool.definition() : tool.execute(args) });
  } catch (error) {
    // A tool failure is thrown as its record; a trap as an Error.
    parentPort.postMessage(error instanceof Error ? { trap: error.message } : { failed: error });
  }
});
