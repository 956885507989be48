// An MCP Apps host for the tests, built on the official libraries: an MCP
// client (@modelcontextprotocol/client) that declares the UI extension and
// no forms runs the server; a page of ours (apps-host-page.mjs: the ext-apps
// host library's AppBridge, bundled with esbuild) shows the tool's app in a
// sandboxed iframe and relays the app's tool calls to the server, as a chat
// client that renders MCP Apps does.
//
//   node apps-host.mjs '<tool arguments as JSON>' -- <server command> [args…]
//
// It prints `MODEL_SEES <tool names>` (the tools a model would be offered:
// app-only ones hidden), then `LISTENING <url>`. Opening the page makes the
// model's call; its result is printed as `RESULT <json>`. It runs until it
// is killed, or its input closes.
import http from "node:http";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { build } from "esbuild";

const [toolArguments, dashes, command, ...commandArgs] = process.argv.slice(2);
if (dashes !== "--" || !command) {
  console.error("usage: node apps-host.mjs '<arguments>' -- <command> [args…]");
  process.exit(2);
}
const TOOL = "ask_user_question";
const UI = "io.modelcontextprotocol/ui";
const MIME = "text/html;profile=mcp-app";

const client = new Client(
  { name: "apps-test-host", version: "1.0.0" },
  { capabilities: { extensions: { [UI]: { mimeTypes: [MIME] } } } },
);
await client.connect(new StdioClientTransport({ command, args: commandArgs, stderr: "inherit" }));

const { tools } = await client.listTools();
const forModel = tools.filter((t) => {
  const visibility = t._meta?.ui?.visibility;
  return !Array.isArray(visibility) || visibility.includes("model");
});
console.log(`MODEL_SEES ${JSON.stringify(forModel.map((t) => t.name))}`);
const tool = tools.find((t) => t.name === TOOL);
const uri = tool?._meta?.ui?.resourceUri ?? tool?._meta?.["ui/resourceUri"];
if (typeof uri !== "string" || !uri.startsWith("ui://")) {
  console.error(`${TOOL} names no app: ${JSON.stringify(tool?._meta)}`);
  process.exit(1);
}
const { contents } = await client.readResource({ uri });
const app = contents.find((c) => c.mimeType === MIME && typeof c.text === "string");
if (!app) {
  console.error(`${uri} is not an app page: ${JSON.stringify(contents.map((c) => c.mimeType))}`);
  process.exit(1);
}

const page = await build({
  entryPoints: [fileURLToPath(new URL("./apps-host-page.mjs", import.meta.url))],
  bundle: true,
  write: false,
  format: "esm",
  platform: "browser",
  logLevel: "error",
});
const script = page.outputFiles[0].text;

// The model's call, made when the page first opens.
let called = null;
const call = () => {
  called ??= client
    .callTool({ name: TOOL, arguments: JSON.parse(toolArguments) }, { timeout: 3_600_000 })
    .then(
      (result) => {
        console.log(`RESULT ${JSON.stringify(result)}`);
        return result;
      },
      (error) => {
        console.log(`RESULT ${JSON.stringify({ failed: String(error) })}`);
        return { isError: true, content: [{ type: "text", text: String(error) }] };
      },
    );
  return called;
};

const body = (request) =>
  new Promise((resolve, reject) => {
    let text = "";
    request.setEncoding("utf8");
    request.on("data", (chunk) => (text += chunk));
    request.on("end", () => resolve(text));
    request.on("error", reject);
  });
const send = (response, type, text) => {
  response.writeHead(200, { "content-type": type, "cache-control": "no-store" });
  response.end(text);
};

const server = http.createServer(async (request, response) => {
  try {
    switch (`${request.method} ${request.url}`) {
      case "GET /":
        return send(
          response,
          "text/html; charset=utf-8",
          `<!doctype html><meta charset="utf-8"><title>apps test host</title>
<iframe id="app" sandbox="allow-scripts allow-forms" style="width:100%;border:1px solid #888"></iframe>
<script type="module" src="/host.js"></script>`,
        );
      case "GET /host.js":
        return send(response, "text/javascript", script);
      case "GET /start":
        call();
        return send(response, "application/json", JSON.stringify({ html: app.text, arguments: JSON.parse(toolArguments), tool }));
      case "GET /result":
        return send(response, "application/json", JSON.stringify(await call()));
      case "POST /call": {
        // The app's own tool calls, relayed as the host's client.
        const params = JSON.parse(await body(request));
        let result;
        try {
          result = await client.callTool(params, { timeout: 60_000 });
        } catch (error) {
          result = { isError: true, content: [{ type: "text", text: `the server refused the call: ${error.message}` }] };
        }
        return send(response, "application/json", JSON.stringify(result));
      }
      default:
        response.writeHead(404).end();
    }
  } catch (error) {
    response.writeHead(500).end(String(error));
  }
});
server.listen(0, "127.0.0.1", () => {
  console.log(`LISTENING http://127.0.0.1:${server.address().port}/`);
});
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
