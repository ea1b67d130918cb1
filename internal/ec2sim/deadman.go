package ec2sim

import (
	"regexp"
	"strconv"
	"time"
)

// powerOff is the power-off a launch's user data schedules, read from the
// script as its shell would run it: either at an absolute instant (the
// epoch the script holds, never sooner than floor after the script runs)
// or after a delay counted from when the script runs. The zero value
// schedules nothing.
type powerOff struct {
	at    time.Time
	floor time.Duration
	after time.Duration
}

// delay is how long after now, when the user data runs, the power-off
// fires; 0 means never.
func (p powerOff) delay(now time.Time) time.Duration {
	if !p.at.IsZero() {
		return max(p.at.Sub(now), p.floor)
	}
	return p.after
}

// The absolute form, which ec2host.DeadManUserData writes: the seconds
// left until the epoch, by the instance's clock, floored, given to
// systemd-run. Every line must be there for the schedule to count.
var (
	deadManEpochRE = regexp.MustCompile(`(?m)^expires=(\d+)$`)
	deadManLeftRE  = regexp.MustCompile(`(?m)^left=\$\(\( expires - \$\(date \+%s\) \)\)$`)
	deadManFloorRE = regexp.MustCompile(`(?m)^\[ "\$left" -ge (\d+) \] \|\| left=(\d+)$`)
	deadManTimerRE = regexp.MustCompile(`(?m)^\s*systemd-run (?:--unit=\S+ )?--on-active="\$\{left\}s" /bin/systemctl poweroff`)
	// The relative forms: a literal timer or shutdown delay.
	deadManRelRE = regexp.MustCompile(`(?m)(?:--on-active=(\d+)s?\b|shutdown\s+-[hPH]\s+\+(\d+)\b)`)
)

// parseDeadMan finds the power-off schedule in user data: the absolute
// form above, else a systemd-run --on-active=SECONDS timer, else
// shutdown -P +MINUTES. A script it cannot read schedules nothing, so a
// broken script fails the tests that rely on the power-off.
func parseDeadMan(userData string) powerOff {
	if m := deadManEpochRE.FindStringSubmatch(userData); m != nil {
		fl := deadManFloorRE.FindStringSubmatch(userData)
		if !deadManLeftRE.MatchString(userData) || fl == nil || fl[1] != fl[2] || !deadManTimerRE.MatchString(userData) {
			return powerOff{}
		}
		epoch, err1 := strconv.ParseInt(m[1], 10, 64)
		floor, err2 := strconv.Atoi(fl[1])
		if err1 != nil || err2 != nil || floor < 1 {
			return powerOff{}
		}
		return powerOff{at: time.Unix(epoch, 0).UTC(), floor: time.Duration(floor) * time.Second}
	}
	m := deadManRelRE.FindStringSubmatch(userData)
	if m == nil {
		return powerOff{}
	}
	if m[1] != "" {
		n, _ := strconv.Atoi(m[1])
		return powerOff{after: time.Duration(n) * time.Second}
	}
	n, _ := strconv.Atoi(m[2])
	return powerOff{after: time.Duration(n) * time.Minute}
}

// boot ends an instance's pending: it runs, and its user data schedules
// the power-off, counted from now, as on EC2 where user data runs once
// the instance is up (minutes after the launch on metal).
func (s *Server) boot(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.instances[id]
	if in == nil || in.state != Pending || s.closed {
		return
	}
	in.state = Running
	now := time.Now()
	if d := in.powerOff.delay(now); d > 0 {
		in.powerOffAt = now.Add(d)
		in.timers = append(in.timers, time.AfterFunc(d, func() { s.instanceShutdown(id) }))
	}
}
