//! Chapter 11, Rust: explicit pipelines with redis-rs's synchronous `redis::Connection`. Chapter
//! 1's workload (`size` PINGs) and chapter 3's SADD job (`size` SADDs, one member each to a
//! distinct key under pipelab:ch11:rs:sadd:), each sent three ways:
//!
//!     one_by_one  each command's reply read before the next command is sent;
//!     pipeline    redis::pipe() holding every command, sent as one query;
//!     atomic      redis::pipe().atomic(), the same inside MULTI/EXEC.
//!
//! The modes of a workload take turns round by round (A B C, A B C, ...) after `warmup` rounds; the
//! SADD keys are unlinked before each sample, so every SADD adds its member to an empty key. Around
//! each sample the server's INFO gives the commands it ran and the reads it made.
//!
//! Modes are redisrs_<workload>_<mode>; fields: client (redis-rs), mode (one_by_one, pipeline,
//! atomic), workload (ping, sadd), commands and reads (the server's, per sample).
//!
//!     explicit [host] [port] [size] [repeat] [warmup] [workloads]
//!     e.g. (in node-go-rust-examples/rust)
//!     cargo run --release --bin explicit -- 127.0.0.1 6379 10000 3 1 ping,sadd

use std::time::Instant;

use pipelab_rust as lab;
use redis::{Cmd, Connection, RedisResult};
use serde_json::json;

const EXAMPLE: &str = "ch11-rust-explicit";
const USAGE: &str = "explicit [host] [port] [size] [repeat] [warmup] [workloads: ping,sadd]";

/// What each mode sends: `n` PINGs, or one SADD to each of `keys`.
struct Workload {
    name: &'static str,
    n: usize,
    keys: Vec<String>,
}

impl Workload {
    /// The i-th command.
    fn command(&self, i: usize) -> Cmd {
        match self.keys.get(i) {
            Some(key) => Cmd::sadd(key, "member"),
            None => Cmd::ping(),
        }
    }
}

// --8<-- [start:one_by_one]
fn one_by_one(c: &mut Connection, work: &Workload) -> RedisResult<()> {
    for i in 0..work.n {
        work.command(i).exec(c)?; // waits for this reply before sending the next command
    }
    Ok(())
}
// --8<-- [end:one_by_one]

// --8<-- [start:pipeline]
fn pipeline(c: &mut Connection, work: &Workload) -> RedisResult<()> {
    let mut pipe = redis::pipe();
    for i in 0..work.n {
        pipe.add_command(work.command(i));
    }
    pipe.exec(c) // every command out, then every reply read
}
// --8<-- [end:pipeline]

// --8<-- [start:atomic]
fn atomic(c: &mut Connection, work: &Workload) -> RedisResult<()> {
    let mut pipe = redis::pipe();
    pipe.atomic(); // MULTI first, EXEC last: EXEC's one reply holds every command's
    for i in 0..work.n {
        pipe.add_command(work.command(i));
    }
    pipe.exec(c)
}
// --8<-- [end:atomic]

type Mode = (
    &'static str,
    fn(&mut Connection, &Workload) -> RedisResult<()>,
);
const MODES: [Mode; 3] = [
    ("one_by_one", one_by_one),
    ("pipeline", pipeline),
    ("atomic", atomic),
];

/// One mode's samples: wall and CPU seconds, the warm-up's seconds, the server's counts.
#[derive(Clone, Default)]
struct Samples {
    wall: Vec<f64>,
    cpu: Vec<f64>,
    warm: Vec<f64>,
    tally: lab::Tally,
}

/// Deletes keys in batches of 1,000, one UNLINK per batch.
fn unlink(control: &mut Connection, keys: &[String]) {
    for batch in keys.chunks(1000) {
        if let Err(e) = redis::cmd("UNLINK").arg(batch).exec(control) {
            lab::stop(1, format!("UNLINK failed: {}.", lab::brief(&e)));
        }
    }
}

fn main() {
    let a = lab::Args::parse(EXAMPLE, USAGE, 10_000, 3);
    let mut works = Vec::new();
    for name in a.extra_or(0, "ping,sadd").split(',') {
        let (name, keys) = match name {
            "ping" => ("ping", Vec::new()),
            "sadd" => (
                "sadd",
                (0..a.size)
                    .map(|i| format!("{}rs:sadd:{i}", lab::prefix()))
                    .collect(),
            ),
            _ => lab::stop(
                2,
                format!("{EXAMPLE}: workloads are ping and/or sadd, not '{name}'."),
            ),
        };
        works.push(Workload {
            name,
            n: a.size,
            keys,
        });
    }
    let login = lab::login_from("REDIS_URL");
    let mut control = lab::control(&a.host, a.port, &login);
    lab::require_lab_only(&mut control, &a.addr());
    let info = login.info(&a.host, a.port);
    // read back from the socket redis-rs opens, not assumed: whether it sends small writes at once
    let before = lab::sockets_to(a.port);
    let mut client = redis::Client::open(info)
        .and_then(|c| c.get_connection())
        .unwrap_or_else(|e| {
            lab::stop(
                4,
                format!(
                    "redis-rs cannot reach Redis at {}: {}.",
                    a.addr(),
                    lab::brief(&e)
                ),
            )
        });

    let nodelay = lab::nodelay_since(a.port, &before);
    let mut r = lab::Report::new(&a);
    r.header(&format!(
        "{} commands per sample, redis-rs's synchronous Connection",
        a.size
    ));
    r.fact("tcp_nodelay", nodelay);
    for work in &works {
        let mut samples = vec![Samples::default(); MODES.len()];
        for round in 0..a.warmup + a.repeat {
            for ((mode, run), s) in MODES.iter().zip(&mut samples) {
                unlink(&mut control, &work.keys);
                let before = lab::snapshot(&mut control);
                let (c0, t0) = (lab::cpu_seconds(), Instant::now());
                let done = run(&mut client, work);
                let (seconds, cpu) = (t0.elapsed().as_secs_f64(), lab::cpu_seconds() - c0);
                if let Err(e) = done {
                    unlink(&mut control, &work.keys);
                    lab::stop(
                        1,
                        format!("redis-rs {} {mode} failed: {}.", work.name, lab::brief(&e)),
                    );
                }
                if round < a.warmup {
                    s.warm.push(seconds);
                    continue;
                }
                s.tally.add(&lab::snapshot(&mut control).since(&before));
                s.wall.push(seconds);
                s.cpu.push(cpu);
            }
        }
        let mut group = Vec::new();
        for ((mode, _), s) in MODES.iter().zip(samples) {
            let key = format!("redisrs_{}_{mode}", work.name);
            let (commands, reads, calls) = s.tally.per_sample();
            r.wire.insert(key.clone(), calls);
            let fields = [
                ("client", json!("redis-rs")),
                ("mode", json!(mode)),
                ("workload", json!(work.name)),
                ("commands", json!(commands)),
                ("reads", json!(reads)),
            ];
            let fields = fields
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
            r.mode(&key, a.size, s.wall, s.cpu, s.warm, fields);
            group.push(key);
        }
        r.pair(&group);
        unlink(&mut control, &work.keys);
    }
    r.finish();
}
