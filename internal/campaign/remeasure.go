package campaign

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// maxReplacements is how many times one pair is measured again after a
// failed run before the campaign gives up with the run's error.
const maxReplacements = 2

// measureOrReplace measures steps[i], replacing its pair when it must: a
// pair is every variant's run of one client count and iteration, which
// the paired analysis compares, so a pair is only worth its runs when they
// ran back to back.
//
//   - When the runs of the pair that precede steps[i] lie far apart in
//     time from now (a campaign resumed hours later), they are measured
//     again first, then steps[i].
//   - When a run fails (pgbench or the server fails, or its figure of
//     merit is 0, NaN or infinite), the failure is journaled and the pair
//     up to steps[i] is measured again, back to back, up to
//     maxReplacements times; then the run's error ends the campaign.
//
// Each replacement is journaled, and the results count them. It returns
// steps[i]'s run and how many runs it measured.
func (e *engine) measureOrReplace(ctx context.Context, steps []Step, i int, prev *Step) (*report.Run, int, error) {
	st := steps[i]
	partners := e.pairBefore(steps, i)
	again := false
	if far := e.farPartner(partners); far != nil {
		if err := e.recordReplacement(st, fmt.Sprintf("its run %d (%s) started %s before this one, not back to back: a resumed campaign", far.Seq, far.Variant, time.Since(far.StartedAt).Round(time.Second)), nil); err != nil {
			return nil, 0, err
		}
		again = true
	}
	ran := 0
	for attempt := 0; ; attempt++ {
		todo := []Step{st}
		if again {
			todo = append(append([]Step{}, partners...), st)
		}
		r, n, err := e.measureSteps(ctx, steps, todo, prev)
		ran += n
		if err == nil {
			return r, ran, nil
		}
		failed, ok := err.(*runFailure)
		if !ok || ctx.Err() != nil || attempt == maxReplacements {
			return nil, ran, err
		}
		if err := e.recordReplacement(failed.step, failed.reason(), failed.run); err != nil {
			return nil, ran, err
		}
		e.warn("%d clients, iteration %d: %s; measuring the pair again", st.Clients, st.Iteration, failed.reason())
		again, partners = true, e.pairBefore(steps, i)
		prev = &failed.step
	}
}

// runFailure is a run that failed: the error of the run, or a run whose
// figure of merit cannot enter the statistics.
type runFailure struct {
	step Step
	run  *report.Run
	err  error
}

func (f *runFailure) Error() string { return f.err.Error() }
func (f *runFailure) Unwrap() error { return f.err }

func (f *runFailure) reason() string {
	return fmt.Sprintf("run %d (%s) failed: %v", f.step.Seq, f.step.Variant, f.err)
}

// measureSteps runs todo back to back after prev, journaling each run,
// and returns the last run. A failed run is a *runFailure.
func (e *engine) measureSteps(ctx context.Context, steps, todo []Step, prev *Step) (*report.Run, int, error) {
	var last *report.Run
	for k, st := range todo {
		e.emit(Event{Event: EventRunStart, Seq: st.Seq, Total: e.count(steps, false), Variant: st.Variant, Clients: st.Clients, Iteration: st.Iteration})
		r, err := e.runStep(ctx, st, prev)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, k, err
		case err != nil:
			return nil, k, &runFailure{step: st, err: err}
		case !validRun(r, e.cfg.metric()):
			return nil, k + 1, &runFailure{step: st, run: scrubbed(r), err: fmt.Errorf("%s %v is not a positive number", report.MetricLabel(e.cfg.metric()), r.Value(e.cfg.metric()))}
		}
		if err := e.journal.Append(*r); err != nil {
			return nil, k, err
		}
		e.decide(st.Clients)
		last, prev = r, &todo[k]
		if k < len(todo)-1 {
			// The caller reports the last run, with the pace.
			e.emit(Event{Event: EventRunDone, Seq: st.Seq, Total: e.count(steps, false), Variant: st.Variant, Clients: st.Clients, Iteration: st.Iteration,
				TPS: ptr(r.TPS), NOPM: nopmPtr(*r), Seconds: ptr(r.Seconds)})
		}
	}
	return last, len(todo), nil
}

// validRun says a run's figure of merit can enter the statistics.
func validRun(r *report.Run, metric string) bool {
	v := r.Value(metric)
	return !math.IsNaN(v) && !math.IsInf(v, 0) && v > 0
}

// scrubbed is a failed run as the journal can hold it: JSON has no NaN or
// Inf, so they are written as 0 (the reason keeps the value).
func scrubbed(r *report.Run) *report.Run {
	c := *r
	for _, v := range []*float64{&c.TPS, &c.NOPM, &c.TPM} {
		if math.IsNaN(*v) || math.IsInf(*v, 0) {
			*v = 0
		}
	}
	c.TPSSeries, c.Counters = nil, nil
	return &c
}

// pairBefore are the measured steps of steps[i]'s pair (same client count
// and iteration) that come before it in the plan; none in a randomized
// order, whose unpaired analysis replaces only the failed run.
func (e *engine) pairBefore(steps []Step, i int) []Step {
	st := steps[i]
	var out []Step
	// Only the alternating order pairs runs; a profiled extra run pairs
	// with none.
	if e.cfg.Order != OrderAlternate || st.Iteration == 0 {
		return nil
	}
	for _, p := range steps[:i] {
		if p.Clients == st.Clients && p.Iteration == st.Iteration && p.Profiled == st.Profiled {
			out = append(out, p)
		}
	}
	return out
}

// farPartner is the first journaled run of partners that started too long
// ago to pair with a run starting now: more than three times a run and its
// warm-up, plus two minutes for a server start. Partners not journaled yet
// are left to the plan.
func (e *engine) farPartner(partners []Step) *report.Run {
	limit := 3*(e.cfg.Duration+e.cfg.Warmup) + 2*time.Minute
	for _, p := range partners {
		if r, ok := e.journal.Runs[p.Seq]; ok && time.Since(r.StartedAt) > limit {
			return &r
		}
	}
	return nil
}

// recordReplacement journals that st's pair is measured again, and why.
func (e *engine) recordReplacement(st Step, reason string, failed *report.Run) error {
	rep := report.Replacement{Clients: st.Clients, Iteration: st.Iteration, Reason: reason, At: time.Now().UTC(), Failed: failed}
	if err := e.journal.append(journalLine{Replaced: &rep}); err != nil {
		return err
	}
	e.journal.Replaced = append(e.journal.Replaced, rep)
	return nil
}

// reportReplacements puts the replaced pairs into the results, with one
// warning that counts them and says why.
func reportReplacements(res *report.Results, reps []report.Replacement) {
	if len(reps) == 0 {
		return
	}
	res.Replaced = reps
	msg := fmt.Sprintf("%d pairs of runs were measured again, each back to back:", len(reps))
	for _, r := range reps {
		msg += fmt.Sprintf(" %d clients, iteration %d (%s);", r.Clients, r.Iteration, r.Reason)
	}
	res.Warnings = append(res.Warnings, msg[:len(msg)-1])
}
