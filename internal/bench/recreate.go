package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// targetRecreatedP99 is how much a pi child's cleanup may add to the p99
// of the next ask (issue 15: it added the broker's 250 ms poll).
const targetRecreatedP99 = 2 * time.Millisecond

// RecreateResult is the rule-resolved round trip of one requester asking
// in turn with an inbox left as it was (Steady) and with the inbox a pi
// child's cleanup removed after the previous exchange (Recreated): the
// child makes it again before it writes, as pi's and courier's do.
type RecreateResult struct {
	Steady    *LoadRun `json:"steady"`
	Recreated *LoadRun `json:"recreated"`
}

// Added is the recreated p99 minus the steady p99, and false when a run
// failed.
func (r *RecreateResult) Added() (time.Duration, bool) {
	if r == nil || r.Steady == nil || r.Recreated == nil || r.Steady.Failed > 0 || r.Recreated.Failed > 0 || r.Steady.Asks == 0 || r.Recreated.Asks == 0 {
		return 0, false
	}
	return r.Recreated.Latency.P99 - r.Steady.Latency.P99, true
}

// SteadyAsRule reports whether the asks into the inbox left as it is were
// steady: their p90 within targetRecreatedP99 of the rule-resolved round
// trip's, measured before any cleanup. A watcher that lost the inbox slows
// the ask after the recreated one too (the old watcher's "steady" p90 was
// 251 ms), and the p99 difference alone would then look fine.
func (r *RecreateResult) SteadyAsRule(rule *LoadRun) bool {
	return r != nil && r.Steady != nil && rule != nil && rule.Asks > 0 &&
		r.Steady.Latency.P90 <= rule.Latency.P90+targetRecreatedP99
}

// recreation asks in turn, one requester: an ask into the inbox as it is,
// then pi 20.7.3's cleanupPermissionForwardingLocationIfEmpty on the
// target's location (requests/ if empty, then responses/ only if requests/
// is gone, then the session directory if empty; shared/reference/
// pi-forwarding.md) and an ask into the inbox that removed. Both kinds
// alternate, so load drifts onto both alike.
func (d *driver) recreation(ctx context.Context, warmup, count int) (steady, recreated loadResult) {
	steady.Requesters, recreated.Requesters = 1, 1
	c := d.client()
	defer c.Close()
	start := time.Now()
	for round := range warmup + count {
		for i, res := range []*loadResult{&steady, &recreated} {
			if i == 1 {
				if err := d.piCleanup(); err != nil {
					res.Failed++
					res.FirstErr = err
					return steady, recreated
				}
			}
			lat, err := d.ask(ctx, c, "bench-recreated", ruleAsk)
			if ctx.Err() != nil {
				res.FirstErr = context.Cause(ctx)
				return steady, recreated
			}
			if err != nil {
				res.Failed++
				res.FirstErr = err
				return steady, recreated
			}
			if round >= warmup {
				res.Latencies = append(res.Latencies, lat)
			}
		}
	}
	steady.Elapsed, recreated.Elapsed = time.Since(start), time.Since(start)
	return steady, recreated
}

// piCleanup removes the target's empty location in pi's order. A
// directory that is gone or not empty is left, as pi leaves it.
func (d *driver) piCleanup() error {
	requests, err := d.layout.RequestsDir(d.target)
	if err != nil {
		return err
	}
	responses, err := d.layout.ResponsesDir(d.target)
	if err != nil {
		return err
	}
	session, err := d.layout.SessionDir(d.target)
	if err != nil {
		return err
	}
	if err := rmdirBenign(requests); err != nil {
		return err
	}
	if _, err := os.Lstat(requests); errors.Is(err, os.ErrNotExist) {
		if err := rmdirBenign(responses); err != nil {
			return err
		}
	}
	return rmdirBenign(session)
}

func rmdirBenign(dir string) error {
	err := os.Remove(dir)
	if err == nil || errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
		return nil
	}
	return fmt.Errorf("pi's cleanup: %w", err)
}
