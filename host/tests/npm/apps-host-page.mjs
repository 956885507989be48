// The page of apps-host.mjs: the ext-apps host library's AppBridge shows the
// tool's app in a sandboxed iframe, gives it the model's call and its result,
// and relays the app's tool calls to the host's MCP client.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

const start = await (await fetch("/start")).json();
const iframe = document.getElementById("app");
const bridge = new AppBridge(
  null,
  { name: "apps-test-host", version: "1.0.0" },
  { serverTools: {}, logging: {} },
  { hostContext: { theme: "light", displayMode: "inline", toolInfo: { tool: start.tool } } },
);
bridge.oncalltool = async (params) => {
  const response = await fetch("/call", { method: "POST", body: JSON.stringify(params) });
  return response.json();
};
bridge.onsizechange = ({ height }) => {
  if (height) iframe.style.height = `${height + 4}px`;
};
bridge.oninitialized = async () => {
  await bridge.sendToolInput({ arguments: start.arguments });
  const result = await (await fetch("/result")).json();
  await bridge.sendToolResult(result);
  document.body.dataset.result = "given";
};
// Connected before the app loads: its first message is its initialize.
await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
iframe.srcdoc = start.html;
