package remote

import (
	"regexp"
	"strings"
)

// cloud-init's disable_root message, e.g. Please login as the user "admin"
// rather than the user "root".
var pleaseLoginRE = regexp.MustCompile(`Please login as the user "([^"]+)" rather than the user "[^"]+"`)

// cloudInitRefusal is the exit status of cloud-init's disable_root forced
// command.
const cloudInitRefusal = 142

// LoginRefusal recognizes a command that never ran because the login is
// refused by a forced command, as stock cloud images answer root with the
// launch key: it returns the first line the server printed and the user it
// names ("" when it names none).
func LoginRefusal(res Result, err error) (said, user string, refused bool) {
	out := strings.TrimSpace(string(res.Stdout))
	if m := pleaseLoginRE.FindStringSubmatch(out); m != nil {
		return firstLine(out), m[1], true
	}
	if code, ok := IsExit(err); ok && code == cloudInitRefusal {
		return firstLine(strings.TrimSpace(out + " " + string(res.Stderr))), "", true
	}
	return "", "", false
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
