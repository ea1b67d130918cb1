package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"path/filepath"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/testhost"
)

// BenchmarkSSHRun measures the round trip of a trivial command on an
// established connection.
func BenchmarkSSHRun(b *testing.B) {
	e := dialHost(b, nil)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := e.Run(ctx, Command{Args: []string{"true"}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSSHConnect measures DialSSH to a running sshd.
func BenchmarkSSHConnect(b *testing.B) {
	h := testhost.New(b)
	ctx := context.Background()
	for b.Loop() {
		e, err := DialSSH(ctx, SSHConfig{Host: h.Addr, PrivateKey: h.ClientKeyPEM, HostKey: h.HostKeyLine, DialTimeout: 5 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		e.Close()
	}
}

// BenchmarkUpload measures a 20 MB upload (transfer + verify), and
// BenchmarkUploadSkip the hash check that skips it.
func BenchmarkUpload(b *testing.B) {
	e := dialHost(b, nil)
	data := make([]byte, 20<<20)
	rand.Read(data)
	p := filepath.Join(b.TempDir(), "blob")
	b.SetBytes(int64(len(data)))
	for i := 0; b.Loop(); i++ {
		data[0] = byte(i) // a new digest each time, so nothing is skipped
		if res, err := e.Upload(context.Background(), bytes.NewReader(data), p, 0o644); err != nil || res.Skipped {
			b.Fatalf("upload: %+v %v", res, err)
		}
	}
}

func BenchmarkUploadSkip(b *testing.B) {
	e := dialHost(b, nil)
	data := make([]byte, 20<<20)
	rand.Read(data)
	p := filepath.Join(b.TempDir(), "blob")
	if _, err := e.Upload(context.Background(), bytes.NewReader(data), p, 0o644); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if res, err := e.Upload(context.Background(), bytes.NewReader(data), p, 0o644); err != nil || !res.Skipped {
			b.Fatalf("upload: %+v %v", res, err)
		}
	}
}
