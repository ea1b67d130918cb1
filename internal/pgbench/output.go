package pgbench

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Output is what pgbench prints at the end of a timed run.
type Output struct {
	// Version is pgbench's own version ("15.18 (Debian 15.18-0+deb12u1)");
	// ServerVersion is set only when pgbench reports a different server
	// ("pgbench (16.1, server 15.4)"). PostgreSQL 13 prints neither.
	Version, ServerVersion  string
	TransactionType         string
	QueryMode               string
	Scale, Clients, Threads int
	// MaxTries is "maximum number of tries" (15+); 0 when not printed.
	MaxTries        int
	DurationSeconds float64
	Transactions    int64
	// Failed is "number of failed transactions" (15+; 0 before).
	Failed  int64
	Skipped int64
	// Retried and Retries are printed with --max-tries other than 1.
	Retried, Retries int64
	// TPS excludes the initial connection time: "without initial connection
	// time" (14+) or "excluding connections establishing" (13).
	TPS float64
	// TPSIncludingConnect is PostgreSQL 13's "including connections
	// establishing" figure; 0 on later versions.
	TPSIncludingConnect float64
	LatencyAvgMS        float64
	// LatencyStddevMS is printed only when pgbench measured each
	// transaction (-P, --rate, --latency-limit, --log).
	LatencyStddevMS  float64
	InitialConnectMS float64
	// Progress holds the tps of each -P progress line, in order.
	Progress []float64 `json:",omitempty"`
}

// AbortedError is a run pgbench itself reported as aborted or failed to
// start. Messages holds pgbench's "pgbench: error: ..." lines.
type AbortedError struct {
	Messages []string
}

func (e *AbortedError) Error() string {
	if len(e.Messages) == 0 {
		return "pgbench run was aborted"
	}
	return "pgbench run was aborted: " + strings.Join(e.Messages, "; ")
}

// ErrNotOutput is returned when the text has no pgbench summary at all.
var ErrNotOutput = errors.New("not pgbench output: no \"transaction type:\" and tps lines")

// ParseOutput parses pgbench's output of a timed run (stdout, or stdout
// and stderr together: progress lines and messages are recognised too).
// An aborted run is an *AbortedError, text without a summary ErrNotOutput.
func ParseOutput(text string) (*Output, error) {
	p := &outputParser{out: &Output{}}
	for _, raw := range strings.Split(text, "\n") {
		if err := p.line(strings.TrimRight(raw, "\r")); err != nil {
			return nil, err
		}
	}
	return p.result()
}

// outputParser is the state of ParseOutput between lines.
type outputParser struct {
	out             *Output
	msgs            []string
	aborted         bool
	sawType, sawTPS bool
}

// line reads one line: a message, a progress line, the banner or a
// summary field; anything else is skipped.
func (p *outputParser) line(line string) error {
	if line == "" {
		return nil
	}
	if m, ok := pgbenchMessage(line); ok {
		if strings.Contains(m, "Run was aborted") {
			p.aborted = true
		} else {
			p.msgs = append(p.msgs, m)
		}
		return nil
	}
	if strings.HasPrefix(line, "\t") || strings.HasPrefix(line, " ") {
		// Continuation of a message (libpq detail/hint) or a
		// per-statement latency line: neither is summary data.
		return nil
	}
	if strings.HasPrefix(line, "progress: ") {
		if tps, ok := progressTPS(line); ok {
			p.out.Progress = append(p.out.Progress, tps)
		}
		return nil
	}
	if strings.HasPrefix(line, "pgbench (") && strings.HasSuffix(line, ")") {
		p.out.Version, p.out.ServerVersion = parseBanner(line)
		return nil
	}
	key, val, ok := strings.Cut(line, ": ")
	if !ok {
		key, val, ok = strings.Cut(line, " = ")
	}
	if !ok {
		return nil
	}
	if err := p.field(key, val); err != nil {
		return fmt.Errorf("parse pgbench output line %q: %w", line, err)
	}
	return nil
}

// field sets the summary field key; keys it does not know are skipped.
func (p *outputParser) field(key, val string) error {
	out := p.out
	var err error
	switch key {
	case "transaction type":
		out.TransactionType, p.sawType = val, true
	case "query mode":
		out.QueryMode = val
	case "scaling factor":
		out.Scale, err = strconv.Atoi(val)
	case "number of clients":
		out.Clients, err = strconv.Atoi(val)
	case "number of threads":
		out.Threads, err = strconv.Atoi(val)
	case "maximum number of tries":
		out.MaxTries, err = strconv.Atoi(val)
	case "duration":
		out.DurationSeconds, err = parseFloat(strings.TrimSuffix(val, " s"))
	case "number of transactions actually processed":
		// "N" under -T, "N/M" under -t.
		n, _, _ := strings.Cut(val, "/")
		out.Transactions, err = strconv.ParseInt(n, 10, 64)
	case "number of failed transactions":
		out.Failed, err = leadingInt(val)
	case "number of transactions skipped":
		out.Skipped, err = leadingInt(val)
	case "number of transactions retried":
		out.Retried, err = leadingInt(val)
	case "total number of retries":
		out.Retries, err = strconv.ParseInt(val, 10, 64)
	case "latency average":
		out.LatencyAvgMS, err = parseMS(val)
	case "latency stddev":
		out.LatencyStddevMS, err = parseMS(val)
	case "initial connection time":
		out.InitialConnectMS, err = parseMS(val)
	case "tps":
		err = p.tps(val)
	}
	return err
}

// tps sets one of the tps figures by its kind.
func (p *outputParser) tps(val string) error {
	num, kind, _ := strings.Cut(val, " ")
	tps, err := parseFloat(num)
	switch kind {
	case "(including connections establishing)":
		p.out.TPSIncludingConnect = tps
	case "(without initial connection time)", "(excluding connections establishing)", "(including reconnection times)":
		p.out.TPS, p.sawTPS = tps, true
	default:
		err = fmt.Errorf("unknown tps kind %q", kind)
	}
	return err
}

// result is the parsed output, or why there is none: the run aborted, or
// the text has no summary.
func (p *outputParser) result() (*Output, error) {
	if p.aborted {
		return nil, &AbortedError{Messages: p.msgs}
	}
	if !p.sawType || !p.sawTPS {
		if len(p.msgs) > 0 {
			return nil, fmt.Errorf("%w: pgbench said: %s", ErrNotOutput, strings.Join(p.msgs, "; "))
		}
		return nil, ErrNotOutput
	}
	return p.out, nil
}

// pgbenchMessage recognises pgbench's log lines: "pgbench: error: ..."
// (15+), "pgbench: fatal: ..." (13, 14), and the messages without a
// level, returning the message without the "pgbench: " prefix.
func pgbenchMessage(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "pgbench: ")
	if !ok {
		if strings.HasPrefix(line, "Run was aborted") {
			return line, true
		}
		return "", false
	}
	for _, level := range []string{"error: ", "fatal: ", "warning: ", "detail: ", "hint: "} {
		if m, ok := strings.CutPrefix(rest, level); ok {
			return m, true
		}
	}
	return rest, true
}

// parseBanner splits "pgbench (16.1, server 15.4)" or "pgbench (15.18 (Debian 15.18-0+deb12u1))".
func parseBanner(line string) (version, server string) {
	inner := strings.TrimSuffix(strings.TrimPrefix(line, "pgbench ("), ")")
	if v, s, ok := strings.Cut(inner, ", server "); ok {
		return v, s
	}
	return inner, ""
}

// progressTPS reads the tps of "progress: 1.0 s, 49336.8 tps, lat ...".
func progressTPS(line string) (float64, bool) {
	parts := strings.Split(line, ", ")
	if len(parts) < 2 {
		return 0, false
	}
	num, ok := strings.CutSuffix(parts[1], " tps")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(num, 64)
	return v, err == nil
}

// parseMS reads "1.273 ms" and "1.273 ms (including failures)".
func parseMS(val string) (float64, error) {
	num, _, _ := strings.Cut(val, " ")
	return parseFloat(num)
}

func parseFloat(s string) (float64, error) {
	return strconv.ParseFloat(strings.TrimSpace(s), 64)
}

// leadingInt reads the count of "93 (2.342%)".
func leadingInt(val string) (int64, error) {
	num, _, _ := strings.Cut(val, " ")
	return strconv.ParseInt(num, 10, 64)
}
