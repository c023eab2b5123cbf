// Chapter 10, Node.js: auto-pipelining's trade-off curve. C concurrent callers share ONE client and
// each GETs a small key in a loop, awaiting each reply; no code pipelines. For each caller count,
// the clients are timed in interleaved rounds:
//   ioredis_off   ioredis as it comes (enableAutoPipelining false): every command is its own write;
//   ioredis_auto  enableAutoPipelining true: commands queue per node and go out as one pipeline
//                 from setImmediate, one such pipeline in flight at a time;
//   noderedis     node-redis as it comes: setImmediate writes its queue, corked, until the socket
//                 needs to drain (writableNeedDrain); the rest goes on 'drain';
//   glide         Valkey GLIDE for Node: one multiplexed connection driven by its Rust core.
// Each point first runs for `pointMs` to warm up and find the client's rate; then every recorded
// sample does that many GETs (split evenly over the callers), so a sample lasts about `pointMs`.
// Around each sample the server's INFO gives its reads: commands per read above 1 means callers'
// commands travelled together. The caller's latency of every GET gives p50 and p99.
//
// With bigBytes > 0 a second part measures what sharing costs (head-of-line blocking): `readers`
// callers GET the small key for holdMs alone, then while a loop GETs a value of bigBytes on the
// SAME client, then while it does so on a SEPARATE client (ioredis with auto-pipelining, and
// node-redis). Facts hol_<client>_<case>_{p50,p99,max}_us, _gets, _bigs: client "ioredis" (with
// auto-pipelining) or "noderedis", case alone, shared or separate. The cases take turns, HOL_ROUNDS
// of holdMs / HOL_ROUNDS each, and hol_<client>_<case>_p99_us_rounds holds each turn's p99.
// Then the batch wait: a GET of the small key and, in the same tick, one of the big value, on ioredis
// with auto-pipelining off and on, BATCH_TRIALS turns each: facts batchwait_ioredis_<off|auto>_<small|big>_us
// (each turn's latency of that GET's promise) and batchwait_trials.
//
// Modes are "<client>_c<callers>", e.g. ioredis_auto_c16; read their fields: client ("ioredis",
// "node-redis", "GLIDE (Node)"), mode ("off", "auto", "default"), callers, rtt_ms (as passed: the harness
// sets it on its proxy), p50_us, p99_us (per GET, over the recorded samples; each sample's own in
// p50_us_rounds, p99_us_rounds), reads (per sample), cmds_per_read (median; each sample's in
// cmds_per_read_rounds), cpu_us_per_op (this process's CPU, every thread, per GET). If GLIDE's
// native package cannot load here, facts.glide_note says why and its modes are left out.
//
//   npm ci && node auto.mjs [host] [port] [pointMs] [repeat] [warmup] callers rttMs [valueBytes] [bigBytes] [holdMs] [readers]
//   e.g.  node auto.mjs 127.0.0.1 6379 300 2 1 1,4,16,64,256 0 16 8000000 800 8
// (user, password and TLS from REDIS_URL; keys under pipelab:ch10:auto:, deleted at the end)

import { performance } from "node:perf_hooks";

import { createClient, RESP_TYPES } from "redis";
import Redis from "ioredis";

import * as lab from "./lab.mjs";

const EXAMPLE = "ch10-auto";
const SMALL = lab.key("ch10", "auto", "small");
const BIG = lab.key("ch10", "auto", "big");

/** GLIDE's client class, or the one sentence why it cannot load here (its core is a native module). */
async function loadGlide() {
  try {
    const glide = await import("@valkey/valkey-glide");
    return { GlideClient: glide.GlideClient, Logger: glide.Logger };
  } catch (err) {
    return { note: `GLIDE for Node could not load its native core here (${String(err.message).split("\n")[0]}).` };
  }
}

// --8<-- [start:clients]
// One client per way; every caller of a point shares it.
async function openClients(c, glide) {
  const clients = {
    ioredis_off: new Redis(lab.ioredisOptions(c)),
    ioredis_auto: new Redis(lab.ioredisOptions(c, { enableAutoPipelining: true })),
    noderedis: createClient(lab.nodeRedisOptions(c)),
  };
  await clients.ioredis_off.connect();
  await clients.ioredis_auto.connect();
  await clients.noderedis.connect();
  if (glide.GlideClient) {
    clients.glide = await glide.GlideClient.createClient({
      addresses: [{ host: c.host, port: c.port }],
      credentials: c.password ? { username: c.username, password: c.password } : undefined,
      useTLS: c.tls,
      databaseId: c.db || undefined,
    });
  }
  return clients;
}

// C callers, each awaiting one GET at a time until `stop()` says so; every latency in microseconds.
async function callers(client, count, stop, latencies) {
  const one = async () => {
    let done = 0;
    while (!stop(done)) {
      const t0 = performance.now();
      await client.get(SMALL);
      latencies?.push((performance.now() - t0) * 1e3);
      done++;
    }
    return done;
  };
  const each = await Promise.all(Array.from({ length: count }, one));
  return each.reduce((a, b) => a + b, 0);
}
// --8<-- [end:clients]

const FIELDS = {
  ioredis_off: { client: "ioredis", mode: "off" },
  ioredis_auto: { client: "ioredis", mode: "auto" },
  noderedis: { client: "node-redis", mode: "default" },
  glide: { client: "GLIDE (Node)", mode: "default" },
};

async function curve(s, report, control, clients, p) {
  for (const count of p.callers) {
    const tasks = {};
    const latencies = {};
    const ops = {};
    const warm = {};
    for (const [way, client] of Object.entries(clients)) {
      const name = `${way}_c${count}`;
      // Warm-up, timed by the clock: the rate it reaches sets the GETs of every recorded sample.
      warm[name] = [];
      let rate = 0;
      for (let i = 0; i < Math.max(1, s.warmup); i++) {
        const t0 = performance.now();
        const deadline = t0 + p.pointMs;
        const done = await callers(client, count, () => performance.now() >= deadline, null);
        const took = (performance.now() - t0) / 1e3;
        warm[name].push(took);
        rate = done / took;
      }
      const perCaller = Math.max(1, Math.round((rate * p.pointMs) / 1e3 / count));
      ops[name] = perCaller * count;
      latencies[name] = [];
      // Each recorded sample's latencies apart: a quantile per sample gives the quantile's interval.
      tasks[name] = async () => {
        const round = [];
        await callers(client, count, (done) => done >= perCaller, round);
        latencies[name].push(round);
      };
    }
    const timed = await lab.interleaved(tasks, { repeat: s.repeat, warmup: 0, control });
    for (const [name, timing] of Object.entries(timed)) {
      const way = name.slice(0, name.lastIndexOf("_c"));
      const ratios = timing.server.map((x) => (x.calls.GET || 0) / Math.max(1, x.reads));
      const p50s = latencies[name].map((round) => lab.quantile(round, 0.5));
      const p99s = latencies[name].map((round) => lab.quantile(round, 0.99));
      const fields = {
        ...FIELDS[way],
        callers: count,
        rtt_ms: p.rttMs,
        p50_us: lab.quantile(latencies[name].flat(), 0.5),
        p99_us: lab.quantile(latencies[name].flat(), 0.99),
        p50_us_rounds: p50s,
        p99_us_rounds: p99s,
        reads: lab.median(timing.server.map((x) => x.reads)),
        cmds_per_read: lab.median(ratios),
        cmds_per_read_rounds: ratios,
        cpu_us_per_op: (lab.median(timing.cpu) / ops[name]) * 1e6,
      };
      report.add(name, fields, ops[name], { ...timing, warm: warm[name] });
    }
    report.paired(Object.keys(tasks));
  }
}

// --8<-- [start:hol]
// Readers GET the small key while (or while not) a loop GETs the big value on `bigClient`.
async function headOfLine(readersClient, bigClient, p) {
  const latencies = [];
  const deadline = performance.now() + p.holdMs;
  const over = () => performance.now() >= deadline;
  let bigs = 0;
  const bigLoop = async () => {
    while (!over()) {
      await bigClient.getBuffer(BIG); // a Buffer: no 8 MB string to decode on the event loop
      bigs++;
    }
  };
  const [gets] = await Promise.all([callers(readersClient, p.readers, over, latencies), bigClient ? bigLoop() : 0]);
  return { latencies, gets, bigs };
}
// --8<-- [end:hol]

// The head-of-line cases take turns, so the p99 behind the big reply on the same client can be set
// against the p99 with it elsewhere round by round, with an interval (one pass of each moved a lot).
const HOL_ROUNDS = 5;

async function holCases(report, c, clients, p) {
  await clients.ioredis_off.set(BIG, Buffer.alloc(p.bigBytes, 120));
  // node-redis gives a Buffer through a client whose type mapping says so; getBuffer is ioredis's spelling.
  const nodeRedisBig = (client) => {
    const buffers = client.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
    return { getBuffer: (k) => buffers.get(k) };
  };
  const secondIoredis = new Redis(lab.ioredisOptions(c, { enableAutoPipelining: true }));
  const secondNodeRedis = createClient(lab.nodeRedisOptions(c));
  await secondIoredis.connect();
  await secondNodeRedis.connect();
  try {
    const cases = {
      ioredis_alone: [clients.ioredis_auto, null],
      ioredis_shared: [clients.ioredis_auto, clients.ioredis_auto],
      ioredis_separate: [clients.ioredis_auto, secondIoredis],
      noderedis_alone: [clients.noderedis, null],
      noderedis_shared: [clients.noderedis, nodeRedisBig(clients.noderedis)],
      noderedis_separate: [clients.noderedis, nodeRedisBig(secondNodeRedis)],
    };
    report.fact("big_bytes", p.bigBytes);
    report.fact("readers", p.readers);
    report.fact("hold_ms", p.holdMs);
    report.fact("hol_rounds", HOL_ROUNDS);
    const got = {};
    for (const name of Object.keys(cases)) got[name] = { latencies: [], rounds: [], gets: 0, bigs: 0 };
    const turn = { ...p, holdMs: p.holdMs / HOL_ROUNDS };
    for (let round = 0; round < HOL_ROUNDS; round++) {
      for (const [name, [readers, big]] of Object.entries(cases)) {
        const one = await headOfLine(readers, big, turn);
        const all = got[name];
        all.latencies = all.latencies.concat(one.latencies); // not push(...): a spread of 10^5 overflows
        all.rounds.push(Math.round(lab.quantile(one.latencies, 0.99)));
        all.gets += one.gets;
        all.bigs += one.bigs;
      }
    }
    for (const [name, all] of Object.entries(got)) {
      const fact = `hol_${name}`;
      report.fact(`${fact}_p50_us`, Math.round(lab.quantile(all.latencies, 0.5)));
      report.fact(`${fact}_p99_us`, Math.round(lab.quantile(all.latencies, 0.99)));
      report.fact(`${fact}_max_us`, Math.round(lab.quantile(all.latencies, 1)));
      report.fact(`${fact}_gets`, all.gets);
      report.fact(`${fact}_bigs`, all.bigs);
      report.fact(`${fact}_p99_us_rounds`, all.rounds);
    }
  } finally {
    secondIoredis.disconnect();
    if (secondNodeRedis.isOpen) secondNodeRedis.destroy();
  }
}

// --8<-- [start:batchwait]
// A GET of the small key, then in the same tick a GET of the big value: when each one's promise settles.
// The small reply comes back first; with auto-pipelining both are one pipeline, whose exec settles
// every command's promise only once it holds every reply.
async function smallBesideBig(client) {
  const t0 = performance.now();
  let smallUs = 0;
  const small = client.get(SMALL).then(() => (smallUs = (performance.now() - t0) * 1e3));
  await client.getBuffer(BIG);
  const bigUs = (performance.now() - t0) * 1e3;
  await small;
  return { smallUs, bigUs };
}
// --8<-- [end:batchwait]

const BATCH_TRIALS = 21;

async function batchWait(report, clients) {
  const ways = { off: clients.ioredis_off, auto: clients.ioredis_auto };
  const got = {};
  for (let trial = -1; trial < BATCH_TRIALS; trial++) {
    for (const [way, client] of Object.entries(ways)) {
      const one = await smallBesideBig(client);
      if (trial < 0) continue; // a first turn of each, thrown away
      got[way] ??= { small: [], big: [] };
      got[way].small.push(Math.round(one.smallUs));
      got[way].big.push(Math.round(one.bigUs));
    }
  }
  report.fact("batchwait_trials", BATCH_TRIALS);
  for (const [way, { small, big }] of Object.entries(got)) {
    report.fact(`batchwait_ioredis_${way}_small_us`, small);
    report.fact(`batchwait_ioredis_${way}_big_us`, big);
  }
}

lab.main(async () => {
  const s = lab.usual(EXAMPLE, process.argv.slice(2), { size: 300, repeat: 2 });
  const [callersText, rttText, valueText, bigText, holdText, readersText] = s.extra;
  const p = {
    pointMs: s.size,
    callers: lab.intList(EXAMPLE, "callers", callersText || "1,4,16,64,256"),
    rttMs: Number(rttText || 0),
    valueBytes: lab.intList(EXAMPLE, "valueBytes", valueText || "16")[0],
    bigBytes: lab.intList(EXAMPLE, "bigBytes", bigText || "0")[0],
    holdMs: lab.intList(EXAMPLE, "holdMs", holdText || "800")[0],
    readers: lab.intList(EXAMPLE, "readers", readersText || "8")[0],
  };
  const c = lab.connection(s.host, s.port);
  const glide = await loadGlide();
  const control = new Redis(lab.ioredisOptions(c));
  const report = new lab.Report(s)
    .client("ioredis", lab.versionOf("ioredis"))
    .client("redis", lab.versionOf("redis"))
    .client("@redis/client", lab.versionOf("@redis/client"));
  if (glide.GlideClient) {
    report.client("@valkey/valkey-glide", lab.versionOf("@valkey/valkey-glide"));
    glide.Logger.init("error"); // GLIDE's core logs at warn by default
  }
  let clients = {};
  try {
    await control.connect();
    await lab.requireLabOnly(control, `${s.host}:${s.port}`);
    await control.set(SMALL, "v".repeat(p.valueBytes));
    clients = await openClients(c, glide);
    report.header(`GETs by ${p.callers} callers on one client, ${p.pointMs} ms a point, RTT ${p.rttMs} ms`);
    if (glide.note) report.fact("glide_note", glide.note);
    await curve(s, report, control, clients, p);
    if (p.bigBytes > 0) {
      await holCases(report, c, clients, p);
      await batchWait(report, clients);
    }
  } finally {
    await lab.deletePattern(control, lab.key("ch10", "auto", "*")).catch(() => {});
    for (const [way, client] of Object.entries(clients)) {
      if (way === "glide") client.close();
      else if (way === "noderedis") client.isOpen && client.destroy();
      else client.disconnect();
    }
    control.disconnect();
  }
  report.finish();
});
