package remote

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
)

var hostileArgs = []string{
	"plain", "two words", "it's", `say "hi"`, "$(touch /tmp/pgbench-pwned)", "`id`", "a;b", "a|b",
	"a && b", "line1\nline2", "*", "?[a]", "", "ünïcødé ✓", `back\slash`, "$HOME", "'", `"`,
	"-n", "--", "~", "a\tb", "!", "#comment", "%s", "=",
}

// decode splits printf '%s\0' output back into arguments.
func decode(out []byte) []string {
	out = bytes.TrimSuffix(out, []byte{0})
	return strings.Split(string(out), "\x00")
}

func checkRoundTrip(t *testing.T, got []string) {
	t.Helper()
	if len(got) != len(hostileArgs) {
		t.Fatalf("got %d args %q, want %d %q", len(got), got, len(hostileArgs), hostileArgs)
	}
	for i := range got {
		if got[i] != hostileArgs[i] {
			t.Errorf("arg %d = %q, want %q", i, got[i], hostileArgs[i])
		}
	}
}

func TestQuoteThroughRealShell(t *testing.T) {
	script := "printf '%s\\0' " + QuoteArgs(hostileArgs)
	out, err := exec.Command("sh", "-c", script).Output()
	if err != nil {
		t.Fatalf("sh -c: %v", err)
	}
	checkRoundTrip(t, decode(out))
}

func TestQuoteThroughSSH(t *testing.T) {
	t.Parallel()
	e := dialHost(t, nil)
	// Run quotes the args (through the remote login shell and the wrapper's
	// "$@"); printf then shows each one exactly as it arrived.
	res, err := e.Run(context.Background(), Command{Args: append([]string{"printf", `%s\0`}, hostileArgs...)})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkRoundTrip(t, decode(res.Stdout))
	// The same through an explicit nested shell, as callers that need a
	// pipeline do.
	res, err = e.Run(context.Background(), Command{Args: []string{"sh", "-c", "printf '%s\\0' " + QuoteArgs(hostileArgs)}})
	if err != nil {
		t.Fatalf("Run nested: %v", err)
	}
	checkRoundTrip(t, decode(res.Stdout))
}
