package bisect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/atomicfile"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/campaign"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/hostlock"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/pgbuild"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// Kinds of campaign.Event a bisect adds to its campaigns' own: a step
// begins, a step is decided. Their Seq is the step's number and Total the
// steps it expects in all; a decided step carries the ETA of the steps
// left.
const (
	EventStepStart = "step_start"
	EventStepDone  = "step_done"
)

// bisector is one run of a bisect.
type bisector struct {
	cfg     *Config
	emit    func(campaign.Event)
	out     string
	mirror  *mirror
	journal *journalState
	search  *search
	// commits are the positions of the range: good, the commits between,
	// bad.
	commits  []Commit
	builds   map[string]Build
	res      *Result
	warnings []string
	// runStart is when this process started measuring and building; done
	// counts the steps (the endpoints included) it finished, for the ETA.
	runStart time.Time
	done     int
}

// Execute runs the bisect cfg defines: it mirrors the repository, resolves
// the range (every way the refs give nothing to bisect is an error here,
// before anything is built), builds and measures the endpoints, then tests
// one commit at a time until the first bad commit is known or the range
// shrinks no further. It writes bisect.json and summary.md into the
// bisect's directory. onEvent (may be nil) receives progress: the
// campaigns' events and the bisect's own. A cancelled bisect keeps its
// journal and resumes where it stopped.
func Execute(ctx context.Context, cfg *Config, onEvent func(campaign.Event)) (*Result, error) {
	if onEvent == nil {
		onEvent = func(campaign.Event) {}
	}
	cfg.Defaults()
	// A repository given by a relative path is cloned from elsewhere.
	if _, err := os.Stat(cfg.GitURL); err == nil && !filepath.IsAbs(cfg.GitURL) {
		if abs, err := filepath.Abs(cfg.GitURL); err == nil {
			cfg.GitURL = abs
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.CheckHost(); err != nil {
		return nil, err
	}
	b := &bisector{cfg: cfg, emit: onEvent, out: cfg.Campaign.OutDir}
	return b.run(ctx)
}

func (b *bisector) phase(format string, args ...any) {
	b.emit(campaign.Event{Event: campaign.EventPhase, Message: fmt.Sprintf(format, args...)})
}

func (b *bisector) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	b.warnings = append(b.warnings, msg)
	b.emit(campaign.Event{Event: campaign.EventWarning, Message: msg})
}

func (b *bisector) run(ctx context.Context) (*Result, error) {
	c := b.cfg
	m, warning, err := openMirror(ctx, c.GitCache, c.GitURL, b.phase)
	if err != nil {
		return nil, err
	}
	if warning != "" {
		b.warn("%s", warning)
	}
	b.mirror = m
	good, bad, between, err := m.resolveRange(ctx, c.Good, c.Bad)
	if err != nil {
		return nil, err
	}
	// The bisect's directory is made once the range is known to be one.
	if err := os.MkdirAll(b.out, 0o755); err != nil {
		return nil, fmt.Errorf("make %s: %w", b.out, err)
	}
	if err := os.Chmod(b.out, 0o755); err != nil {
		return nil, fmt.Errorf("chmod %s: %w", b.out, err)
	}
	release, err := campaign.LockDir(b.out)
	if err != nil {
		return nil, err
	}
	defer release()
	b.commits = slices.Concat([]Commit{good}, between, []Commit{bad})
	b.search = newSearch(len(b.commits) - 1)
	j, err := openJournal(b.out, journalHeader{Key: c.Key(), Definition: c.journalDefinition(), Good: good.Hash, Bad: bad.Hash, StartedAt: time.Now().UTC()}, c.Fresh)
	if err != nil {
		return nil, err
	}
	defer j.close()
	b.journal, b.builds = j, j.builds
	b.res = &Result{
		SchemaVersion: SchemaVersion, GitURL: c.GitURL, Direction: c.Direction, Good: good, Bad: bad,
		Commits: len(b.commits) - 1, Steps: []Step{}, Alpha: c.Campaign.Alpha, StepRounds: c.StepRounds,
		Method:    report.AnalysisFor(c.Campaign.Order, c.Campaign.Alpha).Method(),
		Build:     BuildSettings{ConfigureFlags: nonNil(c.Build.ConfigureFlags), CFlags: c.Build.CFlags, Patches: nonNil(c.Build.Patches), CCache: c.Build.CCacheDir != "", Root: c.Build.Root, Incremental: true},
		StartedAt: j.startedAt, Command: c.Command, Dir: b.out,
	}
	b.phase("bisect %s: good %s %q, bad %s %q: %d commits between them, about %d steps",
		c.GitURL, good.Short(), good.Subject, bad.Short(), bad.Subject, len(between), b.search.stepsLeft())
	b.runStart = time.Now()

	if j.endpoints != nil {
		b.res.Endpoints = *j.endpoints
		b.phase("endpoints: %s, from the journal", j.endpoints.Outcome)
	} else {
		ep, err := b.endpoints(ctx)
		if err != nil {
			return nil, err
		}
		if err := j.append(journalLine{Endpoints: &ep}); err != nil {
			return nil, err
		}
		b.res.Endpoints = ep
	}
	b.res.Workload = b.res.Endpoints.Workload
	if b.res.Endpoints.Outcome == EndpointsConfirmed {
		if err := b.steps(ctx); err != nil {
			return nil, err
		}
	}
	return b.finish()
}

// journalDefinition is what the journal's header records of the
// definition: the bisect's own arguments and the campaign's, without where
// they are kept.
func (c *Config) journalDefinition() []string {
	cc := c.Campaign
	cc.OutDir, cc.DataDir = "", ""
	return append(c.definitionArgs(), cc.Args()...)
}

// endpoints builds good and bad and checks that they differ in the
// direction asked.
func (b *bisector) endpoints(ctx context.Context) (Endpoints, error) {
	c := b.cfg
	good, bad := b.commits[0], b.commits[len(b.commits)-1]
	ep := Endpoints{Dir: "endpoints"}
	var err error
	for _, e := range []struct {
		commit Commit
		build  *Build
		flag   string
	}{{good, &ep.Good, "good"}, {bad, &ep.Bad, "bad"}} {
		if *e.build, err = b.build(ctx, e.commit); err != nil {
			return ep, err
		}
		if e.build.Error != "" {
			return ep, fmt.Errorf("%s %s does not build, so there is nothing to compare with: %s", e.flag, e.commit.Short(), e.build.Error)
		}
	}
	variants := []campaign.Variant{{Name: variantGood, BinDir: ep.Good.BinDir}, {Name: variantBad, BinDir: ep.Bad.BinDir}}
	b.emit(campaign.Event{Event: EventStepStart, Seq: 0, Total: b.search.stepsLeft(),
		Message: fmt.Sprintf("endpoints: bad %s against good %s", bad.Short(), good.Short())})
	cells, rounds, secs, res, err := b.measure(ctx, filepath.Join(b.out, ep.Dir), "endpoints", variants, func(cells []report.Cell) bool {
		_, outcome := judgeEndpoints(cells, c.Direction)
		return outcome != EndpointsNoDifference
	})
	if err != nil {
		return ep, err
	}
	ep.Workload = res.Workload
	ep.Cells, ep.Outcome = judgeEndpoints(cells, c.Direction)
	ep.Rounds, ep.MeasureSeconds = rounds, secs
	b.stepDone(0, ep.Outcome == EndpointsConfirmed, fmt.Sprintf("endpoints %s: %s", ep.Outcome, describeEndpoints(ep.Cells)))
	return ep, nil
}

// steps tests commits until none is left to test: first the decisions of
// the journal, then new ones.
func (b *bisector) steps(ctx context.Context) error {
	for _, st := range b.journal.steps {
		if st.Position <= 0 || st.Position >= len(b.commits) || b.commits[st.Position].Hash != st.Commit.Hash {
			return fmt.Errorf("journal step %d names %s at position %d, which the range does not hold", st.N, st.Commit.Short(), st.Position)
		}
		b.search.mark(st.Position, st.Class)
		b.res.Steps = append(b.res.Steps, st)
		b.phase("step %d: %s is %s, from the journal", st.N, st.Commit.Short(), st.Class)
	}
	for {
		p, ok := b.search.next()
		if !ok {
			return nil
		}
		st, err := b.step(ctx, len(b.res.Steps)+1, p)
		if err != nil {
			return err
		}
		if err := b.journal.append(journalLine{Step: &st}); err != nil {
			return err
		}
		b.search.mark(p, st.Class)
		b.res.Steps = append(b.res.Steps, st)
		b.stepDone(st.N, true, stepText(st))
	}
}

// step builds the commit at position p and measures it against both
// endpoints, round after round until it is clear or the rounds run out.
func (b *bisector) step(ctx context.Context, n, p int) (Step, error) {
	c := b.cfg
	commit := b.commits[p]
	st := Step{N: n, Position: p, Commit: commit, Cells: []StepCell{}, Dir: filepath.Join("steps", fmt.Sprintf("%02d-%s", n, commit.Short()))}
	b.emit(campaign.Event{Event: EventStepStart, Seq: n, Total: n - 1 + b.search.stepsLeft(),
		Message: fmt.Sprintf("step %d: %s %q (commit %d of %d)", n, commit.Short(), commit.Subject, p, len(b.commits)-1)})
	var err error
	if st.Build, err = b.build(ctx, commit); err != nil {
		return st, err
	}
	if st.Build.Error != "" {
		st.Class, st.Note, st.Dir = ClassBuildFailed, "does not build: "+st.Build.Error, ""
		return st, nil
	}
	ep := b.res.Endpoints
	// The endpoints' builds, checked again: a step may come long after.
	var goodBuild, badBuild Build
	if goodBuild, err = b.build(ctx, b.commits[0]); err != nil {
		return st, err
	}
	if badBuild, err = b.build(ctx, b.commits[len(b.commits)-1]); err != nil {
		return st, err
	}
	variants := []campaign.Variant{{Name: variantCommit, BinDir: st.Build.BinDir}, {Name: variantGood, BinDir: goodBuild.BinDir}, {Name: variantBad, BinDir: badBuild.BinDir}}
	cells, rounds, secs, _, err := b.measure(ctx, filepath.Join(b.out, st.Dir), fmt.Sprintf("step %d", n), variants, func(cells []report.Cell) bool {
		_, class := judgeStep(cells, ep.Cells, c.Direction)
		return class != classUnclear
	})
	if err != nil {
		return st, err
	}
	st.Rounds, st.MeasureSeconds = rounds, secs
	st.Cells, st.Class = judgeStep(cells, ep.Cells, c.Direction)
	if st.Class == classUnclear {
		st.Class = ClassSkipped
		st.Note = fmt.Sprintf("unclear after %s: neither significantly like good nor like bad (within half the endpoints' change) at every client count", plural(rounds, "round"))
	}
	return st, nil
}

// stepDone reports a finished step (0: the endpoints) with the ETA of the
// steps left (at most log2 of what is left to test, when the bisect goes
// on): their number times the mean time of the steps this process
// finished.
func (b *bisector) stepDone(n int, goOn bool, msg string) {
	b.done++
	elapsed := time.Since(b.runStart).Seconds()
	left := 0
	if goOn {
		left = b.search.stepsLeft()
	}
	eta := elapsed / float64(b.done) * float64(left)
	b.emit(campaign.Event{Event: EventStepDone, Seq: n, Total: n + left,
		Message:        fmt.Sprintf("%s; %d commits left to test, about %d steps, ETA %s", msg, len(b.search.candidates()), left, time.Duration(eta*float64(time.Second)).Round(time.Second)),
		ElapsedSeconds: &elapsed, ETASeconds: &eta})
}

// stepText says what a step found.
func stepText(st Step) string {
	if st.Class == ClassBuildFailed {
		return fmt.Sprintf("step %d: %s does not build, skipped", st.N, st.Commit.Short())
	}
	var parts []string
	for _, sc := range st.Cells {
		parts = append(parts, fmt.Sprintf("%s: vs good %s, vs bad %s", clientsText(sc.Clients), sc.VsGood, sc.VsBad))
	}
	return fmt.Sprintf("step %d: %s is %s after %s (%s)", st.N, st.Commit.Short(), st.Class, plural(st.Rounds, "round"), strings.Join(parts, "; "))
}

// build builds commit, or takes its build from the journal when its prefix
// still holds it. A commit whose sources do not build (configure, make or
// install fails, or a patch does not apply) is a Build with Error, not an
// error; what stops the bisect is a host that cannot build at all.
func (b *bisector) build(ctx context.Context, commit Commit) (Build, error) {
	if bl, ok := b.builds[commit.Hash]; ok && (bl.Error != "" || pgbuild.StampedBuildKey(bl.BinDir) == bl.BuildKey) {
		return bl, nil
	}
	opts := b.cfg.Build
	opts.Patches = slices.Clone(opts.Patches)
	opts.GitURL, opts.GitRef = b.mirror.dir, commit.Hash
	// One source tree per repository and build settings: each step
	// rebuilds what changed since the tree's last build.
	opts.Tree = pgbuild.TreeDir(cmp.Or(opts.Root, pgbuild.DefaultRoot), b.cfg.GitURL, opts)
	opts.HostWait = hostlock.Waiting{Limit: b.cfg.Campaign.WaitHost, Report: func(w hostlock.Wait) {
		b.emit(campaign.Event{Event: campaign.EventWaiting, Message: w.Describe(), ElapsedSeconds: ptr(w.Waited.Seconds())})
	}}
	b.phase("build %s %q", commit.Short(), commit.Subject)
	last := ""
	r, err := pgbuild.Build(ctx, opts, func(phase, _ string) {
		if phase != last {
			last = phase
			b.phase("build %s: %s", commit.Short(), phase)
		}
	})
	var bl Build
	var pe *pgbuild.PhaseError
	var patchErr *pgbuild.PatchError
	switch {
	case err == nil:
		bl = Build{BuildKey: r.BuildKey, BinDir: r.BinDir, Seconds: r.Seconds, Cached: r.Cached, CCache: r.CCache, Incremental: r.Incremental, Tree: opts.Tree, LogPath: r.LogPath}
		how := "built"
		switch {
		case r.Cached:
			how = "reused"
		case r.Incremental:
			how = "built incrementally"
		}
		b.phase("build %s: %s in %.1fs (%s)", commit.Short(), how, r.Seconds, r.BinDir)
	case ctx.Err() != nil:
		return Build{}, err
	case errors.As(err, &patchErr):
		bl = Build{Error: fmt.Sprintf("patch %s does not apply", filepath.Base(patchErr.Patch))}
	case errors.As(err, &pe):
		bl = Build{Error: fmt.Sprintf("%s failed: %v", pe.Phase, pe.Err), LogPath: pe.Log}
	default:
		return Build{}, fmt.Errorf("build %s: %w", commit.Short(), err)
	}
	if bl.Error != "" {
		b.warn("build %s: %s (log: %s)", commit.Short(), bl.Error, bl.LogPath)
	}
	if err := b.journal.append(journalLine{Build: &buildRecord{Commit: commit.Hash, Build: bl}}); err != nil {
		return Build{}, err
	}
	b.builds[commit.Hash] = bl
	return bl, nil
}

// measure runs rounds of the campaign of variants in dir until decided says
// the pooled runs decide, or the rounds run out. It returns the cells of
// the last look, the rounds run, their wall time and the last round's
// results.
func (b *bisector) measure(ctx context.Context, dir, label string, variants []campaign.Variant, decided func([]report.Cell) bool) ([]report.Cell, int, float64, *report.Results, error) {
	c := b.cfg
	names := make([]report.Variant, len(variants))
	for i, v := range variants {
		names[i] = report.Variant{Name: v.Name}
	}
	an := report.AnalysisFor(c.Campaign.Order, c.Campaign.Alpha/float64(c.StepRounds))
	var runs []report.Run
	secs := 0.0
	for k := 1; ; k++ {
		rc := b.roundConfig(filepath.Join(dir, fmt.Sprintf("round-%d", k)), variants)
		what := fmt.Sprintf("%s, round %d of at most %d", label, k, c.StepRounds)
		res, err := campaign.Execute(ctx, rc, b.relay(what))
		if err != nil {
			return nil, k, secs, nil, fmt.Errorf("%s: %w", what, err)
		}
		secs += res.WallSeconds
		for _, w := range res.Warnings {
			b.warnings = append(b.warnings, what+": "+w)
		}
		runs = pool(runs, res.Runs)
		// A single adaptive round is Stein's two-stage design; pooled
		// rounds are plain pairs.
		an.FirstStage = 0
		if k == 1 && c.Campaign.IterationsAuto {
			an.FirstStage = c.Campaign.MinIterations
		}
		cells, _, err := report.Summarize(names, rc.Clients, runs, an)
		if err != nil {
			return nil, k, secs, nil, fmt.Errorf("%s: %w", what, err)
		}
		if decided(cells) || k == c.StepRounds {
			return cells, k, secs, res, nil
		}
		b.phase("%s: unclear, another round", what)
	}
}

// pool adds the runs of a new round to those of the rounds before it, so
// that report.Summarize pairs them as one campaign: sequence numbers follow
// on, and each client count's iterations continue from the last.
func pool(runs, round []report.Run) []report.Run {
	seq := 0
	last := map[int]int{}
	for _, r := range runs {
		seq = max(seq, r.Seq)
		last[r.Clients] = max(last[r.Clients], r.Iteration)
	}
	for _, r := range round {
		// The extra profiled runs of one-per-cell are not measurements.
		if r.Iteration == 0 {
			continue
		}
		r.Seq += seq
		r.Iteration += last[r.Clients]
		runs = append(runs, r)
	}
	return runs
}

// roundConfig is the campaign of one round: the bisect's campaign with
// variants, in dir, its data directories shared by every round.
func (b *bisector) roundConfig(dir string, variants []campaign.Variant) *campaign.Config {
	rc := b.cfg.Campaign
	rc.Variants = variants
	rc.OutDir = dir
	rc.Fresh = b.cfg.Fresh
	rc.Command = append([]string{"pgbench-runner", "ab"}, rc.Args()...)
	return &rc
}

// relay passes a round's events on, saying which round its phases and
// warnings belong to; its "done" becomes a phase, the bisect's own done
// comes at the end.
func (b *bisector) relay(what string) func(campaign.Event) {
	return func(e campaign.Event) {
		switch e.Event {
		case campaign.EventPhase, campaign.EventWarning:
			e.Message = what + ": " + e.Message
		case campaign.EventDone:
			e = campaign.Event{Event: campaign.EventPhase, Message: fmt.Sprintf("%s: measured in %s", what, time.Duration(*e.WallSeconds*float64(time.Second)).Round(time.Second))}
		}
		b.emit(e)
	}
}

// finish settles the outcome and writes bisect.json and summary.md.
func (b *bisector) finish() (*Result, error) {
	res := b.res
	s := b.search
	switch {
	case res.Endpoints.Outcome != EndpointsConfirmed:
		res.Outcome = OutcomeNothing
		res.Answer = nothingToBisect(res.Endpoints, res.Direction, b.cfg.StepRounds)
	case s.found():
		fb := b.commits[s.bad]
		res.Outcome, res.FirstBad = OutcomeFirstBad, &fb
		res.Answer = firstBadText(fb, res.Steps, s.bad == len(b.commits)-1, res.Endpoints)
	default:
		res.Outcome = OutcomeRange
		for p := s.good + 1; p <= s.bad; p++ {
			status := s.skipped[p]
			if p == s.bad {
				status = ClassBad
			}
			res.Range = append(res.Range, RangeCommit{Commit: b.commits[p], Status: status})
		}
		res.Answer = rangeText(res.Range, res.Steps)
	}
	res.FinishedAt = time.Now().UTC()
	res.WallSeconds = res.FinishedAt.Sub(res.StartedAt).Seconds()
	res.BuildSeconds = res.Endpoints.Good.Seconds + res.Endpoints.Bad.Seconds
	res.MeasureSeconds = res.Endpoints.MeasureSeconds
	for _, st := range res.Steps {
		res.BuildSeconds += st.Build.Seconds
		res.MeasureSeconds += st.MeasureSeconds
	}
	res.Warnings = b.warnings
	if err := atomicfile.WriteJSON(filepath.Join(b.out, ResultsFile), res, 0o644); err != nil {
		return nil, fmt.Errorf("write %s: %w", ResultsFile, err)
	}
	var md strings.Builder
	WriteMarkdown(&md, res)
	if err := atomicfile.WriteFile(filepath.Join(b.out, SummaryFile), []byte(md.String()), 0o644); err != nil {
		return nil, err
	}
	b.emit(campaign.Event{Event: campaign.EventDone, WallSeconds: ptr(res.WallSeconds), Message: res.Answer})
	return res, nil
}

// nothingToBisect says why the endpoints stopped the bisect.
func nothingToBisect(ep Endpoints, direction string, rounds int) string {
	what := "slower"
	if direction == DirectionImprovement {
		what = "faster"
	}
	if ep.Outcome == EndpointsOpposite {
		other := DirectionImprovement
		if direction == DirectionImprovement {
			other = DirectionRegression
		}
		return fmt.Sprintf("nothing to bisect: bad is not %s than good but significantly the other way (%s); for that change bisect with --direction %s",
			what, describeEndpoints(ep.Cells), other)
	}
	return fmt.Sprintf("nothing to bisect: bad is not significantly %s than good at every client count after %s (%s)", what, plural(ep.Rounds, "round"), describeEndpoints(ep.Cells))
}

// firstBadText says which commit is the first bad one and what shows it.
func firstBadText(fb Commit, steps []Step, isBad bool, ep Endpoints) string {
	return fmt.Sprintf("first bad commit: %s %q (authored %s): %s", fb.Hash, fb.Subject, fb.AuthorDate.UTC().Format(time.RFC3339), firstBadEvidence(fb, steps, isBad, ep))
}

// firstBadEvidence is what shows the first bad commit is bad: its
// measurement against both ends, or, for bad itself, that every commit
// before it was good.
func firstBadEvidence(fb Commit, steps []Step, isBad bool, ep Endpoints) string {
	for _, st := range steps {
		if st.Commit.Hash == fb.Hash && len(st.Cells) > 0 {
			var parts []string
			for _, sc := range st.Cells {
				parts = append(parts, fmt.Sprintf("at %s it is %s against good and %s against bad", clientsText(sc.Clients), sc.VsGood, sc.VsBad))
			}
			return strings.Join(parts, "; ")
		}
	}
	if isBad {
		return "it is bad itself and the commit before it is good; " + describeEndpoints(ep.Cells)
	}
	return "the commit before it is good"
}

// rangeText says which commits are left and why they could not be told
// apart.
func rangeText(rng []RangeCommit, steps []Step) string {
	notes := map[string]string{}
	for _, st := range steps {
		notes[st.Commit.Hash] = st.Note
	}
	var parts []string
	for _, rc := range rng {
		if rc.Status == ClassBad {
			parts = append(parts, fmt.Sprintf("%s (bad)", rc.Short()))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s (skipped: %s)", rc.Short(), notes[rc.Hash]))
	}
	return fmt.Sprintf("the first bad commit is one of %d commits, %s..%s: %s", len(rng), rng[0].Short(), rng[len(rng)-1].Short(), strings.Join(parts, "; "))
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func ptr(f float64) *float64 { return &f }
