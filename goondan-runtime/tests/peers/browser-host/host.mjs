// The test host of MCP Apps: a web page that does what a chat client does with a tool that has a
// page, built on the official host bridge (`AppBridge` of @modelcontextprotocol/ext-apps) and the
// MCP TypeScript SDK's client. scripts/browser-peers bundles it (esbuild) into
// .peers/browser/site/host.js; driver.mjs serves it and opens it in Chromium.
//
// What it does, in order (window.hostRun(config) returns the record of it):
//  1. connects the SDK client to the MCP server at `config.mcp` over Streamable HTTP, at the
//     protocol revision `config.protocol` ("2025-11-25": the SDK's plain `initialize`;
//     "2026-07-28": `server/discover`, pinned, no fallback), announcing the Apps extension;
//  2. lists the tools, reads the page (`resources/read` of the tool's `_meta.ui.resourceUri`)
//     and calls the tool as the model would;
//  3. loads the page through a sandbox proxy on another origin (`config.sandbox`, as the
//     extension requires of a web host) into a sandboxed frame, and talks to it through
//     AppBridge: tool input and result once the page says it is initialized;
//  4. answers the page's `tools/call` requests as the extension says a host must: a tool whose
//     `_meta.ui.visibility` lacks "app" (or that the server does not list) is refused, any
//     other goes to the server through the SDK client. Every call is recorded.
import {
  Client,
  StreamableHTTPClientTransport,
  ProtocolError,
  ProtocolErrorCode,
} from "@modelcontextprotocol/client";
import {
  AppBridge,
  PostMessageTransport,
  getToolUiResourceUri,
  RESOURCE_MIME_TYPE,
} from "@modelcontextprotocol/ext-apps/app-bridge";

const HOST_INFO = { name: "goondan-browser-test-host", version: "1.0.0" };
const EXTENSION_ID = "io.modelcontextprotocol/ui";

/** What the host saw and did, returned to the driver. */
const record = {
  phase: "starting",
  negotiatedProtocol: null,
  serverInfo: null,
  tools: [],
  resource: null,
  modelCall: null,
  appInitialized: false,
  appCalls: [],
  pageLogs: [],
  errors: [],
};

/** Who may call a tool, as the extension defines it: `["model", "app"]` when not said. */
function visibility(tool) {
  const v = tool?._meta?.ui?.visibility;
  return Array.isArray(v) ? v : ["model", "app"];
}

function describe(error) {
  if (error && typeof error === "object") {
    return { code: error.code ?? null, message: String(error.message ?? error) };
  }
  return { code: null, message: String(error) };
}

async function connect(config) {
  const options = {
    capabilities: {
      extensions: { [EXTENSION_ID]: { mimeTypes: [RESOURCE_MIME_TYPE] } },
    },
  };
  if (config.protocol === "2026-07-28") {
    options.versionNegotiation = { mode: { pin: "2026-07-28" } };
  } else if (config.protocol !== "2025-11-25") {
    throw new Error(`unknown protocol revision ${config.protocol}`);
  }
  const client = new Client(HOST_INFO, options);
  const transport = new StreamableHTTPClientTransport(new URL(config.mcp, location.href));
  await client.connect(transport);
  record.negotiatedProtocol = client.getNegotiatedProtocolVersion() ?? null;
  record.serverInfo = client.getServerVersion() ?? null;
  return client;
}

/** The page's resource: its HTML and `_meta.ui`, the content item's taking precedence over the listing's. */
async function readPage(client, uri) {
  const read = await client.readResource({ uri });
  const content = (read.contents ?? []).find((c) => c.uri === uri) ?? read.contents?.[0];
  if (!content) throw new Error(`resources/read of ${uri} returned no content`);
  const html =
    typeof content.text === "string"
      ? content.text
      : typeof content.blob === "string"
        ? new TextDecoder().decode(Uint8Array.from(atob(content.blob), (c) => c.charCodeAt(0)))
        : null;
  if (html === null) throw new Error(`resources/read of ${uri} returned neither text nor blob`);
  let listed = null;
  try {
    const list = await client.listResources();
    listed = (list.resources ?? []).find((r) => r.uri === uri) ?? null;
  } catch (error) {
    record.errors.push({ where: "resources/list", ...describe(error) });
  }
  const ui = content._meta?.ui ?? listed?._meta?.ui ?? {};
  record.resource = {
    uri,
    mimeType: content.mimeType ?? null,
    bytes: new TextEncoder().encode(html).length,
    listed: listed !== null,
    listedMimeType: listed?.mimeType ?? null,
    ui,
  };
  return { html, ui };
}

/** The outer frame: the sandbox proxy, on an origin other than this page's. */
function sandboxFrame(config) {
  const frame = document.createElement("iframe");
  frame.id = "app-frame";
  frame.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
  frame.style.width = "640px";
  frame.style.height = "400px";
  frame.style.border = "1px solid #888";
  frame.src = config.sandbox;
  document.getElementById("app").appendChild(frame);
  return frame;
}

async function run(config) {
  const client = await connect(config);
  record.phase = "connected";

  const { tools } = await client.listTools();
  const byName = new Map(tools.map((t) => [t.name, t]));
  record.tools = tools.map((t) => ({
    name: t.name,
    resourceUri: getToolUiResourceUri(t) ?? null,
    visibility: visibility(t),
  }));
  const tool = byName.get(config.tool);
  if (!tool) throw new Error(`the server lists no tool ${config.tool}`);
  if (!visibility(tool).includes("model")) {
    throw new Error(`${config.tool} is not visible to the model; a host would not call it`);
  }
  const uri = getToolUiResourceUri(tool);
  if (!uri) throw new Error(`${config.tool} has no _meta.ui.resourceUri`);

  const page = await readPage(client, uri);
  record.phase = "page read";

  const args = config.arguments ?? {};
  const result = await client.callTool({ name: tool.name, arguments: args });
  record.modelCall = { name: tool.name, arguments: args, result };
  record.phase = "tool called";

  const frame = sandboxFrame(config);
  const bridge = new AppBridge(
    client,
    HOST_INFO,
    { serverTools: {}, logging: {} },
    {
      hostContext: {
        theme: "light",
        displayMode: "inline",
        platform: "web",
        containerDimensions: { width: 640, maxHeight: 400 },
        toolInfo: { tool },
      },
    },
  );
  bridge.addEventListener("sandboxready", () => {
    bridge
      .sendSandboxResourceReady({
        html: page.html,
        csp: page.ui.csp,
        permissions: page.ui.permissions,
      })
      .catch((error) => record.errors.push({ where: "sandbox-resource-ready", ...describe(error) }));
  });
  bridge.addEventListener("initialized", () => {
    record.appInitialized = true;
    record.phase = "page initialized";
    bridge
      .sendToolInput({ arguments: args })
      .then(() => bridge.sendToolResult(result))
      .catch((error) => record.errors.push({ where: "tool-input/result", ...describe(error) }));
  });
  bridge.addEventListener("sizechange", ({ height }) => {
    if (typeof height === "number") frame.style.height = `${Math.min(height, 400)}px`;
  });
  bridge.addEventListener("loggingmessage", (params) => {
    record.pageLogs.push(params);
  });
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
  // connect() forwards every `tools/call` to the server; the extension asks the host to check
  // visibility first, so the forwarding is replaced by one that does.
  bridge.oncalltool = async (params, extra) => {
    const call = { name: params.name, arguments: params.arguments ?? {} };
    record.appCalls.push(call);
    const target = byName.get(params.name);
    if (!target || !visibility(target).includes("app")) {
      call.decision = "refused";
      const why = target
        ? `tool ${params.name} is not visible to apps (its _meta.ui.visibility is ${JSON.stringify(visibility(target))})`
        : `the server lists no tool ${params.name}`;
      call.error = { code: ProtocolErrorCode.InvalidParams, message: why };
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, why);
    }
    call.decision = "forwarded";
    try {
      call.result = await client.callTool(params, { signal: extra.mcpReq.signal });
      return call.result;
    } catch (error) {
      call.error = describe(error);
      throw error;
    }
  };
  record.phase = "bridge connected";
  return record;
}

window.hostRecord = record;
window.hostRun = (config) =>
  run(config).catch((error) => {
    record.errors.push({ where: `host (${record.phase})`, ...describe(error) });
    record.phase = "failed";
    return record;
  });
