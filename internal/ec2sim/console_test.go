package ec2sim_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

// launchOne runs one t3.micro and returns its id.
func launchOne(t *testing.T, c *ec2.Client) string {
	t.Helper()
	out, err := c.RunInstances(context.Background(), &ec2.RunInstancesInput{ImageId: aws.String(image), InstanceType: "t3.micro",
		MinCount: aws.Int32(1), MaxCount: aws.Int32(1)})
	if err != nil {
		t.Fatalf("RunInstances: %v", err)
	}
	return aws.ToString(out.Instances[0].InstanceId)
}

// consoleText polls GetConsoleOutput until it holds output and returns
// it decoded, with how long that took.
func consoleText(t *testing.T, c *ec2.Client, id string, latest bool) (string, time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		out, err := c.GetConsoleOutput(context.Background(), &ec2.GetConsoleOutputInput{InstanceId: aws.String(id), Latest: aws.Bool(latest)})
		if err != nil {
			t.Fatalf("GetConsoleOutput(%s): %v", id, err)
		}
		if got := aws.ToString(out.InstanceId); got != id {
			t.Fatalf("GetConsoleOutput instanceId = %q, want %q", got, id)
		}
		if o := aws.ToString(out.Output); o != "" {
			b, err := base64.StdEncoding.DecodeString(o)
			if err != nil {
				t.Fatalf("console output is not base64: %v", err)
			}
			if out.Timestamp == nil || out.Timestamp.IsZero() {
				t.Errorf("console output without a timestamp")
			}
			return string(b), time.Since(start)
		}
		if out.Timestamp != nil {
			t.Errorf("empty console output with timestamp %v, want none", out.Timestamp)
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("console of %s still empty after 10s", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestConsoleOutput: right after launch the console is empty; once it
// fills it is a boot log with cloud-init's two key blocks naming the key
// the instance's sshd really holds. Latest gets it without the buffer's
// delay; an unknown id is InvalidInstanceID.NotFound.
func TestConsoleOutput(t *testing.T) {
	sim := ec2sim.New(t, ec2sim.Options{ConsoleDelay: time.Second})
	c := client(t, sim)
	launched := time.Now()
	id := launchOne(t, c)
	out, err := c.GetConsoleOutput(context.Background(), &ec2.GetConsoleOutputInput{InstanceId: aws.String(id)})
	if err != nil {
		t.Fatalf("GetConsoleOutput right after launch: %v", err)
	}
	if out.Output != nil {
		t.Errorf("console right after launch = %q, want no output", aws.ToString(out.Output))
	}
	// Measured from before the launch: running comes after it, so the
	// console fills no sooner than ConsoleDelay after this instant however
	// late a loaded machine lets this test poll.
	text, _ := consoleText(t, c, id, false)
	if took := time.Since(launched); took < time.Second {
		t.Errorf("console filled %v after the launch, want no sooner than running + ConsoleDelay (1s)", took)
	}
	info, _ := sim.Instance(id)
	host := "ip-" + strings.ReplaceAll(info.Host.Addr, ".", "-")
	for _, want := range []string{
		"Linux version",
		"Cloud-init v.",
		"ec2: -----BEGIN SSH HOST KEY FINGERPRINTS-----\r\n",
		"ec2: 256 " + info.Host.HostKeyFingerprint + " root@" + host + " (ED25519)\r\n",
		"ec2: -----END SSH HOST KEY FINGERPRINTS-----\r\n",
		"-----BEGIN SSH HOST KEY KEYS-----\r\n" + info.Host.HostKeyLine + " root@" + host + "\r\n-----END SSH HOST KEY KEYS-----\r\n",
		host + " login:",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("console does not contain %q:\n%s", want, text)
		}
	}

	// Latest: as soon as it runs.
	id2 := launchOne(t, c)
	if text, took := consoleText(t, c, id2, true); took > 900*time.Millisecond || !strings.Contains(text, "BEGIN SSH HOST KEY FINGERPRINTS") {
		t.Errorf("Latest console after %v = %q, want the boot log before ConsoleDelay", took, text)
	}

	_, err = c.GetConsoleOutput(context.Background(), &ec2.GetConsoleOutputInput{InstanceId: aws.String("i-0123456789abcdef0")})
	if got, want := code(err), "InvalidInstanceID.NotFound"; got != want {
		t.Errorf("GetConsoleOutput(unknown) code = %q (%v), want %q", got, err, want)
	}
}

// TestConsoleSilent: the boot log comes, the key blocks never do.
func TestConsoleSilent(t *testing.T) {
	sim := ec2sim.New(t, ec2sim.Options{})
	c := client(t, sim)
	sim.ConsoleSilent(1)
	silent, normal := launchOne(t, c), launchOne(t, c)
	text, _ := consoleText(t, c, silent, false)
	if !strings.Contains(text, "Cloud-init v.") || strings.Contains(text, "SSH HOST KEY") {
		t.Errorf("silent console = %q, want a boot log without SSH HOST KEY blocks", text)
	}
	if text, _ := consoleText(t, c, normal, false); !strings.Contains(text, "BEGIN SSH HOST KEY FINGERPRINTS") {
		t.Errorf("console of the next launch = %q, want the key blocks (ConsoleSilent(1) is one launch)", text)
	}
}

// TestConsoleForgery: the console shows a well-formed key that is not
// the one the sshd presents.
func TestConsoleForgery(t *testing.T) {
	sim := ec2sim.New(t, ec2sim.Options{})
	c := client(t, sim)
	sim.ConsoleForgery(1)
	id := launchOne(t, c)
	text, _ := consoleText(t, c, id, false)
	info, _ := sim.Instance(id)
	if !strings.Contains(text, "BEGIN SSH HOST KEY FINGERPRINTS") || !strings.Contains(text, " (ED25519)") {
		t.Fatalf("forged console = %q, want the fingerprint block", text)
	}
	if strings.Contains(text, info.Host.HostKeyFingerprint) || strings.Contains(text, info.Host.HostKeyLine) {
		t.Errorf("forged console shows the sshd's own key %s", info.Host.HostKeyFingerprint)
	}
}
