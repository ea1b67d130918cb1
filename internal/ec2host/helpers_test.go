package ec2host_test

// Test helpers that more than one test file uses.

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2host"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

// env starts a simulated region and a real SDK client pointed at it.
func env(t *testing.T, opts ec2sim.Options) (*ec2sim.Server, *ec2host.Client) {
	t.Helper()
	// Never let the SDK look for credentials or a region anywhere else.
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	sim := ec2sim.New(t, opts)
	c, err := ec2host.New(context.Background(), ec2host.Config{
		Region: sim.Region(), Endpoint: sim.URL, ServiceQuotasEndpoint: sim.URL,
		AccessKeyID: "AKIDPGBENCHTEST", SecretAccessKey: "pgbench-test-secret",
		MaxAttempts: 4, MaxBackoff: 20 * time.Millisecond, PollInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("ec2host.New: %v", err)
	}
	return sim, c
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// noneRunning fails unless every instance the simulator launched is
// terminated (or shutting down, bound to be).
func noneRunning(t *testing.T, sim *ec2sim.Server) {
	t.Helper()
	for _, in := range sim.Instances() {
		if in.State != ec2sim.Terminated && in.State != ec2sim.ShuttingDown {
			t.Errorf("instance %s is %s, want terminated", in.ID, in.State)
		}
	}
}
