// Chapter 11, Rust: automatic pipelining, the trade-off curve. For each count of concurrent callers
// (tokio tasks), every subject below serves all of them, each caller GETting one small key under
// pipelab:ch11:rs: in a loop, awaiting each reply, for `size` milliseconds per sample:
//
//   redis-rs  multiplexed  ONE MultiplexedConnection, cloned into every task: the clones queue their
//                          commands for one driver task, which writes all it finds queued before it
//                          flushes, so overlapping callers share writes and the server's reads;
//   redis-rs  manager      one ConnectionManager, cloned: the same kind of connection behind a handle
//                          that reconnects by itself;
//   fred      client       one fred Client: fred 10 pipelines every client's commands across tasks (its
//                          auto_pipeline switch was removed in 10.0.0), flushing when no command is queued
//                          behind the one it wrote or after max_feed_count (200) unflushed commands;
//   fred      pool         fred's ExclusivePool of one client per caller (as many as the largest count),
//                          each lent to one GET at a time: no caller's command waits in another's pipeline.
//
// With `nodelay` set to `both` the subjects are instead the multiplexed connection and the fred client
// each twice: at the client's default TCP_NODELAY and with TCP_NODELAY set on. Each subject's
// TCP_NODELAY is read back from its sockets (getsockopt) into the fact <client>_<tag>_tcp_nodelay.
//
// The tokio runtime has as many worker threads as CPUs this process may run on (one under the
// harness, which pins it). The modes of one caller count take turns round by round after `warmup`
// rounds (of half-length samples, thrown away). A sample is bounded by time; its seconds are rescaled
// to the mode's mean operations per sample (the `ops` it reports), so every sample of a mode times the
// same work. Around each sample the server's INFO gives its reads and commands, CLIENT LIST the
// subject's connections (each subject names its own, pipelab-ch11-<client>-<tag>).
//
// Modes are <client>_<tag>_c<callers> (redisrs_multiplexed_c16, fred_pool_c256); fields: client,
// mode, callers, rtt_ms (as passed), p50_us and p99_us (per GET, over the samples), reads and commands
// (per sample), cmds_per_read, connections, cpu_us_per_op (this process's CPU per GET),
// server_cpu_us_per_op (the server's, INFO cpu), worker_threads, and each sample's own p50, p99, CPU
// per GET, commands per read and server CPU per GET in p50_us_rounds, p99_us_rounds,
// cpu_us_per_op_rounds, cmds_per_read_rounds, server_cpu_us_per_op_rounds.
//
//   auto [host] [port] [sampleMs] [repeat] [warmup] [callers] [rttMs] [valueBytes] [nodelay: default|both]
//   e.g. (in node-go-rust-examples/rust)
//   cargo run --release --bin auto -- 127.0.0.1 6379 150 2 1 1,4,16,64,256 0 16

use std::time::{Duration, Instant};

use fred::clients::ExclusivePool;
use fred::prelude::{Builder, ClientInterface, ClientLike, KeysInterface, TcpConfig};
use pipelab_rust as lab;
use redis::aio::{ConnectionManager, MultiplexedConnection};
use redis::io::tcp::TcpSettings;
use redis::AsyncCommands;
use serde_json::json;
use std::future::Future;

const EXAMPLE: &str = "ch11-rust-auto";

/// One client in one mode: how its callers reach Redis, and the name its connections carry.
/// `tag` names its modes in the result; `mode` is as printed.
struct Subject {
    client: &'static str,
    mode: &'static str,
    tag: &'static str,
    caller: Caller,
    /// TCP_NODELAY on its sockets, as the kernel has it
    nodelay: String,
}

impl Subject {
    fn slug(&self) -> String {
        format!("{}_{}", self.client.replace('-', ""), self.tag)
    }

    fn conn(&self) -> String {
        conn_name(self.client, self.tag)
    }
}

fn conn_name(client: &str, tag: &str) -> String {
    format!("pipelab-ch11-{}-{tag}", client.replace('-', ""))
}

// --8<-- [start:clients]
/// What each caller task holds: a clone of the one connection, manager or client, or of the pool's
/// handle. Every clone reaches the same connection(s).
#[derive(Clone)]
enum Caller {
    Multiplexed(MultiplexedConnection),
    Manager(ConnectionManager),
    Fred(fred::clients::Client),
    FredPool(ExclusivePool),
}

impl Caller {
    async fn get(&mut self, key: &str) -> Result<Vec<u8>, String> {
        match self {
            Caller::Multiplexed(c) => c.get(key).await.map_err(|e| e.to_string()),
            Caller::Manager(c) => c.get(key).await.map_err(|e| e.to_string()),
            Caller::Fred(c) => c.get(key).await.map_err(|e| e.to_string()),
            // a client of the caller's own for this GET, back in the pool when the guard drops
            Caller::FredPool(p) => p.acquire().await.get(key).await.map_err(|e| e.to_string()),
        }
    }
}

async fn setname(c: &mut impl redis::aio::ConnectionLike, name: &str) -> redis::RedisResult<()> {
    redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg(name)
        .exec_async(c)
        .await
}

async fn redis_rs(login: &lab::Login, host: &str, port: u16) -> redis::RedisResult<Vec<Subject>> {
    let client = redis::Client::open(login.info(host, port))?;
    // one connection for all the callers: each clone hands its command to the connection's driver task
    let (mut multiplexed, nodelay) =
        opened(port, client.get_multiplexed_async_connection()).await?;
    setname(&mut multiplexed, &conn_name("redis-rs", "multiplexed")).await?;
    let caller = Caller::Multiplexed(multiplexed);
    let mode = "multiplexed connection";
    let mut subs = vec![subject("redis-rs", mode, "multiplexed", caller, nodelay)];
    // the same, behind a handle that opens a new connection when this one drops (which would come
    // back unnamed: none drops here)
    let (mut manager, nodelay) = opened(port, client.get_connection_manager()).await?;
    setname(&mut manager, &conn_name("redis-rs", "manager")).await?;
    let caller = Caller::Manager(manager);
    subs.push(subject(
        "redis-rs",
        "ConnectionManager",
        "manager",
        caller,
        nodelay,
    ));
    Ok(subs)
}

/// redis-rs's multiplexed connection twice: with its default TCP settings and with TCP_NODELAY on.
async fn redis_rs_nodelay(
    login: &lab::Login,
    host: &str,
    port: u16,
) -> redis::RedisResult<Vec<Subject>> {
    let mut subs = Vec::new();
    for (tag, mode, on) in [
        ("multiplexed", "multiplexed connection", None),
        (
            "multiplexed_nodelay",
            "multiplexed, TCP_NODELAY on",
            Some(true),
        ),
    ] {
        let mut info = login.info(host, port);
        if let Some(on) = on {
            info = info.set_tcp_settings(TcpSettings::default().set_nodelay(on));
        }
        let client = redis::Client::open(info)?;
        let (mut c, nodelay) = opened(port, client.get_multiplexed_async_connection()).await?;
        setname(&mut c, &conn_name("redis-rs", tag)).await?;
        subs.push(subject(
            "redis-rs",
            mode,
            tag,
            Caller::Multiplexed(c),
            nodelay,
        ));
    }
    Ok(subs)
}

fn subject(
    client: &'static str,
    mode: &'static str,
    tag: &'static str,
    caller: Caller,
    nodelay: String,
) -> Subject {
    Subject {
        client,
        mode,
        tag,
        caller,
        nodelay,
    }
}

/// What `open` opened, with TCP_NODELAY as read back from the sockets it opened to `port`.
async fn opened<T, E>(
    port: u16,
    open: impl Future<Output = Result<T, E>>,
) -> Result<(T, String), E> {
    let before = lab::sockets_to(port);
    let got = open.await?;
    Ok((got, lab::nodelay_since(port, &before)))
}

async fn fred(
    login: &lab::Login,
    host: &str,
    port: u16,
    callers: usize,
) -> Result<Vec<Subject>, fred::error::Error> {
    // fred's defaults: every command goes through the client's one routing task and connection
    let (client, nodelay) = fred_client(login, host, port, "client", None).await?;
    let mut subs = vec![subject(
        "fred",
        "one client",
        "client",
        Caller::Fred(client),
        nodelay,
    )];
    // fred 10 cannot switch pipelining off; a client per caller, lent to one GET at a time, keeps
    // every caller's commands apart
    let pool = Builder::from_config(login.fred_config(host, port)).build_exclusive_pool(callers)?;
    let ((), nodelay) = opened(port, async { pool.init().await.map(drop) }).await?;
    for c in pool.clients() {
        c.lock()
            .await
            .client_setname(conn_name("fred", "pool"))
            .await?;
    }
    subs.push(subject(
        "fred",
        "ExclusivePool",
        "pool",
        Caller::FredPool(pool),
        nodelay,
    ));
    Ok(subs)
}

/// One fred client, named for `tag`; `nodelay` Some sets TCP_NODELAY (None keeps the OS default).
async fn fred_client(
    login: &lab::Login,
    host: &str,
    port: u16,
    tag: &str,
    nodelay: Option<bool>,
) -> Result<(fred::clients::Client, String), fred::error::Error> {
    let mut builder = Builder::from_config(login.fred_config(host, port));
    builder.with_connection_config(|c| {
        c.tcp = TcpConfig {
            nodelay,
            ..Default::default()
        }
    });
    let client = builder.build()?;
    let ((), seen) = opened(port, async { client.init().await.map(drop) }).await?;
    client.client_setname(conn_name("fred", tag)).await?;
    Ok((client, seen))
}

/// fred's one client twice: with its default TCP settings and with TCP_NODELAY on.
async fn fred_nodelay(
    login: &lab::Login,
    host: &str,
    port: u16,
) -> Result<Vec<Subject>, fred::error::Error> {
    let mut subs = Vec::new();
    for (tag, mode, on) in [
        ("client", "one client", None),
        ("client_nodelay", "one client, TCP_NODELAY on", Some(true)),
    ] {
        let (client, seen) = fred_client(login, host, port, tag, on).await?;
        subs.push(subject("fred", mode, tag, Caller::Fred(client), seen));
    }
    Ok(subs)
}
// --8<-- [end:clients]

// --8<-- [start:callers]
/// Runs `n` tasks that GET `key` one at a time until `d` has passed; each operation's latency in
/// microseconds, per caller, and the wall time until the last reply.
async fn callers(
    caller: &Caller,
    n: usize,
    d: Duration,
    key: &str,
) -> Result<(Vec<Vec<f64>>, f64), String> {
    let start = Instant::now();
    let deadline = start + d;
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (mut caller, key) = (caller.clone(), key.to_string());
            tokio::spawn(async move {
                let mut lat = Vec::new();
                let mut t0 = Instant::now();
                while t0 < deadline {
                    caller.get(&key).await?;
                    let t1 = Instant::now();
                    lat.push((t1 - t0).as_nanos() as f64 / 1e3);
                    t0 = t1;
                }
                Ok::<_, String>(lat)
            })
        })
        .collect();
    let mut lat = Vec::with_capacity(n);
    for task in tasks {
        lat.push(task.await.map_err(|e| e.to_string())??);
    }
    Ok((lat, start.elapsed().as_secs_f64()))
}
// --8<-- [end:callers]

/// One mode's samples at one caller count, and each sample's own figures, so that the harness can
/// give each figure its interval.
#[derive(Default)]
struct Acc {
    wall: Vec<f64>,
    cpu: Vec<f64>,
    warm: Vec<f64>,
    ops: Vec<usize>,
    lat: Vec<Vec<f64>>,
    tally: lab::Tally,
    conns: usize,
    p50s: Vec<f64>,
    p99s: Vec<f64>,
    cpu_per_op: Vec<f64>,
    cpr: Vec<f64>,
    srv_cpu: Vec<f64>,
}

fn unlink(control: &mut redis::Connection, key: &str) {
    if let Err(e) = redis::cmd("UNLINK").arg(key).exec(control) {
        lab::stop(1, format!("UNLINK failed: {}.", lab::brief(&e)));
    }
}

fn main() {
    let a = lab::Args::parse(
        EXAMPLE,
        "auto [host] [port] [sampleMs] [repeat] [warmup] [callers] [rttMs] [valueBytes] [nodelay: default|both]",
        150,
        2,
    );
    let counts = lab::ints(EXAMPLE, "callers", &a.extra_or(0, "1,4,16,64,256"));
    let rtt = a.extra_or(1, "0");
    let value_bytes = lab::int(EXAMPLE, "valueBytes", &a.extra_or(2, "16"), 1);
    let both = match a.extra_or(3, "default").as_str() {
        "default" => false,
        "both" => true,
        other => lab::stop(
            2,
            format!("{EXAMPLE}: nodelay is default or both, not '{other}'."),
        ),
    };
    let rtt_ms = match rtt.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => v,
        _ => lab::stop(
            2,
            format!("{EXAMPLE}: rttMs must be a number of milliseconds, not '{rtt}'."),
        ),
    };
    // std's available_parallelism follows the CPU mask the process runs under (sched_getaffinity), so
    // the harness's taskset gives the runtime one worker thread, as it gives Go one GOMAXPROCS.
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap_or_else(|e| lab::stop(1, format!("The tokio runtime did not start: {e}.")));

    let login = lab::login_from("REDIS_URL");
    let mut control = lab::control(&a.host, a.port, &login);
    lab::require_lab_only(&mut control, &a.addr());
    let key = lab::prefix() + "rs:auto:small";
    if let Err(e) = redis::cmd("SET")
        .arg(&key)
        .arg("v".repeat(value_bytes))
        .exec(&mut control)
    {
        lab::stop(1, format!("SET failed: {}.", lab::brief(&e)));
    }

    let max_callers = counts.iter().copied().max().unwrap_or(1);
    let rs = if both {
        rt.block_on(redis_rs_nodelay(&login, &a.host, a.port))
    } else {
        rt.block_on(redis_rs(&login, &a.host, a.port))
    };
    let mut subs = rs.unwrap_or_else(|e| {
        lab::stop(
            4,
            format!("redis-rs cannot reach Redis at {}: {e}.", a.addr()),
        )
    });
    let fred = if both {
        rt.block_on(fred_nodelay(&login, &a.host, a.port))
    } else {
        rt.block_on(fred(&login, &a.host, a.port, max_callers))
    };
    subs.extend(fred.unwrap_or_else(|e| {
        lab::stop(4, format!("fred cannot reach Redis at {}: {e}.", a.addr()))
    }));
    let mut r = lab::Report::new(&a);
    r.fact("worker_threads", workers);
    r.fact("value_bytes", value_bytes);
    for s in &subs {
        r.fact(&format!("{}_tcp_nodelay", s.slug()), s.nodelay.as_str());
    }
    let listed: Vec<String> = counts.iter().map(usize::to_string).collect();
    r.header(&format!(
        "GETs of {value_bytes} bytes by {} callers, {} ms per sample, RTT {rtt} ms",
        listed.join(", "),
        a.size
    ));
    let sample = Duration::from_millis(a.size as u64);

    for &n in &counts {
        let mut got: Vec<Acc> = subs.iter().map(|_| Acc::default()).collect();
        for round in 0..a.warmup + a.repeat {
            for (s, m) in subs.iter().zip(got.iter_mut()) {
                // a warm-up sample, thrown away, opens the pool's connections and starts the tasks
                let d = if round < a.warmup { sample / 2 } else { sample };
                let before = lab::snapshot(&mut control);
                let c0 = lab::cpu_seconds();
                let run = rt.block_on(callers(&s.caller, n, d, &key));
                let cpu = lab::cpu_seconds() - c0;
                let (lat, wall) = run.unwrap_or_else(|e| {
                    unlink(&mut control, &key);
                    lab::stop(
                        1,
                        format!("{} {} with {n} callers failed: {e}.", s.client, s.mode),
                    )
                });
                if round < a.warmup {
                    m.warm.push(wall);
                    continue;
                }
                let delta = lab::snapshot(&mut control).since(&before);
                m.tally.add(&delta);
                m.conns = m.conns.max(lab::connections(&mut control, &s.conn()));
                let ops: usize = lat.iter().map(Vec::len).sum();
                let this = lab::sorted(&lat);
                m.p50s.push(lab::percentile(&this, 50.0));
                m.p99s.push(lab::percentile(&this, 99.0));
                m.cpu_per_op.push(cpu / ops.max(1) as f64 * 1e6);
                m.cpr
                    .push(delta.commands as f64 / delta.reads.max(1) as f64);
                m.srv_cpu.push(delta.cpu / ops.max(1) as f64 * 1e6);
                m.wall.push(wall);
                m.cpu.push(cpu);
                m.ops.push(ops);
                m.lat.extend(lat);
            }
        }
        let mut group = Vec::new();
        for (s, m) in subs.iter().zip(got) {
            let mode = format!("{}_c{n}", s.slug());
            let total: usize = m.ops.iter().sum();
            let cpu_total: f64 = m.cpu.iter().sum();
            let ops = (total / m.ops.len().max(1)).max(1);
            // the time this sample's rate takes for the mode's mean operations
            let wall = m
                .wall
                .iter()
                .zip(&m.ops)
                .map(|(w, o)| w * ops as f64 / (*o).max(1) as f64)
                .collect();
            let (commands, reads, calls) = m.tally.per_sample();
            let lat = lab::sorted(&m.lat);
            r.wire.insert(mode.clone(), calls);
            let fields = json!({
                "client": s.client, "mode": s.mode, "callers": n, "rtt_ms": rtt_ms,
                "p50_us": lab::percentile(&lat, 50.0), "p99_us": lab::percentile(&lat, 99.0),
                "reads": reads, "commands": commands,
                "cmds_per_read": commands as f64 / reads.max(1) as f64,
                "connections": m.conns, "cpu_us_per_op": cpu_total / total.max(1) as f64 * 1e6,
                "server_cpu_us_per_op": m.tally.sum.cpu / total.max(1) as f64 * 1e6,
                "worker_threads": workers,
                "p50_us_rounds": m.p50s, "p99_us_rounds": m.p99s, "cpu_us_per_op_rounds": m.cpu_per_op,
                "cmds_per_read_rounds": m.cpr, "server_cpu_us_per_op_rounds": m.srv_cpu,
            });
            let fields = fields.as_object().cloned().unwrap_or_default();
            r.mode(&mode, ops, wall, m.cpu, m.warm, fields);
            group.push(mode);
        }
        r.pair(&group);
    }

    rt.block_on(async {
        for s in &subs {
            // the redis-rs connections close when dropped; fred's clients are told to QUIT
            let quit = match &s.caller {
                Caller::Fred(c) => c.quit().await,
                Caller::FredPool(p) => p.quit().await,
                _ => Ok(()),
            };
            if let Err(e) = quit {
                eprintln!("{} {}: QUIT failed: {e}.", s.client, s.mode);
            }
        }
    });
    drop(subs);
    unlink(&mut control, &key);
    r.finish();
}
