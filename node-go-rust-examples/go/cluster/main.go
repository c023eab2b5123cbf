// Chapter 10, Go: go-redis's ClusterClient on chapter 5's Redis Cluster (host and port name one node;
// REDIS_CLUSTER_URL, else REDIS_URL, its user and password). `size` SETs to keys under
// pipelab:ch10:go:cluster:, one by one and in one Pipelined call, taking turns round by round; around
// each sample every master's INFO gives the commands it ran and the reads it made. go-redis splits a
// pipeline by the node that owns each key's slot and sends each node its share (osscluster.go).
//
// Modes: goredis_cluster_one_by_one, goredis_cluster_pipelined; fields: client (go-redis), mode
// (one_by_one, pipelined), workload (set), commands and reads (all masters, per sample).
// Facts: masters; node<i>_commands and node<i>_reads, the pipelined sample's split by master (masters
// in the order of their first slot); then three keys whose slots differ, sent together:
// crossslot_mget_error (the error's text, "" if none), crossslot_mget_values (values returned),
// crossslot_mget_nodes (masters the keys live on), crossslot_mget_server_errors (CROSSSLOT replies the
// masters counted: the refusal is the server's), and the same keys' SETs in one TxPipelined:
// crossslot_tx_error, crossslot_tx_multis and crossslot_tx_execs (MULTIs and EXECs the masters ran),
// crossslot_tx_commands (commands the masters ran for it), crossslot_tx_server_errors (error replies
// of any code they counted): all 0 when go-redis refuses the transaction before sending it.
//
//	go run ./cluster [host] [port] [size] [repeat] [warmup]
//	e.g. (in node-go-rust-examples/go)  go run ./cluster 127.0.0.1 7000 10000 3 1
package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"pipelab/ch10/lab"
)

const example = "ch10-go-cluster"

// --8<-- [start:pipelined]
func oneByOne(ctx context.Context, c *redis.ClusterClient, keys []string) error {
	for _, k := range keys {
		if err := c.Set(ctx, k, "v", 0).Err(); err != nil {
			return err
		}
	}
	return nil
}

func pipelined(ctx context.Context, c *redis.ClusterClient, keys []string) error {
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Set(ctx, k, "v", 0)
		}
		return nil
	})
	return err
}

// --8<-- [end:pipelined]

// masters are the cluster's masters, each with a connection of the lab's, in the order of their first slot.
type master struct {
	addr    string
	first   int64
	control *redis.Client
}

func masters(ctx context.Context, seed *redis.Client, l lab.Login) []master {
	slots, err := seed.ClusterSlots(ctx).Result()
	if err != nil {
		lab.Stop(2, "%s: the node at %s answers no CLUSTER SLOTS (%v); pass a node of chapter 5's cluster.",
			example, seed.Options().Addr, err)
	}
	first := map[string]int64{}
	for _, s := range slots {
		addr := s.Nodes[0].Addr
		if f, ok := first[addr]; !ok || int64(s.Start) < f {
			first[addr] = int64(s.Start)
		}
	}
	var out []master
	for addr, f := range first {
		out = append(out, master{addr, f, lab.Control(addr, l)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].first < out[j].first })
	return out
}

func snapshot(ctx context.Context, ms []master) []lab.Counters {
	out := make([]lab.Counters, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Add(1)
		go func() { defer wg.Done(); out[i] = lab.Snapshot(ctx, m.control) }()
	}
	wg.Wait()
	return out
}

func main() {
	a := lab.Parse(example, "go run ./cluster [host] [port] [size] [repeat] [warmup]", 10_000, 3)
	ctx := context.Background()
	login := lab.LoginFrom("REDIS_CLUSTER_URL")
	seed := lab.Control(a.Addr(), login)
	defer seed.Close()
	ms := masters(ctx, seed, login)
	for _, m := range ms {
		lab.RequireLabOnly(ctx, m.control, m.addr)
		defer m.control.Close()
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{a.Addr()}, Username: login.User,
		Password: login.Password, TLSConfig: login.TLS})
	defer cc.Close()
	keys := make([]string, a.Size)
	for i := range keys {
		keys[i] = fmt.Sprintf("%sgo:cluster:%d", lab.Prefix(), i)
	}
	defer cc.Pipelined(ctx, func(p redis.Pipeliner) error { // a key per UNLINK: their slots differ
		for _, k := range keys {
			p.Unlink(ctx, k)
		}
		return nil
	})

	r := lab.NewReport(a)
	r.Clients["go-redis"] = lab.Module("github.com/redis/go-redis/v9")
	r.Header(fmt.Sprintf("%d SETs over %d masters", a.Size, len(ms)))
	r.Fact("masters", len(ms))
	modes := []struct {
		name string
		run  func() error
	}{
		{"one_by_one", func() error { return oneByOne(ctx, cc, keys) }},
		{"pipelined", func() error { return pipelined(ctx, cc, keys) }},
	}
	wall, cpu, warm := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	tally := map[string]*lab.Tally{}
	split := make([]lab.Tally, len(ms))
	for round := 0; round < a.Warmup+a.Repeat; round++ {
		for _, m := range modes {
			before := snapshot(ctx, ms)
			var failed error
			w, c := lab.Timed(func() { failed = m.run() })
			if failed != nil {
				lab.Stop(1, "go-redis cluster %s failed: %v.", m.name, failed)
			}
			if round < a.Warmup {
				warm[m.name] = append(warm[m.name], w)
				continue
			}
			if tally[m.name] == nil {
				tally[m.name] = &lab.Tally{}
			}
			var sum lab.Counters
			sum.Calls = map[string]int64{}
			for i, after := range snapshot(ctx, ms) {
				d := after.Since(before[i])
				if m.name == "pipelined" {
					split[i].Add(d)
				}
				sum.Commands, sum.Reads = sum.Commands+d.Commands, sum.Reads+d.Reads
				for name, n := range d.Calls {
					sum.Calls[name] += n
				}
			}
			tally[m.name].Add(sum)
			wall[m.name], cpu[m.name] = append(wall[m.name], w), append(cpu[m.name], c)
		}
	}
	var group []string
	for _, m := range modes {
		mode := "goredis_cluster_" + m.name
		commands, reads, calls := tally[m.name].PerSample()
		r.Wire[mode] = calls
		r.Mode(mode, a.Size, wall[m.name], cpu[m.name], warm[m.name], map[string]any{"client": "go-redis",
			"mode": m.name, "workload": "set", "commands": commands, "reads": reads})
		group = append(group, mode)
	}
	r.Pair(group)
	for i := range ms {
		commands, reads, _ := split[i].PerSample()
		r.Fact(fmt.Sprintf("node%d_commands", i), commands)
		r.Fact(fmt.Sprintf("node%d_reads", i), reads)
	}
	crossSlot(ctx, r, cc, seed, ms)
	r.Finish()
}

// --8<-- [start:crossslot]
// crossSlot sends three keys of different slots in one MGET, then their SETs in one TxPipelined.
func crossSlot(ctx context.Context, r *lab.Report, cc *redis.ClusterClient, seed *redis.Client, ms []master) {
	var keys []string
	slots := map[int64]bool{}
	for i := 0; len(keys) < 3; i++ {
		k := fmt.Sprintf("%sgo:crossslot:%d", lab.Prefix(), i)
		if slot := seed.ClusterKeySlot(ctx, k).Val(); !slots[slot] {
			slots[slot], keys = true, append(keys, k)
		}
	}
	defer func() {
		for _, k := range keys {
			cc.Unlink(ctx, k)
		}
	}()
	nodes := map[string]bool{}
	for _, k := range keys {
		node, err := cc.MasterForKey(ctx, k)
		if err == nil {
			nodes[node.Options().Addr] = true
		}
	}
	r.Fact("crossslot_mget_nodes", len(nodes))
	before := snapshot(ctx, ms)
	values, err := cc.MGet(ctx, keys...).Result()
	r.Fact("crossslot_mget_error", errText(err))
	r.Fact("crossslot_mget_values", len(values))
	var refused int64 // the error came from a server (errorstats), not from the client's own check
	for i, after := range snapshot(ctx, ms) {
		refused += after.Since(before[i]).Errors["CROSSSLOT"]
	}
	r.Fact("crossslot_mget_server_errors", refused)

	before = snapshot(ctx, ms)
	_, err = cc.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Set(ctx, k, "v", 0)
		}
		return nil
	})
	r.Fact("crossslot_tx_error", errText(err))
	var multis, execs, sent, errs int64
	for i, after := range snapshot(ctx, ms) {
		d := after.Since(before[i])
		multis, execs, sent = multis+d.Calls["MULTI"], execs+d.Calls["EXEC"], sent+d.Commands
		for _, n := range d.Errors {
			errs += n
		}
	}
	r.Fact("crossslot_tx_multis", multis)
	r.Fact("crossslot_tx_execs", execs)
	r.Fact("crossslot_tx_commands", sent) // 0: go-redis refused the transaction before sending it
	r.Fact("crossslot_tx_server_errors", errs)
}

// --8<-- [end:crossslot]

func errText(err error) string {
	if err == nil {
		return ""
	}
	return strings.TrimSpace(err.Error())
}
