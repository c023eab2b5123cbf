//! The shared plumbing of chapter 11's Rust examples, as go/lab/lab.go is the Go ones': the
//! positional arguments, REDIS_URL's user, password and database, the empty-database check, the
//! server's counters (INFO), this process's CPU time, and the one PIPELAB-RESULT line the Python
//! harness reads. Exit codes: 0 ok, 1 failed, 2 bad argument, 3 foreign keys, 4 Redis unreachable.

use std::collections::BTreeMap;
use std::fmt::Display;
use std::time::Duration;

pub mod masters;
pub mod sockets;
pub use sockets::{nodelay_since, sockets_to};

use redis::IntoConnectionInfo;
use serde_json::{json, Map, Value};

/// The five usual positional arguments and whatever an example takes after them.
#[derive(Clone, Debug)]
pub struct Args {
    pub example: String,
    pub host: String,
    pub port: u16,
    pub size: usize,
    pub repeat: usize,
    pub warmup: usize,
    pub extra: Vec<String>,
}

impl Args {
    /// Reads host, port, size, repeat and warmup (defaults for the missing ones) and keeps the
    /// rest.
    pub fn parse(example: &str, usage: &str, size: usize, repeat: usize) -> Args {
        let argv: Vec<String> = std::env::args().skip(1).collect();
        if matches!(argv.first().map(String::as_str), Some("-h" | "--help")) {
            println!("usage: {usage}");
            std::process::exit(0);
        }
        let at = |i: usize| argv.get(i).map(String::as_str);
        Args {
            example: example.to_string(),
            host: at(0).unwrap_or("127.0.0.1").to_string(),
            port: at(1).map_or(6379, |t| port(example, "port", t)),
            size: at(2).map_or(size, |t| int(example, "size", t, 1)),
            repeat: at(3).map_or(repeat, |t| int(example, "repeat", t, 1)),
            warmup: at(4).map_or(1, |t| int(example, "warmup", t, 0)),
            extra: argv.iter().skip(5).cloned().collect(),
        }
    }

    pub fn addr(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The i-th argument after the usual five, or `fallback`.
    pub fn extra_or(&self, i: usize, fallback: &str) -> String {
        self.extra
            .get(i)
            .cloned()
            .unwrap_or_else(|| fallback.to_string())
    }
}

/// Ends the example with one sentence on stderr and an exit code.
pub fn stop(code: i32, msg: impl Display) -> ! {
    eprintln!("{msg}");
    std::process::exit(code)
}

/// A whole number from `low` to 10,000,000 (underscores allowed), or exit code 2 with one sentence.
pub fn int(example: &str, name: &str, text: &str, low: usize) -> usize {
    match text.trim().replace('_', "").parse::<usize>() {
        Ok(v) if (low..=10_000_000).contains(&v) => v,
        _ => stop(
            2,
            format!(
                "{example}: {name} must be a whole number from {low} to 10,000,000, not '{text}'."
            ),
        ),
    }
}

/// A comma-separated list of whole numbers from 1 ("1,4,16").
pub fn ints(example: &str, name: &str, text: &str) -> Vec<usize> {
    text.split(',')
        .map(|part| int(example, name, part, 1))
        .collect()
}

/// A TCP port, 1 to 65535, or exit code 2 with one sentence.
pub fn port(example: &str, name: &str, text: &str) -> u16 {
    match text.trim().parse::<u16>() {
        Ok(v) if v >= 1 => v,
        _ => stop(
            2,
            format!("{example}: {name} must be a whole number from 1 to 65535, not '{text}'."),
        ),
    }
}

/// What REDIS_URL (or REDIS_CLUSTER_URL) adds to host and port:
/// redis://[user[:password]@]host[:port][/db]. Unset: no AUTH, database 0. Debug leaves the
/// password out.
#[derive(Clone, Default)]
pub struct Login {
    pub user: Option<String>,
    pub password: Option<String>,
    pub db: i64,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let password = self.password.as_ref().map(|_| "<hidden>");
        f.debug_struct("Login")
            .field("user", &self.user)
            .field("password", &password)
            .field("db", &self.db)
            .finish()
    }
}

/// The login in `var` (REDIS_CLUSTER_URL falls back to REDIS_URL: one URL serves a run that reaches
/// one server or one cluster). A rediss:// URL stops with exit code 2: these examples speak plain
/// TCP.
pub fn login_from(var: &str) -> Login {
    let mut raw = std::env::var(var).unwrap_or_default();
    if var != "REDIS_URL" && raw.is_empty() {
        raw = std::env::var("REDIS_URL").unwrap_or_default();
    }
    if raw.is_empty() {
        return Login::default();
    }
    let scheme = raw.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    if scheme.as_deref() == Some("rediss") {
        stop(
            2,
            format!("{var} asks for TLS (rediss://), and the Rust examples speak plain TCP only."),
        );
    }
    // redis-rs reads the URL (percent-decoding user and password); its errors are not shown, as
    // they could quote the URL
    let parsed = match scheme.as_deref() {
        Some("redis") => raw.as_str().into_connection_info().ok(),
        _ => None,
    };
    let Some(info) = parsed else {
        stop(
            2,
            format!(
                "{var} must look like redis://[user[:password]@]host[:port][/db]; it does not."
            ),
        )
    };
    let settings = info.redis_settings();
    Login {
        user: settings.username().map(str::to_string),
        password: settings.password().map(str::to_string),
        db: settings.db(),
    }
}

impl Login {
    /// redis-rs's connection info for host:port with this login.
    pub fn info(&self, host: &str, port: u16) -> redis::ConnectionInfo {
        let mut settings = redis::RedisConnectionInfo::default().set_db(self.db);
        if let Some(user) = &self.user {
            settings = settings.set_username(user);
        }
        if let Some(password) = &self.password {
            settings = settings.set_password(password);
        }
        match redis::ConnectionAddr::Tcp(host.to_string(), port).into_connection_info() {
            Ok(info) => info.set_redis_settings(settings),
            Err(e) => stop(
                2,
                format!(
                    "{host}:{port} is not an address redis-rs takes ({}).",
                    brief(&e)
                ),
            ),
        }
    }

    /// fred's config for one server at host:port with this login.
    pub fn fred_config(&self, host: &str, port: u16) -> fred::prelude::Config {
        let database = match u8::try_from(self.db) {
            Ok(0) => None,
            Ok(db) => Some(db),
            Err(_) => stop(
                2,
                format!("fred selects databases 0 to 255, not {}.", self.db),
            ),
        };
        fred::prelude::Config {
            server: fred::prelude::ServerConfig::new_centralized(host, port),
            username: self.user.clone(),
            password: self.password.clone(),
            database,
            ..Default::default()
        }
    }

    /// fred's config for the cluster these seeds belong to (a cluster has database 0 only).
    pub fn fred_cluster_config(&self, seeds: &[(String, u16)]) -> fred::prelude::Config {
        fred::prelude::Config {
            server: fred::prelude::ServerConfig::new_clustered(seeds.to_vec()),
            username: self.user.clone(),
            password: self.password.clone(),
            ..Default::default()
        }
    }
}

/// A plain connection for the harness's own questions (INFO, SCAN, CLIENT LIST), checked with a
/// PING and named pipelab-ch11-control, or exit code 4.
pub fn control(host: &str, port: u16, login: &Login) -> redis::Connection {
    let opened = redis::Client::open(login.info(host, port))
        .and_then(|client| client.get_connection_with_timeout(Duration::from_secs(5)))
        .and_then(|mut c| {
            redis::cmd("PING").exec(&mut c)?;
            redis::cmd("CLIENT")
                .arg("SETNAME")
                .arg("pipelab-ch11-control")
                .exec(&mut c)?;
            Ok(c)
        });
    opened.unwrap_or_else(|e| {
        stop(
            4,
            format!(
                "Cannot reach Redis at {host}:{port}: {}. Start the lab's Redis (make lab) or pass \
                 host and port.",
                brief(&e)
            ),
        )
    })
}

/// Every key's start: PIPELAB_PREFIX (the harness's) or pipelab:, then the chapter's ch11:.
pub fn prefix() -> String {
    root() + "ch11:"
}

/// The lab's own key prefix without a chapter: PIPELAB_PREFIX (the harness's) or pipelab:.
pub fn root() -> String {
    std::env::var("PIPELAB_PREFIX")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "pipelab:".to_string())
}

/// Stops (exit code 3) on a database that holds a key outside the lab's prefix: the examples delete
/// what they write, and never run near someone's data.
pub fn require_lab_only(c: &mut redis::Connection, where_: &str) {
    let lab = root();
    let mut cursor = 0u64;
    loop {
        let page: redis::RedisResult<(u64, Vec<Vec<u8>>)> = redis::cmd("SCAN")
            .arg(cursor)
            .arg("COUNT")
            .arg(1000)
            .query(c);
        let (next, keys) = page.unwrap_or_else(|e| {
            stop(
                4,
                format!("Cannot scan the Redis at {where_}: {}.", brief(&e)),
            )
        });
        if let Some(key) = keys.iter().find(|k| !k.starts_with(lab.as_bytes())) {
            let shown: String = String::from_utf8_lossy(key).chars().take(60).collect();
            stop(
                3,
                format!(
                    "The Redis at {where_} holds keys that are not the lab's (for example '{shown}'); \
                     point the example at an empty Redis or database. The lab never deletes keys it \
                     did not create."
                ),
            );
        }
        if next == 0 {
            return;
        }
        cursor = next;
    }
}

/// An error as a fact shows it: the first line without a closing full stop (it sits inside our
/// sentences), 127.0.0.1:<port> as <addr> (so facts do not change with ports), at most 80
/// characters.
pub fn brief(err: &dyn Display) -> String {
    let text = err.to_string();
    let line = text
        .trim()
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .trim_end_matches('.');
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find("127.0.0.1:") {
        let after = &rest[at + "127.0.0.1:".len()..];
        let digits = after.len()
            - after
                .trim_start_matches(|ch: char| ch.is_ascii_digit())
                .len();
        if digits == 0 {
            out.push_str(&rest[..at + "127.0.0.1:".len()]);
        } else {
            out.push_str(&rest[..at]);
            out.push_str("<addr>");
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out.chars().take(80).collect()
}

/// What the server counted so far: commands run, reads from clients, calls per command, error
/// replies per error code (INFO errorstats: CROSSSLOT, MOVED, ...), and its CPU seconds (user and
/// system).
#[derive(Clone, Debug, Default)]
pub struct Counters {
    pub commands: i64,
    pub reads: i64,
    pub calls: BTreeMap<String, i64>,
    pub errors: BTreeMap<String, i64>,
    pub cpu: f64,
}

/// Reads INFO stats, commandstats, errorstats and cpu in one command, or exit code 1.
pub fn snapshot(c: &mut redis::Connection) -> Counters {
    let text: String = redis::cmd("INFO")
        .arg(&["stats", "commandstats", "errorstats", "cpu"])
        .query(c)
        .unwrap_or_else(|e| stop(1, format!("INFO failed: {}.", brief(&e))));
    let mut out = Counters::default();
    let number = |v: &str| v.trim().parse::<i64>().unwrap_or(0);
    for (name, value) in text.lines().filter_map(|line| line.split_once(':')) {
        match name {
            "total_commands_processed" => out.commands = number(value),
            "total_reads_processed" => out.reads = number(value),
            "used_cpu_sys" | "used_cpu_user" => {
                out.cpu += value.trim().parse::<f64>().unwrap_or(0.0)
            }
            _ => {
                if let Some(command) = name.strip_prefix("cmdstat_") {
                    let calls = value
                        .strip_prefix("calls=")
                        .and_then(|v| v.split(',').next())
                        .unwrap_or("0");
                    out.calls
                        .insert(command.to_ascii_uppercase(), number(calls));
                } else if let Some(code) = name.strip_prefix("errorstat_") {
                    out.errors.insert(
                        code.to_string(),
                        number(value.strip_prefix("count=").unwrap_or("0")),
                    );
                }
            }
        }
    }
    out
}

impl Counters {
    /// What happened between two snapshots, less the later INFO itself (one command, one read).
    pub fn since(&self, before: &Counters) -> Counters {
        let grown = |now: &BTreeMap<String, i64>, then: &BTreeMap<String, i64>, less_info: bool| {
            now.iter()
                .map(|(name, n)| {
                    let own = i64::from(less_info && name == "INFO");
                    (name.clone(), n - own - then.get(name).copied().unwrap_or(0))
                })
                .filter(|(_, n)| *n > 0)
                .collect()
        };
        Counters {
            commands: self.commands - before.commands - 1,
            reads: self.reads - before.reads - 1,
            calls: grown(&self.calls, &before.calls, true),
            errors: grown(&self.errors, &before.errors, false),
            cpu: self.cpu - before.cpu,
        }
    }
}

/// Adds up deltas over a mode's samples, to report per-sample means.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    pub samples: i64,
    pub sum: Counters,
}

impl Tally {
    pub fn add(&mut self, d: &Counters) {
        self.samples += 1;
        self.sum.commands += d.commands;
        self.sum.reads += d.reads;
        self.sum.cpu += d.cpu;
        for (name, n) in &d.calls {
            *self.sum.calls.entry(name.clone()).or_default() += n;
        }
    }

    /// The mean commands, reads and calls per command of one sample, rounded.
    pub fn per_sample(&self) -> (i64, i64, BTreeMap<String, i64>) {
        let n = self.samples.max(1);
        let mean = |total: i64| (total + n / 2) / n;
        let calls = self
            .sum
            .calls
            .iter()
            .map(|(name, c)| (name.clone(), mean(*c)))
            .collect();
        (mean(self.sum.commands), mean(self.sum.reads), calls)
    }
}

/// The server's client connections named `name` (CLIENT LIST), or exit code 1.
pub fn connections(c: &mut redis::Connection, name: &str) -> usize {
    let text: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query(c)
        .unwrap_or_else(|e| stop(1, format!("CLIENT LIST failed: {}.", brief(&e))));
    text.matches(&format!(" name={name} ")).count()
}

/// This process's user and system CPU time so far (0 if the system will not say).
pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct it is given, which is plain data zeroes make valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(ru.ru_utime) + seconds(ru.ru_stime)
}

/// The p-th percentile of ascending values (nearest rank); 0 for none.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (p / 100.0 * sorted.len() as f64 + 0.5) as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The values of every part in one ascending vector, for percentile.
pub fn sorted(parts: &[Vec<f64>]) -> Vec<f64> {
    let mut all: Vec<f64> = parts.concat();
    all.sort_by(f64::total_cmp);
    all
}

/// A duration in milliseconds to one decimal.
pub fn ms(d: Duration) -> f64 {
    (d.as_micros() as f64 / 100.0).round() / 10.0
}

/// Gathers the modes and prints the human lines and the one PIPELAB-RESULT line.
#[derive(Debug)]
pub struct Report {
    args: Args,
    modes: BTreeMap<String, Vec<f64>>,
    ops: BTreeMap<String, usize>,
    cpu: BTreeMap<String, Vec<f64>>,
    warm: BTreeMap<String, Vec<f64>>,
    fields: BTreeMap<String, Map<String, Value>>,
    facts: Map<String, Value>,
    /// Calls per command per sample, by mode (the server's commandstats).
    pub wire: BTreeMap<String, BTreeMap<String, i64>>,
    paired: BTreeMap<String, String>,
}

impl Report {
    pub fn new(a: &Args) -> Report {
        Report {
            args: a.clone(),
            modes: BTreeMap::new(),
            ops: BTreeMap::new(),
            cpu: BTreeMap::new(),
            warm: BTreeMap::new(),
            fields: BTreeMap::new(),
            facts: Map::new(),
            wire: BTreeMap::new(),
            paired: BTreeMap::new(),
        }
    }

    /// The first human line: what runs, where.
    pub fn header(&self, work: &str) {
        let a = &self.args;
        println!(
            "{}: {work} against {}, {} repetition(s) after {} warm-up",
            a.example,
            a.addr(),
            a.repeat,
            a.warmup
        );
    }

    /// Records one mode: `ops` commands per sample, its samples' wall and CPU seconds, its
    /// warm-up's.
    pub fn mode(
        &mut self,
        mode: &str,
        ops: usize,
        wall: Vec<f64>,
        cpu: Vec<f64>,
        warm: Vec<f64>,
        fields: Map<String, Value>,
    ) {
        let median = sorted(std::slice::from_ref(&wall))
            .get(wall.len() / 2)
            .copied()
            .unwrap_or(f64::NAN);
        println!(
            "{mode:<28} {ops:>8} ops  median {median:.4} s  {:>12.0} ops/s  {}",
            ops as f64 / median,
            Value::Object(fields.clone())
        );
        self.modes.insert(mode.to_string(), wall);
        self.ops.insert(mode.to_string(), ops);
        self.cpu.insert(mode.to_string(), cpu);
        self.warm.insert(mode.to_string(), warm);
        self.fields.insert(mode.to_string(), fields);
    }

    /// Records an observation that is not a timing (a count, an error's text).
    pub fn fact(&mut self, name: &str, value: impl Into<Value>) {
        let value = value.into();
        match &value {
            Value::String(text) => println!("{:<28} {text}", format!("{name}:")),
            other => println!("{:<28} {other}", format!("{name}:")),
        }
        self.facts.insert(name.to_string(), value);
    }

    /// Says these modes were measured in the same rounds.
    pub fn pair(&mut self, modes: &[String]) {
        let group = modes.join(" / ");
        for m in modes {
            self.paired.insert(m.clone(), group.clone());
        }
    }

    /// Prints the machine-readable line.
    pub fn finish(self) {
        let doc = json!({
            "example": self.args.example, "size": self.args.size, "repeat": self.args.repeat,
            "warmup": self.args.warmup, "modes": self.modes, "ops": self.ops, "cpu_s": self.cpu,
            "warmup_s": self.warm, "fields": self.fields, "facts": self.facts, "wire": self.wire,
            "paired": self.paired,
        });
        println!("PIPELAB-RESULT {doc}");
    }
}
