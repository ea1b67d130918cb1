package digest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSHA256(t *testing.T) {
	// sha256("abc") from FIPS 180-2, appendix B.1.
	const want = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if got := SHA256([]byte("abc")); got != want {
		t.Fatalf("SHA256(abc) = %s, want %s", got, want)
	}
	p := filepath.Join(t.TempDir(), "abc")
	if err := os.WriteFile(p, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := FileSHA256(p)
	if err != nil || got != want {
		t.Fatalf("FileSHA256 = %s, %v; want %s", got, err, want)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	if _, err := FileSHA256(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("FileSHA256(missing) error = %v, want one naming the file", err)
	}
}
