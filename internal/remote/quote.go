package remote

import "strings"

// Quote returns s quoted for a POSIX shell so that it reaches the program as
// exactly one argument with no expansion of any kind. It is the only place
// in the project that quotes for a remote shell.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !isSafe(r) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	// Inside single quotes nothing is special except the closing quote,
	// which is written as '\'' (close, escaped quote, reopen).
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// QuoteArgs quotes each argument with Quote and joins them with spaces.
func QuoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}

func isSafe(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("-_./:=,+@%", r)
}
