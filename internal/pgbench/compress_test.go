package pgbench

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A compressed log summarizes exactly as the plain one did, is found by
// LogFiles in its place, and is much smaller.
func TestCompressLogs(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	// Two clients, 30 seconds of a transaction every 10 ms each.
	for i := 0; i < 3000; i++ {
		for c := 0; c < 2; c++ {
			us := 1000 + (i*7+c*13)%900
			fmt.Fprintf(&b, "%d %d %d 0 %d %d\n", c, i+1, us, 1700000000+i/100, (i%100)*10000+c)
		}
	}
	plain := filepath.Join(dir, "pgbench_log.99")
	if err := os.WriteFile(plain, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := LogFiles(dir, "pgbench_log")
	if err != nil {
		t.Fatal(err)
	}
	want, err := SummarizeLogs(files)
	if err != nil {
		t.Fatal(err)
	}
	before, after, err := CompressLogs(files)
	if err != nil {
		t.Fatal(err)
	}
	if before != int64(b.Len()) || after <= 0 || after*4 > before {
		t.Errorf("compressed %d bytes to %d, want the plain size and at least 4x smaller", before, after)
	}
	if _, err := os.Stat(plain); !os.IsNotExist(err) {
		t.Errorf("plain log after compressing: %v, want it gone", err)
	}
	files, err = LogFiles(dir, "pgbench_log")
	if err != nil || !reflect.DeepEqual(files, []string{plain + ".gz"}) {
		t.Fatalf("LogFiles after compressing = %q, %v; want the .gz", files, err)
	}
	got, err := SummarizeLogs(files)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("summary of the compressed log = %+v, want %+v", got, want)
	}
	// Interrupted between the rename and the removal, both copies exist:
	// the log is counted once.
	if err := os.WriteFile(plain, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if both, err := LogFiles(dir, "pgbench_log"); err != nil || !reflect.DeepEqual(both, files) {
		t.Errorf("LogFiles with both copies = %q, %v; want only the .gz", both, err)
	}
	os.Remove(plain)
	// Compressing again skips what is compressed already.
	if b, a, err := CompressLogs(files); err != nil || b != 0 || a != 0 {
		t.Errorf("second CompressLogs = %d, %d, %v; want nothing done", b, a, err)
	}
	// A corrupt .gz is an error naming it.
	bad := filepath.Join(dir, "pgbench_log.98.gz")
	os.WriteFile(bad, []byte("not gzip"), 0o644)
	if _, err := SummarizeLogs([]string{bad}); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("SummarizeLogs(corrupt) = %v, want an error naming %s", err, bad)
	}
}
