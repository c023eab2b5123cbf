// Package lab is the shared plumbing of chapter 10's Go examples, as java-examples/common/LabSupport.java
// is the Java ones': the positional arguments, REDIS_URL's user, password, database and TLS, the
// empty-database check, the server's counters (INFO stats and commandstats), client CPU time, and the
// one machine-readable line the Python harness reads:
//
//	PIPELAB-RESULT {"example":...,"go_version":...,"clients":{...},"size":...,"repeat":...,"warmup":...,
//	"modes":{mode:[seconds per sample]},"ops":{mode:ops per sample},"cpu_s":{mode:[...]},
//	"warmup_s":{mode:[...]},"fields":{mode:{...}},"facts":{...},"wire":{mode:{COMMAND:calls per sample}},
//	"paired":{mode:"group"}}
//
// Exit codes as the Java examples': 0 ok, 1 failed, 2 bad argument, 3 foreign keys, 4 Redis unreachable.
package lab

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// Args are the five usual positional arguments and whatever an example takes after them.
type Args struct {
	Example string
	Host    string
	Port    int
	Size    int
	Repeat  int
	Warmup  int
	Extra   []string
}

func (a Args) Addr() string { return fmt.Sprintf("%s:%d", a.Host, a.Port) }

// Stop ends the example with one sentence on stderr and an exit code.
func Stop(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(code)
}

// Parse reads host, port, size, repeat and warmup (defaults for the missing ones) and keeps the rest.
func Parse(example, usage string, size, repeat int) Args {
	argv := os.Args[1:]
	if len(argv) > 0 && (argv[0] == "-h" || argv[0] == "--help") {
		fmt.Println("usage: " + usage)
		os.Exit(0)
	}
	a := Args{Example: example, Host: "127.0.0.1", Port: 6379, Size: size, Repeat: repeat, Warmup: 1}
	if len(argv) > 0 {
		a.Host = argv[0]
	}
	ints := []*int{&a.Port, &a.Size, &a.Repeat, &a.Warmup}
	names := []string{"port", "size", "repeat", "warmup"}
	for i, target := range ints {
		if len(argv) > i+1 {
			*target = Int(example, names[i], argv[i+1], 0)
		}
	}
	if len(argv) > 5 {
		a.Extra = argv[5:]
	}
	return a
}

// Int is a whole number from `low` to 10,000,000, or exit code 2 with one sentence.
func Int(example, name, text string, low int) int {
	v, err := strconv.Atoi(strings.ReplaceAll(strings.TrimSpace(text), "_", ""))
	if err != nil || v < low || v > 10_000_000 {
		Stop(2, "%s: %s must be a whole number from %d to 10,000,000, not '%s'.", example, name, low, text)
	}
	return v
}

// Port is a TCP port, 1 to 65535, or exit code 2 with one sentence.
func Port(example, name, text string) int {
	v, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil || v < 1 || v > 65535 {
		Stop(2, "%s: %s must be a whole number from 1 to 65535, not '%s'.", example, name, text)
	}
	return v
}

// Ints is a comma-separated list of whole numbers from 1 ("1,4,16").
func Ints(example, name, text string) []int {
	var out []int
	for _, part := range strings.Split(text, ",") {
		out = append(out, Int(example, name, part, 1))
	}
	return out
}

// ExtraOr is the i-th argument after the usual five, or `fallback`.
func (a Args) ExtraOr(i int, fallback string) string {
	if i < len(a.Extra) {
		return a.Extra[i]
	}
	return fallback
}

// Login is what REDIS_URL (or REDIS_CLUSTER_URL for a cluster) adds to host and port:
// redis[s]://[user[:password]@]host[:port][/db][?ssl_ca_certs=/path/ca.pem]. Unset: no AUTH, database 0, TCP.
type Login struct {
	User, Password string
	DB             int
	TLS            *tls.Config
}

func LoginFrom(variable string) Login {
	raw := os.Getenv(variable)
	if variable != "REDIS_URL" && raw == "" {
		raw = os.Getenv("REDIS_URL") // one URL serves a run that reaches one server or one cluster
	}
	if raw == "" {
		return Login{}
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") {
		Stop(2, "%s must look like redis[s]://[user[:password]@]host[:port][/db]; it does not.", variable)
	}
	var l Login
	if u.User != nil {
		l.User = u.User.Username()
		l.Password, _ = u.User.Password()
	}
	if db := strings.Trim(u.Path, "/"); db != "" {
		l.DB, err = strconv.Atoi(db)
		if err != nil {
			Stop(2, "%s names database '%s', which is not a number.", variable, db)
		}
	}
	if u.Scheme == "rediss" {
		l.TLS = &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}
		if ca := u.Query().Get("ssl_ca_certs"); ca != "" {
			pem, err := os.ReadFile(ca)
			pool := x509.NewCertPool()
			if err != nil || !pool.AppendCertsFromPEM(pem) {
				Stop(2, "%s's ssl_ca_certs=%s is not a readable PEM file.", variable, ca)
			}
			l.TLS.RootCAs = pool
		}
	}
	return l
}

// GoRedis is go-redis's options for addr with the login's settings.
func (l Login) GoRedis(addr string) *redis.Options {
	return &redis.Options{Addr: addr, Username: l.User, Password: l.Password, DB: l.DB, TLSConfig: l.TLS}
}

// Rueidis is rueidis's options for addr with the login's settings.
func (l Login) Rueidis(addr string) rueidis.ClientOption {
	return rueidis.ClientOption{InitAddress: []string{addr}, Username: l.User, Password: l.Password,
		SelectDB: l.DB, TLSConfig: l.TLS}
}

// Control is a plain connection for the harness's own questions (INFO, SCAN, CLIENT LIST), checked
// with a PING, or exit code 4.
func Control(addr string, l Login) *redis.Client {
	o := l.GoRedis(addr)
	o.PoolSize, o.ClientName = 1, "pipelab-ch10-control"
	c := redis.NewClient(o)
	if err := c.Ping(context.Background()).Err(); err != nil {
		Stop(4, "Cannot reach Redis at %s: %v. Start the lab's Redis (make lab) or pass host and port.", addr, err)
	}
	return c
}

// Prefix is every key's start: PIPELAB_PREFIX (the harness's) or pipelab:, then the chapter's ch10:.
func Prefix() string {
	p := os.Getenv("PIPELAB_PREFIX")
	if p == "" {
		p = "pipelab:"
	}
	return p + "ch10:"
}

// Root is the lab's own key prefix without a chapter: PIPELAB_PREFIX (the harness's) or pipelab:.
func Root() string {
	if p := os.Getenv("PIPELAB_PREFIX"); p != "" {
		return p
	}
	return "pipelab:"
}

var loopbackAddr = regexp.MustCompile(`127\.0\.0\.1:\d+`)

// Brief is an error as a fact shows it: the first line, 127.0.0.1:<port> as <addr> (so facts do not
// change with ports), at most 80 characters; "" for none.
func Brief(err error) string {
	if err == nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(err.Error()), "\n")
	runes := []rune(loopbackAddr.ReplaceAllString(strings.TrimSpace(line), "<addr>"))
	return string(runes[:min(len(runes), 80)])
}

// Ms is a duration in milliseconds to one decimal.
func Ms(d time.Duration) float64 {
	return math.Round(float64(d.Microseconds())/100) / 10
}

// RequireLabOnly stops (exit code 3) on a database that holds a key outside the lab's prefix:
// the examples delete what they write, and never run near someone's data.
func RequireLabOnly(ctx context.Context, c *redis.Client, where string) {
	lab := strings.TrimSuffix(Prefix(), "ch10:")
	iter := c.Scan(ctx, 0, "", 1000).Iterator()
	for iter.Next(ctx) {
		if key := iter.Val(); !strings.HasPrefix(key, lab) {
			Stop(3, "The Redis at %s holds keys that are not the lab's (for example '%.60s'); point the example "+
				"at an empty Redis or database. The lab never deletes keys it did not create.", where, key)
		}
	}
	if err := iter.Err(); err != nil {
		Stop(4, "Cannot scan the Redis at %s: %v.", where, err)
	}
}

// Unlink deletes keys in batches of 1,000, one pipeline per batch.
func Unlink(ctx context.Context, c redis.Cmdable, keys []string) {
	for start := 0; start < len(keys); start += 1000 {
		end := min(start+1000, len(keys))
		if err := c.Unlink(ctx, keys[start:end]...).Err(); err != nil {
			Stop(1, "UNLINK failed: %v.", err)
		}
	}
}

// Counters is what the server counted so far: commands run, reads from clients, calls per command,
// error replies per error code (INFO errorstats: CROSSSLOT, MOVED, ...), and its CPU seconds (user
// and system, every thread's).
type Counters struct {
	Commands, Reads int64
	Calls, Errors   map[string]int64
	CPU             float64
}

// Snapshot reads INFO stats, commandstats, errorstats and cpu in one command.
func Snapshot(ctx context.Context, c redis.Cmdable) Counters {
	text, err := c.Info(ctx, "stats", "commandstats", "errorstats", "cpu").Result()
	if err != nil {
		Stop(1, "INFO failed: %v.", err)
	}
	out := Counters{Calls: map[string]int64{}, Errors: map[string]int64{}}
	for _, line := range strings.Split(text, "\r\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch {
		case name == "total_commands_processed":
			out.Commands, _ = strconv.ParseInt(value, 10, 64)
		case name == "total_reads_processed":
			out.Reads, _ = strconv.ParseInt(value, 10, 64)
		case name == "used_cpu_sys" || name == "used_cpu_user":
			seconds, _ := strconv.ParseFloat(value, 64)
			out.CPU += seconds
		case strings.HasPrefix(name, "cmdstat_"):
			calls, _, _ := strings.Cut(strings.TrimPrefix(value, "calls="), ",")
			n, _ := strconv.ParseInt(calls, 10, 64)
			out.Calls[strings.ToUpper(strings.TrimPrefix(name, "cmdstat_"))] = n
		case strings.HasPrefix(name, "errorstat_"):
			n, _ := strconv.ParseInt(strings.TrimPrefix(value, "count="), 10, 64)
			out.Errors[strings.TrimPrefix(name, "errorstat_")] = n
		}
	}
	return out
}

// Since is what happened between two snapshots, less the later INFO itself (one command, one read).
func (after Counters) Since(before Counters) Counters {
	d := Counters{Commands: after.Commands - before.Commands - 1, Reads: after.Reads - before.Reads - 1,
		Calls: map[string]int64{}, Errors: map[string]int64{}, CPU: after.CPU - before.CPU}
	for code, n := range after.Errors {
		if n -= before.Errors[code]; n > 0 {
			d.Errors[code] = n
		}
	}
	for name, n := range after.Calls {
		if name == "INFO" {
			n--
		}
		if n -= before.Calls[name]; n > 0 {
			d.Calls[name] = n
		}
	}
	return d
}

// Tally adds up deltas over a mode's samples, to report per-sample means.
type Tally struct {
	Samples int
	Sum     Counters
}

func (t *Tally) Add(d Counters) {
	if t.Sum.Calls == nil {
		t.Sum.Calls = map[string]int64{}
	}
	t.Samples++
	t.Sum.Commands += d.Commands
	t.Sum.Reads += d.Reads
	t.Sum.CPU += d.CPU
	for name, n := range d.Calls {
		t.Sum.Calls[name] += n
	}
}

// PerSample is the mean commands, reads and calls per command of one sample.
func (t *Tally) PerSample() (commands, reads int64, calls map[string]int64) {
	n := int64(max(t.Samples, 1))
	calls = map[string]int64{}
	for name, c := range t.Sum.Calls {
		calls[name] = (c + n/2) / n
	}
	return (t.Sum.Commands + n/2) / n, (t.Sum.Reads + n/2) / n, calls
}

// Connections counts the server's client connections named `name` (CLIENT LIST).
func Connections(ctx context.Context, c *redis.Client, name string) int {
	text, err := c.ClientList(ctx).Result()
	if err != nil {
		Stop(1, "CLIENT LIST failed: %v.", err)
	}
	return strings.Count(text, " name="+name+" ")
}

// CPUSeconds is this process's user and system CPU time so far.
func CPUSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// Timed runs fn and gives its wall and CPU seconds.
func Timed(fn func()) (wall, cpu float64) {
	c0, t0 := CPUSeconds(), time.Now()
	fn()
	return time.Since(t0).Seconds(), CPUSeconds() - c0
}

// Module is the version of a module this binary was built with (go.sum's, read from the binary).
func Module(path string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == path {
				return strings.TrimPrefix(dep.Version, "v")
			}
		}
	}
	return "unknown"
}

// Percentile of ascending values (nearest rank); 0 for none.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// Sorted is the values of every part in one ascending slice, for Percentile.
func Sorted(parts ...[]float64) []float64 {
	var all []float64
	for _, p := range parts {
		all = append(all, p...)
	}
	sort.Float64s(all)
	return all
}

// Report gathers the modes and prints the human lines and the one PIPELAB-RESULT line.
type Report struct {
	a       Args
	Clients map[string]string           `json:"clients"`
	Modes   map[string][]float64        `json:"modes"`
	Ops     map[string]int              `json:"ops"`
	CPU     map[string][]float64        `json:"cpu_s"`
	Warm    map[string][]float64        `json:"warmup_s"`
	Fields  map[string]map[string]any   `json:"fields"`
	Facts   map[string]any              `json:"facts"`
	Wire    map[string]map[string]int64 `json:"wire"`
	Paired  map[string]string           `json:"paired"`
}

func NewReport(a Args) *Report {
	return &Report{a: a, Clients: map[string]string{}, Modes: map[string][]float64{}, Ops: map[string]int{},
		CPU: map[string][]float64{}, Warm: map[string][]float64{}, Fields: map[string]map[string]any{},
		Facts: map[string]any{}, Wire: map[string]map[string]int64{}, Paired: map[string]string{}}
}

// Header is the first human line: what runs, where, with which clients.
func (r *Report) Header(work string) {
	var names []string
	for name, v := range r.Clients {
		names = append(names, name+" "+v)
	}
	sort.Strings(names)
	fmt.Printf("%s: %s against %s, %d repetition(s) after %d warm-up (%s, %s)\n", r.a.Example, work, r.a.Addr(),
		r.a.Repeat, r.a.Warmup, runtime.Version(), strings.Join(names, ", "))
}

// Mode records one mode: `ops` commands per sample, its samples' wall and CPU seconds, its warm-up's.
func (r *Report) Mode(mode string, ops int, wall, cpu, warm []float64, fields map[string]any) {
	r.Modes[mode], r.Ops[mode], r.CPU[mode], r.Warm[mode], r.Fields[mode] = wall, ops, cpu, warm, fields
	med := Sorted(wall)[len(wall)/2]
	fmt.Printf("%-28s %8d ops  median %.4f s  %12.0f ops/s  %v\n", mode, ops, med, float64(ops)/med, fields)
}

// Fact records an observation that is not a timing (a count, an error's text).
func (r *Report) Fact(name string, value any) {
	r.Facts[name] = value
	fmt.Printf("%-28s %v\n", name+":", value)
}

// Pair says these modes were measured in the same rounds.
func (r *Report) Pair(modes []string) {
	for _, m := range modes {
		r.Paired[m] = strings.Join(modes, " / ")
	}
}

// Finish prints the machine-readable line.
func (r *Report) Finish() {
	doc := map[string]any{"example": r.a.Example, "go_version": runtime.Version(), "size": r.a.Size,
		"repeat": r.a.Repeat, "warmup": r.a.Warmup}
	line, err := json.Marshal(r)
	if err != nil {
		Stop(1, "The result does not encode as JSON: %v.", err)
	}
	_ = json.Unmarshal(line, &doc) // the report's maps beside the run's settings
	line, _ = json.Marshal(doc)
	fmt.Println("PIPELAB-RESULT " + string(line))
}
