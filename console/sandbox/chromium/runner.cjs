'use strict';
// One Node.js process of the sandbox's Playwright executors and browser REPL (console/sandbox/chromium/node.py
// starts it in a bubblewrap jail: no network but a loopback listener of its own, which forwards to the
// socket the sandbox relays to the session's CDP proxy).
//
// The sandbox speaks to it over file descriptor 3, one JSON object per line:
//   {op: "run", id, code, named, target_id, exclude, timeout_ms}   Playwright code (a fresh function per call)
//   {op: "repl", id, code, reset}                                  code in the REPL's persistent context
//   {op: "abandon", id}        the call timed out: say what it printed so far ("alive"), drop the browser
//   {op: "close_tab"}          close the tab of this (named) executor, then answer "closed"
// and it answers {op: "ready"}, {op: "result", id, ...}, {op: "alive", id, stdout, stderr}, {op: "closed"}.
// The code's own process.exit, an uncaught error or a blocked event loop end the process or leave it silent:
// the sandbox then starts a new one for the next call.

const net = require('net');
const vm = require('vm');
const util = require('util');
const { Console } = require('console');
const { Writable } = require('stream');

const playwright = require(process.env.EXECUTOR_PLAYWRIGHT);
const SOCKET = process.env.EXECUTOR_CDP_SOCKET;
const PORT = Number(process.env.EXECUTOR_CDP_PORT);
const CDP_PATH = process.env.EXECUTOR_CDP_PATH || '';
const OUTPUT_CAP = Number(process.env.EXECUTOR_OUTPUT_CAP || 1048576);
const RESULT_CAP = Number(process.env.EXECUTOR_RESULT_CAP || 1048576);
const FILENAME = 'script.js';

let stripTypes = null;
try {
  stripTypes = require('module').stripTypeScriptTypes || null;
} catch (error) {
  stripTypes = null;
}

// The only way out: a loopback listener (the jail's own network namespace) forwarding to the sandbox.
let relayReady = null;
function relay() {
  if (!relayReady) {
    relayReady = new Promise((resolve, reject) => {
      const server = net.createServer((client) => {
        const upstream = net.connect(SOCKET);
        const end = () => {
          client.destroy();
          upstream.destroy();
        };
        client.on('error', end);
        upstream.on('error', end);
        client.on('close', end);
        upstream.on('close', end);
        client.pipe(upstream);
        upstream.pipe(client);
      });
      server.on('error', reject);
      server.listen(PORT, '127.0.0.1', () => resolve(server));
    });
  }
  return relayReady;
}

let browser = null;
async function connect() {
  if (browser && browser.isConnected()) return browser;
  if (!SOCKET) throw new Error('this session has no real browser (the sandbox runs its simulated engine)');
  await relay();
  browser = await playwright.chromium.connectOverCDP(`ws://127.0.0.1:${PORT}${CDP_PATH}`, { timeout: 30000 });
  return browser;
}

// Output of one call ------------------------------------------------------------------------------------
class Capture {
  constructor() {
    this.chunks = [];
    this.size = 0;
    this.clipped = false;
    const self = this;
    this.stream = new Writable({
      write(chunk, encoding, done) {
        self.add(String(chunk));
        done();
      },
    });
  }
  add(text) {
    if (this.size >= OUTPUT_CAP) {
      this.clipped = true;
      return;
    }
    const room = OUTPUT_CAP - this.size;
    if (text.length > room) {
      this.clipped = true;
      text = text.slice(0, room);
    }
    this.chunks.push(text);
    this.size += text.length;
  }
  text() {
    const text = this.chunks.join('');
    return this.clipped ? `${text}\n[sandbox] output beyond ${OUTPUT_CAP} characters was discarded\n` : text;
  }
}

let current = null; // the running call's {out, err}: where process.stdout/stderr writes go meanwhile
for (const [name, key] of [
  ['stdout', 'out'],
  ['stderr', 'err'],
]) {
  const original = process[name].write.bind(process[name]);
  process[name].write = (chunk, encoding, done) => {
    if (current) {
      current[key].add(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString());
      if (typeof encoding === 'function') encoding();
      else if (typeof done === 'function') done();
      return true;
    }
    return original(chunk, encoding, done);
  };
}

// Messages ---------------------------------------------------------------------------------------------
const control = new net.Socket({ fd: Number(process.env.EXECUTOR_CONTROL_FD || 3), readable: true, writable: true });
function send(message) {
  control.write(JSON.stringify(message) + '\n');
}

function describe(error) {
  if (!(error instanceof Error)) return `Uncaught ${util.inspect(error, { depth: 2 })}`;
  const name = error.name || 'Error';
  const lines = String(error.stack || '').split('\n');
  // The user's frames only (script.js:LINE:COLUMN), and a syntax error's position line.
  const frames = lines.filter((line) => line.includes(`${FILENAME}:`)).map((line) => line.trim());
  const head = `${name}: ${error.message}`;
  return [head, ...frames.slice(0, 10).map((frame) => `    ${frame.startsWith('at ') ? frame : `at ${frame}`}`)].join(
    '\n',
  );
}

function serialize(value) {
  if (value === undefined) return { has: false };
  let text;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    text = JSON.stringify(util.inspect(value, { depth: 4 }));
  }
  if (text === undefined) text = JSON.stringify(String(value));
  if (text.length > RESULT_CAP) throw new Error(`the returned value is over ${RESULT_CAP} bytes as JSON`);
  return { has: true, json: text };
}

async function targetOf(page) {
  const session = await page.context().newCDPSession(page);
  try {
    const { targetInfo } = await session.send('Target.getTargetInfo');
    return targetInfo;
  } finally {
    await session.detach().catch(() => {});
  }
}

// The tab 'page' is bound to: a named executor's own tab (opened in the background the first time and
// whenever it was closed), else the browser's active tab (a visible one, none of the named executors').
async function bind(b, message) {
  const pages = b.contexts().flatMap((context) => context.pages());
  if (message.named) {
    if (message.target_id) {
      for (const page of pages) {
        const info = await targetOf(page).catch(() => null);
        if (info && info.targetId === message.target_id) return { page, created: false, targetId: info.targetId };
      }
    }
    const tab = await newTab(b, b.contexts()[0]);
    return { ...tab, created: true };
  }
  const exclude = new Set(message.exclude || []);
  let fallback = null;
  for (const page of pages) {
    const info = await targetOf(page).catch(() => null);
    if (!info || info.type !== 'page' || exclude.has(info.targetId)) continue;
    const visible = await page.evaluate(() => document.visibilityState).catch(() => 'hidden');
    if (visible === 'visible') return { page, created: false, targetId: info.targetId };
    if (!fallback) fallback = { page, created: false, targetId: info.targetId };
  }
  if (fallback) return fallback;
  const page = await (b.contexts()[0] || (await b.newContext())).newPage();
  const info = await targetOf(page);
  return { page, created: true, targetId: info.targetId };
}

// A background tab of this executor's own, once Playwright has seen it. Several executors may open tabs at
// the same moment, and each process sees every tab: the first new page is not necessarily ours, so the
// page is matched by its target id, waiting (up to 15 s) for the page events until it arrives.
async function newTab(b, context) {
  let wake = () => {};
  const onPage = () => wake();
  context.on('page', onPage);
  try {
    const session = await b.newBrowserCDPSession();
    const { targetId } = await session.send('Target.createTarget', { url: 'about:blank', background: true });
    await session.detach().catch(() => {});
    const deadline = Date.now() + 15000;
    for (;;) {
      for (const page of context.pages()) {
        const info = await targetOf(page).catch(() => null);
        if (info && info.targetId === targetId) return { page, targetId };
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('the executor\'s tab did not open within 15 s');
      await new Promise((resolve) => {
        wake = resolve;
        setTimeout(resolve, Math.min(left, 250));
      });
    }
  } finally {
    context.off('page', onPage);
  }
}

function compile(code, params) {
  let source = `(async function (${params.join(', ')}) {\n${code}\n})`;
  if (stripTypes) {
    try {
      source = stripTypes(source, { mode: 'strip' });
    } catch (error) {
      // Not TypeScript that can be stripped: compiled as JavaScript, whose error says what is wrong.
    }
  }
  return new vm.Script(source, { filename: FILENAME, lineOffset: -1 }).runInThisContext();
}

async function run(message) {
  const call = { out: new Capture(), err: new Capture() };
  const output = new Console({ stdout: call.out.stream, stderr: call.err.stream });
  let bound = null;
  const answer = { op: 'result', id: message.id };
  try {
    const b = await connect();
    bound = await bind(b, message);
    answer.tab = { created: bound.created, target_id: bound.targetId };
    const fn = compile(message.code, ['page', 'context', 'browser', 'console', 'webmcp', 'require']);
    current = call;
    const value = await fn(bound.page, bound.page.context(), b, output, webmcpOf(bound.page), require);
    const result = serialize(value);
    answer.success = true;
    if (result.has) answer.result_json = result.json;
  } catch (error) {
    answer.success = false;
    answer.error = describe(error);
  } finally {
    if (current === call) current = null;
  }
  if (bound) {
    try {
      answer.url = bound.page.isClosed() ? null : bound.page.url();
    } catch (error) {
      answer.url = null;
    }
  }
  answer.stdout = call.out.text();
  answer.stderr = call.err.text();
  answer.stdout_clipped = call.out.clipped;
  send(answer);
}

// webmcp in scope: the page's registered tools (navigator.modelContext, the sandbox's shim where Chromium
// has none), read and invoked in the page.
function webmcpOf(page) {
  return {
    async listTools() {
      return page.evaluate(() => (window.__sandboxWebmcp ? window.__sandboxWebmcp.list() : []));
    },
    async invokeTool(name, input) {
      return page.evaluate(
        ([tool, args]) => (window.__sandboxWebmcp ? window.__sandboxWebmcp.invoke(tool, args) : { status: 'error', error_text: 'no WebMCP on this page' }),
        [name, input || {}],
      );
    },
  };
}

// The REPL: one context whose top-level bindings persist between calls.
let replContext = null;
let replOutput = null;
function replState() {
  if (!replContext) {
    replOutput = { items: [], size: 0, truncated: false };
    const repl = {
      write(...values) {
        pushText('write', values.map((v) => (typeof v === 'string' ? v : util.inspect(v))).join(' '));
      },
      emitImage(data, mimeType = 'image/png') {
        const b64 = Buffer.isBuffer(data) ? data.toString('base64') : String(data);
        push({ type: 'image', data_b64: b64, mime_type: mimeType }, b64.length);
      },
      help(topic) {
        const topics = {
          write: 'repl.write(...values): text output, in order',
          emitImage: 'repl.emitImage(bufferOrBase64, mimeType = "image/png"): an image output',
          browser: 'await repl.browser(): the Playwright Browser connected to the session over CDP',
          page: 'await repl.page(): the active tab (a Playwright Page)',
          cdp: 'await repl.cdp(method, params): a raw CDP command on the active tab',
        };
        pushText('write', topic && topics[topic] ? topics[topic] : Object.values(topics).join('\n'));
      },
      browser: () => connect(),
      async page() {
        return (await bind(await connect(), { named: false })).page;
      },
      async cdp(method, params) {
        const page = await repl.page();
        const session = await page.context().newCDPSession(page);
        try {
          return await session.send(method, params || {});
        } finally {
          await session.detach().catch(() => {});
        }
      },
    };
    const sink = (channel) =>
      new Writable({
        write(chunk, encoding, done) {
          pushText(channel, String(chunk));
          done();
        },
      });
    const replConsole = new Console({ stdout: sink('stdout'), stderr: sink('stderr') });
    replContext = vm.createContext({
      repl,
      playwright,
      console: replConsole,
      setTimeout,
      clearTimeout,
      setInterval,
      clearInterval,
      Buffer,
      URL,
      TextEncoder,
      TextDecoder,
    });
  }
  return replContext;
}

function push(item, size) {
  if (replOutput.size + size > OUTPUT_CAP) {
    replOutput.truncated = true;
    return;
  }
  replOutput.size += size;
  replOutput.items.push(item);
}

function pushText(channel, text) {
  const last = replOutput.items[replOutput.items.length - 1];
  if (last && last.type === 'text' && last.channel === channel) {
    if (replOutput.size + text.length > OUTPUT_CAP) {
      replOutput.truncated = true;
      return;
    }
    last.text += text;
    replOutput.size += text.length;
    return;
  }
  push({ type: 'text', channel, text }, text.length);
}

async function replRun(message) {
  const context = replState();
  replOutput.items = [];
  replOutput.size = 0;
  replOutput.truncated = false;
  const started = Date.now();
  const answer = { op: 'result', id: message.id };
  try {
    if (message.code.trim()) {
      let script;
      try {
        // Top-level bindings persist (a script of the context); code that awaits runs as an async function.
        script = new vm.Script(message.code, { filename: FILENAME });
        const value = script.runInContext(context);
        if (value && typeof value.then === 'function') await value;
      } catch (error) {
        if (!(error instanceof SyntaxError) || !/await/.test(String(error.message))) throw error;
        await new vm.Script(`(async () => {\n${message.code}\n})()`, { filename: FILENAME, lineOffset: -1 }).runInContext(
          context,
        );
      }
    }
    answer.success = true;
  } catch (error) {
    answer.success = false;
    answer.error = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    answer.stack = describe(error);
  }
  answer.content = replOutput.items;
  answer.content_truncated = replOutput.truncated;
  answer.duration_ms = Date.now() - started;
  send(answer);
}

async function closeTab(message) {
  try {
    if (message.target_id && browser && browser.isConnected()) {
      const session = await browser.newBrowserCDPSession();
      await session.send('Target.closeTarget', { targetId: message.target_id }).catch(() => {});
      await session.detach().catch(() => {});
    }
  } finally {
    send({ op: 'closed' });
  }
}

let queue = Promise.resolve();
let buffered = '';
control.on('data', (data) => {
  buffered += data.toString();
  let newline;
  while ((newline = buffered.indexOf('\n')) >= 0) {
    const line = buffered.slice(0, newline);
    buffered = buffered.slice(newline + 1);
    let message;
    try {
      message = JSON.parse(line);
    } catch (error) {
      continue;
    }
    if (message.op === 'abandon') {
      // Answered at once, even while the abandoned call still runs: the event loop is alive.
      const call = current;
      current = null;
      send({ op: 'alive', id: message.id, stdout: call ? call.out.text() : '', stderr: call ? call.err.text() : '' });
      // The sandbox cuts this process's browser connection: the abandoned code cannot drive the browser
      // any more, and the next call connects again. It no longer holds up the calls after it.
      browser = null;
      queue = Promise.resolve();
      continue;
    }
    if (message.op === 'close_tab') {
      // At once, beside a running call: the executor is being deleted.
      closeTab(message);
      continue;
    }
    const handler = { run, repl: replRun }[message.op];
    if (handler) queue = queue.then(() => handler(message)).catch(() => {});
  }
});
control.on('close', () => process.exit(0));
process.on('unhandledRejection', () => {});
send({ op: 'ready', typescript: Boolean(stripTypes) });
