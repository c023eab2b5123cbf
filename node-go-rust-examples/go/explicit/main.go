// Chapter 10, Go: explicit pipelines. Chapter 1's workload (`size` PINGs) and chapter 3's SADD job
// (`size` SADDs, one member each to a distinct key under pipelab:ch10:go:sadd:) through
//
//	go-redis  one by one (each command awaited), Pipelined, TxPipelined (the same inside MULTI/EXEC);
//	rueidis   one by one (Do), DoMulti (one call with every command).
//
// The modes of a workload take turns round by round (A B C D E, A B C D E, ...) after `warmup` rounds.
// Around each sample the server's INFO gives the commands it ran and the reads it made; a pipeline's
// commands arrive in a few reads, one by one's in one read each. rueidis hands a DoMulti of
// rueidis.DefaultBlockingPipeline (2,000) commands or more to a connection of its own (mux.go), so the
// fact rueidis_dedicated says whether `size` crossed it.
//
// Modes are <client>_<workload>_<mode>; fields: client (go-redis, rueidis), mode (one_by_one, pipelined,
// tx_pipelined, do_multi), workload (ping, sadd), commands and reads (the server's, per sample).
//
//	go run ./explicit [host] [port] [size] [repeat] [warmup] [workloads]
//	e.g. (in node-go-rust-examples/go)  go run ./explicit 127.0.0.1 6379 10000 3 1 ping,sadd
package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"pipelab/ch10/lab"
)

const example = "ch10-go-explicit"

// --8<-- [start:goredis]
func goredisOneByOne(ctx context.Context, c *redis.Client, work workload) error {
	for i := 0; i < work.n; i++ {
		if err := work.goredis(ctx, c, i).Err(); err != nil {
			return err
		}
	}
	return nil
}

func goredisPipelined(ctx context.Context, c *redis.Client, work workload) error {
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := 0; i < work.n; i++ {
			work.goredis(ctx, p, i)
		}
		return nil
	})
	return err
}

func goredisTxPipelined(ctx context.Context, c *redis.Client, work workload) error {
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i := 0; i < work.n; i++ {
			work.goredis(ctx, p, i)
		}
		return nil
	})
	return err
}

// --8<-- [end:goredis]

// --8<-- [start:rueidis]
func rueidisOneByOne(ctx context.Context, c rueidis.Client, work workload) error {
	for i := 0; i < work.n; i++ {
		if err := c.Do(ctx, work.rueidis(c, i)).Error(); err != nil {
			return err
		}
	}
	return nil
}

func rueidisDoMulti(ctx context.Context, c rueidis.Client, work workload) error {
	cmds := make(rueidis.Commands, 0, work.n)
	for i := 0; i < work.n; i++ {
		cmds = append(cmds, work.rueidis(c, i))
	}
	for _, resp := range c.DoMulti(ctx, cmds...) {
		if err := resp.Error(); err != nil {
			return err
		}
	}
	return nil
}

// --8<-- [end:rueidis]

// workload is what each mode sends: the i-th PING or SADD, in each client's words.
type workload struct {
	name string
	n    int
	keys []string
}

func (w workload) goredis(ctx context.Context, c redis.Cmdable, i int) redis.Cmder {
	if w.name == "ping" {
		return c.Ping(ctx)
	}
	return c.SAdd(ctx, w.keys[i], "member")
}

func (w workload) rueidis(c rueidis.Client, i int) rueidis.Completed {
	if w.name == "ping" {
		return c.B().Ping().Build()
	}
	return c.B().Sadd().Key(w.keys[i]).Member("member").Build()
}

func main() {
	a := lab.Parse(example, "go run ./explicit [host] [port] [size] [repeat] [warmup] [workloads: ping,sadd]", 10_000, 3)
	ctx := context.Background()
	login := lab.LoginFrom("REDIS_URL")
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

	r := lab.NewReport(a)
	r.Clients["go-redis"] = lab.Module("github.com/redis/go-redis/v9")
	r.Clients["rueidis"] = lab.Module("github.com/redis/rueidis")
	r.Header(fmt.Sprintf("%d commands per sample", a.Size))
	r.Fact("rueidis_blocking_pipeline", rueidis.DefaultBlockingPipeline)
	r.Fact("rueidis_dedicated", a.Size >= rueidis.DefaultBlockingPipeline)

	type mode struct {
		client, name string
		run          func(workload) error
	}
	modes := []mode{
		{"go-redis", "one_by_one", func(w workload) error { return goredisOneByOne(ctx, gr, w) }},
		{"go-redis", "pipelined", func(w workload) error { return goredisPipelined(ctx, gr, w) }},
		{"go-redis", "tx_pipelined", func(w workload) error { return goredisTxPipelined(ctx, gr, w) }},
		{"rueidis", "one_by_one", func(w workload) error { return rueidisOneByOne(ctx, ru, w) }},
		{"rueidis", "do_multi", func(w workload) error { return rueidisDoMulti(ctx, ru, w) }},
	}
	for _, name := range strings.Split(a.ExtraOr(0, "ping,sadd"), ",") {
		if name != "ping" && name != "sadd" {
			lab.Stop(2, "%s: workloads are ping and/or sadd, not '%s'.", example, name)
		}
		work := workload{name: name, n: a.Size}
		if name == "sadd" {
			for i := 0; i < a.Size; i++ {
				work.keys = append(work.keys, fmt.Sprintf("%sgo:sadd:%d", lab.Prefix(), i))
			}
		}
		keyOf := func(m mode) string { return strings.ReplaceAll(m.client, "-", "") + "_" + name + "_" + m.name }
		wall, cpu, warm := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
		tally := map[string]*lab.Tally{}
		for round := 0; round < a.Warmup+a.Repeat; round++ {
			for _, m := range modes {
				key := keyOf(m)
				lab.Unlink(ctx, control, work.keys) // every SADD adds its member to an empty key
				before := lab.Snapshot(ctx, control)
				var failed error
				w, c := lab.Timed(func() { failed = m.run(work) })
				if failed != nil {
					lab.Stop(1, "%s %s %s failed: %v.", m.client, name, m.name, failed)
				}
				if round < a.Warmup {
					warm[key] = append(warm[key], w)
					continue
				}
				if tally[key] == nil {
					tally[key] = &lab.Tally{}
				}
				tally[key].Add(lab.Snapshot(ctx, control).Since(before))
				wall[key], cpu[key] = append(wall[key], w), append(cpu[key], c)
			}
		}
		var group []string
		for _, m := range modes {
			key := keyOf(m)
			commands, reads, calls := tally[key].PerSample()
			r.Wire[key] = calls
			r.Mode(key, a.Size, wall[key], cpu[key], warm[key], map[string]any{"client": m.client, "mode": m.name,
				"workload": name, "commands": commands, "reads": reads})
			group = append(group, key)
		}
		r.Pair(group)
		lab.Unlink(ctx, control, work.keys)
	}
	r.Finish()
}
