// Chapter 10's Node.js examples share this file, as the Java ones share common/LabSupport.java:
// the usual five arguments, the connection settings from REDIS_URL, the lab's rules (only keys
// under the lab's prefix, refuse a database that holds others), timing in interleaved rounds
// with the process's CPU time, the server's counters around each sample, and the one
// `PIPELAB-RESULT {json}` line the harness reads (pipelab/jbang.py parse_result).
//
// Not an example on its own: explicit.mjs, auto.mjs and cluster.mjs import it, and chapters 4 and 5's
// errors.mjs and failover.mjs.

import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import process from "node:process";

export const PREFIX = process.env.PIPELAB_PREFIX || "pipelab:";
export const RESULT_MARK = "PIPELAB-RESULT ";

/** A stop with one sentence and an exit code, printed without a stack (as LabSupport.Stop). */
export class Stop extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

/** The usual five arguments (host port size repeat warmup) and what follows them. */
export function usual(example, argv, defaults) {
  const [host, port, size, repeat, warmup, ...extra] = argv;
  const number = (text, name, fallback) => {
    if (text === undefined || text === "") return fallback;
    const value = Number(text);
    if (!Number.isInteger(value) || value < 0) {
      throw new Stop(2, `${example}: ${name} must be a whole number, not '${text}'.`);
    }
    return value;
  };
  return {
    example,
    host: host || "127.0.0.1",
    port: number(port, "port", 6379),
    size: number(size, "size", defaults.size),
    repeat: Math.max(1, number(repeat, "repeat", defaults.repeat)),
    warmup: number(warmup, "warmup", 1),
    extra,
  };
}

/** A whole number from `min` to `max`, or a Stop (exit 2) with one sentence that ends with `usage`. */
export function whole(example, name, text, { min = 0, max = Number.MAX_SAFE_INTEGER, usage = "" } = {}) {
  const value = Number(text);
  if (text === undefined || text === "" || !Number.isInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `at least ${min}` : `from ${min} to ${max}`;
    throw new Stop(
      2,
      `${example}: ${name} must be a whole number ${range}, not '${text ?? ""}'${usage ? `; ${usage}` : ""}.`,
    );
  }
  return value;
}

/** An error as facts show it: its first line, at most 80 characters, any 127.0.0.1:<port> as <addr>. */
export function errorText(err) {
  // A failed connect (AggregateError of ECONNREFUSED) has an empty message: its code or name says what it was.
  const text = String(err?.message || err?.code || err?.name || err).split("\n")[0];
  return text.replace(/127\.0\.0\.1:\d+/g, "<addr>").slice(0, 80);
}

/** What within() gives when the promise has not settled in time. */
export const LATE = Symbol("late");

/** The promise's value, or LATE once `ms` have passed (the promise goes on; nobody waits for it). */
export async function within(promise, ms) {
  let timer;
  const late = new Promise((resolve) => (timer = setTimeout(() => resolve(LATE), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** "1,4,16" as [1, 4, 16]. */
export function intList(example, name, text) {
  const values = String(text)
    .split(",")
    .map((part) => Number(part.trim()));
  if (!values.length || values.some((v) => !Number.isInteger(v) || v < 0)) {
    throw new Stop(2, `${example}: ${name} must be whole numbers separated by commas, not '${text}'.`);
  }
  return values;
}

/** "host:port" as {host, port}. */
export function address(example, name, text) {
  const match = /^(.+):(\d+)$/.exec(text || "");
  if (!match) throw new Stop(2, `${example}: ${name} must be host:port, not '${text}'.`);
  return { host: match[1], port: Number(match[2]) };
}

/**
 * User, password, database and TLS come from REDIS_URL (a command line is visible to `ps`); the
 * host and port are the arguments'. REDIS_CLUSTER_URL says the same for a cluster when it differs.
 */
export function connection(host, port, variable = "REDIS_URL") {
  const text = process.env[variable] || (variable !== "REDIS_URL" && process.env.REDIS_URL) || "";
  const out = { host, port, username: undefined, password: undefined, db: 0, tls: false, ca: undefined };
  if (!text) return out;
  const url = new URL(text);
  out.tls = url.protocol === "rediss:";
  out.username = url.username ? decodeURIComponent(url.username) : undefined;
  out.password = url.password ? decodeURIComponent(url.password) : undefined;
  out.db = Number(url.pathname.replace("/", "") || 0);
  const caFile = url.searchParams.get("ssl_ca_certs");
  if (caFile) out.ca = readFileSync(caFile);
  return out;
}

/** The options ioredis takes for a connection (auto-pipelining and the like added by the caller). */
export function ioredisOptions(c, extra = {}) {
  return {
    host: c.host,
    port: c.port,
    username: c.username,
    password: c.password,
    db: c.db,
    tls: c.tls ? (c.ca ? { ca: c.ca } : {}) : undefined,
    lazyConnect: true,
    maxRetriesPerRequest: 0, // a lost connection fails the run instead of replaying commands
    ...extra,
  };
}

/** The options node-redis's createClient takes. */
export function nodeRedisOptions(c) {
  return {
    socket: { host: c.host, port: c.port, tls: c.tls, ca: c.ca, reconnectStrategy: false },
    username: c.username,
    password: c.password,
    database: c.db,
  };
}

/** The options node-redis's createCluster takes: the first node, and user, password and TLS for every node. */
export function nodeRedisClusterOptions(c, extra = {}) {
  return {
    rootNodes: [{ socket: { host: c.host, port: c.port } }],
    defaults: { username: c.username, password: c.password, socket: c.tls ? { tls: true, ca: c.ca } : undefined },
    ...extra,
  };
}

/** The installed version of a package, read from its package.json (never written down here). */
export function versionOf(name) {
  const require = createRequire(import.meta.url);
  let dir = require.resolve(name);
  // Walk up from the entry point to the package's own package.json.
  for (;;) {
    const up = dir.slice(0, dir.lastIndexOf("/"));
    if (up === dir || !up) return "unknown";
    dir = up;
    try {
      const meta = JSON.parse(readFileSync(`${dir}/package.json`, "utf8"));
      if (meta.name === name) return meta.version;
    } catch {
      // not a package root yet
    }
  }
}

export function key(...parts) {
  return PREFIX + parts.join(":");
}

/** Refuse a database that holds keys not under the lab's prefix: the examples delete what they make. */
export async function requireLabOnly(control, where) {
  let cursor = "0";
  do {
    const [next, keys] = await control.scan(cursor, "COUNT", 1000);
    const foreign = keys.find((k) => !k.startsWith(PREFIX));
    if (foreign) {
      throw new Stop(
        3,
        `The Redis at ${where} holds keys that are not the lab's (for example '${foreign.slice(0, 60)}'); ` +
          "point the example at an empty Redis or database. The lab never deletes keys it did not create.",
      );
    }
    cursor = next;
  } while (cursor !== "0");
}

/** Delete every key under `pattern` (which must be under the lab's prefix) on one server, by SCAN and UNLINK. */
export async function deletePattern(control, pattern) {
  if (!pattern.startsWith(PREFIX)) throw new Error("the lab only deletes its own keys");
  let cursor = "0";
  let gone = 0;
  do {
    const [next, keys] = await control.scan(cursor, "MATCH", pattern, "COUNT", 1000);
    if (keys.length) {
      // One UNLINK per key: a cluster's master refuses one UNLINK of keys in different slots.
      const pipeline = control.pipeline();
      for (const k of keys) pipeline.unlink(k);
      for (const [err, n] of await pipeline.exec()) {
        if (err) throw err;
        gone += n;
      }
    }
    cursor = next;
  } while (cursor !== "0");
  return gone;
}

function infoFields(text) {
  const out = {};
  for (const line of text.split("\r\n")) {
    const at = line.indexOf(":");
    if (at > 0) out[line.slice(0, at)] = line.slice(at + 1);
  }
  return out;
}

/**
 * The server's counters, asked on `control` (an ioredis client without auto-pipelining): reads,
 * commands and calls per command. Taken before and after a sample, outside its timing.
 */
export async function counters(control) {
  const calls = {};
  const cs = infoFields(await control.info("commandstats"));
  for (const [name, value] of Object.entries(cs)) {
    const match = /calls=(\d+)/.exec(value);
    if (match && name.startsWith("cmdstat_")) calls[name.slice(8).toUpperCase()] = Number(match[1]);
  }
  const stats = infoFields(await control.info("stats"));
  return {
    reads: Number(stats.total_reads_processed),
    commands: Number(stats.total_commands_processed),
    calls,
  };
}

/**
 * What ran between two counters() snapshots, less the control's own INFOs: both snapshots' INFO
 * reads fall inside the reads delta (a read is counted when it arrives), the first snapshot's two
 * INFOs inside the commands delta (a command counts once it has run).
 */
export function between(before, after) {
  const calls = {};
  for (const [name, n] of Object.entries(after.calls)) {
    const delta = n - (before.calls[name] || 0) - (name === "INFO" ? 2 : 0);
    if (delta > 0) calls[name] = delta;
  }
  return { reads: after.reads - before.reads - 2, commands: after.commands - before.commands - 2, calls };
}

/**
 * What a server received and refused, for a client's attempt between two calls: per command, the calls
 * it ran plus the ones it rejected (INFO commandstats' calls and rejected_calls), and its error replies
 * per code (INFO errorstats: CROSSSLOT, MOVED, ...).
 */
export async function received(control) {
  const fields = infoFields(await control.call("INFO", "commandstats", "errorstats"));
  const commands = {};
  const errors = {};
  for (const [name, value] of Object.entries(fields)) {
    const count = (field) => Number(new RegExp(`(?:^|,)${field}=(\\d+)`).exec(value)?.[1] || 0);
    if (name.startsWith("cmdstat_")) commands[name.slice(8).toUpperCase()] = count("calls") + count("rejected_calls");
    if (name.startsWith("errorstat_")) errors[name.slice(10)] = count("count");
  }
  return { commands, errors };
}

/**
 * Summed over servers, between received() before and after: how many `command`s they received (ran or
 * rejected; a client's own setup on a new connection aside) and how many error replies of `code` they gave.
 */
export function receivedBetween(before, after, command, code) {
  let commands = 0;
  let errors = 0;
  after.forEach((a, i) => {
    commands += (a.commands[command] || 0) - (before[i].commands[command] || 0);
    errors += (a.errors[code] || 0) - (before[i].errors[code] || 0);
  });
  return { commands, errors };
}

function cpuSeconds() {
  const used = process.cpuUsage();
  return (used.user + used.system) / 1e6;
}

/**
 * Time each task in rounds, A B C A B C ..., `warmup` rounds first and thrown away, so a slow
 * moment of the machine falls on all of them alike. `reset` runs before and `check` after each
 * sample, outside the timing; `control` (when given) takes the server's counters around each
 * recorded sample. Per task: wall seconds and process CPU seconds per sample, warm-up seconds,
 * and the counters' deltas per sample.
 */
export async function interleaved(tasks, { repeat, warmup, reset, check, control }) {
  const out = {};
  for (const name of Object.keys(tasks)) out[name] = { wall: [], cpu: [], warm: [], server: [] };
  const once = async (name, task, recorded) => {
    if (reset) await reset(name);
    const before = recorded && control ? await counters(control) : null;
    const cpu0 = cpuSeconds();
    const t0 = performance.now();
    const result = await task();
    const wall = (performance.now() - t0) / 1e3;
    const cpu = cpuSeconds() - cpu0;
    if (before) out[name].server.push(between(before, await counters(control)));
    if (check) await check(name, result);
    return { wall, cpu };
  };
  for (let round = 0; round < warmup; round++) {
    for (const [name, task] of Object.entries(tasks)) out[name].warm.push((await once(name, task, false)).wall);
  }
  for (let round = 0; round < repeat; round++) {
    for (const [name, task] of Object.entries(tasks)) {
      const { wall, cpu } = await once(name, task, true);
      out[name].wall.push(wall);
      out[name].cpu.push(cpu);
    }
  }
  return out;
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The q-quantile (0..1) of a list of numbers, nearest rank. */
export function quantile(values, q) {
  if (!values.length) return null;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** Per command, the median count over the samples (the same work each time, so alike). */
export function wirePerSample(server) {
  const names = new Set(server.flatMap((s) => Object.keys(s.calls)));
  const out = {};
  for (const name of [...names].sort()) out[name] = Math.round(median(server.map((s) => s.calls[name] || 0)));
  return out;
}

/** The result document, filled by an example and printed once by finish(). */
export class Report {
  constructor(settings) {
    this.s = settings;
    this.doc = {
      example: settings.example,
      node_version: process.versions.node,
      clients: {},
      size: settings.size,
      repeat: settings.repeat,
      warmup: settings.warmup,
      modes: {},
      ops: {},
      cpu_s: {},
      warmup_s: {},
      fields: {},
      wire: {},
      paired: {},
      facts: {},
    };
  }

  client(name, version) {
    this.doc.clients[name] = version;
    return this;
  }

  header(work) {
    const clients = Object.entries(this.doc.clients)
      .map(([n, v]) => `${n} ${v}`)
      .join(", ");
    console.log(
      `${this.s.example}: ${work} against ${this.s.host}:${this.s.port}, ${this.s.repeat} round(s) after ` +
        `${this.s.warmup} warm-up (Node ${process.versions.node}, ${clients})`,
    );
  }

  fact(name, value) {
    this.doc.facts[name] = value;
    const shown = value && typeof value === "object" && !Array.isArray(value) ? JSON.stringify(value) : value;
    console.log(`${(name + ":").padEnd(28)} ${shown}`);
  }

  /** A mode whose samples each ran `ops` operations; `timing` is one entry of interleaved()'s result. */
  add(mode, fields, ops, timing) {
    this.doc.modes[mode] = timing.wall;
    this.doc.ops[mode] = ops;
    this.doc.cpu_s[mode] = timing.cpu;
    if (timing.warm.length) this.doc.warmup_s[mode] = timing.warm;
    if (timing.server.length) this.doc.wire[mode] = wirePerSample(timing.server);
    this.doc.fields[mode] = fields;
    const mid = median(timing.wall);
    const cpuShare = timing.cpu.reduce((a, b) => a + b, 0) / timing.wall.reduce((a, b) => a + b, 0);
    console.log(
      `${mode.padEnd(28)} ${String(ops).padStart(8)} ops  median ${mid.toFixed(4)} s  ` +
        `${Math.round(ops / mid).toLocaleString("en")} ops/s, client CPU ${(100 * cpuShare).toFixed(0)}% of a core`,
    );
  }

  paired(modes) {
    const group = modes.join(" / ");
    for (const mode of modes) this.doc.paired[mode] = group;
  }

  finish() {
    console.log(RESULT_MARK + JSON.stringify(this.doc));
  }
}

/** Run an example's body: a Stop prints its sentence and exits with its code, anything else its message
 * (PIPELAB_DEBUG=1: its stack too). */
export function main(body) {
  body().then(
    () => process.exit(0),
    (err) => {
      if (process.env.PIPELAB_DEBUG && err?.stack) console.error(err.stack); // the whole trace, when asked
      console.error(err instanceof Stop ? err.message : `${err?.name || "Error"}: ${err?.message || err}`);
      process.exit(err instanceof Stop ? err.code : 1);
    },
  );
}
