package campaign

import (
	"strconv"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/report"
)

// MaxLogLines is the most lines the "auto" sampling rate lets a measured
// run write to its per-transaction log. Writing every transaction costs
// throughput (a few percent at 30k tps, more at 400k); a sample of this
// size still gives a stable p99 (hundreds of transactions above it).
const MaxLogLines = 100_000

// logHeadroom is how much faster than its estimate a run may be and still
// stay within MaxLogLines: the auto rate aims at MaxLogLines/logHeadroom
// lines. Runs of a campaign differ by a few percent, and a warm-up by more.
const logHeadroom = 2

// FallbackSamplingRate is the "auto" rate of a run with no estimate of its
// TPS: the first run at a client count, without a warm-up. 1% keeps the
// log small on the fastest machines (400k tps for 60 s is 240k lines,
// 4k lines a second, a cost well under 0.1%), and still gives hundreds of
// lines at 1k tps. Every later run at that client count is sized by the
// runs before it.
const FallbackSamplingRate = 0.01

// samplingRate is the --sampling-rate of a measured run. setting is the
// campaign's: a fraction, used as it is, or "auto". For auto, expectedTPS
// is the most recent TPS seen at the run's client count (0 for none) and
// the rate is chosen so that a run of duration at that TPS writes
// maxLines/logHeadroom lines, all of them when it runs fewer transactions.
func samplingRate(setting string, expectedTPS float64, duration time.Duration, maxLines int) float64 {
	if setting != "auto" {
		r, _ := strconv.ParseFloat(setting, 64)
		return r
	}
	if !(expectedTPS > 0) || duration <= 0 {
		return FallbackSamplingRate
	}
	r := float64(maxLines) / logHeadroom / (expectedTPS * duration.Seconds())
	if r >= 1 {
		return 1
	}
	// Three significant digits keep the command line readable.
	r, _ = strconv.ParseFloat(strconv.FormatFloat(r, 'g', 3, 64), 64)
	return r
}

// latestTPS is the TPS of the last run at a client count in runs (by
// sequence number, which is the order they ran in); 0 when there is none.
func latestTPS(runs map[int]report.Run, clients int) float64 {
	seq, tps := 0, 0.0
	for _, r := range runs {
		if r.Clients == clients && r.TPS > 0 && r.Seq > seq {
			seq, tps = r.Seq, r.TPS
		}
	}
	return tps
}
