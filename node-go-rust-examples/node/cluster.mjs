// Chapter 10, Node.js: ioredis's Cluster on chapter 5's three masters. N SADDs to N distinct keys
// (one member each; the keys' slots fall on every master), timed in interleaved rounds:
//   one_by_one    await each cluster.sadd();
//   node_pipelines the keys grouped by the master that serves their slot, one pipeline().exec()
//                  per master, all at once: ioredis accepts a cluster pipeline only when every
//                  key's slot is served by the same node, so the split is the caller's;
//   auto          a second Cluster with enableAutoPipelining, N single SADDs and Promise.all:
//                 ioredis keeps one auto-pipeline per node and splits by itself.
// Around each sample every master's INFO gives the SADDs it ran and the reads it did.
// Facts: what one pipeline of all N keys does (pipeline_error; pipeline_error_sadds_run and
// _sadds_received, the SADDs the masters ran, and ran or rejected, for it), what a cross-slot MGET does
// sent alone, in a pipeline and auto-pipelined (mget_cross_slot[_pipeline|_auto]_error, and which side
// refused it: _server_errors, the CROSSSLOT replies the masters counted, and _mgets_received, the MGETs
// they ran or rejected: 0 when ioredis refused it before sending), and that an MGET of keys sharing a
// hash tag works.
//
// Modes: one_by_one, node_pipelines, auto; fields client "ioredis", mode, workload "sadd",
// masters, masters_used (masters that ran any of the sample's SADDs), reads and commands
// (summed over the masters, per sample). Facts <mode>_node<i>_commands and _reads per master,
// node<i> its address.
//
//   npm ci && node cluster.mjs [host] [port] [size] [repeat] [warmup]    (host:port: any master)
//   e.g.  node cluster.mjs 127.0.0.1 17000 10000 3 1
// (user, password and TLS from REDIS_CLUSTER_URL, else REDIS_URL; keys under pipelab:ch10:cluster:)

import calculateSlot from "cluster-key-slot";
import Redis from "ioredis";

import * as lab from "./lab.mjs";

const EXAMPLE = "ch10-cluster";
const keyOf = (i) => lab.key("ch10", "cluster", i);

// --8<-- [start:split]
// The caller's split: one pipeline per master, each holding the keys whose slots it serves.
function nodePipelines(cluster, keys) {
  const byNode = new Map();
  for (const k of keys) {
    const node = cluster.slots[calculateSlot(k)].join(","); // the slot's nodes, master first
    if (!byNode.has(node)) byNode.set(node, cluster.pipeline());
    byNode.get(node).sadd(k, "m");
  }
  return Promise.all([...byNode.values()].map((pipeline) => pipeline.exec()));
}
// --8<-- [end:split]

/** Two lab keys whose slots are served by different masters. */
function keysOnTwoMasters(cluster) {
  const first = keyOf("x0");
  const owner = cluster.slots[calculateSlot(first)][0];
  for (let i = 1; ; i++) {
    const other = keyOf(`x${i}`);
    if (cluster.slots[calculateSlot(other)][0] !== owner) return [first, other];
  }
}

// --8<-- [start:refused]
// Which side refused an attempt: the masters' CROSSSLOT replies, and how many of its `command`s they received.
async function refusal(masters, command, attempt) {
  const before = await Promise.all(masters.map((m) => lab.received(m)));
  const error = await failure(attempt());
  const after = await Promise.all(masters.map((m) => lab.received(m)));
  return { error, ...lab.receivedBetween(before, after, command, "CROSSSLOT") };
}
// --8<-- [end:refused]

async function failure(promise) {
  try {
    await promise;
    return "no error";
  } catch (err) {
    return String(err.message).split("\n")[0];
  }
}

lab.main(async () => {
  const s = lab.usual(EXAMPLE, process.argv.slice(2), { size: 10_000, repeat: 3 });
  const c = lab.connection(s.host, s.port, "REDIS_CLUSTER_URL");
  const redisOptions = lab.ioredisOptions(c);
  const startup = [{ host: c.host, port: c.port }];
  const options = { redisOptions, lazyConnect: true, enableOfflineQueue: true };
  const cluster = new Redis.Cluster(startup, options);
  const auto = new Redis.Cluster(startup, { ...options, enableAutoPipelining: true });
  const report = new lab.Report(s)
    .client("ioredis", lab.versionOf("ioredis"))
    .client("cluster-key-slot", lab.versionOf("cluster-key-slot"));
  const masters = [];
  const keys = Array.from({ length: s.size }, (_, i) => keyOf(i));
  const dropKeys = async () => {
    for (const m of masters) await lab.deletePattern(m, lab.key("ch10", "cluster", "*"));
  };
  try {
    await cluster.connect();
    await auto.connect();
    for (const node of cluster.nodes("master")) {
      const m = new Redis(lab.ioredisOptions({ ...c, host: node.options.host, port: node.options.port }));
      await m.connect();
      await lab.requireLabOnly(m, `${node.options.host}:${node.options.port}`);
      masters.push(m);
    }
    masters.sort((a, b) => a.options.port - b.options.port);
    masters.forEach((m, i) => report.fact(`node${i}`, `${m.options.host}:${m.options.port}`));
    report.header(`${s.size} SADDs on a cluster of ${masters.length} masters`);

    // One pipeline of every key: ioredis checks the slots before sending anything.
    const before = await Promise.all(masters.map((m) => lab.counters(m)));
    const all = cluster.pipeline();
    for (const k of keys) all.sadd(k, "m");
    const whole = await refusal(masters, "SADD", () => all.exec());
    report.fact("pipeline_error", whole.error);
    const after = await Promise.all(masters.map((m) => lab.counters(m)));
    const ran = before.map((b, i) => lab.between(b, after[i]).calls.SADD || 0).reduce((a, b) => a + b, 0);
    report.fact("pipeline_error_sadds_run", ran);
    report.fact("pipeline_error_sadds_received", whole.commands);

    // A cross-slot MGET: alone (sent to the first key's master), in a pipeline, auto-pipelined.
    const [a, b] = keysOnTwoMasters(cluster);
    const attempts = {
      mget_cross_slot: () => cluster.mget(a, b),
      mget_cross_slot_pipeline: () => cluster.pipeline().mget(a, b).exec(),
      mget_cross_slot_auto: () => auto.mget(a, b),
    };
    for (const [name, attempt] of Object.entries(attempts)) {
      const r = await refusal(masters, "MGET", attempt);
      report.fact(`${name}_error`, r.error);
      report.fact(`${name}_server_errors`, r.errors);
      report.fact(`${name}_mgets_received`, r.commands);
    }
    const tagged = [lab.key("ch10", "cluster", "{user1}", "a"), lab.key("ch10", "cluster", "{user1}", "b")];
    report.fact("mget_hash_tag_replies", (await cluster.mget(...tagged)).length);

    const tasks = {
      one_by_one: async () => {
        for (const k of keys) await cluster.sadd(k, "m");
      },
      node_pipelines: () => nodePipelines(cluster, keys),
      auto: () => Promise.all(keys.map((k) => auto.sadd(k, "m"))),
    };
    const perNode = {};
    const timed = await lab.interleaved(tasks, {
      repeat: s.repeat,
      warmup: s.warmup,
      reset: async (name) => {
        await dropKeys();
        perNode[name] ??= [];
        perNode[name].push(await Promise.all(masters.map((m) => lab.counters(m))));
      },
      check: async (name) => {
        const start = perNode[name].pop();
        const deltas = await Promise.all(masters.map(async (m, i) => lab.between(start[i], await lab.counters(m))));
        perNode[name].push(deltas);
        const added = deltas.reduce((sum, d) => sum + (d.calls.SADD || 0), 0);
        if (added < s.size) throw new Error(`${name}: the masters ran ${added} SADDs of ${s.size}`);
      },
    });
    for (const [name, timing] of Object.entries(timed)) {
      // The samples' per-master deltas (warm-up ones first: keep the recorded ones at the end).
      const samples = perNode[name].slice(-timing.wall.length);
      const med = (pick) => masters.map((_, i) => lab.median(samples.map((d) => pick(d[i]))));
      const sadds = med((d) => d.calls.SADD || 0);
      const reads = med((d) => d.reads);
      sadds.forEach((n, i) => report.fact(`${name}_node${i}_commands`, n));
      reads.forEach((n, i) => report.fact(`${name}_node${i}_reads`, n));
      const fields = {
        client: "ioredis",
        mode: name,
        workload: "sadd",
        masters: masters.length,
        masters_used: sadds.filter((n) => n > 0).length,
        reads: reads.reduce((x, y) => x + y, 0),
        commands: sadds.reduce((x, y) => x + y, 0),
      };
      report.add(name, fields, s.size, timing);
    }
    report.paired(Object.keys(tasks));
  } finally {
    await dropKeys().catch(() => {});
    for (const m of masters) m.disconnect();
    cluster.disconnect();
    auto.disconnect();
  }
  report.finish();
});
