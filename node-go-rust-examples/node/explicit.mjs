// Chapter 10, Node.js: explicit pipelines. Chapter 1's PINGs and chapter 3's SADD job (N SADDs to
// N distinct keys, one member each) in every way node-redis and ioredis offer, timed in interleaved
// rounds (A B C ... A B C ...) after a warm-up round:
//   node-redis  one_by_one        await each command before sending the next (the baseline);
//               promise_all       N single commands, then Promise.all: node-redis writes its queue
//                                 from setImmediate, corked, until the socket needs to drain (the
//                                 rest on 'drain');
//               multi_exec        multi().exec(): MULTI, the N commands, EXEC (a transaction);
//               exec_as_pipeline  multi().execAsPipeline(): the same commands, no MULTI/EXEC;
//   ioredis     one_by_one        await each;
//               promise_all       N single commands, then Promise.all, auto-pipelining off (as it is
//                                 by default): each command is its own socket write;
//               pipeline_exec     pipeline().exec().
// Around each recorded sample the server's INFO gives the reads it did and the commands it ran.
//
// Modes are "<workload>_<client>_<mode>", e.g. ping_noderedis_promise_all; read their fields, not
// their names: client ("node-redis", "ioredis"), mode (above), workload ("ping", "sadd"), reads
// (the server's total_reads_processed per sample), commands (total_commands_processed per sample).
// "wire" has the server's calls per command per sample (INFO commandstats).
//
//   npm ci && node explicit.mjs [host] [port] [size] [repeat] [warmup] [workloads]
//   e.g.  node explicit.mjs 127.0.0.1 6379 10000 3 1 ping,sadd
// (user, password and TLS from REDIS_URL; keys under pipelab:ch10:, deleted at the end)

import { createClient } from "redis";
import Redis from "ioredis";

import * as lab from "./lab.mjs";

const EXAMPLE = "ch10-explicit";
const WORKLOADS = ["ping", "sadd"];

// --8<-- [start:noderedis]
// node-redis: each way of sending `n` commands made by `command(client, i)`.
const nodeRedisWays = {
  one_by_one: async (client, n, command) => {
    for (let i = 0; i < n; i++) await command(client, i);
  },
  promise_all: (client, n, command) => Promise.all(Array.from({ length: n }, (_, i) => command(client, i))),
  multi_exec: (client, n, command) => {
    const multi = client.multi();
    for (let i = 0; i < n; i++) command(multi, i);
    return multi.exec();
  },
  exec_as_pipeline: (client, n, command) => {
    const multi = client.multi();
    for (let i = 0; i < n; i++) command(multi, i);
    return multi.execAsPipeline();
  },
};
// --8<-- [end:noderedis]

// --8<-- [start:ioredis]
// ioredis: the same, with its own pipeline.
const ioredisWays = {
  one_by_one: async (client, n, command) => {
    for (let i = 0; i < n; i++) await command(client, i);
  },
  promise_all: (client, n, command) => Promise.all(Array.from({ length: n }, (_, i) => command(client, i))),
  pipeline_exec: (client, n, command) => {
    const pipeline = client.pipeline();
    for (let i = 0; i < n; i++) command(pipeline, i);
    return pipeline.exec();
  },
};
// --8<-- [end:ioredis]

// The workloads, written once for both clients (node-redis spells it sAdd, ioredis sadd).
const saddKey = (i) => lab.key("ch10", "sadd", i);
const commands = {
  ping: { noderedis: (c) => c.ping(), ioredis: (c) => c.ping() },
  sadd: { noderedis: (c, i) => c.sAdd(saddKey(i), "m"), ioredis: (c, i) => c.sadd(saddKey(i), "m") },
};

/** How many replies a way returned: arrays for all but ioredis's pipeline, which gives [err, value] pairs. */
function replies(result) {
  if (!Array.isArray(result)) return 0;
  const failed = result.find((r) => Array.isArray(r) && r[0]);
  if (failed) throw new Error(`a pipelined command failed: ${failed[0].message}`);
  return result.length;
}

lab.main(async () => {
  const s = lab.usual(EXAMPLE, process.argv.slice(2), { size: 10_000, repeat: 3 });
  const workloads = s.extra[0] ? s.extra[0].split(",") : WORKLOADS;
  const unknown = workloads.filter((w) => !WORKLOADS.includes(w));
  if (unknown.length) throw new lab.Stop(2, `${EXAMPLE}: unknown workload(s) ${unknown}; use ${WORKLOADS}.`);
  const c = lab.connection(s.host, s.port);
  const control = new Redis(lab.ioredisOptions(c));
  const ioredis = new Redis(lab.ioredisOptions(c)); // enableAutoPipelining stays false, its default
  const noderedis = createClient(lab.nodeRedisOptions(c));
  const report = new lab.Report(s)
    .client("redis", lab.versionOf("redis"))
    .client("@redis/client", lab.versionOf("@redis/client"))
    .client("ioredis", lab.versionOf("ioredis"));
  try {
    await control.connect();
    await lab.requireLabOnly(control, `${s.host}:${s.port}`);
    await ioredis.connect();
    await noderedis.connect();
    report.header(`${s.size} commands per sample, workloads ${workloads}`);
    for (const workload of workloads) {
      const tasks = {};
      const fields = {};
      for (const [mode, way] of Object.entries(nodeRedisWays)) {
        const name = `${workload}_noderedis_${mode}`;
        tasks[name] = () => way(noderedis, s.size, commands[workload].noderedis);
        fields[name] = { client: "node-redis", mode, workload };
      }
      for (const [mode, way] of Object.entries(ioredisWays)) {
        const name = `${workload}_ioredis_${mode}`;
        tasks[name] = () => way(ioredis, s.size, commands[workload].ioredis);
        fields[name] = { client: "ioredis", mode, workload };
      }
      const timed = await lab.interleaved(tasks, {
        repeat: s.repeat,
        warmup: s.warmup,
        control,
        // Every SADD sample starts from no keys, so each adds its member (and the server does the same work).
        reset: workload === "sadd" ? () => lab.deletePattern(control, lab.key("ch10", "sadd", "*")) : null,
        check: async (name, result) => {
          const got = result === undefined ? s.size : replies(result);
          if (got < s.size) throw new Error(`${name} returned ${got} replies for ${s.size} commands`);
          if (workload === "sadd" && (await control.exists(saddKey(0), saddKey(s.size - 1))) !== 2) {
            throw new Error(`${name} left the SADD keys missing`);
          }
        },
      });
      for (const [name, timing] of Object.entries(timed)) {
        const reads = lab.median(timing.server.map((x) => x.reads));
        const ran = lab.median(timing.server.map((x) => x.commands));
        report.add(name, { ...fields[name], reads, commands: ran }, s.size, timing);
      }
      report.paired(Object.keys(tasks));
    }
  } finally {
    await lab.deletePattern(control, lab.key("ch10", "sadd", "*")).catch(() => {});
    if (noderedis.isOpen) noderedis.destroy();
    ioredis.disconnect();
    control.disconnect();
  }
  report.finish();
});
