//! Chapter 11, Rust: the cluster pipeline of redis-rs (its async ClusterConnection) and fred (a
//! clustered Client) on chapter 5's Redis Cluster, seen in every master's INFO (masters by port).
//! host and port name one master; REDIS_CLUSTER_URL, else REDIS_URL, gives user and password.
//! redis-rs's async connection sends a pipeline whole to ONE node and refuses keys of different
//! slots, so where it must pipeline across masters the caller splits it, a pipe per master; its sync
//! ClusterConnection's cluster_pipe() splits by node itself (seen once in split). Scenarios:
//!   split: n SETs to pipelab:ch11:cluster:<i>, one by one and pipelined, in turns; facts on one
//!     call of each client's own pipeline, and on redis-rs's .atomic() over every master.
//!   errors: SET k1 v; INCR k2 (not a number); INCR k3; SET k4 v over three masters, or in one slot
//!     ({e}): what the caller got, what ran, the error replies counted.
//!   lost: go/failover's lost, one pipeline of n SET pipelab:ch05:lost:<i> 1, its victim master
//!     SIGKILLed 200 ms after it starts, the caller waited for at most wait-ms.
//!
//!   cluster host port split [n] [repeat] [warmup] | errors
//!   cluster host port lost <redisrs|fred> <victim-port> <victim-pid> <n> <wait-ms>
//!   e.g. (in node-go-rust-examples/rust)  cargo run --release --bin cluster 127.0.0.1 7000 split

use std::collections::BTreeMap;
use std::fmt::Display;
use std::future::Future;
use std::time::{Duration, Instant};

use fred::clients::Pipeline;
use fred::prelude::{Builder, Client, ClientLike, FredResult, KeysInterface, Value as FredValue};
use pipelab_rust as lab;
use pipelab_rust::masters::{discover, shares, since, snapshot, Master};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{MultipleNodeRoutingInfo, ResponsePolicy, Route, RoutingInfo};
use redis::cluster_routing::{SingleNodeRoutingInfo, SlotAddr};
use redis::{AsyncCommands, RedisResult, Value};
use serde_json::json;

const EXAMPLE: &str = "ch11-rust-cluster";
const SCENARIOS: &str = "split [n] [repeat] [warmup] | errors | lost <redisrs|fred> <victim-port> \
                         <victim-pid> <n> <wait-ms>";
const KILL_AFTER: Duration = Duration::from_millis(200);
const NAN: &str = "not-a-number";
const MODES: [&str; 3] = [
    "redisrs_cluster_one_by_one",
    "redisrs_cluster_pipeline",
    "fred_cluster_pipeline",
];

type Replies = RedisResult<Vec<Value>>;
/// What a caller saw: the call's error, and each reply's error if it gets one per command.
type Seen = (Option<String>, Option<Vec<Option<String>>>);
type Samples = (Vec<f64>, Vec<f64>, Vec<f64>, lab::Tally);

// --8<-- [start:redisrs-pipe]
async fn rs_one_by_one(conn: &mut ClusterConnection, keys: &[String]) -> RedisResult<()> {
    for k in keys {
        conn.set::<_, _, ()>(k, "v").await?;
    }
    Ok(())
}

/// The pipeline as a redis-rs user first writes it: one redis::pipe() on the cluster connection.
/// redis-rs sends it whole to one node, and refuses it when the keys' slots differ.
async fn rs_pipe(conn: &mut ClusterConnection, keys: &[String], v: &str) -> Replies {
    let mut pipe = redis::pipe();
    for k in keys {
        pipe.set(k, v);
    }
    pipe.query_async(conn).await
}
// --8<-- [end:redisrs-pipe]

// --8<-- [start:redisrs-sync]
/// The sync cluster connection's own pipeline: cluster_pipe() sends each node its commands and
/// puts the replies back in the commands' order. It has no .atomic().
fn rs_cluster_pipe(conn: &mut redis::cluster::ClusterConnection, keys: &[String]) -> Replies {
    let mut pipe = redis::cluster::cluster_pipe();
    for k in keys {
        pipe.set(k, k);
    }
    pipe.query(conn)
}
// --8<-- [end:redisrs-sync]

// --8<-- [start:redisrs-split]
/// So the caller splits it: a pipe per master (routed by its first key's slot), all sent at once.
/// Each comes back as the master replied, an error reply as a Value::ServerError.
async fn rs_split(conn: &ClusterConnection, shares: &[Vec<String>], v: &str) -> Vec<Replies> {
    let mut sends = Vec::new();
    for keys in shares {
        let mut pipe = redis::pipe();
        for k in keys {
            pipe.set(k, v);
        }
        let first = Route::with_key(&keys[0], SlotAddr::Master);
        let route = SingleNodeRoutingInfo::SpecificNode(first);
        let (mut conn, count) = (conn.clone(), keys.len());
        let send = async move { conn.route_pipeline(pipe, 0, count, route).await };
        sends.push(tokio::spawn(send));
    }
    let mut out = Vec::new();
    for send in sends {
        out.push(send.await.unwrap_or_else(|e| fail(1, "A send failed", &e)));
    }
    out
}
// --8<-- [end:redisrs-split]

// --8<-- [start:fred-pipeline]
/// fred: one pipeline; at all() or try_all() its router writes each command to its slot's master.
async fn fred_pipeline(client: &Client, keys: &[String], v: &str) -> Pipeline<Client> {
    let pipe = client.pipeline();
    for k in keys {
        queued(pipe.set(k.as_str(), v, None, None, false).await);
    }
    pipe
}
// --8<-- [end:fred-pipeline]

// --8<-- [start:lost]
/// What the caller gets back from a pipeline of SETs (split times it, lost kills a master under
/// it). redis-rs: a pipe per master, a pipe's own error standing for each of its commands.
async fn rs_sets(conn: &ClusterConnection, shares: &[Vec<String>], v: &str) -> Seen {
    let mut each = Vec::new();
    for (got, share) in rs_split(conn, shares, v).await.iter().zip(shares) {
        match got {
            Ok(values) => each.extend(values.iter().map(reply_error)),
            Err(e) => each.extend(vec![Some(lab::brief(e)); share.len()]),
        }
    }
    (each.iter().flatten().next().cloned(), Some(each))
}

/// fred's try_all: fewer results than commands means one error stands for the whole pipeline.
async fn fred_sets(client: &Client, keys: &[String]) -> Seen {
    let pipe = fred_pipeline(client, keys, "1").await;
    let each = each_error(&pipe.try_all::<FredValue>().await);
    let first = each.iter().flatten().next().cloned();
    (first, (each.len() == keys.len()).then_some(each))
}
// --8<-- [end:lost]

/// A command put in a fred pipeline: held in memory, so only a bad argument could fail it.
fn queued(done: FredResult<()>) {
    done.unwrap_or_else(|e| fail(1, "fred could not queue a command", &e))
}

/// Stops with `code` and one sentence: what failed, and the error in brief.
fn fail(code: i32, what: &str, e: &dyn Display) -> ! {
    lab::stop(code, format!("{what}: {}.", lab::brief(e)))
}

fn bad(what: &str) -> ! {
    lab::stop(2, format!("{EXAMPLE}: {what}."))
}

fn brief_err<T, E: Display>(got: &Result<T, E>) -> Option<String> {
    got.as_ref().err().map(|e| lab::brief(e))
}

fn each_error<T, E: Display>(results: &[Result<T, E>]) -> Vec<Option<String>> {
    results.iter().map(brief_err).collect()
}

fn outcome<T, E: Display>(got: &Result<T, E>) -> String {
    brief_err(got).unwrap_or("ok".to_string())
}

fn whole<T, E: Display>(got: Result<T, E>) -> Seen {
    (Some(outcome(&got)), None)
}

fn reply_error(v: &Value) -> Option<String> {
    let Value::ServerError(e) = v else {
        return None;
    };
    Some(lab::brief(e))
}

fn numbered(stem: &str, n: usize) -> Vec<String> {
    let prefix = lab::prefix();
    (0..n).map(|i| format!("{prefix}{stem}:{i}")).collect()
}

/// redis-rs's async cluster connection, every setting at its default (redis-1.8.1): 16 retries
/// (src/cluster_handling/client.rs:170), a 1 s connect timeout (src/client.rs:184, taken at
/// cluster_handling/client.rs:361-363), no response timeout, per node or overall (client.rs:364
/// and 377-378 keep the builder's None; cluster_handling/async_connection/mod.rs:1841).
async fn redisrs(a: &lab::Args, login: &lab::Login) -> ClusterConnection {
    let client = redis::cluster::ClusterClient::new(vec![login.info(&a.host, a.port)]);
    let client = client.unwrap_or_else(|e| fail(2, "redis-rs takes no such seed", &e));
    let (opened, what) = (client.get_async_connection().await, a.addr());
    opened.unwrap_or_else(|e| fail(4, &format!("redis-rs cannot reach {what}"), &e))
}

/// fred's clustered client, every setting at its default (fred-10.1.0): no reconnect policy
/// (src/types/builder.rs:75), no command timeout (0, src/types/config.rs:538), 3 attempts per
/// command (config.rs:481), a 10 s connect timeout (config.rs:478).
async fn fred(a: &lab::Args, login: &lab::Login) -> Client {
    let config = login.fred_cluster_config(&[(a.host.clone(), a.port)]);
    let client = Builder::from_config(config).build();
    let client = client.unwrap_or_else(|e| fail(2, "fred takes no such config", &e));
    let what = format!("fred cannot reach {}", a.addr());
    client.init().await.unwrap_or_else(|e| fail(4, &what, &e));
    client
}

/// Keys <stem>:<i> on different masters: the first of each share, the second of the first.
fn spread(ms: &[Master], stem: &str) -> [String; 4] {
    let g = shares(ms, &numbered(stem, 1_000));
    let pick = |m: usize, i: usize| g.get(m % g.len()).and_then(|s| s.get(i)).cloned();
    let picked = [pick(0, 0), pick(1, 0), pick(2, 0), pick(0, 1)];
    picked.map(|k| k.unwrap_or_else(|| lab::stop(1, "A master owns too few of 1,000 keys.")))
}

/// Deletes the keys through fred, which sends each UNLINK to its key's master.
async fn delete(fred: &Client, keys: &[String]) {
    let pipe = fred.pipeline();
    for k in keys {
        queued(pipe.unlink(k.as_str()).await);
    }
    let deleted = pipe.all::<()>().await;
    deleted.unwrap_or_else(|e| fail(1, "UNLINK failed", &e));
}

async fn split(r: &mut lab::Report, a: &lab::Args, cl: &mut [Master], login: &lab::Login) {
    let keys = numbered("cluster", a.size);
    let shares = shares(cl, &keys);
    let (mut rs, fred) = (redisrs(a, login).await, fred(a, login).await);
    r.header(&format!("{} SETs over {} masters", a.size, cl.len()));
    r.fact("masters", cl.len());
    let mut samples: [Samples; 3] = Default::default();
    for round in 0..a.warmup + a.repeat {
        for (m, (wall, cpu, warm, tally)) in samples.iter_mut().enumerate() {
            let before = snapshot(cl);
            let (c0, t0) = (lab::cpu_seconds(), Instant::now());
            let failed = match m {
                0 => brief_err(&rs_one_by_one(&mut rs, &keys).await),
                1 => rs_sets(&rs, &shares, "v").await.0,
                _ => brief_err(&fred_pipeline(&fred, &keys, "v").await.all::<()>().await),
            };
            let (w, c) = (t0.elapsed().as_secs_f64(), lab::cpu_seconds() - c0);
            if let Some(e) = failed {
                lab::stop(1, format!("{} failed: {e}.", MODES[m]));
            }
            if round < a.warmup {
                warm.push(w);
                continue;
            }
            wall.push(w);
            cpu.push(c);
            // the whole cluster's commands, reads and calls in this sample
            let mut sum = lab::Tally::default();
            since(cl, &before).iter().for_each(|d| sum.add(d));
            tally.add(&sum.sum);
        }
    }
    for (mode, (wall, cpu, warm, tally)) in MODES.iter().zip(samples) {
        let (commands, reads, wire) = tally.per_sample();
        r.wire.insert(mode.to_string(), wire);
        let (client, kind) = mode.split_once("_cluster_").unwrap_or_default();
        let client = client.replace("redisrs", "redis-rs");
        let fields = json!({"client": client, "mode": kind, "workload": "set",
                            "commands": commands, "reads": reads});
        let fields = fields.as_object().cloned().unwrap_or_default();
        r.mode(mode, a.size, wall, cpu, warm, fields);
    }
    r.pair(&MODES.map(str::to_string));

    // One untimed call of each client's own pipeline over all the keys: did it split, and how.
    let before = snapshot(cl);
    let got = rs_pipe(&mut rs, &keys, "w").await;
    r.fact("rs_pipeline_outcome", outcome(&got));
    node_facts(r, "rs", &since(cl, &before));
    let client = redis::cluster::ClusterClient::new(vec![login.info(&a.host, a.port)]);
    let sync = client.and_then(|c| c.get_connection());
    let mut sync =
        sync.unwrap_or_else(|e| fail(4, "redis-rs's sync cluster connection failed", &e));
    let before = snapshot(cl);
    let got = rs_cluster_pipe(&mut sync, &keys);
    r.fact("rs_sync_pipeline_outcome", outcome(&got));
    node_facts(r, "rs_sync", &since(cl, &before));
    // each key holds its own name: are the replies in the commands' order?
    let mut gets = redis::cluster::cluster_pipe();
    for k in &keys {
        gets.get(k);
    }
    let back: RedisResult<Vec<String>> = gets.query(&mut sync);
    let kept = back.ok().map(|v| v == keys);
    r.fact("rs_sync_order_kept", kept);
    let before = snapshot(cl);
    let got = fred_pipeline(&fred, &keys, "w").await.all::<()>().await;
    r.fact("fred_pipeline_outcome", outcome(&got));
    node_facts(r, "fred", &since(cl, &before));

    // GETs across the masters of keys holding their own names: do the replies keep the order?
    let order = numbered("order", 30);
    let pipe = fred.pipeline();
    for k in &order {
        queued(pipe.set(k.as_str(), k.as_str(), None, None, false).await);
    }
    let set = pipe.all::<()>().await;
    set.unwrap_or_else(|e| fail(1, "SET failed", &e));
    let mut pipe = redis::pipe();
    for k in &order {
        pipe.get(k);
    }
    let got: RedisResult<Vec<String>> = pipe.query_async(&mut rs).await;
    r.fact("rs_order_kept", got.ok().map(|v| v == order));
    let pipe = fred.pipeline();
    for k in &order {
        queued(pipe.get(k.as_str()).await);
    }
    let got: FredResult<Vec<String>> = pipe.all().await;
    r.fact("fred_order_kept", got.ok().map(|v| v == order));

    let cross = spread(cl, "crossslot");
    let before = snapshot(cl);
    // --8<-- [start:redisrs-atomic]
    let mut pipe = redis::pipe();
    pipe.atomic();
    for k in &cross[..3] {
        pipe.set(k, "v");
    }
    let got: Replies = pipe.query_async(&mut rs).await;
    // --8<-- [end:redisrs-atomic]
    let deltas = since(cl, &before);
    let multis: i64 = deltas.iter().filter_map(|d| d.calls.get("MULTI")).sum();
    r.fact("rs_atomic_crossslot_outcome", outcome(&got));
    r.fact("rs_atomic_crossslot_multis", multis);
    delete(&fred, &[&keys[..], &order, &cross].concat()).await;
}

/// Per master the SETs it ran and the reads it made for one pipeline call.
fn node_facts(r: &mut lab::Report, client: &str, deltas: &[lab::Counters]) {
    for (i, d) in deltas.iter().enumerate() {
        let sets = d.calls.get("SET").copied().unwrap_or(0);
        r.fact(&format!("{client}_node{i}_commands"), sets);
        r.fact(&format!("{client}_node{i}_reads"), d.reads);
    }
}

/// SET k1 v; INCR k2 (it holds "not-a-number": the command fails); INCR k3; SET k4 v.
fn four(k: &[String]) -> redis::Pipeline {
    let mut pipe = redis::pipe();
    pipe.set(&k[0], "v").incr(&k[1], 1);
    pipe.incr(&k[2], 1).set(&k[3], "v");
    pipe
}

// --8<-- [start:fred-errors]
/// The same four in a fred pipeline: all() gives the first error or every reply; try_all() a
/// result per command.
async fn fred_four(client: &Client, k: &[String]) -> Pipeline<Client> {
    let pipe = client.pipeline();
    queued(pipe.set(k[0].as_str(), "v", None, None, false).await);
    queued(pipe.incr(k[1].as_str()).await);
    queued(pipe.incr(k[2].as_str()).await);
    queued(pipe.set(k[3].as_str(), "v", None, None, false).await);
    pipe
}
// --8<-- [end:fred-errors]

/// How many of the good commands took effect: k1 = v, k3 = 1, k4 = v.
async fn ran(fred: &Client, k: &[String]) -> usize {
    let mut took = 0;
    for (i, want) in [(0, "v"), (2, "1"), (3, "v")] {
        let got: FredResult<Option<String>> = fred.get(k[i].as_str()).await;
        took += usize::from(got.ok().flatten().as_deref() == Some(want));
    }
    took
}

async fn errors(r: &mut lab::Report, a: &lab::Args, cl: &mut [Master], login: &lab::Login) {
    let spread = spread(cl, "errors");
    let one_slot = ["k1", "k2", "k3", "k4"].map(|n| format!("{}{{e}}:{n}", lab::prefix()));
    let (mut rs, fred) = (redisrs(a, login).await, fred(a, login).await);
    r.header("SET, INCR of a non-number, INCR, SET in one cluster pipeline");
    let (s, o) = (&spread, &one_slot);
    let cases = [("rs_plain", s), ("rs_plain_oneslot", o), ("rs_ignore", s)];
    let more = [("rs_ignore_oneslot", o), ("rs_atomic", o), ("fred_all", s)];
    for (case, k) in cases.into_iter().chain(more).chain([("fred_tryall", s)]) {
        // k1, k3 and k4 absent, k2 not a number
        delete(&fred, &[k[0].clone(), k[2].clone(), k[3].clone()]).await;
        let set: FredResult<()> = fred.set(k[1].as_str(), NAN, None, None, false).await;
        set.unwrap_or_else(|e| fail(1, "SET failed", &e));
        let before = snapshot(cl);
        let (call, each): Seen = match case.trim_end_matches("_oneslot") {
            // --8<-- [start:redisrs-errors]
            // one error reply makes the whole call an Err, the other replies dropped
            "rs_plain" => whole(four(k).query_async::<Value>(&mut rs).await),
            "rs_ignore" => {
                // ignore_errors(): the call is Ok, with one RedisResult per command
                let got: RedisResult<Vec<RedisResult<Value>>> =
                    four(k).ignore_errors().query_async(&mut rs).await;
                let each = got.as_ref().map_or(Vec::new(), |each| each_error(each));
                (Some(outcome(&got)), Some(each))
            }
            // MULTI ... EXEC on the keys' one node
            "rs_atomic" => whole(four(k).atomic().query_async::<Value>(&mut rs).await),
            // --8<-- [end:redisrs-errors]
            "fred_all" => whole(fred_four(&fred, k).await.all::<Vec<FredValue>>().await),
            _ => {
                let got = fred_four(&fred, k).await.try_all::<FredValue>().await;
                (None, Some(each_error(&got)))
            }
        };
        let deltas = since(cl, &before);
        let refused: i64 = deltas.iter().flat_map(|d| d.errors.values()).sum();
        if let Some(call) = call {
            r.fact(&format!("{case}_outcome"), call);
        }
        if let Some(each) = each {
            let failed: Vec<&String> = each.iter().flatten().collect();
            r.fact(&format!("{case}_replies_ok"), each.len() - failed.len());
            r.fact(&format!("{case}_replies_failed"), failed.len());
            let first = failed.first().map_or("", |e| e.as_str());
            r.fact(&format!("{case}_error"), first);
        }
        r.fact(&format!("{case}_ran"), ran(&fred, k).await);
        r.fact(&format!("{case}_server_errors"), refused);
    }
    delete(&fred, &[spread, one_slot].concat()).await;
}

/// A lost run's victim: the master's port, its server's pid, how long the caller is waited for.
struct Victim {
    port: u16,
    pid: libc::pid_t,
    wait: usize,
}

async fn lost(r: &mut lab::Report, a: &lab::Args, cl: &[Master], client: &str, v: &Victim) {
    let (port, pid) = (v.port, v.pid);
    if !cl.iter().any(|m| m.port == port) {
        bad(&format!("victim-port {port} is no master's port here"));
    }
    // SAFETY: signal 0 sends nothing; it asks whether the process exists and may be signalled.
    if unsafe { libc::kill(pid, 0) } != 0 {
        bad(&format!("victim-pid {pid} is no process we may signal"));
    }
    // redis-server shows its address in its title ("redis-server 127.0.0.1:7002 [cluster]"): a
    // pid whose title names other ports is not the victim's.
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let title = String::from_utf8_lossy(&raw).replace('\0', " ");
    let port_of = |w: &str| w.rsplit_once(':').and_then(|(_, p)| p.parse::<u16>().ok());
    let named: Vec<u16> = title.split_whitespace().filter_map(port_of).collect();
    if !named.is_empty() && !named.contains(&port) {
        let title = title.trim();
        bad(&format!("pid {pid} is not the server on {port}: {title}"));
    }
    let login = lab::login_from("REDIS_CLUSTER_URL");
    let root = lab::root();
    let key = |i| format!("{root}ch05:lost:{i}");
    let keys: Vec<String> = (0..a.size).map(key).collect();
    r.header(&format!("lost, {client}, {} commands", a.size));
    let what = format!("{client} could not reach every master");
    let cold = |e: &dyn Display| -> ! { fail(4, &what, e) };
    // a PING to every master first, so that every connection is open
    if client == "fred" {
        let f = fred(a, &login).await;
        for server in f.active_connections() {
            let pinged = f.with_cluster_node(server).ping::<()>(None).await;
            pinged.unwrap_or_else(|e| cold(&e));
        }
        watched(r, v, "fred, try_all", fred_sets(&f, &keys)).await;
    } else {
        let mut conn = redisrs(a, &login).await;
        let masters = MultipleNodeRoutingInfo::AllMasters;
        let every = RoutingInfo::MultiNode((masters, Some(ResponsePolicy::AllSucceeded)));
        let pinged = conn.route_command(redis::cmd("PING"), every).await;
        pinged.unwrap_or_else(|e| cold(&e));
        let (name, shares) = ("redis-rs, a pipe per master", shares(cl, &keys));
        watched(r, v, name, rs_sets(&conn, &shares, "1")).await;
    }
}

/// go/failover's lost: the pipeline starts, the victim is SIGKILLed KILL_AFTER its start, the
/// caller is waited for at most v.wait ms; facts client, outcome, replies_ok, replies_failed,
/// errors {text: count}, waited_ms, killed_after_ms.
async fn watched(r: &mut lab::Report, v: &Victim, client: &str, run: impl Future<Output = Seen>) {
    let (start, pid) = (Instant::now(), v.pid);
    let killer = tokio::spawn(async move {
        tokio::time::sleep(KILL_AFTER).await;
        // SAFETY: kill only sends a signal, to the process checked above as the victim's server.
        let killed = unsafe { libc::kill(pid, libc::SIGKILL) } == 0;
        let why = (!killed).then(std::io::Error::last_os_error);
        (start.elapsed(), why)
    });
    let wait = Duration::from_millis(v.wait as u64);
    let still = || (Some(format!("still waiting after {} ms", v.wait)), None);
    let (call, each) = tokio::time::timeout(wait, run)
        .await
        .unwrap_or_else(|_| still());
    let each = each.unwrap_or_default();
    let mut errors: BTreeMap<&String, usize> = BTreeMap::new();
    for e in each.iter().flatten() {
        *errors.entry(e).or_default() += 1;
    }
    let failed: usize = errors.values().sum();
    r.fact("client", client);
    r.fact("outcome", call.unwrap_or("ok".to_string()));
    r.fact("replies_ok", each.len() - failed);
    r.fact("replies_failed", failed);
    r.fact("errors", json!(errors));
    r.fact("waited_ms", lab::ms(start.elapsed()));
    // the kill happens even when the pipeline came back first
    match killer.await {
        Ok((after, None)) => r.fact("killed_after_ms", after.as_millis() as u64),
        Ok((_, Some(e))) => fail(1, &format!("Killing process {pid} failed"), &e),
        Err(e) => fail(1, "The killing task failed", &e),
    }
}

#[tokio::main]
async fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if matches!(argv.first().map(String::as_str), Some("-h" | "--help")) {
        println!("usage: cluster host port {SCENARIOS}");
        return;
    }
    let usage = || -> ! { bad(&format!("expected host, port and {SCENARIOS}")) };
    let (scenario, rest) = argv.split_at_checked(3).unwrap_or_else(|| usage());
    let scenario = scenario[2].as_str();
    // Every argument is checked before the first connection.
    let int = |i: usize, name: &str, low: usize| lab::int(EXAMPLE, name, &rest[i], low);
    let or = |i: usize, name, low, fallback| rest.get(i).map_or(fallback, |_| int(i, name, low));
    let (host, port) = (argv[0].clone(), lab::port(EXAMPLE, "port", &argv[1]));
    let (example, extra) = (EXAMPLE.to_string(), rest.to_vec());
    let (size, repeat, warmup) = (4, 1, 0);
    let mut a = lab::Args {
        example,
        host,
        port,
        size,
        repeat,
        warmup,
        extra,
    };
    let victim = match (scenario, rest.len()) {
        ("split", 0..=3) => {
            (a.size, a.repeat) = (or(0, "n", 1, 10_000), or(1, "repeat", 1, 3));
            a.warmup = or(2, "warmup", 0, 1);
            None
        }
        ("errors", 0) => None,
        ("lost", 5) if ["redisrs", "fred"].contains(&rest[0].as_str()) => {
            let port = lab::port(EXAMPLE, "victim-port", &rest[1]);
            let (pid, wait) = (int(2, "victim-pid", 1) as libc::pid_t, int(4, "wait-ms", 1));
            a.size = int(3, "n", 1);
            Some(Victim { port, pid, wait })
        }
        _ => usage(),
    };
    let login = lab::login_from("REDIS_CLUSTER_URL");
    let mut cl = discover(EXAMPLE, &a.host, a.port, &login);
    let mut r = lab::Report::new(&a);
    match (scenario, &victim) {
        ("split", _) => split(&mut r, &a, &mut cl, &login).await,
        ("errors", _) => errors(&mut r, &a, &mut cl, &login).await,
        (_, Some(v)) => lost(&mut r, &a, &cl, &rest[0], v).await,
        _ => {}
    }
    r.finish();
    std::process::exit(0); // at once: a client may still be dialling a dead node
}
