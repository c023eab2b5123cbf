// Chapter 4, Node.js: what a pipeline gives its caller when a command in it fails, and when the
// connection drops in the middle of it. Two modes:
//
//   errors  one bad command, every way ioredis and node-redis send a batch. From an empty key k and
//           counter: SET k v ; LPUSH k x (WRONGTYPE) ; INCR counter ; GET k, then separately
//           GET <missing key> ; INCR counter2 ; GET k2 (k2 set to "v" first). Ways (facts' slugs):
//             ioredis              pipeline().exec()
//             ioredis_auto         enableAutoPipelining, single commands, Promise.all
//             ioredis_multi        multi().exec() (MULTI ... EXEC)
//             noderedis_all        single commands, Promise.all (node-redis batches them by itself)
//             noderedis_multi      multi().exec()
//             noderedis_aspipeline multi().execAsPipeline()
//           Facts per slug: _error_surfaced (what the caller got, one sentence), _results (each
//           command's outcome, as far as the caller can see it), _later_commands_ran (the counter,
//           read on a plain connection, is 1), _missing_key and _missing_results.
//   drop    n INCRs of one counter through toxiproxy, which lets about a quarter of them reach Redis
//           and then drops the connection (as PartialPipeline.java: `bandwidth` upstream, `reset_peer`
//           downstream, added after connecting, ours only removed afterwards). Each client keeps its
//           DEFAULT retry settings: ioredis (pipeline().exec()), ioredis_auto, noderedis_all; and
//           ioredis_partial, ioredis again with `limit_data` downstream instead of reset_peer: the first
//           100 replies reach the client, then the connection closes. Facts per
//           slug: _drop_outcome, _drop_applied (the counter: INCRs the server applied), _drop_replies_ok,
//           _drop_replies_failed, _drop_connections (INFO's total_connections_received, after less
//           before), _drop_ms (how long the caller waited), _retry_setting (from the client's options).
//
//   npm ci && node errors.mjs host port errors
//            node errors.mjs host port drop n toxiproxy-api-url proxy-name cut-ms
//   e.g.     node errors.mjs 127.0.0.1 16381 drop 20000 http://127.0.0.1:8474 pipelab-redis 300
// (host:port for drop is the proxy's listen address; user, password and TLS from REDIS_URL; keys
// under pipelab:ch04:node:, deleted at the end)

import { performance } from "node:perf_hooks";

import { createClient } from "redis";
import Redis from "ioredis";

import * as lab from "./lab.mjs";

const EXAMPLE = "ch04-errors";
const USAGE =
  "usage: node errors.mjs host port errors, or node errors.mjs host port drop n toxiproxy-api-url proxy-name cut-ms";
const K = lab.key("ch04", "node", "bad");
const COUNTER = lab.key("ch04", "node", "bad", "counter");
const MISSING = lab.key("ch04", "node", "missing");
const COUNTER2 = lab.key("ch04", "node", "missing", "counter");
const K2 = lab.key("ch04", "node", "missing", "k2");

// The two batches, in each client's spelling; each returns what its calls return (promises, or the
// pipeline itself when queued on one).
const batches = {
  bad: {
    ioredis: (c) => [c.set(K, "v"), c.lpush(K, "x"), c.incr(COUNTER), c.get(K)],
    noderedis: (c) => [c.set(K, "v"), c.lPush(K, "x"), c.incr(COUNTER), c.get(K)],
  },
  missing: {
    ioredis: (c) => [c.get(MISSING), c.incr(COUNTER2), c.get(K2)],
    noderedis: (c) => [c.get(MISSING), c.incr(COUNTER2), c.get(K2)],
  },
};

// --8<-- [start:ways]
// Each way of sending a batch. `all` is what the caller awaits; `each` (for single commands) every
// command's own promise.
const ways = {
  ioredis: (clients, batch) => {
    const pipeline = clients.ioredis.pipeline();
    batch.ioredis(pipeline);
    return { all: pipeline.exec() }; // [[err, result], ...]
  },
  ioredis_auto: (clients, batch) => {
    const each = batch.ioredis(clients.ioredisAuto); // one auto-pipeline, sent from setImmediate
    return { all: Promise.all(each), each };
  },
  ioredis_multi: (clients, batch) => {
    const multi = clients.ioredis.multi();
    batch.ioredis(multi);
    return { all: multi.exec() };
  },
  noderedis_all: (clients, batch) => {
    const each = batch.noderedis(clients.noderedis);
    return { all: Promise.all(each), each };
  },
  noderedis_multi: (clients, batch) => {
    const multi = clients.noderedis.multi();
    batch.noderedis(multi);
    return { all: multi.exec() };
  },
  noderedis_aspipeline: (clients, batch) => {
    const multi = clients.noderedis.multi();
    batch.noderedis(multi);
    return { all: multi.execAsPipeline() };
  },
};
// --8<-- [end:ways]

const CALLS = {
  ioredis: "pipeline().exec()",
  ioredis_auto: "Promise.all",
  ioredis_multi: "multi().exec()",
  noderedis_all: "Promise.all",
  noderedis_multi: "multi().exec()",
  noderedis_aspipeline: "multi().execAsPipeline()",
};

/** One command's outcome as a fact shows it: an error by its code (WRONGTYPE) or class, null, or the value. */
function show(value) {
  if (value instanceof Error) {
    const code = /^[A-Z]+(?=\s|$)/.exec(value.message)?.[0];
    return code || (value.name && value.name !== "Error" ? value.name : value.constructor.name);
  }
  if (value === null || value === undefined) return String(value);
  return Buffer.isBuffer(value) ? value.toString() : String(value);
}

/** "ReplyError: WRONGTYPE Operation against ...": the error's name, or its class when the name is plain Error. */
const described = (err) =>
  `${err.name && err.name !== "Error" ? err.name : err.constructor.name}: ${lab.errorText(err)}`;

/**
 * What the caller got from one way: its sentence, and each command's outcome as far as the caller
 * can see it ("?" where the way does not say).
 */
async function observe(slug, sent, count) {
  let value;
  let error;
  try {
    value = await sent.all;
  } catch (err) {
    error = err;
  }
  const call = CALLS[slug];
  if (sent.each) {
    const settled = await Promise.allSettled(sent.each);
    const outcomes = settled.map((s) => (s.status === "fulfilled" ? s.value : s.reason));
    const failed = outcomes.filter((o) => o instanceof Error).length;
    const sentence = error
      ? `${call} rejected with ${described(error)}; each command's own promise still settles (${failed} rejected, ${count - failed} resolved)`
      : `${call} resolved with ${value.length} replies`;
    return { sentence, outcomes };
  }
  if (error) {
    if (Array.isArray(error.replies)) {
      const at = error.errorIndexes ?? [];
      return {
        sentence: `${call} rejected with ${described(error)}; its .replies holds all ${error.replies.length} replies, errors at [${at}]`,
        outcomes: error.replies,
      };
    }
    return {
      sentence: `${call} rejected with ${described(error)}; no other command's reply is returned`,
      outcomes: Array(count).fill("?"),
    };
  }
  if (value.every((r) => Array.isArray(r) && r.length <= 2 && (r[0] === null || r[0] instanceof Error))) {
    // ioredis: [err, result] per command, never a rejection for a command's error.
    const errs = value.map((r, i) => [r[0], i]).filter(([e]) => e);
    const which = errs.length ? `; pair ${errs[0][1] + 1} holds ${described(errs[0][0])}` : ", none holding an error";
    return {
      sentence: `${call} resolved (no rejection) with ${value.length} [err, result] pairs${which}`,
      outcomes: value.map(([e, r]) => e || r),
    };
  }
  return { sentence: `${call} resolved with ${value.length} replies`, outcomes: value };
}

async function resetKeys(control) {
  await control.del(K, COUNTER, MISSING, COUNTER2, K2);
  await control.set(K2, "v");
}

async function counter(control, key) {
  return Number((await control.get(key)) ?? 0);
}

async function errorsMode(s, c, report, control) {
  const clients = {
    ioredis: new Redis(lab.ioredisOptions(c)),
    ioredisAuto: new Redis(lab.ioredisOptions(c, { enableAutoPipelining: true })),
    noderedis: createClient(lab.nodeRedisOptions(c)),
  };
  try {
    await clients.ioredis.connect();
    await clients.ioredisAuto.connect();
    await clients.noderedis.connect();
    report.header("one failing command in each way of batching");
    for (const [slug, way] of Object.entries(ways)) {
      await resetKeys(control);
      const bad = await observe(slug, way(clients, batches.bad), 4);
      report.fact(`${slug}_error_surfaced`, bad.sentence);
      report.fact(`${slug}_results`, bad.outcomes.map(show).join(" | "));
      report.fact(`${slug}_later_commands_ran`, (await counter(control, COUNTER)) === 1);

      const missing = await observe(slug, way(clients, batches.missing), 3);
      const got = missing.outcomes[0] instanceof Error ? "an error" : show(missing.outcomes[0]);
      const ran = (await counter(control, COUNTER2)) === 1 ? "the INCR ran" : "the INCR did not run";
      report.fact(`${slug}_missing_key`, `${missing.sentence}; the missing key's GET gave ${got}; ${ran}`);
      report.fact(`${slug}_missing_results`, missing.outcomes.map(show).join(" | "));
    }
  } finally {
    clients.ioredis.disconnect();
    clients.ioredisAuto.disconnect();
    if (clients.noderedis.isOpen) clients.noderedis.destroy();
  }
}

// ---------------------------------------------------------------- drop

/** Toxics of our own on one toxiproxy proxy, through its HTTP API; every name starts with PREFIX. */
class Toxics {
  static PREFIX = "pipelab-ch04-node-drop-";

  constructor(api, proxy) {
    this.api = api.replace(/\/+$/, "");
    this.proxy = proxy;
    this.rate = 0;
  }

  async call(method, path, body, ok = [200]) {
    let response;
    try {
      response = await fetch(this.api + path, {
        method,
        headers: body ? { "Content-Type": "application/json" } : undefined,
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(10_000),
      });
    } catch (err) {
      throw new lab.Stop(
        4,
        `Cannot reach the toxiproxy API at ${this.api} (${String((err.cause ?? err).message).split("\n")[0]}); ${USAGE}.`,
      );
    }
    const text = await response.text();
    if (response.status === 404 && ok.includes(404)) return null;
    if (!ok.includes(response.status))
      throw new Error(`toxiproxy: ${method} ${path} answered ${response.status}: ${text.trim()}`);
    return text ? JSON.parse(text) : null;
  }

  /** The proxy exists, listens on the port we talk to, and carries no toxics but ours. */
  async check(port) {
    const proxy = await this.call("GET", `/proxies/${this.proxy}`, null, [200, 404]);
    if (!proxy) throw new lab.Stop(2, `Toxiproxy at ${this.api} has no proxy named '${this.proxy}'; ${USAGE}.`);
    if (!String(proxy.listen).endsWith(`:${port}`)) {
      throw new lab.Stop(
        2,
        `Proxy '${this.proxy}' listens on ${proxy.listen}, not on port ${port}; pass its listen address.`,
      );
    }
    await this.removeOurs(); // leftovers of an interrupted run
    const others = (await this.names()).filter((n) => !n.startsWith(Toxics.PREFIX));
    if (others.length) {
      throw new lab.Stop(
        2,
        `Proxy '${this.proxy}' already has toxics ${others}; remove them first, they change what reaches Redis.`,
      );
    }
  }

  async names() {
    return ((await this.call("GET", `/proxies/${this.proxy}/toxics`)) || []).map((t) => t.name);
  }

  async add(name, type, stream, attributes) {
    const body = { name: Toxics.PREFIX + name, type, stream, toxicity: 1.0, attributes };
    await this.call("POST", `/proxies/${this.proxy}/toxics`, body);
  }

  async remove(name) {
    await this.call("DELETE", `/proxies/${this.proxy}/toxics/${name}`, null, [200, 204, 404]);
  }

  /** `bytes` towards Redis take `passMs` (bandwidth upstream); `cut` ([type, attributes]) on the replies. */
  async addDrop(bytes, passMs, [type, attributes]) {
    this.rate = Math.max(1, Math.ceil(bytes / passMs)); // KB/s is bytes per ms
    await this.add("bandwidth", "bandwidth", "upstream", { rate: this.rate });
    await this.add("cut", type, "downstream", attributes);
  }

  /** The cut first, so no new connection gets it (deleting reset_peer waits until it has fired). */
  async removeDrop() {
    await this.remove(Toxics.PREFIX + "cut");
    await this.remove(Toxics.PREFIX + "bandwidth");
  }

  async removeOurs() {
    for (const name of await this.names()) if (name.startsWith(Toxics.PREFIX)) await this.remove(name);
  }
}

/** Bytes of one INCR in RESP. */
const incrBytes = (key) => Buffer.byteLength(`*2\r\n$4\r\nINCR\r\n$${Buffer.byteLength(key)}\r\n${key}\r\n`);

const PARTIAL_REPLIES = 100; // replies that reach the client in the cut after the first replies

/** Bytes of the replies to the first `m` INCRs of a new counter: ":1\r\n" ... */
const incrRepliesBytes = (m) => Array.from({ length: m }, (_, i) => `:${i + 1}\r\n`.length).reduce((a, b) => a + b, 0);

const DROP_WAIT_MS = 10_000; // for the drop to happen, and for Redis to close the dropped connection
const SETTLE_WAIT_MS = 60_000; // for the caller's promise after the drop

// --8<-- [start:drop]
// Each client with its DEFAULT retry settings (ioredis: maxRetriesPerRequest 20,
// autoResendUnfulfilledCommands true; node-redis: reconnects, fails what it had written, keeps the unwritten).
const dropClients = {
  ioredis: (c) => new Redis(lab.ioredisOptions(c, { maxRetriesPerRequest: undefined })),
  ioredis_auto: (c) =>
    new Redis(lab.ioredisOptions(c, { maxRetriesPerRequest: undefined, enableAutoPipelining: true })),
  noderedis_all: (c) => {
    const options = lab.nodeRedisOptions(c);
    return createClient({ ...options, socket: { ...options.socket, reconnectStrategy: undefined } });
  },
};

// n INCRs of `key`; resolves with each command's reply or error.
const dropSends = {
  ioredis: async (client, key, n) => {
    const pipeline = client.pipeline();
    for (let i = 0; i < n; i++) pipeline.incr(key);
    return (await pipeline.exec()).map(([err, value]) => err || value);
  },
  ioredis_auto: (client, key, n) => settledAll(Array.from({ length: n }, () => client.incr(key))),
  noderedis_all: (client, key, n) => settledAll(Array.from({ length: n }, () => client.incr(key))),
};
// --8<-- [end:drop]

/** The cut on the replies: reset_peer swallows the first chunk and resets `cutMs` later, so no reply arrives. */
const resetCut = (cutMs) => ["reset_peer", { timeout: cutMs }];
/** limit_data lets the first PARTIAL_REPLIES replies through, then closes the connection. */
const partialCut = () => ["limit_data", { bytes: incrRepliesBytes(PARTIAL_REPLIES) }];
// Every client under the reset, then ioredis again cut after its first replies (ioredis_partial).
const dropCases = [
  ...Object.keys(dropSends).map((slug) => ({ slug, client: slug, cut: resetCut })),
  { slug: "ioredis_partial", client: "ioredis", cut: partialCut },
];

const settledAll = async (promises) =>
  (await Promise.allSettled(promises)).map((s) => (s.status === "fulfilled" ? s.value : s.reason));

function retrySetting(slug, client) {
  if (slug.startsWith("ioredis")) {
    const o = client.options;
    return `maxRetriesPerRequest ${o.maxRetriesPerRequest}, autoResendUnfulfilledCommands ${o.autoResendUnfulfilledCommands}`;
  }
  const o = client.options;
  const strategy = o?.socket?.reconnectStrategy;
  return `reconnectStrategy ${strategy === undefined ? "unset (the default backoff)" : strategy}, disableOfflineQueue ${o?.disableOfflineQueue ?? false}`;
}

async function totalConnections(control) {
  return Number(/total_connections_received:(\d+)/.exec(await control.info("stats"))[1]);
}

async function awaitServerClosed(control, id) {
  const deadline = performance.now() + DROP_WAIT_MS;
  while (String(await control.client("LIST", "ID", id)).trim()) {
    if (performance.now() > deadline) {
      throw new Error(`Redis still has the dropped connection (client id ${id}) after ${DROP_WAIT_MS} ms`);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Resolves when the client notices its connection is gone; its error events are recorded, not thrown. */
function dropSignal(slug, client) {
  return new Promise((resolve) => {
    if (slug.startsWith("ioredis")) client.once("close", resolve);
    else client.on("error", resolve);
  });
}

async function dropCase({ slug, client: who, cut }, p, c, report, control, toxics) {
  const key = lab.key("ch04", "node", "drop", slug);
  await control.del(key);
  const before = await totalConnections(control);
  const client = dropClients[who](c);
  client.on("error", () => {}); // reconnects report here; the outcome is what the caller gets
  let result;
  let waited;
  try {
    await client.connect();
    const id = who.startsWith("ioredis") ? await client.client("ID") : await client.clientId();
    const dropped = dropSignal(who, client);
    // Connected first: the toxics act on the pipeline only (as PartialPipeline.java).
    await toxics.addDrop(p.n * incrBytes(key), 4 * p.cutMs, cut(p.cutMs));
    const t0 = performance.now();
    const sent = dropSends[who](client, key, p.n);
    const noticed = await lab.within(dropped, DROP_WAIT_MS);
    await toxics.removeDrop();
    if (noticed === lab.LATE) {
      throw new Error(
        `${slug}: the connection was not dropped; are host and port the address of proxy '${toxics.proxy}'?`,
      );
    }
    result = await lab.within(sent, SETTLE_WAIT_MS);
    waited = performance.now() - t0;
    await awaitServerClosed(control, id);
    const ok = Array.isArray(result) ? result.filter((r) => !(r instanceof Error)).length : 0;
    const failed = Array.isArray(result) ? result.length - ok : 0;
    const firstError = Array.isArray(result) ? result.find((r) => r instanceof Error) : null;
    const outcome =
      result === lab.LATE
        ? `still waiting after ${SETTLE_WAIT_MS} ms`
        : firstError
          ? lab.errorText(firstError)
          : `returned ${ok} replies`;
    report.fact(`${slug}_retry_setting`, retrySetting(who, client));
    report.fact(`${slug}_drop_outcome`, outcome);
    report.fact(`${slug}_drop_applied`, await counter(control, key));
    report.fact(`${slug}_drop_replies_ok`, ok);
    report.fact(`${slug}_drop_replies_failed`, failed);
    report.fact(`${slug}_drop_connections`, (await totalConnections(control)) - before);
    report.fact(`${slug}_drop_ms`, Math.round(waited * 10) / 10);
    if (cut === partialCut) report.fact(`${slug}_replies_let_through`, PARTIAL_REPLIES);
  } finally {
    if (who.startsWith("ioredis")) client.disconnect();
    else if (client.isOpen) client.destroy();
  }
}

async function dropMode(s, c, report, control, p) {
  const toxics = new Toxics(p.api, p.proxy);
  await toxics.check(s.port);
  report.fact("drop_cut_ms", p.cutMs);
  report.header(`${p.n} INCRs per pipeline through toxiproxy '${p.proxy}', cut ${p.cutMs} ms after the first reply`);
  try {
    for (const drop of dropCases) await dropCase(drop, p, c, report, control, toxics);
    report.fact("drop_bandwidth_kb_s", toxics.rate);
  } finally {
    await toxics.removeOurs().catch(() => {});
  }
}

// ---------------------------------------------------------------- main

function settings(argv) {
  const [host, port, mode, ...rest] = argv;
  if (!host) throw new lab.Stop(2, `${EXAMPLE}: host is missing; ${USAGE}.`);
  const s = { example: EXAMPLE, host, port: lab.whole(EXAMPLE, "port", port, { min: 1, max: 65535, usage: USAGE }) };
  if (mode === "errors" && rest.length === 0) return { ...s, mode, size: 4, repeat: 1, warmup: 0 };
  if (mode === "drop" && rest.length === 4) {
    const [n, api, proxy, cut] = rest;
    if (!/^https?:\/\/[^/\s]+/.test(api)) {
      throw new lab.Stop(
        2,
        `${EXAMPLE}: toxiproxy-api-url must be an http URL such as http://127.0.0.1:8474, not '${api}'; ${USAGE}.`,
      );
    }
    if (!/^[A-Za-z0-9._-]+$/.test(proxy)) {
      throw new lab.Stop(
        2,
        `${EXAMPLE}: proxy-name must be a toxiproxy proxy name such as pipelab-redis, not '${proxy}'; ${USAGE}.`,
      );
    }
    const drop = {
      n: lab.whole(EXAMPLE, "n", n, { min: 1, max: 10_000_000, usage: USAGE }),
      api,
      proxy,
      cutMs: lab.whole(EXAMPLE, "cut-ms", cut, { min: 1, max: 60_000, usage: USAGE }),
    };
    return { ...s, mode, size: drop.n, repeat: 1, warmup: 0, drop };
  }
  if (mode === "errors" || mode === "drop") {
    throw new lab.Stop(
      2,
      `${EXAMPLE}: mode ${mode} takes ${mode === "errors" ? "no more" : "four more"} arguments; ${USAGE}.`,
    );
  }
  throw new lab.Stop(2, `${EXAMPLE}: mode must be errors or drop, not '${mode ?? ""}'; ${USAGE}.`);
}

lab.main(async () => {
  const s = settings(process.argv.slice(2));
  const c = lab.connection(s.host, s.port);
  const control = new Redis(lab.ioredisOptions(c)); // a plain connection: no auto-pipelining, no retries
  const report = new lab.Report(s)
    .client("ioredis", lab.versionOf("ioredis"))
    .client("redis", lab.versionOf("redis"))
    .client("@redis/client", lab.versionOf("@redis/client"));
  try {
    await control.connect();
    await lab.requireLabOnly(control, `${s.host}:${s.port}`);
    report.fact(
      "node_client_versions",
      `ioredis ${lab.versionOf("ioredis")}, redis ${lab.versionOf("redis")} (@redis/client ${lab.versionOf("@redis/client")})`,
    );
    if (s.mode === "errors") await errorsMode(s, c, report, control);
    else await dropMode(s, c, report, control, s.drop);
  } finally {
    await lab.deletePattern(control, lab.key("ch04", "node", "*")).catch(() => {});
    control.disconnect();
  }
  report.finish();
});
