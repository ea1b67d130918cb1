//go:build !linux

package atomicfile

import "testing"

// makeImmutable skips: only Linux's immutable attribute is used here.
func makeImmutable(t *testing.T, dir string) {
	t.Skipf("directory permissions are not enforced for this user on %s", dir)
}
