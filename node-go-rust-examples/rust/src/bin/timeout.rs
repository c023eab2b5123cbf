//! Chapter 11, Rust: redis-rs's response timeout against one long `redis::pipe()`. redis-rs's
//! MultiplexedConnection and ConnectionManager give every request, a whole pipeline included, 500 ms
//! by default. For each size in turn (ascending), a fresh MultiplexedConnection at its defaults sends
//! one pipeline of that many SETs (to 1,000 keys under pipelab:ch11:rs:timeout:), and so does a
//! fresh ConnectionManager at its defaults, until each has failed once. At the multiplexed
//! connection's failing size the same pipeline goes again with a response timeout of `longMs`.
//!
//! Facts: <size>_outcome ("ok" or the error) and <size>_ms (the call's wall time) per size the
//! multiplexed connection tried; first_failed and last_passed (0: none); at its failing size
//! long_outcome, long_ms and server_ran (the SETs the server ran of the pipeline that timed out);
//! manager_first_failed (0: none), with manager_outcome and manager_ms there.
//!
//!     timeout [host] [port] [sizes] [longMs]
//!     e.g. (in node-go-rust-examples/rust)
//!     cargo run --release --bin timeout -- 127.0.0.1 6379 10000,100000,1000000 30000

use std::time::{Duration, Instant};

use pipelab_rust as lab;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncConnectionConfig, Client, RedisResult};

const EXAMPLE: &str = "ch11-rust-timeout";
const USAGE: &str = "timeout [host] [port] [sizes: 10000,20000,...] [longMs]";
const KEYS: usize = 1_000;

// --8<-- [start:timeout]
/// One pipeline of `n` SETs, sent whole: redis-rs's response timeout covers the whole call.
fn sets(n: usize) -> redis::Pipeline {
    let mut pipe = redis::pipe();
    for i in 0..n {
        pipe.set(format!("{}rs:timeout:{}", lab::prefix(), i % KEYS), "v");
    }
    pipe
}

/// The MultiplexedConnection with a response timeout of its own (None: redis-rs's default, 500 ms).
async fn multiplexed(
    client: &Client,
    timeout: Option<Duration>,
) -> RedisResult<redis::aio::MultiplexedConnection> {
    let mut config = AsyncConnectionConfig::new();
    if let Some(t) = timeout {
        config = config.set_response_timeout(Some(t));
    }
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
}

/// A ConnectionManager at its defaults: 500 ms too, and 6 reconnect tries.
async fn manager(client: &Client) -> RedisResult<ConnectionManager> {
    client
        .get_connection_manager_with_config(ConnectionManagerConfig::new())
        .await
}
// --8<-- [end:timeout]

/// Sends `pipe` on `conn`: "ok" or the error in brief, and the call's milliseconds.
async fn send(pipe: &redis::Pipeline, conn: &mut impl redis::aio::ConnectionLike) -> (String, f64) {
    let t0 = Instant::now();
    let got: RedisResult<()> = pipe.exec_async(conn).await;
    let ms = lab::ms(t0.elapsed());
    (got.err().map_or("ok".to_string(), |e| lab::brief(&e)), ms)
}

fn opened<T>(got: RedisResult<T>, a: &lab::Args) -> T {
    got.unwrap_or_else(|e| {
        lab::stop(
            4,
            format!(
                "redis-rs cannot reach Redis at {}: {}.",
                a.addr(),
                lab::brief(&e)
            ),
        )
    })
}

/// The SETs the server has run so far (INFO commandstats).
fn sets_run(control: &mut redis::Connection) -> i64 {
    lab::snapshot(control)
        .calls
        .get("SET")
        .copied()
        .unwrap_or(0)
}

/// Waits until the server dropped the connection a timed-out call left (its SETs no longer grow).
fn settle(control: &mut redis::Connection) {
    let mut last = -1;
    while last != sets_run(control) {
        last = sets_run(control);
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[tokio::main]
async fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if matches!(argv.first().map(String::as_str), Some("-h" | "--help")) {
        println!("usage: {USAGE}");
        return;
    }
    let text =
        |i: usize, fallback: &str| argv.get(i).cloned().unwrap_or_else(|| fallback.to_string());
    let a = lab::Args {
        example: EXAMPLE.to_string(),
        host: text(0, "127.0.0.1"),
        port: lab::port(EXAMPLE, "port", &text(1, "6379")),
        size: 0,
        repeat: 1,
        warmup: 0,
        extra: Vec::new(),
    };
    let sizes = lab::ints(
        EXAMPLE,
        "sizes",
        &text(2, "10000,20000,50000,100000,200000,500000,1000000"),
    );
    if sizes.windows(2).any(|w| w[0] >= w[1]) {
        lab::stop(
            2,
            format!("{EXAMPLE}: sizes must grow, not '{}'.", text(2, "")),
        );
    }
    let long = Duration::from_millis(lab::int(EXAMPLE, "longMs", &text(3, "30000"), 1) as u64);
    let login = lab::login_from("REDIS_URL");
    let mut control = lab::control(&a.host, a.port, &login);
    lab::require_lab_only(&mut control, &a.addr());
    let client = opened(Client::open(login.info(&a.host, a.port)), &a);
    let mut r = lab::Report::new(&a);
    r.header(
        "one pipeline of SETs per size, growing until redis-rs's default response timeout fails it",
    );
    // the multiplexed connection and the manager take turns at each size until each has failed once
    let (mut first_failed, mut last_passed, mut manager_failed) = (0, 0, 0);
    for &n in &sizes {
        let pipe = sets(n);
        if first_failed == 0 {
            let mut conn = opened(multiplexed(&client, None).await, &a);
            let before = sets_run(&mut control);
            let (outcome, ms) = send(&pipe, &mut conn).await;
            drop(conn);
            r.fact(&format!("{n}_outcome"), outcome.as_str());
            r.fact(&format!("{n}_ms"), ms);
            if outcome == "ok" {
                last_passed = n;
            } else {
                first_failed = n;
                settle(&mut control);
                r.fact("server_ran", sets_run(&mut control) - before);
                let mut conn = opened(multiplexed(&client, Some(long)).await, &a);
                let (outcome, ms) = send(&pipe, &mut conn).await;
                r.fact("long_outcome", outcome.as_str());
                r.fact("long_ms", ms);
            }
        }
        if manager_failed == 0 {
            let mut m = opened(manager(&client).await, &a);
            let (outcome, ms) = send(&pipe, &mut m).await;
            drop(m);
            if outcome != "ok" {
                manager_failed = n;
                r.fact("manager_outcome", outcome.as_str());
                r.fact("manager_ms", ms);
                settle(&mut control);
            }
        }
        if first_failed > 0 && manager_failed > 0 {
            break;
        }
    }
    r.fact("manager_first_failed", manager_failed);
    r.fact("first_failed", first_failed);
    r.fact("last_passed", last_passed);
    r.fact("long_timeout_ms", long.as_millis() as u64);
    let keys: Vec<String> = (0..KEYS)
        .map(|i| format!("{}rs:timeout:{i}", lab::prefix()))
        .collect();
    if let Err(e) = redis::cmd("UNLINK").arg(&keys).exec(&mut control) {
        lab::stop(1, format!("UNLINK failed: {}.", lab::brief(&e)));
    }
    r.finish();
}
