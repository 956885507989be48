// A thread that runs the component, one run at a time, each on a fresh
// instance, and never waits for a human. A run meets its asks in order: an
// ask an earlier run of the same call made gets the reply it got (the
// component must ask exactly the same again); a new ask ends the run (the
// import throws, the instance is dropped) and is posted to the host's
// thread, which awaits the answerers and runs the call again with the reply.
import { parentPort, workerData } from 'node:worker_threads';

const { url, modules } = workerData;
const { instantiate } = await import(url);

/** Asks one call may make, as every host of this component allows by default. */
const MAX_ASKS = 1;

parentPort.on('message', ({ op, args, asked }) => {
  let asks = 0;
  // Set when `ask` ends the run: what is posted, however the component
  // unwinds (jco may hand a throw back to it as an error).
  let ended = null;
  const end = (outcome) => {
    ended = outcome;
    throw new Error('the run ended at an ask');
  };
  const ask = (request) => {
    const index = asks;
    asks += 1;
    if (index === MAX_ASKS) throw new Error('the component asked twice in one call');
    if (index < asked.length) {
      const [before, reply] = asked[index];
      if (JSON.stringify(before) !== JSON.stringify(request)) {
        end({ diverged: `it asked something else when run again (ask ${index + 1} of the call)` });
      }
      return reply;
    }
    return end({ asking: request });
  };
  // jco's instantiation reads the import without its version.
  const seam = { ask };
  let outcome;
  try {
    const tool = instantiate((name) => modules[name], {
      'dsh:ask-user/user-questions': seam,
      'dsh:ask-user/user-questions@0.1.0': seam,
    })['dsh:ask-user/tool@0.1.0'];
    outcome = { done: op === 'definition' ? tool.definition() : tool.execute(args) };
  } catch (error) {
    // A tool failure is thrown as its record; a trap as an Error.
    outcome = error instanceof Error ? { trap: error.message } : { failed: error };
  }
  parentPort.postMessage(ended ?? outcome);
});
