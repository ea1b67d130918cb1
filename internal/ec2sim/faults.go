package ec2sim

import "time"

// The methods below inject the failures EC2 can give, so tests can check
// what the client does with each.

// FailCapacity makes RunInstances in zone fail with
// InsufficientInstanceCapacity (on = false lifts it).
func (s *Server) FailCapacity(zone string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.capacity[zone] = on
}

// Unsupported makes RunInstances of instanceType in zone fail with
// Unsupported, as EC2 does for a type a zone does not offer.
func (s *Server) Unsupported(instanceType, zone string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unsupported[instanceType+"/"+zone] = true
}

// Throttle makes the next n requests fail with RequestLimitExceeded (503).
func (s *Server) Throttle(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle = n
}

// NoSSH makes the next n launched instances run without sshd: they reach
// running but never accept SSH.
func (s *Server) NoSSH(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noSSH = n
}

// SlowSSH makes the next n launched instances boot slowly: they reach
// running as usual, but their sshd starts only d after launch, as on a big
// image whose boot takes minutes after EC2 reports it running.
func (s *Server) SlowSSH(n int, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slowSSH, s.slowSSHAfter = n, d
}

// SlowTermination makes instances terminated from now on stay
// shutting-down for d.
func (s *Server) SlowTermination(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slowTerm = d
}

// FailAfterCreate makes the next n RunInstances calls create (or, for a
// repeated client token, find) the instance and then answer 500
// InternalError, the case of a launch whose response was lost.
func (s *Server) FailAfterCreate(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failAfterRun = n
}

// FailBoot makes the next n launched instances fail to boot: they go from
// pending to shutting-down and terminated with state reason
// Server.InternalError, as EC2 does with a launch that fails on its side.
func (s *Server) FailBoot(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failBoot = n
}

// ConsoleSilent makes the next n launched instances boot without printing
// their SSH host keys to the console, as an image without cloud-init (or
// with ssh.emit_keys_to_console false) does: the boot log fills, the key
// blocks never come.
func (s *Server) ConsoleSilent(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.consoleSilent = n
}

// ConsoleForgery makes the console of the next n launched instances show
// a host key other than the one their sshd presents: what a client sees
// when a man in the middle answers at the instance's address.
func (s *Server) ConsoleForgery(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.consoleForged = n
}
