// Chapter 4, Go: what a pipeline hands its caller when a command in it fails, and when the connection
// drops in the middle of it. Two modes:
//
// errors  on one Redis (host and port; REDIS_URL's user, password, database and TLS). Each case starts
//
//	from empty keys pipelab:ch04:go:bad (k) and pipelab:ch04:go:bad:counter and sends
//	    SET k v ; LPUSH k x (WRONGTYPE: k holds a string) ; INCR counter ; GET k
//	then, with k2 set to "v" first,
//	    GET <missing key> ; INCR counter2 ; GET k2
//	through goredis (Client.Pipelined), goredis_tx (Client.TxPipelined), rueidis (DoMulti) and
//	rueidis_tx (DoMulti of MULTI, the commands, EXEC). Facts per case: <slug>_error_surfaced (what
//	the caller got), <slug>_results (each command's value or error code, " | " between them),
//	<slug>_later_commands_ran (the counter, read on a connection of its own, is 1),
//	<slug>_missing_key and <slug>_missing_results (the same for the second pipeline); and
//	go_client_versions. A command that holds a value AND an error shows as "v + error nil".
//	Then a pipeline whose first reply is a retryable error (tryagain.go says which facts).
//
// drop    host and port are a toxiproxy proxy in front of Redis. As PartialPipeline.java (chapter 4's
//
//	Java example) does, the example connects first, then adds its own toxics through toxiproxy's
//	HTTP API: bandwidth upstream, at a rate that lets about a quarter of the pipeline through
//	before the cut, and reset_peer downstream with timeout cut-ms. Then one pipeline of n INCRs
//	of pipelab:ch04:go:drop:<slug>, with go-redis's default MaxRetries (goredis) and with
//	MaxRetries -1 (goredis_noretry). The drop is a passing one: when the client dials again (to
//	retry), the example removes its toxics first, as PartialPipeline does when Lettuce reports
//	the drop. Facts per case: <slug>_retry_setting, <slug>_drop_outcome, _drop_applied (the
//	counter afterwards), _drop_replies_ok, _drop_replies_failed, _drop_connections (INFO stats
//	total_connections_received, before and after) and _drop_ms (the caller's wait).
//
//	go run ./errors host port errors
//	go run ./errors host port drop <n> <toxiproxy-api-url> <proxy-name> <cut-ms>
//	e.g. (in node-go-rust-examples/go)  go run ./errors 127.0.0.1 16381 drop 2000 http://127.0.0.1:8474 pipelab-redis 300
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"pipelab/ch10/lab"
)

const (
	example = "ch04-go-errors"
	usage   = "go run ./errors host port errors | host port drop <n> <toxiproxy-api-url> <proxy-name> <cut-ms>"
)

// --8<-- [start:goredis]
// pipelined is Client.Pipelined or Client.TxPipelined: the same commands, with or without MULTI/EXEC.
type pipelined func(context.Context, func(redis.Pipeliner) error) ([]redis.Cmder, error)

func goredisBad(ctx context.Context, run pipelined, k, counter string) ([]redis.Cmder, error) {
	return run(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, k, "v", 0)
		p.LPush(ctx, k, "x") // WRONGTYPE: k holds a string
		p.Incr(ctx, counter)
		p.Get(ctx, k)
		return nil
	})
}

func goredisMissing(ctx context.Context, run pipelined, missing, counter2, k2 string) ([]redis.Cmder, error) {
	return run(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, missing) // no such key: redis.Nil
		p.Incr(ctx, counter2)
		p.Get(ctx, k2)
		return nil
	})
}

// --8<-- [end:goredis]

// --8<-- [start:rueidis]
func rueidisBad(c rueidis.Client, k, counter string) rueidis.Commands {
	return rueidis.Commands{
		c.B().Set().Key(k).Value("v").Build(),
		c.B().Lpush().Key(k).Element("x").Build(), // WRONGTYPE: k holds a string
		c.B().Incr().Key(counter).Build(),
		c.B().Get().Key(k).Build(),
	}
}

func rueidisMissing(c rueidis.Client, missing, counter2, k2 string) rueidis.Commands {
	return rueidis.Commands{
		c.B().Get().Key(missing).Build(), // no such key: rueidis.Nil
		c.B().Incr().Key(counter2).Build(),
		c.B().Get().Key(k2).Build(),
	}
}

// rueidisTx sends the commands between MULTI and EXEC, in one DoMulti (one connection, one write).
func rueidisTx(ctx context.Context, c rueidis.Client, cmds rueidis.Commands) []rueidis.RedisResult {
	all := append(rueidis.Commands{c.B().Multi().Build()}, cmds...)
	return c.DoMulti(ctx, append(all, c.B().Exec().Build())...)
}

// --8<-- [end:rueidis]

// --8<-- [start:drop]
func dropPipeline(ctx context.Context, c *redis.Client, key string, n int) ([]redis.Cmder, error) {
	return c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := 0; i < n; i++ {
			p.Incr(ctx, key)
		}
		return nil
	})
}

// --8<-- [end:drop]

// reply is one command's outcome as its caller sees it: a value, an error, or both.
type reply struct {
	value string
	err   error
}

func (p reply) String() string {
	switch {
	case p.err == nil:
		return p.value
	case p.value != "":
		return p.value + " + error " + code(p.err)
	}
	return code(p.err)
}

// code is "nil" for a missing value, the error code (WRONGTYPE) for a Redis error, else the error's line.
func code(err error) string {
	var redisErr redis.Error
	_, rueidisErr := rueidis.IsRedisErr(err)
	switch {
	case errors.Is(err, redis.Nil) || rueidis.IsRedisNil(err):
		return "nil"
	case errors.As(err, &redisErr) || rueidisErr:
		return strings.Fields(err.Error() + " ?")[0]
	}
	return lab.Brief(err)
}

func goredisReplies(cmds []redis.Cmder) (out []reply, names []string) {
	for _, cmd := range cmds {
		var v string
		switch c := cmd.(type) {
		case *redis.StatusCmd:
			v = c.Val()
		case *redis.StringCmd:
			v = c.Val()
		case *redis.IntCmd:
			if c.Val() != 0 || c.Err() == nil {
				v = strconv.FormatInt(c.Val(), 10)
			}
		}
		out, names = append(out, reply{v, cmd.Err()}), append(names, strings.ToUpper(cmd.Name()))
	}
	return out, names
}

func rueidisReply(m rueidis.RedisMessage) reply {
	if s, err := m.ToString(); err == nil {
		return reply{s, nil}
	}
	if i, err := m.ToInt64(); err == nil {
		return reply{strconv.FormatInt(i, 10), nil}
	}
	if m.IsArray() {
		items, _ := m.ToArray()
		return reply{fmt.Sprintf("array of %d", len(items)), nil}
	}
	return reply{"", m.Error()}
}

func rueidisReplies(results []rueidis.RedisResult) (out []reply) {
	for _, res := range results {
		m, err := res.ToMessage()
		if err != nil && res.NonRedisError() != nil {
			out = append(out, reply{"", err})
			continue
		}
		out = append(out, rueidisReply(m))
	}
	return out
}

// others says whether the commands besides the failed one kept their own replies.
func others(replies []reply, failed int) string {
	var both, errs []string
	for i, p := range replies {
		switch {
		case i == failed || p.err == nil:
		case p.value != "":
			both = append(both, fmt.Sprintf("command %d", i+1))
		default:
			errs = append(errs, fmt.Sprintf("command %d", i+1))
		}
	}
	switch {
	case len(both) > 0:
		return "; " + strings.Join(both, ", ") + " hold a value AND an error"
	case len(errs) > 0:
		return "; " + strings.Join(errs, ", ") + " hold an error too"
	}
	return "; every other command holds its own reply"
}

func firstFailed(replies []reply) int {
	for i, p := range replies {
		if p.err != nil {
			return i
		}
	}
	return -1
}

// goredisSaid: what Exec returned, and whose error it was.
func goredisSaid(cmds []redis.Cmder, err error) (string, []reply) {
	replies, names := goredisReplies(cmds)
	if err == nil {
		return "Exec returned nil" + others(replies, -1), replies
	}
	i := firstFailed(replies)
	if i < 0 || replies[i].err.Error() != err.Error() {
		return fmt.Sprintf("Exec returned %s, which no command holds", lab.Brief(err)) + others(replies, -1), replies
	}
	return fmt.Sprintf("Exec returned the error of command %d, %s (%s)", i+1, names[i], lab.Brief(err)) +
		others(replies, i), replies
}

// rueidisSaid: DoMulti has no error of its own; each result has its own.
func rueidisSaid(results []rueidis.RedisResult, names []string, tx bool) (string, []reply) {
	replies := rueidisReplies(results)
	head := "DoMulti returned a result per command"
	if tx { // MULTI's OK, a QUEUED (or an error) per command, EXEC's array: the commands' replies are in it
		queued := 0
		for _, p := range replies[1 : len(replies)-1] {
			if p.value == "QUEUED" {
				queued++
			}
		}
		exec := replies[len(replies)-1]
		head = fmt.Sprintf("DoMulti returned MULTI's %s, %d QUEUED and EXEC's %s; the replies are EXEC's elements",
			replies[0], queued, exec)
		if items, err := results[len(results)-1].ToArray(); err == nil {
			replies = replies[:0]
			for _, m := range items {
				replies = append(replies, rueidisReply(m))
			}
		} else {
			replies = []reply{exec}
		}
	}
	i := firstFailed(replies)
	if i < 0 {
		return head + ", none an error" + others(replies, -1), replies
	}
	return fmt.Sprintf("%s, command %d's (%s) being %s", head, i+1, names[i], lab.Brief(replies[i].err)) +
		others(replies, i), replies
}

func joined(replies []reply) string {
	var parts []string
	for _, p := range replies {
		parts = append(parts, p.String())
	}
	return strings.Join(parts, " | ")
}

func counter(ctx context.Context, control *redis.Client, key string) int64 {
	n, err := control.Get(ctx, key).Int64()
	if err != nil && err != redis.Nil {
		lab.Stop(1, "GET %s failed: %v.", key, err)
	}
	return n
}

func main() {
	argv := os.Args[1:]
	if len(argv) > 0 && (argv[0] == "-h" || argv[0] == "--help") {
		fmt.Println("usage: " + usage)
		os.Exit(0)
	}
	if len(argv) < 3 || (argv[2] != "errors" && argv[2] != "drop") {
		lab.Stop(2, "%s: expected host, port and a mode, errors or drop; usage: %s.", example, usage)
	}
	a := lab.Args{Example: example, Host: argv[0], Port: lab.Port(example, "port", argv[1]), Size: 4, Repeat: 1}
	ctx := context.Background()
	login := lab.LoginFrom("REDIS_URL")
	if argv[2] == "errors" {
		if len(argv) != 3 {
			lab.Stop(2, "%s: mode errors takes no more arguments; usage: %s.", example, usage)
		}
		errorsMode(ctx, a, login)
		return
	}
	if len(argv) != 7 {
		lab.Stop(2, "%s: mode drop takes n, toxiproxy-api-url, proxy-name and cut-ms; usage: %s.", example, usage)
	}
	a.Size = lab.Int(example, "n", argv[3], 1)
	tox := newToxics(argv[4], argv[5])
	dropMode(ctx, a, login, tox, lab.Int(example, "cut-ms", argv[6], 1))
}

// versions names the clients in the report, prints the header, then the versions' fact.
func versions(r *lab.Report, work string) {
	r.Clients["go-redis"] = lab.Module("github.com/redis/go-redis/v9")
	r.Clients["rueidis"] = lab.Module("github.com/redis/rueidis")
	r.Header(work)
	r.Fact("go_client_versions", fmt.Sprintf("go-redis v%s, rueidis v%s", r.Clients["go-redis"], r.Clients["rueidis"]))
}

func errorsMode(ctx context.Context, a lab.Args, login lab.Login) {
	control := lab.Control(a.Addr(), login)
	defer control.Close()
	lab.RequireLabOnly(ctx, control, a.Addr())
	gr := redis.NewClient(login.GoRedis(a.Addr()))
	defer gr.Close()
	ru, err := rueidis.NewClient(login.Rueidis(a.Addr()))
	if err != nil {
		lab.Stop(4, "rueidis cannot reach Redis at %s: %v.", a.Addr(), err)
	}
	defer ru.Close()

	base := lab.Root() + "ch04:go:bad"
	k, count, missing, count2, k2 := base, base+":counter", base+":missing", base+":counter2", base+":k2"
	keys := []string{k, count, missing, count2, k2}
	defer lab.Unlink(ctx, control, keys)

	r := lab.NewReport(a)
	versions(r, "one bad command in a pipeline, and a missing key")
	type pipelines struct{ bad, missing func() (string, []reply) }
	bad, miss := []string{"SET", "LPUSH", "INCR", "GET"}, []string{"GET", "INCR", "GET"}
	cases := []struct {
		slug string
		run  pipelines
	}{
		{"goredis", pipelines{
			func() (string, []reply) { return goredisSaid(goredisBad(ctx, gr.Pipelined, k, count)) },
			func() (string, []reply) { return goredisSaid(goredisMissing(ctx, gr.Pipelined, missing, count2, k2)) }}},
		{"goredis_tx", pipelines{
			func() (string, []reply) { return goredisSaid(goredisBad(ctx, gr.TxPipelined, k, count)) },
			func() (string, []reply) { return goredisSaid(goredisMissing(ctx, gr.TxPipelined, missing, count2, k2)) }}},
		{"rueidis", pipelines{
			func() (string, []reply) { return rueidisSaid(ru.DoMulti(ctx, rueidisBad(ru, k, count)...), bad, false) },
			func() (string, []reply) {
				return rueidisSaid(ru.DoMulti(ctx, rueidisMissing(ru, missing, count2, k2)...), miss, false)
			}}},
		{"rueidis_tx", pipelines{
			func() (string, []reply) { return rueidisSaid(rueidisTx(ctx, ru, rueidisBad(ru, k, count)), bad, true) },
			func() (string, []reply) {
				return rueidisSaid(rueidisTx(ctx, ru, rueidisMissing(ru, missing, count2, k2)), miss, true)
			}}},
	}
	for _, c := range cases {
		lab.Unlink(ctx, control, keys)
		if err := control.Set(ctx, k2, "v", 0).Err(); err != nil {
			lab.Stop(1, "SET %s failed: %v.", k2, err)
		}
		said, replies := c.run.bad()
		r.Fact(c.slug+"_error_surfaced", said)
		r.Fact(c.slug+"_results", joined(replies))
		r.Fact(c.slug+"_later_commands_ran", counter(ctx, control, count) == 1)
		said, replies = c.run.missing()
		ran := map[bool]string{true: "; the INCR ran", false: "; the INCR did not run"}[counter(ctx, control, count2) == 1]
		r.Fact(c.slug+"_missing_key", said+ran)
		r.Fact(c.slug+"_missing_results", joined(replies))
	}
	tryAgainCases(ctx, r, control, login, a.Addr(), gr, ru)
	r.Finish()
}

// dropped is what one case of the drop mode saw.
type dropped struct {
	setting, outcome    string
	applied, ok, failed int64
	connections         int64
	waited              time.Duration
}

func dropMode(ctx context.Context, a lab.Args, login lab.Login, tox *toxics, cutMs int) {
	tox.check(a.Port)
	defer tox.removeOurs()
	control := lab.Control(a.Addr(), login) // through the proxy, idle while the toxics are in place
	defer control.Close()
	lab.RequireLabOnly(ctx, control, a.Addr())

	r := lab.NewReport(a)
	versions(r, fmt.Sprintf("%d INCRs per pipeline through toxiproxy '%s', cut %d ms after the first reply",
		a.Size, tox.proxy, cutMs))
	r.Fact("drop_cut_ms", cutMs)
	for _, slug := range []string{"goredis", "goredis_noretry"} {
		key := lab.Root() + "ch04:go:drop:" + slug
		lab.Unlink(ctx, control, []string{key})
		d := dropCase(ctx, a, login, control, tox, slug, key, cutMs)
		lab.Unlink(ctx, control, []string{key})
		r.Fact(slug+"_retry_setting", d.setting)
		r.Fact(slug+"_drop_outcome", d.outcome)
		r.Fact(slug+"_drop_applied", d.applied)
		r.Fact(slug+"_drop_replies_ok", d.ok)
		r.Fact(slug+"_drop_replies_failed", d.failed)
		r.Fact(slug+"_drop_connections", d.connections)
		r.Fact(slug+"_drop_ms", lab.Ms(d.waited))
	}
	r.Fact("drop_bandwidth_kb_s", tox.rate)
	r.Finish()
}

func dropCase(ctx context.Context, a lab.Args, login lab.Login, control *redis.Client, tox *toxics,
	slug, key string, cutMs int) dropped {
	const name = "pipelab-ch04-go-drop"
	before := connectionsReceived(ctx, control)
	opt := login.GoRedis(a.Addr())
	opt.ClientName = name
	if slug == "goredis_noretry" {
		opt.MaxRetries = -1
	}
	// A dial while the toxics are in place is a reconnection after the drop: the network is back.
	var armed atomic.Bool
	dial := redis.NewDialer(opt)
	opt.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if armed.CompareAndSwap(true, false) {
			tox.removeOurs()
		}
		return dial(ctx, network, addr)
	}
	gr := redis.NewClient(opt)
	d := dropped{setting: fmt.Sprintf("MaxRetries %d (the default)", gr.Options().MaxRetries)}
	if slug == "goredis_noretry" {
		d.setting = fmt.Sprintf("MaxRetries -1 (Options() then shows %d: no retry)", gr.Options().MaxRetries)
	}
	// Connected before the toxics exist, on the pool pipelines use (go-redis keeps one apart).
	if _, err := gr.Pipelined(ctx, func(p redis.Pipeliner) error { p.Ping(ctx); return nil }); err != nil {
		lab.Stop(4, "go-redis cannot reach Redis through %s: %v.", a.Addr(), err)
	}
	if err := tox.addDrop(int64(a.Size)*incrBytes(key), 4*cutMs, cutMs); err != nil {
		lab.Stop(1, "Adding the toxics failed: %v.", err)
	}
	armed.Store(true)
	start := time.Now()
	cmds, err := dropPipeline(ctx, gr, key, a.Size)
	d.waited = time.Since(start)
	armed.Store(false)
	tox.removeOurs()
	gr.Close()
	// Redis has read and applied all it will get once it no longer lists the client's connections.
	for deadline := time.Now().Add(10 * time.Second); lab.Connections(ctx, control, name) > 0; {
		if time.Now().After(deadline) {
			lab.Stop(1, "Redis still lists the dropped connection after 10 s, so the counter is not final.")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, cmd := range cmds {
		if cmd.Err() == nil {
			d.ok++
		} else {
			d.failed++
		}
	}
	d.outcome = fmt.Sprintf("returned %d replies", len(cmds))
	if err != nil {
		d.outcome = lab.Brief(err)
	}
	d.applied = counter(ctx, control, key)
	d.connections = connectionsReceived(ctx, control) - before
	if err == nil && d.connections < 2 {
		lab.Stop(1, "The pipeline of %d INCRs went through on its first connection although the proxy was to "+
			"drop it; are host and port the address of proxy '%s'?", a.Size, tox.proxy)
	}
	return d
}

// connectionsReceived is INFO stats' total_connections_received: connections the server accepted so far.
func connectionsReceived(ctx context.Context, control *redis.Client) int64 {
	text, err := control.Info(ctx, "stats").Result()
	if err != nil {
		lab.Stop(1, "INFO failed: %v.", err)
	}
	for _, line := range strings.Split(text, "\r\n") {
		if value, ok := strings.CutPrefix(line, "total_connections_received:"); ok {
			n, _ := strconv.ParseInt(value, 10, 64)
			return n
		}
	}
	return 0
}
