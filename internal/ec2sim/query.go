package ec2sim

import (
	"net/url"
	"path"
	"strconv"
	"strings"
)

// list returns the values of a flattened list parameter: prefix.1,
// prefix.2, ... in index order.
func list(f url.Values, prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := f[prefix+"."+strconv.Itoa(i)]
		if !ok {
			return out
		}
		out = append(out, v[0])
	}
}

// count returns how many entries prefix.N.* there are.
func count(f url.Values, prefix string) int {
	n := 0
	for k := range f {
		if !strings.HasPrefix(k, prefix+".") {
			continue
		}
		rest := strings.TrimPrefix(k, prefix+".")
		if i := strings.IndexByte(rest, '.'); i >= 0 {
			rest = rest[:i]
		}
		if i, err := strconv.Atoi(rest); err == nil && i > n {
			n = i
		}
	}
	return n
}

// filter is one Filter.N of a Describe call: a name and the values any of
// which may match.
type filter struct {
	name   string
	values []string
}

// filters returns the Filter.N.Name / Filter.N.Value.M parameters.
func filters(f url.Values) []filter {
	var out []filter
	for i := 1; i <= count(f, "Filter"); i++ {
		p := "Filter." + strconv.Itoa(i)
		out = append(out, filter{name: f.Get(p + ".Name"), values: list(f, p+".Value")})
	}
	return out
}

// match is EC2's filter value matching: * and ? are wildcards.
func match(pattern, v string) bool {
	ok, err := path.Match(pattern, v)
	return err == nil && ok
}

// matchAny reports whether v matches one of patterns.
func matchAny(patterns []string, v string) bool {
	for _, p := range patterns {
		if match(p, v) {
			return true
		}
	}
	return false
}
