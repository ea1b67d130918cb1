package ec2host_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2host"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
)

// launchRunning imports a key, launches one instance with it and waits
// for running.
func launchRunning(t *testing.T, c *ec2host.Client, name string) (*ec2host.Instance, ec2host.KeyPair) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	kp, err := ec2host.GenerateKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ImportKeyPair(ctx, name, kp.PublicKeyLine, nil); err != nil {
		t.Fatal(err)
	}
	in, err := c.Launch(ctx, ec2host.Spec{InstanceType: metal, ImageID: "ami-0a9b8c7d6e5f40312", KeyName: name})
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.WaitRunning(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	return run, kp
}

// TestHostKeysFromConsole: the fingerprint the console shows is the
// sshd's, and a dial pinned to it connects.
func TestHostKeysFromConsole(t *testing.T) {
	// A console that stays empty for 2 s after running: long enough that
	// this test polls it empty first even when a loaded machine returns
	// from WaitRunning late.
	sim, c := env(t, ec2sim.Options{ConsoleDelay: 2 * time.Second})
	ctx := ctxFor(t, time.Minute)
	run, kp := launchRunning(t, c, "k")
	start := time.Now()
	keys, err := c.HostKeysFromConsole(ctx, run.ID, 10*time.Second)
	if err != nil {
		t.Fatalf("HostKeysFromConsole: %v", err)
	}
	info, _ := sim.Instance(run.ID)
	if len(keys) != 1 || keys[0] != info.Host.HostKeyFingerprint {
		t.Fatalf("console keys = %q, want [%s], the sshd's", keys, info.Host.HostKeyFingerprint)
	}
	if sim.Calls("GetConsoleOutput") < 2 {
		t.Errorf("GetConsoleOutput calls = %d after %v, want polling while the console is empty", sim.Calls("GetConsoleOutput"), time.Since(start))
	}
	ex, err := c.WaitSSH(ctx, run, ec2host.SSHOptions{User: "admin", PrivateKey: kp.PrivateKeyPEM, HostKeys: keys, Within: 10 * time.Second})
	if err != nil {
		t.Fatalf("WaitSSH pinned to the console key: %v", err)
	}
	defer ex.Close()
	if got := ex.HostKeyFingerprint(); got != keys[0] {
		t.Errorf("presented %s, want %s", got, keys[0])
	}
	if _, err := ex.Run(ctx, remote.Command{Args: []string{"true"}}); err != nil {
		t.Fatalf("run true: %v", err)
	}
}

// TestHostKeysFromForgedConsole: the console shows one key, the server at
// the address presents another: the dial is refused, at once, naming
// both and the instance.
func TestHostKeysFromForgedConsole(t *testing.T) {
	sim, c := env(t, ec2sim.Options{})
	ctx := ctxFor(t, time.Minute)
	sim.ConsoleForgery(1)
	run, kp := launchRunning(t, c, "k")
	keys, err := c.HostKeysFromConsole(ctx, run.ID, 10*time.Second)
	if err != nil {
		t.Fatalf("HostKeysFromConsole: %v", err)
	}
	info, _ := sim.Instance(run.ID)
	start := time.Now()
	_, err = c.WaitSSH(ctx, run, ec2host.SSHOptions{User: "admin", PrivateKey: kp.PrivateKeyPEM, HostKeys: keys, Within: 20 * time.Second})
	var hk *remote.HostKeyError
	if !errors.As(err, &hk) {
		t.Fatalf("WaitSSH against a forged console = %v, want *remote.HostKeyError", err)
	}
	t.Logf("forged console, as the user sees it: %v", err)
	want := "the console of instance " + run.ID + " showed " + keys[0] + " but the server at " + run.Address() + ":22 presented " + info.Host.HostKeyFingerprint
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error = %q, want it to say %q", err, want)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("mismatch took %v: it was retried", d)
	}
}

// TestHostKeysFromSilentConsole: a boot log without the key blocks is an
// NoConsoleHostKeysError after within, saying what the console did show.
func TestHostKeysFromSilentConsole(t *testing.T) {
	sim, c := env(t, ec2sim.Options{})
	ctx := ctxFor(t, time.Minute)
	sim.ConsoleSilent(1)
	run, _ := launchRunning(t, c, "k")
	start := time.Now()
	keys, err := c.HostKeysFromConsole(ctx, run.ID, 1500*time.Millisecond)
	var none *ec2host.NoConsoleHostKeysError
	if !errors.As(err, &none) {
		t.Fatalf("HostKeysFromConsole of a silent console = %q, %v; want *NoConsoleHostKeysError", keys, err)
	}
	t.Logf("silent console, as the user sees it: %v", err)
	if d := time.Since(start); d < 1400*time.Millisecond || d > 5*time.Second {
		t.Errorf("gave up after %v, want about 1.5s", d)
	}
	for _, want := range []string{run.ID, "within 1.5s", "no -----BEGIN SSH HOST KEY FINGERPRINTS----- block"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
