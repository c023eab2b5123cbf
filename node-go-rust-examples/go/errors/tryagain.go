package main

// A retryable error reply at the head of a pipeline (errors mode, after the bad command). go-redis
// re-runs the whole pipeline when its FIRST command's reply is an error shouldRetry accepts (LOADING,
// READONLY, CLUSTERDOWN, TRYAGAIN, MASTERDOWN, ...), so the writes after it run again. A script whose
// reply is a TRYAGAIN error stands in for a multi-key command during a slot migration: it fails the
// same way every time, on any server. Facts: tryagain_n, and per case tryagain_<slug>_setting,
// _outcome (what the caller got) and _applied (the counter: INCRs the server ran).

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"pipelab/ch10/lab"
)

const tryAgainN = 100 // INCRs after the script

// --8<-- [start:tryagain]
// A script whose reply is the error a multi-key command gets while its slot migrates.
const tryAgainScript = "return redis.error_reply('TRYAGAIN pipelab: as during a slot migration')"

// tryAgainPipeline: the script, then n INCRs of counter (evalLast: the script after them).
func tryAgainPipeline(ctx context.Context, run pipelined, counter string, n int, evalLast bool) error {
	_, err := run(ctx, func(p redis.Pipeliner) error {
		if !evalLast {
			p.Eval(ctx, tryAgainScript, nil)
		}
		for i := 0; i < n; i++ {
			p.Incr(ctx, counter)
		}
		if evalLast {
			p.Eval(ctx, tryAgainScript, nil)
		}
		return nil
	})
	return err
}

// tryAgainRueidis: the same commands in one DoMulti.
func tryAgainRueidis(ctx context.Context, c rueidis.Client, counter string, n int) error {
	cmds := rueidis.Commands{c.B().Eval().Script(tryAgainScript).Numkeys(0).Build()}
	for i := 0; i < n; i++ {
		cmds = append(cmds, c.B().Incr().Key(counter).Build())
	}
	for _, res := range c.DoMulti(ctx, cmds...) {
		if err := res.Error(); err != nil {
			return err // the script's reply: DoMulti itself has no error
		}
	}
	return nil
}

// --8<-- [end:tryagain]

func tryAgainCases(ctx context.Context, r *lab.Report, control *redis.Client, login lab.Login, addr string,
	gr *redis.Client, ru rueidis.Client) {
	key := lab.Root() + "ch04:go:tryagain:counter"
	defer lab.Unlink(ctx, control, []string{key})
	opt := login.GoRedis(addr)
	opt.MaxRetries = -1
	noRetry := redis.NewClient(opt)
	defer noRetry.Close()
	r.Fact("tryagain_n", tryAgainN)
	defaults := fmt.Sprintf("MaxRetries %d (the default)", gr.Options().MaxRetries)
	cases := []struct {
		slug, setting string
		run           func() error
	}{
		{"goredis", defaults, func() error { return tryAgainPipeline(ctx, gr.Pipelined, key, tryAgainN, false) }},
		{"goredis_noretry", "MaxRetries -1", func() error {
			return tryAgainPipeline(ctx, noRetry.Pipelined, key, tryAgainN, false)
		}},
		{"goredis_last", defaults + ", the script last", func() error {
			return tryAgainPipeline(ctx, gr.Pipelined, key, tryAgainN, true)
		}},
		{"goredis_tx", defaults + ", TxPipelined", func() error {
			return tryAgainPipeline(ctx, gr.TxPipelined, key, tryAgainN, false)
		}},
		{"rueidis", "rueidis defaults (retries on)", func() error { return tryAgainRueidis(ctx, ru, key, tryAgainN) }},
	}
	for _, c := range cases {
		lab.Unlink(ctx, control, []string{key})
		outcome := "no error"
		if err := c.run(); err != nil {
			outcome = lab.Brief(err)
		}
		r.Fact("tryagain_"+c.slug+"_setting", c.setting)
		r.Fact("tryagain_"+c.slug+"_outcome", outcome)
		r.Fact("tryagain_"+c.slug+"_applied", counter(ctx, control, key))
	}
}
