package ec2sim

import (
	"maps"
	"net/url"
	"slices"
	"strconv"
)

// readTags adds the tags prefix.N.Key / prefix.N.Value of a request to m.
func readTags(f url.Values, prefix string, m map[string]string) {
	for j := 1; j <= count(f, prefix); j++ {
		q := prefix + "." + strconv.Itoa(j)
		m[f.Get(q+".Key")] = f.Get(q + ".Value")
	}
}

// xtags renders tags sorted by key, so responses are stable.
func xtags(m map[string]string) []xTag {
	var out []xTag
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, xTag{Key: k, Value: m[k]})
	}
	return out
}

func (s *Server) createTags(f url.Values, reqID string) (any, *apiError) {
	ids := list(f, "ResourceId")
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if _, ok := s.instances[id]; !ok {
			return nil, errf(400, "InvalidID", "The ID '%s' is not valid", id)
		}
	}
	for _, id := range ids {
		readTags(f, "Tag", s.instances[id].tags)
	}
	return returned("CreateTags", reqID), nil
}
