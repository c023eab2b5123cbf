package main

// The two Go clients of the failover example, each behind the same small interface: its pipelines of
// the scenarios, and a plain GET for counting afterwards.

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"pipelab/ch10/lab"
)

// --8<-- [start:goredis-sets]
// goredisSets: ClusterClient splits the pipeline by the master of each key's slot, one connection per master.
func goredisSets(ctx context.Context, cc *redis.ClusterClient, keys []string, value string) ([]redis.Cmder, error) {
	return cc.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Set(ctx, k, value, 0)
		}
		return nil
	})
}

// --8<-- [end:goredis-sets]

// --8<-- [start:goredis-scripts]
// goredisScripts: in a pipeline Script.Run can only queue EVALSHA; a NOSCRIPT comes back with Exec,
// after Run has returned, so its EVAL fallback never runs.
func goredisScripts(ctx context.Context, cc *redis.ClusterClient, script *redis.Script, keys []string) ([]redis.Cmder, error) {
	return cc.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			script.Run(ctx, p, []string{k})
		}
		return nil
	})
}

// --8<-- [end:goredis-scripts]

// --8<-- [start:goredis-replicas]
func goredisReads(ctx context.Context, cc *redis.ClusterClient, keys []string) ([]redis.Cmder, error) {
	return cc.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Get(ctx, k)
		}
		return nil
	})
}

func goredisWriteThenRead(ctx context.Context, cc *redis.ClusterClient, keys []string) ([]redis.Cmder, error) {
	return cc.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Set(ctx, k, "new", 0)
			p.Get(ctx, k)
		}
		return nil
	})
}

// --8<-- [end:goredis-replicas]

// --8<-- [start:rueidis-sets]
// rueidisSets: the cluster client splits DoMulti by slot owner, one pipelined connection per master.
func rueidisSets(ctx context.Context, c rueidis.Client, keys []string, value string) []rueidis.RedisResult {
	cmds := make(rueidis.Commands, 0, len(keys))
	for _, k := range keys {
		cmds = append(cmds, c.B().Set().Key(k).Value(value).Build())
	}
	return c.DoMulti(ctx, cmds...)
}

// --8<-- [end:rueidis-sets]

// --8<-- [start:rueidis-scripts]
// rueidisScripts: ExecMulti first sends SCRIPT LOAD to every node, then the EVALSHAs in one DoMulti.
func rueidisScripts(ctx context.Context, c rueidis.Client, lua *rueidis.Lua, keys []string) []rueidis.RedisResult {
	execs := make([]rueidis.LuaExec, 0, len(keys))
	for _, k := range keys {
		execs = append(execs, rueidis.LuaExec{Keys: []string{k}})
	}
	return lua.ExecMulti(ctx, c, execs...)
}

// --8<-- [end:rueidis-scripts]

// reply is one command's outcome as its caller sees it: a value or an error.
type reply struct {
	value string
	err   error
}

// subject is one client case.
type subject interface {
	name() string
	warm(ctx context.Context) error // slot map loaded, a connection to every master
	sets(ctx context.Context, keys []string, value string) ([]reply, error)
	scripts(ctx context.Context, body string, keys []string) ([]reply, error)
	get(ctx context.Context, key string) (string, error)
}

type goredisCase struct{ cc *redis.ClusterClient }

func newGoredis(addr string, l lab.Login, tune func(*redis.ClusterOptions)) *goredisCase {
	opt := &redis.ClusterOptions{Addrs: []string{addr}, Username: l.User, Password: l.Password, TLSConfig: l.TLS}
	if tune != nil {
		tune(opt)
	}
	return &goredisCase{redis.NewClusterClient(opt)}
}

func (g *goredisCase) name() string { return "go-redis v" + lab.Module("github.com/redis/go-redis/v9") }

func (g *goredisCase) warm(ctx context.Context) error {
	return g.cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() })
}

func (g *goredisCase) sets(ctx context.Context, keys []string, value string) ([]reply, error) {
	cmds, err := goredisSets(ctx, g.cc, keys, value)
	return goredisReplies(cmds), err
}

func (g *goredisCase) scripts(ctx context.Context, body string, keys []string) ([]reply, error) {
	cmds, err := goredisScripts(ctx, g.cc, redis.NewScript(body), keys)
	return goredisReplies(cmds), err
}

func (g *goredisCase) get(ctx context.Context, key string) (string, error) {
	return g.cc.Get(ctx, key).Result()
}

func goredisReplies(cmds []redis.Cmder) []reply {
	out := make([]reply, 0, len(cmds))
	for _, cmd := range cmds {
		p := reply{err: cmd.Err()}
		if p.err == nil {
			switch c := cmd.(type) {
			case *redis.StatusCmd:
				p.value = c.Val()
			case *redis.StringCmd:
				p.value = c.Val()
			case *redis.Cmd:
				p.value = fmt.Sprint(c.Val())
			}
		}
		out = append(out, p)
	}
	return out
}

type rueidisCase struct{ c rueidis.Client }

func newRueidis(addr string, l lab.Login) *rueidisCase {
	c, err := rueidis.NewClient(l.Rueidis(addr)) // a cluster has database 0 only
	if err != nil {
		lab.Stop(4, "rueidis cannot reach the cluster at %s: %v.", addr, err)
	}
	return &rueidisCase{c}
}

func (u *rueidisCase) name() string { return "rueidis v" + lab.Module("github.com/redis/rueidis") }

// warm: rueidis loaded the slot map in NewClient; a PING to each node opens its connection.
func (u *rueidisCase) warm(ctx context.Context) error {
	for _, n := range u.c.Nodes() {
		if err := n.Do(ctx, n.B().Ping().Build()).Error(); err != nil {
			return err
		}
	}
	return nil
}

func (u *rueidisCase) sets(ctx context.Context, keys []string, value string) ([]reply, error) {
	return rueidisReplies(rueidisSets(ctx, u.c, keys, value))
}

func (u *rueidisCase) scripts(ctx context.Context, body string, keys []string) ([]reply, error) {
	return rueidisReplies(rueidisScripts(ctx, u.c, rueidis.NewLuaScript(body), keys))
}

func (u *rueidisCase) get(ctx context.Context, key string) (string, error) {
	return u.c.Do(ctx, u.c.B().Get().Key(key).Build()).ToString()
}

// rueidisReplies: DoMulti has no error of its own, so the call's is its first result's error.
func rueidisReplies(results []rueidis.RedisResult) ([]reply, error) {
	var first error
	out := make([]reply, 0, len(results))
	for _, res := range results {
		p := reply{err: res.Error()}
		if s, err := res.ToString(); err == nil {
			p.value = s
		} else if i, err := res.ToInt64(); err == nil {
			p.value = strconv.FormatInt(i, 10)
		}
		if first == nil {
			first = p.err
		}
		out = append(out, p)
	}
	return out, first
}
