// Chapter 10, Go: auto-pipelining, the trade-off curve. For each count of concurrent callers
// (goroutines), every client below serves all of them, each caller GETting one small key under
// pipelab:ch10:go: in a loop, awaiting each reply, for `size` milliseconds per sample:
//
//	rueidis    auto     the default: a connection's commands go straight out while one caller uses it,
//	                    through a write goroutine and a read goroutine once callers overlap (pipe.go);
//	rueidis    always   AlwaysPipelining: through those goroutines from the first command;
//	rueidis    pool     DisableAutoPipelining: a pooled connection per call, as go-redis's pool;
//	go-redis   pool     the default: one pooled connection per concurrent caller (PoolSize = callers);
//	go-redis   auto     Client.AutoPipeline(), go-redis's autopipeliner (experimental at this version);
//	valkey-go  auto     the default of rueidis's fork;
//
// and beside them (fields "variant": true): rueidis and valkey-go created and run under GOMAXPROCS
// `procs` (a standalone client pipelines over up to 2^min(2, log2 GOMAXPROCS) connections, chosen when
// it is created; the process keeps the CPUs it was given, one under the harness), and rueidis with
// MaxFlushDelay `flushUs` µs. Go's GOMAXPROCS is set around each of their samples and set back after.
//
// The modes of one caller count take turns round by round after `warmup` rounds (of half-length
// samples). A sample is bounded by time; its seconds are rescaled to the mode's mean operations per sample (the `ops` it reports),
// so every sample of a mode times the same work. Around each sample the server's INFO gives its reads
// and commands, CLIENT LIST the client's connections (each client names its own).
//
// Modes are <client>_<mode>_c<callers> (goredis_pool_c16); fields: client, mode, callers, rtt_ms
// (as passed), p50_us and p99_us (per GET, over the samples), reads and commands (per sample),
// cmds_per_read, connections, cpu_us_per_op (this process's CPU per GET), server_cpu_us_per_op (the
// server's, INFO cpu), gomaxprocs, variant, and each sample's own p50, p99, CPU per GET, commands per
// read and server CPU per GET in p50_us_rounds, p99_us_rounds, cpu_us_per_op_rounds,
// cmds_per_read_rounds, server_cpu_us_per_op_rounds.
//
// With holMs > 0 two more parts, on rueidis, run after the curve (facts only):
//
//   - head-of-line: `readers` goroutines GET the small key on one connection for holMs, alone, with a
//     loop of GETs of a `bigBytes` value on the SAME connection, and with that loop on a second
//     client: hol_<alone|shared|separate>_<p50_us|p99_us|max_us|gets>, hol_big_gets_<case>, each
//     case in holRounds turns of holMs/holRounds, and each turn's p99 in hol_<case>_p99_us_rounds;
//
//   - big DoMulti: the readers beside a loop of DoMulti calls of 1,999 and of 2,000 GETs
//     (rueidis.DefaultBlockingPipeline): multi_<below|at>_<p50_us|p99_us|gets|batches|connections>,
//     connections being the most CLIENT LIST showed for the client while the batches ran.
//
// With directGets > 0, rueidis's direct path (directPath): one caller's GETs with context.Background()
// and with context.WithCancel, before and after callers overlapped (direct_*).
//
//	go run ./auto [host] [port] [sampleMs] [repeat] [warmup] [callers] [rttMs] [valueBytes] [holMs] [bigBytes] [readers]
//	              [procs] [flushUs] [directGets]
//	e.g. (in node-go-rust-examples/go)  go run ./auto 127.0.0.1 6379 150 2 1 1,4,16,64,256 0 16 500 8000000 8 4 20 1000
package main

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/valkey-io/valkey-go"

	"pipelab/ch10/lab"
)

const example = "ch10-go-auto"

// subject is one client in one mode: its GET, the name its connections carry, and the GOMAXPROCS its
// samples run under (0: the process's own). `tag` names its modes in the result; `mode` is as printed.
type subject struct {
	client, mode, tag, conn string
	procs                   int
	get                     func(ctx context.Context, key string) error
	close                   func()
}

func (s subject) slug() string { return strings.ReplaceAll(s.client, "-", "") + "_" + s.tag }

// --8<-- [start:clients]
func rueidisClient(addr string, l lab.Login, name string, tune func(*rueidis.ClientOption)) rueidis.Client {
	opt := l.Rueidis(addr)
	opt.ClientName = name
	tune(&opt)
	c, err := rueidis.NewClient(opt)
	if err != nil {
		lab.Stop(4, "rueidis cannot reach Redis at %s: %v.", addr, err)
	}
	return c
}

// side is what the curve adds beside each client's defaults: rueidis and valkey-go created and run
// under GOMAXPROCS `procs` (a standalone client pipelines over 2^min(2, log2 GOMAXPROCS) connections,
// fixed when it is created), and rueidis with a MaxFlushDelay of `flush`. Zero leaves either out.
type side struct {
	procs int
	flush time.Duration
}

func subjects(addr string, l lab.Login, maxCallers int, extra side) []subject {
	var out []subject
	for _, m := range []struct {
		mode string
		tune func(*rueidis.ClientOption)
	}{
		{"auto", func(*rueidis.ClientOption) {}},
		{"always", func(o *rueidis.ClientOption) { o.AlwaysPipelining = true }},
		{"pool", func(o *rueidis.ClientOption) { o.DisableAutoPipelining = true }},
	} {
		out = append(out, rueidisSubject(addr, l, m.mode, m.mode, 0, m.tune))
	}

	pooled := l.GoRedis(addr)
	pooled.PoolSize, pooled.ClientName = maxCallers, "pipelab-ch10-goredis-pool"
	gp := redis.NewClient(pooled)
	out = append(out, subject{"go-redis", "pool", "pool", pooled.ClientName, 0,
		func(ctx context.Context, key string) error { return gp.Get(ctx, key).Err() }, func() { gp.Close() }})

	auto := l.GoRedis(addr)
	auto.ClientName = "pipelab-ch10-goredis-auto"
	ga := redis.NewClient(auto)
	ap, err := ga.AutoPipeline() // DefaultBlockingAutoPipelineOptions: batches of about 300, one in flight
	if err != nil {
		lab.Stop(1, "go-redis's AutoPipeline failed: %v.", err)
	}
	out = append(out, subject{"go-redis", "auto", "auto", auto.ClientName, 0,
		func(ctx context.Context, key string) error { return ap.Get(ctx, key).Err() },
		func() { ap.Close(); ga.Close() }})

	out = append(out, valkeySubject(addr, l, "auto", "auto", 0))
	if extra.procs > 0 {
		mode := fmt.Sprintf("auto, GOMAXPROCS %d", extra.procs)
		tag := fmt.Sprintf("auto_p%d", extra.procs)
		out = append(out, rueidisSubject(addr, l, mode, tag, extra.procs, func(*rueidis.ClientOption) {}),
			valkeySubject(addr, l, mode, tag, extra.procs))
	}
	if extra.flush > 0 {
		// the delay is the fact max_flush_delay_us, so that the mode's name stays one word
		out = append(out, rueidisSubject(addr, l, "MaxFlushDelay", "flush", 0,
			func(o *rueidis.ClientOption) { o.MaxFlushDelay = extra.flush }))
	}
	return out
}

// underProcs runs fn with GOMAXPROCS set to procs (0: as it is), then sets it back.
func underProcs(procs int, fn func()) {
	if procs > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	}
	fn()
}

func rueidisSubject(addr string, l lab.Login, mode, tag string, procs int, tune func(*rueidis.ClientOption)) subject {
	name := "pipelab-ch10-rueidis-" + tag
	var c rueidis.Client
	underProcs(procs, func() { c = rueidisClient(addr, l, name, tune) })
	return subject{"rueidis", mode, tag, name, procs,
		func(ctx context.Context, key string) error { return c.Do(ctx, c.B().Get().Key(key).Build()).Error() },
		c.Close}
}

func valkeySubject(addr string, l lab.Login, mode, tag string, procs int) subject {
	name := "pipelab-ch10-valkeygo-" + tag
	var (
		vk  valkey.Client
		err error
	)
	underProcs(procs, func() {
		vk, err = valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, Username: l.User,
			Password: l.Password, SelectDB: l.DB, TLSConfig: l.TLS, ClientName: name})
	})
	if err != nil {
		lab.Stop(4, "valkey-go cannot reach Redis at %s: %v.", addr, err)
	}
	return subject{"valkey-go", mode, tag, name, procs,
		func(ctx context.Context, key string) error { return vk.Do(ctx, vk.B().Get().Key(key).Build()).Error() },
		vk.Close}
}

// --8<-- [end:clients]

// --8<-- [start:callers]
// callers runs `n` goroutines that GET `key` one at a time until `d` has passed; each operation's
// latency in microseconds, per caller, and the wall time until the last reply.
func callers(ctx context.Context, n int, d time.Duration, key string, get func(context.Context, string) error) (
	[][]float64, float64, error) {
	lat := make([][]float64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for t0 := time.Now(); t0.Before(deadline); {
				if errs[i] = get(ctx, key); errs[i] != nil {
					return
				}
				t1 := time.Now()
				lat[i] = append(lat[i], float64(t1.Sub(t0).Nanoseconds())/1e3)
				t0 = t1
			}
		}(i)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, 0, err
		}
	}
	return lat, time.Since(start).Seconds(), nil
}

// --8<-- [end:callers]

func main() {
	a := lab.Parse(example, "go run ./auto [host] [port] [sampleMs] [repeat] [warmup] [callers] [rttMs] "+
		"[valueBytes] [holMs] [bigBytes] [readers] [procs] [flushUs] [directGets]", 150, 2)
	counts := lab.Ints(example, "callers", a.ExtraOr(0, "1,4,16,64,256"))
	rtt := a.ExtraOr(1, "0")
	valueBytes := lab.Int(example, "valueBytes", a.ExtraOr(2, "16"), 1)
	holMs := lab.Int(example, "holMs", a.ExtraOr(3, "0"), 0)
	bigBytes := lab.Int(example, "bigBytes", a.ExtraOr(4, "8000000"), 1)
	readers := lab.Int(example, "readers", a.ExtraOr(5, "8"), 1)
	extra := side{procs: lab.Int(example, "procs", a.ExtraOr(6, "4"), 0),
		flush: time.Duration(lab.Int(example, "flushUs", a.ExtraOr(7, "20"), 0)) * time.Microsecond}
	directGets := lab.Int(example, "directGets", a.ExtraOr(8, "0"), 0)
	var rttMs float64
	if _, err := fmt.Sscanf(rtt, "%g", &rttMs); err != nil {
		lab.Stop(2, "%s: rttMs must be a number of milliseconds, not '%s'.", example, rtt)
	}
	ctx := context.Background()
	login := lab.LoginFrom("REDIS_URL")
	control := lab.Control(a.Addr(), login)
	defer control.Close()
	lab.RequireLabOnly(ctx, control, a.Addr())
	key, big := lab.Prefix()+"go:auto:small", lab.Prefix()+"go:auto:big"
	if err := control.Set(ctx, key, strings.Repeat("v", valueBytes), 0).Err(); err != nil {
		lab.Stop(1, "SET failed: %v.", err)
	}
	defer control.Unlink(ctx, key, big)

	maxCallers := 1
	for _, c := range counts {
		maxCallers = max(maxCallers, c)
	}
	subs := subjects(a.Addr(), login, maxCallers, extra)
	r := lab.NewReport(a)
	// GOMAXPROCS as Go set it from the CPUs this process may run on (the harness pins it to one).
	r.Fact("gomaxprocs", runtime.GOMAXPROCS(0))
	r.Fact("side_gomaxprocs", extra.procs)
	r.Fact("max_flush_delay_us", extra.flush.Microseconds())
	r.Clients["go-redis"] = lab.Module("github.com/redis/go-redis/v9")
	r.Clients["rueidis"] = lab.Module("github.com/redis/rueidis")
	r.Clients["valkey-go"] = lab.Module("github.com/valkey-io/valkey-go")
	r.Header(fmt.Sprintf("GETs of %d bytes by 1 to %d callers, %d ms per sample, RTT %s ms", valueBytes,
		maxCallers, a.Size, rtt))
	sample := time.Duration(a.Size) * time.Millisecond

	for _, n := range counts {
		type acc struct {
			wall, cpu, warm []float64
			ops             []int
			lat             [][]float64
			tally           lab.Tally
			conns           int
			// each sample's own figures, so that the harness can give each figure its interval
			p50s, p99s, cpuPerOp, cpr, srvCPU []float64
		}
		got := map[string]*acc{}
		for round := 0; round < a.Warmup+a.Repeat; round++ {
			for _, s := range subs {
				m := got[s.slug()]
				if m == nil {
					m = &acc{}
					got[s.slug()] = m
				}
				d := sample
				if round < a.Warmup {
					d /= 2 // a warm-up sample, thrown away, opens connections and starts goroutines
				}
				var (
					before    lab.Counters
					lat       [][]float64
					wall, cpu float64
					err       error
				)
				underProcs(s.procs, func() {
					before = lab.Snapshot(ctx, control)
					c0 := lab.CPUSeconds()
					lat, wall, err = callers(ctx, n, d, key, s.get)
					cpu = lab.CPUSeconds() - c0
				})
				if err != nil {
					lab.Stop(1, "%s %s with %d callers failed: %v.", s.client, s.mode, n, err)
				}
				if round < a.Warmup {
					m.warm = append(m.warm, wall)
					continue
				}
				delta := lab.Snapshot(ctx, control).Since(before)
				m.tally.Add(delta)
				m.conns = max(m.conns, lab.Connections(ctx, control, s.conn))
				ops := 0
				for _, l := range lat {
					ops += len(l)
				}
				m.wall, m.cpu, m.ops = append(m.wall, wall), append(m.cpu, cpu), append(m.ops, ops)
				m.lat = append(m.lat, lat...)
				round := lab.Sorted(lat...)
				m.p50s, m.p99s = append(m.p50s, lab.Percentile(round, 50)), append(m.p99s, lab.Percentile(round, 99))
				m.cpuPerOp = append(m.cpuPerOp, cpu/float64(max(1, ops))*1e6)
				m.cpr = append(m.cpr, float64(delta.Commands)/float64(max(1, delta.Reads)))
				m.srvCPU = append(m.srvCPU, delta.CPU/float64(max(1, ops))*1e6)
			}
		}
		var group []string
		for _, s := range subs {
			m, mode := got[s.slug()], fmt.Sprintf("%s_c%d", s.slug(), n)
			total, cpuTotal := 0, 0.0
			for i := range m.ops {
				total, cpuTotal = total+m.ops[i], cpuTotal+m.cpu[i]
			}
			procs := s.procs
			if procs == 0 {
				procs = runtime.GOMAXPROCS(0)
			}
			ops := max(1, total/len(m.ops))
			wall := make([]float64, len(m.wall))
			for i := range m.wall { // the time this sample's rate takes for the mode's mean operations
				wall[i] = m.wall[i] * float64(ops) / float64(max(1, m.ops[i]))
			}
			commands, reads, calls := m.tally.PerSample()
			lat := lab.Sorted(m.lat...)
			r.Wire[mode] = calls
			r.Mode(mode, ops, wall, m.cpu, m.warm, map[string]any{"client": s.client, "mode": s.mode,
				"callers": n, "rtt_ms": rttMs, "p50_us": lab.Percentile(lat, 50), "p99_us": lab.Percentile(lat, 99),
				"reads": reads, "commands": commands, "cmds_per_read": float64(commands) / float64(max(1, reads)),
				"connections": m.conns, "cpu_us_per_op": cpuTotal / float64(max(1, total)) * 1e6,
				"p50_us_rounds": m.p50s, "p99_us_rounds": m.p99s, "cpu_us_per_op_rounds": m.cpuPerOp,
				"cmds_per_read_rounds": m.cpr, "gomaxprocs": procs,
				"variant":                     s.tag != s.mode, // a side mode, named apart from its client's defaults
				"server_cpu_us_per_op":        m.tally.Sum.CPU / float64(max(1, total)) * 1e6,
				"server_cpu_us_per_op_rounds": m.srvCPU})
			group = append(group, mode)
		}
		r.Pair(group)
	}
	for _, s := range subs {
		s.close()
	}
	if holMs > 0 {
		d := time.Duration(holMs) * time.Millisecond
		headOfLine(ctx, r, a.Addr(), login, control, key, big, bigBytes, readers, d)
		bigMulti(ctx, r, a.Addr(), login, control, key, readers, d)
	}
	if directGets > 0 {
		directPath(ctx, r, a.Addr(), login, key, directGets, readers)
	}
	r.Finish()
}

// oneWire keeps a rueidis client to a single pipelined connection (PipelineMultiplex below 0).
func oneWire(o *rueidis.ClientOption) { o.PipelineMultiplex = -1 }

// get is a caller's GET of k on c, whatever key it is handed.
func get(c rueidis.Client, k string) func(context.Context, string) error {
	return func(ctx context.Context, _ string) error { return c.Do(ctx, c.B().Get().Key(k).Build()).Error() }
}

// --8<-- [start:hol]
// holRounds: the three cases take turns, so the p99 behind the big reply on the same connection can
// be set against the p99 with it elsewhere round by round, with an interval (one pass of each, on this
// VM, gave 0.99x in one run and 1.3x in the next).
const holRounds = 5

// headOfLine times `readers` small GETs on one rueidis connection alone, beside a loop of big GETs
// on the same connection, and beside that loop on another client.
func headOfLine(ctx context.Context, r *lab.Report, addr string, l lab.Login, control *redis.Client,
	key, big string, bigBytes, readers int, d time.Duration) {
	if err := control.Set(ctx, big, strings.Repeat("b", bigBytes), 0).Err(); err != nil {
		lab.Stop(1, "SET of the big value failed: %v.", err)
	}
	shared := rueidisClient(addr, l, "pipelab-ch10-hol", oneWire)
	other := rueidisClient(addr, l, "pipelab-ch10-hol-other", oneWire)
	defer shared.Close()
	defer other.Close()
	r.Fact("hol_big_bytes", bigBytes)
	r.Fact("hol_readers", readers)
	r.Fact("hol_rounds", holRounds)
	cases := []struct {
		name   string
		beside rueidis.Client
	}{{"alone", nil}, {"shared", shared}, {"separate", other}}
	lat := make(map[string][][]float64)  // per case, the readers' latencies of every turn
	rounds := make(map[string][]float64) // per case, each turn's p99
	bigs := make(map[string]int64)
	for range holRounds {
		for _, c := range cases {
			var done atomic.Bool
			var wg sync.WaitGroup
			if c.beside != nil {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for !done.Load() {
						if err := get(c.beside, big)(ctx, ""); err != nil {
							lab.Stop(1, "GET of the big value failed: %v.", err)
						}
						bigs[c.name]++
					}
				}()
			}
			turn, _, err := callers(ctx, readers, d/holRounds, key, get(shared, key))
			done.Store(true)
			wg.Wait()
			if err != nil {
				lab.Stop(1, "The readers' GETs failed: %v.", err)
			}
			lat[c.name] = append(lat[c.name], turn...)
			rounds[c.name] = append(rounds[c.name], lab.Percentile(lab.Sorted(turn...), 99))
		}
	}
	for _, c := range cases {
		all := lab.Sorted(lat[c.name]...)
		r.Fact("hol_"+c.name+"_p50_us", lab.Percentile(all, 50))
		r.Fact("hol_"+c.name+"_p99_us", lab.Percentile(all, 99))
		r.Fact("hol_"+c.name+"_max_us", lab.Percentile(all, 100))
		r.Fact("hol_"+c.name+"_gets", len(all))
		r.Fact("hol_"+c.name+"_p99_us_rounds", rounds[c.name])
		r.Fact("hol_big_gets_"+c.name, bigs[c.name])
	}
}

// --8<-- [end:hol]

// --8<-- [start:bigmulti]
// bigMulti times the readers beside DoMulti batches just under and at the size rueidis hands to a
// dedicated connection, and counts the client's connections while the batches run.
func bigMulti(ctx context.Context, r *lab.Report, addr string, l lab.Login, control *redis.Client,
	key string, readers int, d time.Duration) {
	for _, c := range []struct {
		name  string
		batch int
	}{{"below", rueidis.DefaultBlockingPipeline - 1}, {"at", rueidis.DefaultBlockingPipeline}} {
		name := "pipelab-ch10-multi-" + c.name
		client := rueidisClient(addr, l, name, oneWire)
		batch := make(rueidis.Commands, c.batch)
		var done atomic.Bool
		var batches, conns int64
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { // the big batches, one after another
			defer wg.Done()
			for !done.Load() {
				for i := range batch {
					batch[i] = client.B().Get().Key(key).Build()
				}
				for _, resp := range client.DoMulti(ctx, batch...) {
					if err := resp.Error(); err != nil {
						lab.Stop(1, "DoMulti of %d GETs failed: %v.", c.batch, err)
					}
				}
				batches++
			}
		}()
		go func() { // what the server sees meanwhile
			defer wg.Done()
			for !done.Load() {
				conns = max(conns, int64(lab.Connections(ctx, control, name)))
				time.Sleep(d / 20)
			}
		}()
		lat, _, err := callers(ctx, readers, d, key, get(client, key))
		done.Store(true)
		wg.Wait()
		client.Close()
		if err != nil {
			lab.Stop(1, "The readers' GETs failed: %v.", err)
		}
		all := lab.Sorted(lat...)
		r.Fact("multi_"+c.name+"_batch", c.batch)
		r.Fact("multi_"+c.name+"_p50_us", lab.Percentile(all, 50))
		r.Fact("multi_"+c.name+"_p99_us", lab.Percentile(all, 99))
		r.Fact("multi_"+c.name+"_gets", len(all))
		r.Fact("multi_"+c.name+"_batches", batches)
		r.Fact("multi_"+c.name+"_connections", conns)
	}
}

// --8<-- [end:bigmulti]

// --8<-- [start:direct]
// directTurns: fresh clients each turn, so that every turn's first phase starts on a connection whose
// background writer has never run.
const directTurns = 5

// lone GETs k `n` times one after another on c with ctx; each GET's latency in microseconds.
func lone(ctx context.Context, c rueidis.Client, k string, n int) []float64 {
	lat := make([]float64, n)
	for i := range lat {
		t0 := time.Now()
		if err := c.Do(ctx, c.B().Get().Key(k).Build()).Error(); err != nil {
			lab.Stop(1, "The lone caller's GET failed: %v.", err)
		}
		lat[i] = float64(time.Since(t0).Nanoseconds()) / 1e3
	}
	return lat
}

// settled is the count of goroutines once those that just returned have gone.
func settled() int {
	time.Sleep(5 * time.Millisecond)
	return runtime.NumGoroutine()
}

// directPath times one caller on a rueidis connection (PipelineMultiplex -1: one) in three phases:
// with context.Background() on a fresh client ("background_before"), with a context.WithCancel
// context on another fresh client ("cancel"), and on the first client again after `readers` callers
// overlapped on it ("background_after"). Per phase: direct_<phase>_p50_us (the median turn's) and
// _p50_us_rounds, direct_<phase>_goroutines (the goroutines the phase left running, summed over the
// turns: rueidis's writer and reader start once per connection), and the overlap's direct_overlap_goroutines.
func directPath(ctx context.Context, r *lab.Report, addr string, l lab.Login, key string, gets, readers int) {
	phases := []string{"background_before", "cancel", "background_after"}
	p50s := map[string][]float64{}
	grown := map[string]int{}
	for range directTurns {
		plain := rueidisClient(addr, l, "pipelab-ch10-direct", oneWire)
		cancellable := rueidisClient(addr, l, "pipelab-ch10-direct-cancel", oneWire)
		cctx, cancel := context.WithCancel(ctx)
		g := settled()
		step := func(phase string, c rueidis.Client, ctx context.Context) {
			p50s[phase] = append(p50s[phase], lab.Percentile(lab.Sorted(lone(ctx, c, key, gets)), 50))
			now := settled()
			grown[phase], g = grown[phase]+now-g, now
		}
		step("background_before", plain, ctx)
		step("cancel", cancellable, cctx)
		if _, _, err := callers(ctx, readers, 20*time.Millisecond, key, get(plain, key)); err != nil {
			lab.Stop(1, "The overlapping GETs failed: %v.", err)
		}
		now := settled()
		grown["overlap"], g = grown["overlap"]+now-g, now
		step("background_after", plain, ctx)
		cancel()
		plain.Close()
		cancellable.Close()
	}
	r.Fact("direct_turns", directTurns)
	r.Fact("direct_gets", gets)
	r.Fact("direct_overlap_goroutines", grown["overlap"])
	for _, phase := range phases {
		r.Fact("direct_"+phase+"_p50_us", lab.Percentile(lab.Sorted(p50s[phase]), 50))
		r.Fact("direct_"+phase+"_p50_us_rounds", p50s[phase])
		r.Fact("direct_"+phase+"_goroutines", grown[phase])
	}
}

// --8<-- [end:direct]
