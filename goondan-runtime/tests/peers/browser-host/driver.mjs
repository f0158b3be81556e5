// Runs the MCP Apps test host (host.html + host.js, sandbox.html) in Chromium against an MCP
// server and prints what happened as one JSON object on stdout (the verdict). scripts/browser-peers
// copies it into .peers/browser next to its node_modules; the Rust tests
// (goondan-runtime/tests/peers/browser.rs) run it with node:
//
//   node driver.mjs '<config JSON>'
//
// The config:
//   mcp        the MCP server's Streamable HTTP endpoint (http://127.0.0.1:PORT/mcp)
//   protocol   "2025-11-25" or "2026-07-28"
//   tool       the tool with a page; the host calls it as the model would
//   arguments  its arguments
//   ready      a CSS selector in the tool's page that has text once the page has rendered
//   readyText  optional: wait until that text is this (a page may show a placeholder first)
//   steps      [{ click, read, text? }]: click `click` in the page, then wait until `read` has
//              text (`text`, when given)
//   out        a folder for the screenshot and Chromium's profile (made if missing)
//   chromium   the browser (default /usr/bin/chromium)
//   timeoutMs  for each wait (default 30000)
//
// The host page is served on one origin (127.0.0.1, port A), which also forwards /mcp to the
// server as it comes, but for its Host header (our server sends no CORS headers, so a page
// cannot reach it from another origin; a web host's MCP traffic goes through its own origin);
// the sandbox proxy is served on another origin (port B), as the extension requires.
// The verdict:
//   host        the host page's record (host.mjs): negotiated protocol, tools, resource,
//               the model's call, the page's calls and the host's decision on each, errors
//   rendered    the text of `ready`;  steps: each step's text
//   screenshot  { path, bytes, width, height, blankBytes }: the host page with the tool's page
//               in it, and the size of the same viewport's blank page for comparison
//   proxied     [{ method, jsonrpc, protocolVersionHeader, status }] of every /mcp request
//   console     the pages' console errors and uncaught exceptions
//   error       why the driver stopped early, or null
import { createServer, request as httpRequest } from "node:http";
import { readFile, mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const config = JSON.parse(process.argv[2] ?? "{}");
const timeout = config.timeoutMs ?? 30000;
const verdict = {
  host: null,
  rendered: null,
  steps: [],
  screenshot: null,
  proxied: [],
  console: [],
  error: null,
};
const MAX_LOGGED_BODY = 1 << 20;

function listen(handler) {
  return new Promise((resolve, reject) => {
    const server = createServer(handler);
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve(server));
  });
}

async function send(res, file, type) {
  try {
    const body = await readFile(join(here, file));
    res.writeHead(200, { "content-type": type, "cache-control": "no-store" });
    res.end(body);
  } catch (error) {
    res.writeHead(500, { "content-type": "text/plain" });
    res.end(String(error));
  }
}

/** The JSON-RPC method(s) of a request body, for the record. */
function methods(body) {
  try {
    const parsed = JSON.parse(body);
    const list = Array.isArray(parsed) ? parsed : [parsed];
    return list.map((m) => m?.method ?? (m?.result !== undefined || m?.error !== undefined ? "(response)" : "?"));
  } catch {
    return [];
  }
}

/** Forwards one request to the MCP server, streaming both ways (answers may be SSE streams),
 * and records it. */
function forward(req, res, target) {
  const entry = {
    method: req.method,
    jsonrpc: [],
    protocolVersionHeader: req.headers["mcp-protocol-version"] ?? null,
    status: null,
  };
  verdict.proxied.push(entry);
  const headers = { ...req.headers, host: target.host };
  delete headers.connection;
  const upstream = httpRequest(
    { host: target.hostname, port: target.port, path: target.pathname + target.search, method: req.method, headers },
    (answer) => {
      entry.status = answer.statusCode;
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on("error", (error) => {
    entry.status = 502;
    if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
    res.end(`forwarding to the MCP server failed: ${error.message}`);
  });
  let seen = "";
  req.on("data", (chunk) => {
    if (seen.length < MAX_LOGGED_BODY) seen += chunk.toString("utf8");
  });
  req.on("end", () => {
    entry.jsonrpc = methods(seen);
  });
  req.pipe(upstream);
}

async function main() {
  const target = new URL(config.mcp);
  const sandboxServer = await listen((req, res) => {
    const path = new URL(req.url, "http://x").pathname;
    if (path === "/sandbox.html") return send(res, "site/sandbox.html", "text/html; charset=utf-8");
    res.writeHead(404).end();
  });
  const hostServer = await listen((req, res) => {
    const path = new URL(req.url, "http://x").pathname;
    if (path === "/" || path === "/host.html") return send(res, "site/host.html", "text/html; charset=utf-8");
    if (path === "/host.js") return send(res, "site/host.js", "text/javascript; charset=utf-8");
    if (path === "/mcp") return forward(req, res, target);
    res.writeHead(404).end();
  });
  const hostOrigin = `http://127.0.0.1:${hostServer.address().port}`;
  const sandboxOrigin = `http://127.0.0.1:${sandboxServer.address().port}`;

  await mkdir(config.out, { recursive: true });
  const viewport = { width: 800, height: 600 };
  const context = await chromium.launchPersistentContext(join(config.out, "chromium-profile"), {
    executablePath: config.chromium ?? "/usr/bin/chromium",
    headless: true,
    viewport,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    page.on("console", (m) => {
      if (m.type() === "error") verdict.console.push({ type: "console", text: m.text(), url: m.location().url });
    });
    page.on("pageerror", (e) => verdict.console.push({ type: "exception", text: String(e) }));

    await page.setContent("<!doctype html><html><body></body></html>");
    const blankBytes = (await page.screenshot()).length;

    await page.goto(`${hostOrigin}/host.html`);
    verdict.host = await page.evaluate(
      (c) => window.hostRun(c),
      {
        mcp: "/mcp",
        protocol: config.protocol,
        tool: config.tool,
        arguments: config.arguments ?? {},
        sandbox: `${sandboxOrigin}/sandbox.html?host=${encodeURIComponent(hostOrigin)}`,
      },
    );
    if (verdict.host.phase === "failed") throw new Error("the host page failed (see host.errors)");

    const view = page.frameLocator("#app-frame").frameLocator("#view");
    const textOf = async (selector, wanted) => {
      const el = view.locator(selector);
      await el.waitFor({ state: "visible", timeout });
      const deadline = Date.now() + timeout;
      for (;;) {
        const text = ((await el.textContent({ timeout })) ?? "").trim();
        if (text && (wanted === undefined || text === wanted)) return text;
        if (Date.now() > deadline) {
          throw new Error(`${selector} holds ${JSON.stringify(text)} after ${timeout} ms, not ${JSON.stringify(wanted ?? "any text")}`);
        }
        await page.waitForTimeout(50);
      }
    };
    verdict.rendered = await textOf(config.ready, config.readyText);
    for (const step of config.steps ?? []) {
      await view.locator(step.click).click({ timeout });
      verdict.steps.push({ click: step.click, read: step.read, text: await textOf(step.read, step.text) });
    }

    const path = join(config.out, `mcp-app-${config.protocol}.png`);
    const png = await page.screenshot({ path, fullPage: true });
    verdict.screenshot = {
      path,
      bytes: png.length,
      width: png.readUInt32BE(16),
      height: png.readUInt32BE(20),
      blankBytes,
    };
    verdict.host = await page.evaluate(() => window.hostRecord);
  } finally {
    await context.close();
    hostServer.close();
    sandboxServer.close();
  }
}

try {
  await main();
} catch (error) {
  verdict.error = String(error?.stack ?? error);
}
const json = JSON.stringify(verdict);
if (config.out) await writeFile(join(config.out, `verdict-${config.protocol}.json`), json).catch(() => {});
process.stdout.write(json + "\n");
process.exit(0);
