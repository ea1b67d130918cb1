package ec2host_test

import (
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2host"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

// TestFindLaunch finds an instance by the client token of the Launch that
// made it, also when it was launched in the second zone tried (its token
// carries the zone attempt), and nothing for a token that launched none.
func TestFindLaunch(t *testing.T) {
	sim, c := env(t, ec2sim.Options{})
	ctx := ctxFor(t, time.Minute)
	sim.FailCapacity("us-east-2a", true)
	token := ec2host.NewClientToken()
	in, err := c.Launch(ctx, ec2host.Spec{InstanceType: metal, ImageID: "ami-0a9b8c7d6e5f40312", ClientToken: token,
		AvailabilityZones: []string{"us-east-2a", "us-east-2b"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.FindLaunch(ctx, token, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || got.ID != in.ID || got.Zone != "us-east-2b" {
		t.Fatalf("FindLaunch = %+v, want %s in us-east-2b", got, in.ID)
	}
	if got, err := c.FindLaunch(ctx, token, 1); err != nil || got != nil {
		t.Errorf("FindLaunch over the first zone only = %+v, %v; want nothing", got, err)
	}
	if got, err := c.FindLaunch(ctx, ec2host.NewClientToken(), 2); err != nil || got != nil {
		t.Errorf("FindLaunch of an unused token = %+v, %v; want nothing", got, err)
	}
	if err := c.Terminate(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	got, err = c.FindLaunch(ctx, token, 2)
	if err != nil || got == nil || got.State != "terminated" {
		t.Fatalf("FindLaunch after termination = %+v, %v; want %s terminated", got, err, in.ID)
	}
}

// TestSlowSSH is the simulator's slow boot: the instance runs at once but
// admits SSH with its launch key only after the delay, like an image whose
// sshd comes up minutes after EC2 reports it running.
func TestSlowSSH(t *testing.T) {
	sim, c := env(t, ec2sim.Options{})
	ctx := ctxFor(t, time.Minute)
	kp, _ := ec2host.GenerateKeyPair()
	if _, err := c.ImportKeyPair(ctx, "k", kp.PublicKeyLine, nil); err != nil {
		t.Fatal(err)
	}
	const delay = 3 * time.Second
	sim.SlowSSH(1, delay)
	start := time.Now()
	in, err := c.Launch(ctx, ec2host.Spec{InstanceType: metal, ImageID: "ami-0a9b8c7d6e5f40312", KeyName: "k"})
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.WaitRunning(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The host keys exist from the first boot, before sshd runs: the
	// console shows the key the late sshd presents.
	keys, err := c.HostKeysFromConsole(ctx, in.ID, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	opts := ec2host.SSHOptions{User: "admin", PrivateKey: kp.PrivateKeyPEM, HostKeys: keys, Within: 500 * time.Millisecond}
	if _, err := c.WaitSSH(ctx, run, opts); err == nil {
		t.Fatalf("ssh to %s accepted %s after launch, want refused until %s", in.ID, time.Since(start), delay)
	}
	opts.Within = 20 * time.Second
	ex, err := c.WaitSSH(ctx, run, opts)
	if err != nil {
		t.Fatalf("ssh after the slow boot: %v", err)
	}
	ex.Close()
	if took := time.Since(start); took < delay {
		t.Errorf("ssh accepted %s after launch, want at least %s", took, delay)
	}
	if err := c.Terminate(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	noneRunning(t, sim)
}
