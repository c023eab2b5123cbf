// Chapter 5, Go: a cluster pipeline when the cluster changes under it. host and port name any master
// of chapter 5's cluster (REDIS_CLUSTER_URL, else REDIS_URL, its user, password and TLS). The harness
// prepares the cluster before each run and counts on the servers afterwards; the example reports what
// the CALLER saw. One run, one scenario, one client case:
//
//	lost <client> <victim-port> <victim-pid> <n> <wait-ms>
//	    the harness has paused writes on the victim master (CLIENT PAUSE WRITE); one pipeline of n
//	    SET pipelab:ch05:lost:<i> 1, the victim SIGKILLed 200 ms after it starts, the caller waiting
//	    at most wait-ms. Fact killed_after_ms besides the common ones.
//	moved <client> <ask|moved> <slot> <target-node-id> <n>
//	    keys pipelab:ch05:{mv}:<i>, all in <slot>. ask: the harness has begun moving the slot to the
//	    target and moved half its keys; a pipeline of n SET key ask. moved: the harness has moved
//	    every key; the example loads its slot map, gives the slot to the target on every master
//	    (CLUSTER SETSLOT NODE, target first) so that map is stale, then n SET key moved. Fact
//	    keys_updated: GETs, one by one, that return the phase's value.
//	scripts <client> <n> <script-body>
//	    the script loaded on every master, then flushed on one; the client's script API in its
//	    pipeline, n calls on pipelab:ch05:script:<i>. Fact values_ok: replies that are integers >= 1.
//	replicas <setting> <n>
//	    go-redis only; every master has a replica that serves reads but applies no writes now, and
//	    pipelab:ch05:replica:<i> holds "old" everywhere. A pipeline of n GETs (fact read_old), then
//	    one of n pairs SET key new, GET key (facts stale_reads, fresh_reads). Fact setting: the option
//	    and its default. The common facts cover both pipelines.
//
// Clients: goredis (ClusterClient.Pipelined), rueidis (its cluster client's DoMulti; scripts through
// Lua.ExecMulti). Settings for replicas: goredis (defaults), goredis_readonly (ReadOnly),
// goredis_latency (RouteByLatency), goredis_random (RouteRandomly).
// Common facts: outcome (ok, the first error's line, or "still waiting after <w> ms"), replies_ok,
// replies_failed, errors ({text: count}), waited_ms (pipeline start to return) and client.
//
//	go run ./failover host port <scenario> <client or setting> ...
//	e.g. (in node-go-rust-examples/go)  go run ./failover 127.0.0.1 7000 scripts goredis 200 "return redis.call('INCR', KEYS[1])"
package main

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"pipelab/ch10/lab"
)

const (
	example = "ch05-go-failover"
	usage   = "go run ./failover host port lost <client> <victim-port> <victim-pid> <n> <wait-ms>" +
		" | moved <client> <ask|moved> <slot> <target-node-id> <n> | scripts <client> <n> <script-body>" +
		" | replicas <setting> <n>; clients goredis, rueidis; settings goredis, goredis_readonly," +
		" goredis_latency, goredis_random"
	killAfter = 200 * time.Millisecond
)

// setting is one replicas case: the option as go-redis spells it, with its default (osscluster.go).
type setting struct {
	spelled string
	tune    func(*redis.ClusterOptions)
}

var settings = map[string]setting{
	"goredis":          {"ReadOnly: false (the default)", nil},
	"goredis_readonly": {"ReadOnly: true (default false)", func(o *redis.ClusterOptions) { o.ReadOnly = true }},
	"goredis_latency": {"RouteByLatency: true (default false; it turns ReadOnly on)",
		func(o *redis.ClusterOptions) { o.RouteByLatency = true }},
	"goredis_random": {"RouteRandomly: true (default false; it turns ReadOnly on)",
		func(o *redis.ClusterOptions) { o.RouteRandomly = true }},
}

var (
	nodeID    = regexp.MustCompile(`^[0-9a-f]{40}$`)
	titlePort = regexp.MustCompile(`(?:--port |:)(\d+)\b`)
)

func main() {
	argv := os.Args[1:]
	if len(argv) > 0 && (argv[0] == "-h" || argv[0] == "--help") {
		fmt.Println("usage: " + usage)
		os.Exit(0)
	}
	takes := map[string]int{"lost": 4, "moved": 4, "scripts": 2, "replicas": 1}
	if len(argv) < 4 || takes[argv[2]] == 0 {
		lab.Stop(2, "%s: expected host, port, a scenario (lost, moved, scripts or replicas) and a client; usage: %s.",
			example, usage)
	}
	scenario, slug, rest := argv[2], argv[3], argv[4:]
	if len(rest) != takes[scenario] {
		lab.Stop(2, "%s: %s takes %d arguments after the client, not %d; usage: %s.", example, scenario,
			takes[scenario], len(rest), usage)
	}
	_, isSetting := settings[slug]
	if scenario == "replicas" && !isSetting {
		lab.Stop(2, "%s: replicas' setting is goredis, goredis_readonly, goredis_latency or goredis_random, not '%s'.",
			example, slug)
	}
	if scenario != "replicas" && slug != "goredis" && slug != "rueidis" {
		lab.Stop(2, "%s: the client is goredis or rueidis, not '%s'.", example, slug)
	}
	a := lab.Args{Example: example, Host: argv[0], Port: lab.Port(example, "port", argv[1]), Repeat: 1}
	a.Size = lab.Int(example, "n", rest[map[string]int{"lost": 2, "moved": 3, "scripts": 0, "replicas": 0}[scenario]], 1)
	// Every argument is checked before the first connection.
	var victimPort, victimPid, waitMs, slot int
	switch scenario {
	case "lost":
		victimPort, victimPid = lab.Port(example, "victim-port", rest[0]), lab.Int(example, "victim-pid", rest[1], 1)
		waitMs = lab.Int(example, "wait-ms", rest[3], 1)
	case "moved":
		if rest[0] != "ask" && rest[0] != "moved" {
			lab.Stop(2, "%s: the phase is ask or moved, not '%s'.", example, rest[0])
		}
		slot = lab.Int(example, "slot", rest[1], 0)
		if slot > 16383 || !nodeID.MatchString(rest[2]) {
			lab.Stop(2, "%s: slot must be 0 to 16383 and target-node-id a node id of 40 hex digits, not '%s' and '%s'.",
				example, rest[1], rest[2])
		}
	case "scripts":
		if strings.TrimSpace(rest[1]) == "" {
			lab.Stop(2, "%s: script-body is empty; pass the script as one argument.", example)
		}
	}

	ctx := context.Background()
	login := lab.LoginFrom("REDIS_CLUSTER_URL")
	seed := lab.Control(a.Addr(), login)
	masters := clusterMasters(ctx, seed)
	for _, m := range masters {
		c := lab.Control(m.addr, login)
		lab.RequireLabOnly(ctx, c, m.addr)
		c.Close()
	}
	var s subject
	switch {
	case scenario == "replicas":
		s = newGoredis(a.Addr(), login, settings[slug].tune)
	case slug == "goredis":
		s = newGoredis(a.Addr(), login, nil)
	default:
		s = newRueidis(a.Addr(), login)
	}
	r := lab.NewReport(a)
	r.Clients[strings.Fields(s.name())[0]] = strings.TrimPrefix(strings.Fields(s.name())[1], "v")
	r.Header(fmt.Sprintf("%s, %s, %d commands", scenario, slug, a.Size))
	r.Fact("client", s.name())
	switch scenario {
	case "lost":
		lost(ctx, r, s, masters, victimPort, victimPid, a.Size, waitMs)
	case "moved":
		moved(ctx, r, s, seed, login, masters, rest[0], slot, rest[2], a.Size)
	case "scripts":
		scripts(ctx, r, s, rest[1], a.Size)
	case "replicas":
		replicas(ctx, r, s.(*goredisCase), slug, a.Size)
	}
	r.Finish()
	os.Exit(0) // at once: a client may still be dialling a dead node
}

type master struct{ id, addr string }

// clusterMasters reads CLUSTER NODES: every master's id and address, as the cluster announces them.
func clusterMasters(ctx context.Context, seed *redis.Client) []master {
	text, err := seed.ClusterNodes(ctx).Result()
	if err != nil {
		lab.Stop(2, "%s: the node at %s answers no CLUSTER NODES (%v); pass a node of chapter 5's cluster.",
			example, seed.Options().Addr, err)
	}
	var out []master
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || !strings.Contains(f[2], "master") || strings.Contains(f[2], "fail") {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		out = append(out, master{f[0], addr})
	}
	return out
}

func keys(format string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(lab.Root()+format, i)
	}
	return out
}

// common reports what the caller saw: outcome, replies_ok, replies_failed, errors, waited_ms.
func common(r *lab.Report, replies []reply, err error, waited time.Duration) {
	outcome, ok, failed, errs := "ok", 0, 0, map[string]int{}
	if err != nil {
		outcome = lab.Brief(err)
	}
	for _, p := range replies {
		if p.err == nil {
			ok++
			continue
		}
		failed++
		errs[lab.Brief(p.err)]++
	}
	r.Fact("outcome", outcome)
	r.Fact("replies_ok", ok)
	r.Fact("replies_failed", failed)
	r.Fact("errors", errs)
	r.Fact("waited_ms", lab.Ms(waited))
}

func warm(ctx context.Context, s subject) {
	if err := s.warm(ctx); err != nil {
		lab.Stop(4, "%s could not reach every master: %v.", s.name(), err)
	}
}

// lost: the pipeline starts, the victim master dies under it, the caller waits at most waitMs.
func lost(ctx context.Context, r *lab.Report, s subject, masters []master, victimPort, pid, n, waitMs int) {
	isMaster := false
	for _, m := range masters {
		isMaster = isMaster || strings.HasSuffix(m.addr, fmt.Sprintf(":%d", victimPort))
	}
	if !isMaster {
		lab.Stop(2, "%s: victim-port %d is no master's port of this cluster.", example, victimPort)
	}
	if syscall.Kill(pid, 0) != nil {
		lab.Stop(2, "%s: victim-pid %d is no process this example may signal.", example, pid)
	}
	// redis-server shows its address in its title ("redis-server 127.0.0.1:7002 [cluster]"): a pid
	// whose title names other ports is not the victim's.
	if title, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
		found := titlePort.FindAllStringSubmatch(strings.ReplaceAll(string(title), "\x00", " "), -1)
		matches := false
		for _, m := range found {
			matches = matches || m[1] == strconv.Itoa(victimPort)
		}
		if len(found) > 0 && !matches {
			lab.Stop(2, "%s: process %d is not the server on victim-port %d (%s).", example, pid, victimPort,
				strings.TrimSpace(strings.ReplaceAll(string(title), "\x00", " ")))
		}
	}
	warm(ctx, s)
	type result struct {
		replies []reply
		err     error
	}
	done, killed := make(chan result, 1), make(chan error, 1)
	var killedAfter time.Duration
	start := time.Now()
	time.AfterFunc(killAfter, func() {
		killedAfter = time.Since(start)
		killed <- syscall.Kill(pid, syscall.SIGKILL)
	})
	go func() {
		replies, err := s.sets(ctx, keys("ch05:lost:%d", n), "1")
		done <- result{replies, err}
	}()
	select {
	case res := <-done:
		common(r, res.replies, res.err, time.Since(start))
	case <-time.After(time.Duration(waitMs) * time.Millisecond):
		r.Fact("outcome", fmt.Sprintf("still waiting after %d ms", waitMs))
		r.Fact("replies_ok", 0)
		r.Fact("replies_failed", 0)
		r.Fact("errors", map[string]int{})
		r.Fact("waited_ms", lab.Ms(time.Since(start)))
	}
	if err := <-killed; err != nil { // the kill happens even when the pipeline came back first
		lab.Stop(1, "Killing process %d failed: %v.", pid, err)
	}
	r.Fact("killed_after_ms", killedAfter.Milliseconds())
}

// moved: the slot's keys are (partly) on the target already; the client learns it from ASK or MOVED.
func moved(ctx context.Context, r *lab.Report, s subject, seed *redis.Client, login lab.Login, masters []master,
	phase string, slot int, target string, n int) {
	ks := keys("ch05:{mv}:%d", n)
	if got := seed.ClusterKeySlot(ctx, ks[0]).Val(); got != int64(slot) {
		lab.Stop(2, "%s: slot %d is not the slot of the keys' hash tag {mv}, which is %d.", example, slot, got)
	}
	order := []master{}
	for _, m := range masters {
		if m.id == target {
			order = append([]master{m}, order...)
		} else {
			order = append(order, m)
		}
	}
	if order[0].id != target {
		lab.Stop(2, "%s: target-node-id %s is no master of this cluster.", example, target)
	}
	warm(ctx, s) // the slot map as it stands: the slot still on its source
	if phase == "moved" {
		for _, m := range order { // the target first, as redis-cli --cluster reshard does
			c := lab.Control(m.addr, login)
			if err := c.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", target).Err(); err != nil {
				lab.Stop(1, "CLUSTER SETSLOT %d NODE on %s failed: %v.", slot, m.addr, err)
			}
			c.Close()
		}
	}
	start := time.Now()
	replies, err := s.sets(ctx, ks, phase)
	common(r, replies, err, time.Since(start))
	updated := 0
	for _, k := range ks {
		if v, err := s.get(ctx, k); err == nil && v == phase {
			updated++
		}
	}
	r.Fact("keys_updated", updated)
}

// scripts: EVALSHA of a script one master no longer has.
func scripts(ctx context.Context, r *lab.Report, s subject, body string, n int) {
	warm(ctx, s)
	start := time.Now()
	replies, err := s.scripts(ctx, body, keys("ch05:script:%d", n))
	common(r, replies, err, time.Since(start))
	ok := 0
	for _, p := range replies {
		if v, e := strconv.ParseInt(p.value, 10, 64); p.err == nil && e == nil && v >= 1 {
			ok++
		}
	}
	r.Fact("values_ok", ok)
}

// replicas: where a pipeline's reads go, and what they read while replication is held back.
func replicas(ctx context.Context, r *lab.Report, g *goredisCase, slug string, n int) {
	r.Fact("setting", settings[slug].spelled)
	// The slot map, with each slot's replicas, and a connection to every node: RouteByLatency's first
	// probe of a node would otherwise time the dial too.
	if err := g.cc.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() }); err != nil {
		lab.Stop(4, "%s could not reach every node: %v.", g.name(), err)
	}
	if slug == "goredis_latency" {
		// Each node's latency is ten PINGs 10-20 ms apart, measured when the node is first seen
		// (osscluster.go updateLatency); until then every node looks alike and the master is picked.
		time.Sleep(400 * time.Millisecond)
	}
	ks := keys("ch05:replica:%d", n)
	start := time.Now()
	cmds, err := goredisReads(ctx, g.cc, ks)
	reads := goredisReplies(cmds)
	old := 0
	for _, p := range reads {
		if p.err == nil && p.value == "old" {
			old++
		}
	}
	cmds, err2 := goredisWriteThenRead(ctx, g.cc, ks)
	waited := time.Since(start)
	pairs := goredisReplies(cmds)
	stale, fresh := 0, 0
	for i := 1; i < len(pairs); i += 2 {
		switch {
		case pairs[i].err != nil:
		case pairs[i].value == "old":
			stale++
		case pairs[i].value == "new":
			fresh++
		}
	}
	if err == nil {
		err = err2
	}
	common(r, append(reads, pairs...), err, waited)
	r.Fact("read_old", old)
	r.Fact("stale_reads", stale)
	r.Fact("fresh_reads", fresh)
}
