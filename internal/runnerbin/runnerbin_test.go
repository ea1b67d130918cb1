package runnerbin

import (
	"errors"
	"strings"
	"testing"
)

func TestArch(t *testing.T) {
	tests := []struct {
		uname, want string
		wantErr     bool
	}{
		{"x86_64\n", "amd64", false},
		{"aarch64", "arm64", false},
		{"arm64", "arm64", false},
		{"ppc64le", "", true},
	}
	for _, tt := range tests {
		got, err := Arch(tt.uname)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("Arch(%q) = %q, %v; want %q, error %v", tt.uname, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestBinaryMissingSaysHowToBuild(t *testing.T) {
	_, err := Binary("riscv64")
	var ne *ErrNotEmbedded
	if !errors.As(err, &ne) {
		t.Fatalf("Binary(riscv64) error = %v, want *ErrNotEmbedded", err)
	}
	for _, want := range []string{"make build", "runner {", "linux/riscv64"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
