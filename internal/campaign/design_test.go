package campaign

import (
	"strings"
	"testing"
)

func TestDesignWarning(t *testing.T) {
	two := []Variant{{Name: "a"}, {Name: "b"}}
	for _, tc := range []struct {
		order      string
		iterations int
		clients    []int
		want       string
	}{
		{OrderRandomized, 4, []int{1, 2}, "Use at least 5 iterations"},
		{OrderRandomized, 4, []int{1}, ""},
		{OrderRandomized, 5, []int{1, 2}, ""},
		{OrderRandomized, 5, []int{1, 2, 4, 8, 16, 32, 64, 128}, "Use at least 6 iterations"},
		{OrderAlternate, 3, []int{1, 2, 4, 8}, ""},
	} {
		c := &Config{Variants: two, Clients: tc.clients, Iterations: tc.iterations, Order: tc.order, Alpha: 0.05}
		got := c.DesignWarning()
		if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s, %d iterations, %d client counts: warning %q, want one containing %q", tc.order, tc.iterations, len(tc.clients), got, tc.want)
		}
	}
}
