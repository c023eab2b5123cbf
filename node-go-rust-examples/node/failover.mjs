// Chapter 5, Node.js: a cluster pipeline when the cluster changes under it. One process runs ONE
// client case of one scenario and reports what the CALLER saw; the harness prepares the cluster
// before and counts on the servers afterwards (INFO commandstats and errorstats).
// Clients: ioredis (Cluster, enableAutoPipelining, single commands and Promise.allSettled: ioredis
// refuses one pipeline() whose keys are on several masters, which scenario pipeline shows) and noderedis
// (createCluster, single commands and Promise.allSettled: node-redis queues them per node and writes
// each queue at once).
// Scenarios:
//   lost     n SETs pipelab:ch05:lost:<i> (on every master); the victim master has had CLIENT PAUSE
//            WRITE, so its share waits unrun; 200 ms after the start the example SIGKILLs it and waits
//            for the pipeline at most wait-ms. Fact killed_after_ms too.
//   pipeline the same n SETs in ONE ioredis pipeline().exec() over every master, nothing killed: what
//            the caller got (the harness counts the SETs the masters ran). Fact masters (the keys span).
//   moved    n SETs pipelab:ch05:{mv}:<i> (one slot). Phase ask: the slot is migrating and half its keys
//            are on the target (the source answers ASK for those). Phase moved: all keys moved, the
//            slot still MIGRATING/IMPORTING; the example loads its slot map, then gives the slot to the
//            target on every master (target first), so its map is stale, then pipelines. Fact
//            keys_updated (GETs afterwards holding the phase's value).
//   scripts  n calls of a script (INCR KEYS[1]) on pipelab:ch05:script:<i>, after the harness loaded it
//            on every master and flushed it on one: ioredis defineCommand, node-redis defineScript.
//            Fact values_ok (replies that are integers >= 1).
//   replicas 3 masters with a replica each, replication held back, keys pipelab:ch05:replica:<i> "old":
//            (a) n GETs, fact read_old; (b) n pairs SET key new, GET key, facts stale_reads and
//            fresh_reads. Settings: ioredis (scaleReads default), ioredis_slave, ioredis_all,
//            noderedis (defaults), noderedis_replicas (useReplicas). Fact setting. outcome, replies
//            and waited_ms cover (a) and (b) together.
// Facts of every scenario: outcome (ok, the first failed command's error, or "still waiting after <w>
// ms"), replies_ok, replies_failed, errors ({text: count}), errors_ms ({text: [first, last]}: when the
// first and the last caller got it, ms after the start), waited_ms (start to return), client.
// Error texts: first line, at most 80 characters, 127.0.0.1:<port> as <addr>; an error without a
// message (node-redis's TimeoutError) by its class.
//
//   npm ci && node failover.mjs host port lost <ioredis|noderedis> victim-port victim-pid n wait-ms
//            node failover.mjs host port pipeline ioredis n
//            node failover.mjs host port moved <client> <ask|moved> slot target-node-id n
//            node failover.mjs host port scripts <client> n script-body
//            node failover.mjs host port replicas <setting> n
// (host:port: any master; user, password and TLS from REDIS_CLUSTER_URL, else REDIS_URL. The keys
// are the harness's to set up and delete.)

import { performance } from "node:perf_hooks";

import calculateSlot from "cluster-key-slot";
import Redis from "ioredis";
import { createCluster, defineScript } from "redis";

import * as lab from "./lab.mjs";

const EXAMPLE = "ch05-failover";
const USAGE =
  "usage: node failover.mjs host port, then: lost <ioredis|noderedis> victim-port victim-pid n wait-ms | " +
  "pipeline ioredis n | " +
  "moved <ioredis|noderedis> <ask|moved> slot target-node-id n | scripts <ioredis|noderedis> n script-body | " +
  "replicas <ioredis|ioredis_slave|ioredis_all|noderedis|noderedis_replicas> n";
const CLIENTS = ["ioredis", "noderedis"];
const KILL_AFTER_MS = 200;
const WAIT_MS = 60_000; // the bound on a pipeline in the scenarios without wait-ms

// --8<-- [start:clients]
// The two cluster clients with their defaults (the lab's own ioredis default, maxRetriesPerRequest 0,
// put back to ioredis's). `options` adds a scenario's settings (scaleReads, useReplicas, scripts).
const clusters = {
  ioredis: (c, options = {}) =>
    new Redis.Cluster([{ host: c.host, port: c.port }], {
      redisOptions: lab.ioredisOptions(c, { maxRetriesPerRequest: undefined }),
      enableAutoPipelining: true,
      lazyConnect: true,
      ...options,
    }),
  noderedis: (c, options = {}) => createCluster(lab.nodeRedisClusterOptions(c, options)),
};

// One pipeline: every command issued in the same tick, then every reply (or error) awaited.
const pipeline = (commands) => Promise.allSettled(commands);
// --8<-- [end:clients]

/** The client's name and version, and where it sends a key (host:port of the slot's master). */
const about = {
  ioredis: {
    name: () => `ioredis ${lab.versionOf("ioredis")}`,
    masterOf: (cluster, key) => cluster.slots[calculateSlot(key)]?.[0],
  },
  noderedis: {
    name: () => `redis ${lab.versionOf("redis")} (@redis/client ${lab.versionOf("@redis/client")})`,
    masterOf: (cluster, key) => {
      const master = cluster.slots[calculateSlot(key)]?.master;
      return master && `${master.host}:${master.port}`;
    },
  },
};

/**
 * Issue `commands` (each a function that sends one command) at once and wait at most `waitMs`; counts
 * what settled by then. Each command's outcome is in `outcomes` (undefined while it waits).
 */
async function run(commands, waitMs, onStart = () => {}) {
  const got = { outcomes: [], t0: performance.now() };
  const promises = commands.map((send) => send());
  onStart(got.t0);
  promises.forEach((p, i) =>
    p.then(
      (v) => (got.outcomes[i] = { value: v }),
      (e) => (got.outcomes[i] = { error: e, at: performance.now() - got.t0 }),
    ),
  );
  const done = await lab.within(pipeline(promises), waitMs);
  got.waited = performance.now() - got.t0;
  got.late = done === lab.LATE;
  got.count = commands.length;
  return got;
}

/** An error's text; one without a message or code (node-redis's TimeoutError) by its class name. */
const shownError = (err) =>
  err instanceof Error && !err.message && !err.code ? err.constructor.name : lab.errorText(err);

/** The facts of every scenario, from one or more run()s. */
function report(r, runs, client, waitMs) {
  const outcomes = runs.flatMap((x) => Array.from({ length: x.count }, (_, i) => x.outcomes[i]));
  const errors = {};
  const errorsMs = {}; // when the first and the last caller got each error
  let first;
  for (const o of outcomes) {
    if (!o?.error) continue;
    const text = shownError(o.error);
    errors[text] = (errors[text] || 0) + 1;
    const at = Math.round(o.at);
    errorsMs[text] = errorsMs[text] ? [Math.min(errorsMs[text][0], at), Math.max(errorsMs[text][1], at)] : [at, at];
    first ??= text;
  }
  const late = runs.some((x) => x.late);
  r.fact("outcome", late ? `still waiting after ${waitMs} ms` : (first ?? "ok"));
  r.fact("replies_ok", outcomes.filter((o) => o && !o.error).length);
  r.fact("replies_failed", outcomes.filter((o) => o?.error).length);
  r.fact("errors", errors);
  r.fact("errors_ms", errorsMs);
  r.fact("waited_ms", Math.round(runs.reduce((sum, x) => sum + x.waited, 0) * 10) / 10);
  r.fact("client", client);
}

// ---------------------------------------------------------------- scenarios

/** One GET on each master the keys live on: the client has its slot map and a connection to each. */
async function touchMasters(kind, cluster, keys) {
  const seen = new Map();
  for (const k of keys) {
    const master = about[kind].masterOf(cluster, k);
    if (master && !seen.has(master)) seen.set(master, k);
  }
  for (const k of seen.values()) await cluster.get(k);
  return [...seen.keys()];
}

async function lost(s, r, cluster) {
  const { victimPort, victimPid, n, waitMs } = s.args;
  const keys = Array.from({ length: n }, (_, i) => lab.key("ch05", "lost", i));
  const masters = await touchMasters(s.client, cluster, keys);
  if (!masters.some((m) => m.endsWith(`:${victimPort}`))) {
    throw new lab.Stop(2, `${EXAMPLE}: victim-port ${victimPort} is not a master of the cluster (${masters}).`);
  }
  r.header(`${n} SETs over ${masters.length} masters; the one on port ${victimPort} killed after ${KILL_AFTER_MS} ms`);
  let killedAfter = null;
  let timer;
  // --8<-- [start:lost]
  const got = await run(
    keys.map((k) => () => cluster.set(k, "1")),
    waitMs,
    (t0) => {
      timer = setTimeout(() => {
        try {
          process.kill(victimPid, "SIGKILL");
          killedAfter = performance.now() - t0;
        } catch {
          // gone already: killed_after_ms stays null
        }
      }, KILL_AFTER_MS);
    },
  );
  // --8<-- [end:lost]
  clearTimeout(timer);
  report(r, [got], about[s.client].name(), waitMs);
  r.fact("killed_after_ms", killedAfter === null ? null : Math.round(killedAfter));
}

async function refusedPipeline(s, r, cluster) {
  const { n } = s.args;
  const keys = Array.from({ length: n }, (_, i) => lab.key("ch05", "lost", i));
  const masters = await touchMasters(s.client, cluster, keys);
  r.header(`${n} SETs over ${masters.length} masters in one pipeline()`);
  // --8<-- [start:pipeline]
  // ioredis's own pipeline: exec() checks that every key's slot is served by the same nodes
  // before it sends anything. Hence the single commands and auto-pipelining above.
  const got = await run(
    [
      () => {
        const pipeline = cluster.pipeline();
        for (const k of keys) pipeline.set(k, "1");
        return pipeline.exec();
      },
    ],
    WAIT_MS,
  );
  // --8<-- [end:pipeline]
  report(r, [got], about[s.client].name(), WAIT_MS);
  r.fact("masters", masters.length);
}

/** Every master as {id, host, port}, from CLUSTER NODES on a plain connection. */
async function masterNodes(plain) {
  const text = String(await plain.call("CLUSTER", "NODES"));
  return text
    .trim()
    .split("\n")
    .map((line) => line.split(" "))
    .filter((f) => f[2].includes("master") && !f[2].includes("fail"))
    .map(([id, addr]) => {
      const [hostPort] = addr.split("@");
      const at = hostPort.lastIndexOf(":");
      return { id, host: hostPort.slice(0, at), port: Number(hostPort.slice(at + 1)) };
    });
}

async function moved(s, r, cluster, c) {
  const { phase, slot, targetId, n } = s.args;
  const keys = Array.from({ length: n }, (_, i) => lab.key("ch05", "{mv}", i));
  if (calculateSlot(keys[0]) !== slot) {
    throw new lab.Stop(
      2,
      `${EXAMPLE}: slot must be the slot of hash tag {mv}, ${calculateSlot(keys[0])}, not ${slot}.`,
    );
  }
  if (phase === "moved") {
    // The slot map first (a key of another slot), then the slot changes hands behind the client's back.
    await cluster.get(lab.key("ch05", "{other}"));
    const plain = new Redis(lab.ioredisOptions(c));
    try {
      const masters = await masterNodes(plain);
      if (!masters.some((m) => m.id === targetId)) {
        throw new lab.Stop(2, `${EXAMPLE}: target-node-id ${targetId} is not a master of the cluster.`);
      }
      masters.sort((a, b) => (b.id === targetId) - (a.id === targetId)); // the target first
      for (const m of masters) {
        const one = new Redis(lab.ioredisOptions({ ...c, host: m.host, port: m.port }));
        try {
          await one.call("CLUSTER", "SETSLOT", slot, "NODE", targetId);
        } finally {
          one.disconnect();
        }
      }
    } finally {
      plain.disconnect();
    }
  }
  r.header(`${n} SETs of slot ${slot}, phase ${phase}`);
  // --8<-- [start:moved]
  const got = await run(
    keys.map((k) => () => cluster.set(k, phase)),
    WAIT_MS,
  );
  // --8<-- [end:moved]
  report(r, [got], about[s.client].name(), WAIT_MS);
  let updated = 0;
  for (const k of keys) if ((await cluster.get(k)) === phase) updated++;
  r.fact("keys_updated", updated);
}

async function scripts(s, r, cluster) {
  const { n } = s.args;
  const keys = Array.from({ length: n }, (_, i) => lab.key("ch05", "script", i));
  r.header(`${n} calls of a script after SCRIPT FLUSH on one master`);
  // --8<-- [start:scripts]
  // labIncr is the script defined on the client (ioredis defineCommand, node-redis defineScript).
  const got = await run(
    keys.map((k) => () => cluster.labIncr(k)),
    WAIT_MS,
  );
  // --8<-- [end:scripts]
  report(r, [got], about[s.client].name(), WAIT_MS);
  const values = Array.from({ length: n }, (_, i) => got.outcomes[i]?.value);
  r.fact("values_ok", values.filter((v) => Number.isInteger(Number(v)) && Number(v) >= 1).length);
}

// --8<-- [start:define]
// The script, named labIncr, as each client defines one: node-redis in createCluster's options
// (EVALSHA, then EVAL after NOSCRIPT), ioredis on the client with defineCommand.
const scriptOptions = {
  ioredis: () => ({}),
  noderedis: (body) => ({
    scripts: {
      labIncr: defineScript({
        SCRIPT: body,
        NUMBER_OF_KEYS: 1,
        parseCommand: (parser, key) => parser.pushKey(key),
        transformReply: undefined,
      }),
    },
  }),
};
const defineOnClient = {
  ioredis: (cluster, body) => cluster.defineCommand("labIncr", { numberOfKeys: 1, lua: body }),
  noderedis: () => {},
};
// --8<-- [end:define]

// Each replicas setting: the client, its options, and the setting as the client spells it with its
// default (ioredis built/cluster/ClusterOptions.js: scaleReads "master"; node-redis
// lib/cluster/index.ts: useReplicas, unset is false).
const SETTINGS = {
  ioredis: { client: "ioredis", options: {}, shown: (o) => `scaleReads "${o.scaleReads}" (the default, "master")` },
  ioredis_slave: {
    client: "ioredis",
    options: { scaleReads: "slave" },
    shown: (o) => `scaleReads "${o.scaleReads}" (default "master")`,
  },
  ioredis_all: {
    client: "ioredis",
    options: { scaleReads: "all" },
    shown: (o) => `scaleReads "${o.scaleReads}" (default "master")`,
  },
  noderedis: { client: "noderedis", options: {}, shown: () => "useReplicas unset (the default, false)" },
  noderedis_replicas: {
    client: "noderedis",
    options: { useReplicas: true },
    shown: () => "useReplicas true (default false)",
  },
};

async function replicas(s, r, cluster) {
  const { n } = s.args;
  const keys = Array.from({ length: n }, (_, i) => lab.key("ch05", "replica", i));
  const setting = SETTINGS[s.setting];
  r.fact("setting", setting.shown(cluster.options ?? {}));
  r.header(`${n} GETs, then ${n} SET+GET pairs, replication held back`);
  // --8<-- [start:replicas]
  const reads = await run(
    keys.map((k) => () => cluster.get(k)),
    WAIT_MS,
  );
  const pairs = await run(
    keys.flatMap((k) => [() => cluster.set(k, "new"), () => cluster.get(k)]),
    WAIT_MS,
  );
  // --8<-- [end:replicas]
  report(r, [reads, pairs], about[setting.client].name(), WAIT_MS);
  const value = (x, i) => x.outcomes[i]?.value;
  r.fact("read_old", keys.filter((_, i) => value(reads, i) === "old").length);
  r.fact("stale_reads", keys.filter((_, i) => value(pairs, 2 * i + 1) === "old").length);
  r.fact("fresh_reads", keys.filter((_, i) => value(pairs, 2 * i + 1) === "new").length);
}

// ---------------------------------------------------------------- arguments and main

function settings(argv) {
  const [host, port, scenario, who, ...rest] = argv;
  const whole = (name, text, min = 1, max = 10_000_000) => lab.whole(EXAMPLE, name, text, { min, max, usage: USAGE });
  if (!host) throw new lab.Stop(2, `${EXAMPLE}: host is missing; ${USAGE}.`);
  const s = { example: EXAMPLE, host, port: whole("port", port, 1, 65535), scenario, repeat: 1, warmup: 0 };
  const arity = { lost: 4, pipeline: 1, moved: 4, scripts: 2, replicas: 1 }[scenario];
  if (arity === undefined) {
    throw new lab.Stop(
      2,
      `${EXAMPLE}: scenario must be lost, pipeline, moved, scripts or replicas, not '${scenario ?? ""}'; ${USAGE}.`,
    );
  }
  if (scenario === "replicas") {
    if (!(who in SETTINGS)) {
      throw new lab.Stop(
        2,
        `${EXAMPLE}: setting must be one of ${Object.keys(SETTINGS).join(", ")}, not '${who ?? ""}'; ${USAGE}.`,
      );
    }
    s.setting = who;
    s.client = SETTINGS[who].client;
  } else if (!CLIENTS.includes(who)) {
    throw new lab.Stop(2, `${EXAMPLE}: client must be ioredis or noderedis, not '${who ?? ""}'; ${USAGE}.`);
  } else if (scenario === "pipeline" && who !== "ioredis") {
    throw new lab.Stop(2, `${EXAMPLE}: pipeline runs ioredis only, not '${who}'; ${USAGE}.`);
  } else {
    s.client = who;
  }
  if (rest.length !== arity) {
    throw new lab.Stop(
      2,
      `${EXAMPLE}: ${scenario} takes ${arity} argument(s) after the ${scenario === "replicas" ? "setting" : "client"}, not ${rest.length}; ${USAGE}.`,
    );
  }
  if (scenario === "lost") {
    const [victimPort, victimPid, n, waitMs] = rest;
    s.args = {
      victimPort: whole("victim-port", victimPort, 1, 65535),
      victimPid: whole("victim-pid", victimPid, 2, 2 ** 31 - 1),
      n: whole("n", n),
      waitMs: whole("wait-ms", waitMs, 1, 3_600_000),
    };
    try {
      process.kill(s.args.victimPid, 0);
    } catch {
      throw new lab.Stop(
        2,
        `${EXAMPLE}: victim-pid ${victimPid} is not a process this user can signal; pass the victim master's pid.`,
      );
    }
  } else if (scenario === "moved") {
    const [phase, slot, targetId, n] = rest;
    if (phase !== "ask" && phase !== "moved") {
      throw new lab.Stop(2, `${EXAMPLE}: phase must be ask or moved, not '${phase}'; ${USAGE}.`);
    }
    if (!/^[0-9a-f]{40}$/.test(targetId)) {
      throw new lab.Stop(
        2,
        `${EXAMPLE}: target-node-id must be a node id (40 hex digits), not '${targetId}'; ${USAGE}.`,
      );
    }
    s.args = { phase, slot: whole("slot", slot, 0, 16383), targetId, n: whole("n", n) };
  } else if (scenario === "scripts") {
    const [n, body] = rest;
    if (!body.trim()) throw new lab.Stop(2, `${EXAMPLE}: script-body is empty; ${USAGE}.`);
    s.args = { n: whole("n", n), body };
  } else {
    s.args = { n: whole("n", rest[0]) };
  }
  s.size = s.args.n;
  return s;
}

lab.main(async () => {
  const s = settings(process.argv.slice(2));
  const c = lab.connection(s.host, s.port, "REDIS_CLUSTER_URL");
  let options = {};
  if (s.scenario === "replicas") options = SETTINGS[s.setting].options;
  if (s.scenario === "scripts") options = scriptOptions[s.client](s.args.body);
  const cluster = clusters[s.client](c, options);
  cluster.on("error", () => {}); // a lost node is reported through the commands' outcomes
  if (s.scenario === "scripts") defineOnClient[s.client](cluster, s.args.body);
  const r = new lab.Report(s);
  if (s.client === "ioredis") r.client("ioredis", lab.versionOf("ioredis"));
  else r.client("redis", lab.versionOf("redis")).client("@redis/client", lab.versionOf("@redis/client"));
  try {
    await cluster.connect();
    if (s.scenario === "lost") await lost(s, r, cluster);
    else if (s.scenario === "pipeline") await refusedPipeline(s, r, cluster);
    else if (s.scenario === "moved") await moved(s, r, cluster, c);
    else if (s.scenario === "scripts") await scripts(s, r, cluster);
    else await replicas(s, r, cluster);
  } finally {
    // No QUIT: a dead node would keep it waiting; lab.main exits the process next.
    if (s.client === "ioredis") cluster.disconnect();
    else cluster.destroy();
  }
  r.finish();
});
