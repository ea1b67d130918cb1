package ec2host_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2host"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
)

const (
	metal     = "r8i.metal-96xl"
	imageName = "debian-12-amd64-*"
	debianOwn = "136693071363"
)

// sdkClient is a plain SDK client for sim, for calls ec2host does not
// make the way a test needs (an instance without its tags, a raw state
// reason).
func sdkClient(sim *ec2sim.Server) *ec2.Client {
	return ec2.New(ec2.Options{
		Region:       sim.Region(),
		BaseEndpoint: aws.String(sim.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDPGBENCHTEST", "pgbench-test-secret", ""),
	})
}

func namespaceGone(t *testing.T, ns string) {
	t.Helper()
	if ns == "" {
		t.Fatalf("instance had no test host namespace")
	}
	if _, err := os.Stat(filepath.Join("/run/netns", ns)); !os.IsNotExist(err) {
		t.Errorf("namespace %s of a terminated instance still exists (stat: %v)", ns, err)
	}
}

func TestLifecycle(t *testing.T) {
	sim, c := env(t, ec2sim.Options{})
	ctx := ctxFor(t, time.Minute)

	kp, err := ec2host.GenerateKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ImportKeyPair(ctx, "pgbench-lifecycle", kp.PublicKeyLine, map[string]string{"managed-by": "pgbench"}); err != nil {
		t.Fatal(err)
	}
	sg, err := c.CreateSSHSecurityGroup(ctx, "pgbench-lifecycle", "", []string{"10.200.0.0/16"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(sim.SecurityGroups()[sg], ","), "tcp:22-22:10.200.0.0/16"; got != want {
		t.Errorf("ingress of %s = %q, want %q", sg, got, want)
	}

	var recorded string
	in, err := c.Launch(ctx, ec2host.Spec{
		InstanceType: metal, ImageName: imageName, ImageOwners: []string{debianOwn},
		KeyName: "pgbench-lifecycle", SecurityGroupIDs: []string{sg},
		RootVolume:        ec2host.RootVolume{SizeGB: 2000, Type: "gp3", IOPS: 16000, Throughput: 1000},
		AvailabilityZones: []string{"us-east-2b"}, Owner: "alice", Name: "numa-sweep",
		Tags: map[string]string{"project": "clock-sweep"}, MaxLifetime: 12 * time.Hour,
		OnLaunched: func(id string) { recorded = id },
	})
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	if recorded != in.ID || recorded == "" {
		t.Fatalf("OnLaunched got %q, want the instance id %q", recorded, in.ID)
	}
	if got, want := in.ImageID, "ami-0a9b8c7d6e5f40312"; got != want {
		t.Errorf("image = %s, want the newest matching image %s", got, want)
	}
	if got, want := in.Zone, "us-east-2b"; got != want {
		t.Errorf("zone = %s, want %s", got, want)
	}
	for k, want := range map[string]string{"managed-by": "pgbench", "owner": "alice", "Name": "numa-sweep", "project": "clock-sweep"} {
		if got := in.Tags[k]; got != want {
			t.Errorf("tag %s = %q, want %q", k, got, want)
		}
	}
	if d := time.Until(in.ExpiresAt); d < 11*time.Hour || d > 12*time.Hour+time.Minute {
		t.Errorf("expires-at = %v (in %v), want about 12h from now", in.ExpiresAt, d)
	}
	p := sim.LastRunInstances()
	for k, want := range map[string]string{
		"InstanceInitiatedShutdownBehavior":   "terminate",
		"BlockDeviceMapping.1.Ebs.VolumeSize": "2000",
		"BlockDeviceMapping.1.Ebs.VolumeType": "gp3",
		"BlockDeviceMapping.1.Ebs.Iops":       "16000",
		"BlockDeviceMapping.1.Ebs.Throughput": "1000",
	} {
		if got := p.Get(k); got != want {
			t.Errorf("RunInstances %s = %q, want %q", k, got, want)
		}
	}
	if p.Get("ClientToken") == "" {
		t.Errorf("RunInstances had no ClientToken")
	}
	info, _ := sim.Instance(in.ID)
	if got, want := info.DeadManAt, in.ExpiresAt; !got.Equal(want) || got.IsZero() {
		t.Errorf("dead-man power-off in user data at %v, want the expires-at tag %v", got, want)
	}

	run, err := c.WaitRunning(ctx, in.ID)
	if err != nil {
		t.Fatalf("WaitRunning: %v", err)
	}
	if run.State != "running" || run.PublicIP == "" || run.PrivateIP == "" || run.LaunchTime.IsZero() {
		t.Fatalf("running instance = %+v, want running with addresses and a launch time", run)
	}
	ex, err := c.WaitSSH(ctx, run, ec2host.SSHOptions{User: "admin", PrivateKey: kp.PrivateKeyPEM, Within: 10 * time.Second, TrustOnFirstUse: true})
	if err != nil {
		t.Fatalf("WaitSSH: %v", err)
	}
	res, err := ex.Run(ctx, remote.Command{Args: []string{"sh", "-c", "ip -4 -o addr show | grep -c " + run.PrivateIP}})
	ex.Close()
	if err != nil {
		t.Fatalf("run over ssh: %v", err)
	}
	if got := strings.TrimSpace(string(res.Stdout)); got != "1" {
		t.Errorf("the ssh session does not run on the instance's host: %q", got)
	}
	if d, err := c.Describe(ctx, in.ID); err != nil || d == nil || d.State != "running" {
		t.Fatalf("Describe = %+v, %v; want the running instance", d, err)
	}

	ns := info.Namespace
	if err := c.Terminate(ctx, in.ID); err != nil {
		t.Fatalf("Terminate: %v", err)
	}
	if info, _ := sim.Instance(in.ID); info.State != ec2sim.Terminated {
		t.Errorf("state after Terminate = %s, want terminated", info.State)
	}
	namespaceGone(t, ns)
	if d, err := c.Describe(ctx, in.ID); err != nil || d != nil {
		t.Errorf("Describe(terminated) = %+v, %v; want nil, nil", d, err)
	}
	if err := c.Terminate(ctx, in.ID); err != nil {
		t.Errorf("second Terminate = %v, want success", err)
	}
	if err := c.DeleteSecurityGroup(ctx, sg); err != nil {
		t.Errorf("DeleteSecurityGroup: %v", err)
	}
	if err := c.DeleteKeyPair(ctx, "pgbench-lifecycle"); err != nil {
		t.Errorf("DeleteKeyPair: %v", err)
	}
	if got := len(sim.KeyPairs()) + len(sim.SecurityGroups()); got != 0 {
		t.Errorf("%d key pairs and security groups left, want 0", got)
	}
}

func TestZoneFallback(t *testing.T) {
	sim, c := env(t, ec2sim.Options{})
	ctx := ctxFor(t, time.Minute)
	sim.FailCapacity("us-east-2a", true)
	sim.Unsupported(metal, "us-east-2b")
	var skipped []string
	spec := ec2host.Spec{
		InstanceType: metal, ImageName: imageName, ImageOwners: []string{debianOwn},
		AvailabilityZones: []string{"us-east-2a", "us-east-2b", "us-east-2c"},
		OnZoneSkipped:     func(zone string, err error) { skipped = append(skipped, zone+"="+err.Error()) },
	}
	in, err := c.Launch(ctx, spec)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	if got, want := in.Zone, "us-east-2c"; got != want {
		t.Errorf("zone = %s, want %s", got, want)
	}
	if len(skipped) != 2 || !strings.Contains(skipped[0], "InsufficientInstanceCapacity") ||
		!strings.Contains(skipped[1], "Unsupported") || !strings.Contains(skipped[1], metal) {
		t.Errorf("skipped zones = %q, want 2a (capacity) and 2b (unsupported, naming the type)", skipped)
	}
	// Capacity errors are not retried in the same zone.
	if got, want := sim.Calls("RunInstances"), 3; got != want {
		t.Errorf("RunInstances calls = %d, want %d", got, want)
	}
	if err := c.Terminate(ctx, in.ID); err != nil {
		t.Fatal(err)
	}

	sim.FailCapacity("us-east-2c", true)
	_, err = c.Launch(ctx, spec)
	var ce *ec2host.CapacityError
	if !errors.As(err, &ce) {
		t.Fatalf("Launch with no capacity anywhere = %v, want a *CapacityError", err)
	}
	t.Logf("capacity, as the user sees it: %v", err)
	for _, want := range []string{metal, "us-east-2a: InsufficientInstanceCapacity", "us-east-2b: Unsupported", "us-east-2c: InsufficientInstanceCapacity"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	noneRunning(t, sim)
}

func TestThrottling(t *testing.T) {
	sim, c := env(t, ec2sim.Options{})
	ctx := ctxFor(t, time.Minute)
	sim.Throttle(2)
	in, err := c.Launch(ctx, ec2host.Spec{InstanceType: "m6i.metal", ImageID: "ami-0a9b8c7d6e5f40312"})
	if err != nil {
		t.Fatalf("Launch after 2 throttled requests: %v", err)
	}
	if got, want := sim.Calls("DescribeInstanceTypes"), 3; got != want {
		t.Errorf("DescribeInstanceTypes calls = %d, want %d (2 throttled, retried)", got, want)
	}
	if err := c.Terminate(ctx, in.ID); err != nil {
		t.Fatal(err)
	}

	sim.Throttle(1000)
	_, err = c.Launch(ctx, ec2host.Spec{InstanceType: "m6i.metal", ImageID: "ami-0a9b8c7d6e5f40312"})
	if err == nil || !strings.Contains(err.Error(), "RequestLimitExceeded") {
		t.Fatalf("Launch under endless throttling = %v, want an error naming RequestLimitExceeded", err)
	}
	t.Logf("throttling, as the user sees it: %v", err)
	sim.Throttle(0)
	if got, want := len(sim.Instances()), 1; got != want {
		t.Errorf("%d instances launched, want %d", got, want)
	}
	noneRunning(t, sim)
}

func TestNeverAcceptsSSH(t *testing.T) {
	sim, c := env(t, ec2sim.Options{})
	ctx := ctxFor(t, time.Minute)
	kp, _ := ec2host.GenerateKeyPair()
	if _, err := c.ImportKeyPair(ctx, "k", kp.PublicKeyLine, nil); err != nil {
		t.Fatal(err)
	}
	sim.NoSSH(1)
	in, err := c.Launch(ctx, ec2host.Spec{InstanceType: metal, ImageID: "ami-0a9b8c7d6e5f40312", KeyName: "k"})
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.WaitRunning(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.WaitSSH(ctx, run, ec2host.SSHOptions{PrivateKey: kp.PrivateKeyPEM, Within: 1500 * time.Millisecond, TrustOnFirstUse: true})
	if err == nil || !strings.Contains(err.Error(), in.ID) || !strings.Contains(err.Error(), run.Address()) {
		t.Fatalf("WaitSSH = %v, want an error naming %s and its address", err, in.ID)
	}
	t.Logf("no ssh, as the user sees it: %v", err)
	// What the provider's destroy of the tainted host does.
	if err := c.Terminate(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	noneRunning(t, sim)
}

func TestSlowTermination(t *testing.T) {
	sim, c := env(t, ec2sim.Options{})
	ctx := ctxFor(t, time.Minute)
	in, err := c.Launch(ctx, ec2host.Spec{InstanceType: metal, ImageID: "ami-0a9b8c7d6e5f40312"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitRunning(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	sim.SlowTermination(3 * time.Second)
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	err = c.Terminate(short, in.ID)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "still shutting-down") || !strings.Contains(err.Error(), in.ID) {
		t.Fatalf("Terminate with a short timeout = %v, want an error saying %s is still shutting-down", err, in.ID)
	}
	t.Logf("slow termination, as the user sees it: %v", err)
	// A second destroy finds it shutting down and waits it out.
	if err := c.Terminate(ctx, in.ID); err != nil {
		t.Fatalf("second Terminate: %v", err)
	}
	if info, _ := sim.Instance(in.ID); info.State != ec2sim.Terminated {
		t.Errorf("state = %s, want terminated", info.State)
	}
}

func TestErrorAfterCreate(t *testing.T) {
	sim, c := env(t, ec2sim.Options{})
	ctx := ctxFor(t, time.Minute)

	// One lost response: the SDK retries with the same client token and
	// gets the instance the first attempt created.
	sim.FailAfterCreate(1)
	in, err := c.Launch(ctx, ec2host.Spec{InstanceType: metal, ImageID: "ami-0a9b8c7d6e5f40312"})
	if err != nil {
		t.Fatalf("Launch with one lost response: %v", err)
	}
	if got, want := sim.Calls("RunInstances"), 2; got != want {
		t.Errorf("RunInstances calls = %d, want %d", got, want)
	}
	if got, want := len(sim.Instances()), 1; got != want {
		t.Fatalf("%d instances launched, want %d", got, want)
	}
	if err := c.Terminate(ctx, in.ID); err != nil {
		t.Fatal(err)
	}

	// Every attempt fails after creating: Launch finds the instance by its
	// token, reports it, and terminates it.
	sim.FailAfterCreate(100)
	var recorded string
	_, err = c.Launch(ctx, ec2host.Spec{InstanceType: metal, ImageID: "ami-0a9b8c7d6e5f40312", OnLaunched: func(id string) { recorded = id }})
	var le *ec2host.LaunchedError
	if !errors.As(err, &le) {
		t.Fatalf("Launch = %v, want a *LaunchedError", err)
	}
	t.Logf("error after create, as the user sees it: %v", err)
	if le.InstanceID == "" || le.InstanceID != recorded || le.TerminateErr != nil {
		t.Fatalf("LaunchedError = %+v, recorded %q; want the created instance, recorded and terminated", le, recorded)
	}
	if !strings.Contains(err.Error(), "InternalError") || !strings.Contains(err.Error(), le.InstanceID) {
		t.Errorf("error %q does not say what failed and which instance was created", err)
	}
	if got, want := len(sim.Instances()), 2; got != want {
		t.Errorf("%d instances launched in total, want %d", got, want)
	}
	if err := c.WaitTerminated(ctx, le.InstanceID); err != nil {
		t.Fatal(err)
	}
	noneRunning(t, sim)
}

func TestClientTokenIdempotent(t *testing.T) {
	sim, c := env(t, ec2sim.Options{})
	ctx := ctxFor(t, time.Minute)
	spec := ec2host.Spec{InstanceType: metal, ImageID: "ami-0a9b8c7d6e5f40312", ClientToken: "pgbench-create-1"}
	a, err := c.Launch(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	// A create retried after a crash: same token, same instance.
	b, err := c.Launch(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != b.ID {
		t.Errorf("second launch with the same token = %s, want %s", b.ID, a.ID)
	}
	if got, want := len(sim.Instances()), 1; got != want {
		t.Errorf("%d instances, want %d", got, want)
	}
	if err := c.Terminate(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
}

func TestSweep(t *testing.T) {
	sim, c := env(t, ec2sim.Options{})
	ctx := ctxFor(t, time.Minute)
	img := "ami-0a9b8c7d6e5f40312"
	expired, err := c.Launch(ctx, ec2host.Spec{InstanceType: "t3.micro", ImageID: img, MaxLifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := c.Launch(ctx, ec2host.Spec{InstanceType: "t3.micro", ImageID: img, MaxLifetime: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	// Not ours: expired, but no managed-by tag.
	out, err := sdkClient(sim).RunInstances(ctx, &ec2.RunInstancesInput{
		ImageId: aws.String(img), InstanceType: types.InstanceTypeT3Micro, MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeInstance, Tags: []types.Tag{
			{Key: aws.String("expires-at"), Value: aws.String("2001-01-01T00:00:00Z")}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	foreign := aws.ToString(out.Instances[0].InstanceId)

	swept, err := c.Sweep(ctx, time.Now().Add(2*time.Hour))
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if len(swept) != 1 || swept[0] != expired.ID {
		t.Fatalf("swept %v, want only %s", swept, expired.ID)
	}
	if err := c.WaitTerminated(ctx, expired.ID); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{fresh.ID, foreign} {
		if d, err := c.Describe(ctx, id); err != nil || d == nil {
			t.Errorf("Describe(%s) = %v, %v; want it still alive", id, d, err)
		}
	}
	if swept, err := c.Sweep(ctx, time.Now().Add(2*time.Hour)); err != nil || len(swept) != 0 {
		t.Errorf("second Sweep = %v, %v; want nothing to do", swept, err)
	}
	for _, id := range []string{fresh.ID, foreign} {
		if err := c.Terminate(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	noneRunning(t, sim)
}

func TestDeadManSwitch(t *testing.T) {
	sim, c := env(t, ec2sim.Options{})
	ctx := ctxFor(t, time.Minute)
	in, err := c.Launch(ctx, ec2host.Spec{InstanceType: metal, ImageID: "ami-0a9b8c7d6e5f40312", MaxLifetime: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitRunning(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	info, _ := sim.Instance(in.ID)
	// Terraform is gone: nobody calls Terminate.
	if err := c.WaitTerminated(ctxFor(t, 15*time.Second), in.ID); err != nil {
		t.Fatalf("instance past max_lifetime did not terminate itself: %v", err)
	}
	out, err := sdkClient(sim).DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{in.ID}})
	if err != nil {
		t.Fatal(err)
	}
	i := out.Reservations[0].Instances[0]
	if got, want := aws.ToString(i.StateReason.Code), "Client.InstanceInitiatedShutdown"; got != want {
		t.Errorf("state reason = %s, want %s", got, want)
	}
	namespaceGone(t, info.Namespace)
}

func TestDeadManUserData(t *testing.T) {
	ud := ec2host.DeadManUserData(12*time.Hour, time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	for _, want := range []string{"#!/bin/sh\n", "expires-at: 2026-12-02T12:00:00Z", "\nexpires=1796212800\n",
		"left=$(( expires - $(date +%s) ))", `[ "$left" -ge 60 ] || left=60`, `--on-active="${left}s"`,
		"shutdown -P +$(( (left + 59) / 60 ))",
		// Re-armed at every boot: a transient timer ends with the boot.
		"cat > /usr/local/sbin/pgbench-dead-man <<'SCRIPT'\n", "ExecStart=/usr/local/sbin/pgbench-dead-man\n",
		"WantedBy=multi-user.target\n", "systemctl enable pgbench-dead-man-boot.service\n", "\n/usr/local/sbin/pgbench-dead-man\n"} {
		if !strings.Contains(ud, want) {
			t.Errorf("user data lacks %q:\n%s", want, ud)
		}
	}
	// The shell reads it, the script it writes included.
	f := filepath.Join(t.TempDir(), "user-data")
	if err := os.WriteFile(f, []byte(ud), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", "-n", f).CombinedOutput(); err != nil {
		t.Errorf("sh -n: %v: %s\n%s", err, out, ud)
	}
	inner := ud[strings.Index(ud, "<<'SCRIPT'\n")+len("<<'SCRIPT'\n") : strings.Index(ud, "\nSCRIPT\n")]
	if err := os.WriteFile(f, []byte(inner), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", "-n", f).CombinedOutput(); err != nil {
		t.Errorf("sh -n of the boot script: %v: %s\n%s", err, out, inner)
	}
}

func TestHourlyPrice(t *testing.T) {
	for _, tc := range []struct {
		typ      string
		override float64
		want     float64
		ok       bool
	}{
		{"r8i.metal-96xl", 0, 14.45, true},
		{"m6i.metal", 0, 4.61, true},
		{"m6i.metal", 5, 5, true},
		{"x9.unknown", 0, 0, false},
		{"x9.unknown", 1.25, 1.25, true},
	} {
		got, ok := ec2host.HourlyPriceUSD(tc.typ, tc.override)
		if got != tc.want || ok != tc.ok {
			t.Errorf("HourlyPriceUSD(%s, %v) = %v, %v; want %v, %v", tc.typ, tc.override, got, ok, tc.want, tc.ok)
		}
	}
	if got, want := ec2host.CostUSD(14.45, 90*time.Minute), 21.675; got < want-1e-9 || got > want+1e-9 {
		t.Errorf("CostUSD = %v, want %v", got, want)
	}
}

// TestRealAWSLifecycle runs the lifecycle against real EC2. It never runs
// in CI (no network there); set TF_ACC_AWS=1, credentials,
// PGBENCH_AWS_SSH_CIDR (your address/32) and optionally AWS_REGION and
// PGBENCH_AWS_INSTANCE_TYPE (default t3.micro) to run it.
func TestRealAWSLifecycle(t *testing.T) {
	if os.Getenv("TF_ACC_AWS") != "1" || os.Getenv("AWS_ACCESS_KEY_ID") == "" || os.Getenv("PGBENCH_AWS_SSH_CIDR") == "" {
		t.Skip("SKIPPED, NOT TESTED against real AWS: set TF_ACC_AWS=1, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY and PGBENCH_AWS_SSH_CIDR (real AWS is never reachable in CI; ec2sim covers the same lifecycle)")
	}
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = "us-east-2"
	}
	typ := os.Getenv("PGBENCH_AWS_INSTANCE_TYPE")
	if typ == "" {
		typ = "t3.micro"
	}
	ctx := ctxFor(t, 45*time.Minute)
	c, err := ec2host.New(ctx, ec2host.Config{Region: region, PollInterval: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	name := "pgbench-test-" + time.Now().UTC().Format("20060102150405")
	kp, _ := ec2host.GenerateKeyPair()
	if _, err := c.ImportKeyPair(ctx, name, kp.PublicKeyLine, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.DeleteKeyPair(context.Background(), name) })
	sg, err := c.CreateSSHSecurityGroup(ctx, name, "", []string{os.Getenv("PGBENCH_AWS_SSH_CIDR")}, 22)
	if err != nil {
		t.Fatal(err)
	}
	var id string
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
		defer cancel()
		if id != "" {
			if err := c.Terminate(cctx, id); err != nil {
				t.Errorf("TERMINATE %s BY HAND: %v", id, err)
			}
		}
		if err := c.DeleteSecurityGroup(cctx, sg); err != nil {
			t.Errorf("delete security group %s: %v", sg, err)
		}
	})
	in, err := c.Launch(ctx, ec2host.Spec{InstanceType: typ, ImageName: imageName, ImageOwners: []string{debianOwn},
		KeyName: name, SecurityGroupIDs: []string{sg}, MaxLifetime: time.Hour, Owner: "ec2host-test",
		OnLaunched: func(s string) { id = s }})
	if err != nil {
		t.Fatal(err)
	}
	run, err := c.WaitRunning(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := c.HostKeysFromConsole(ctx, in.ID, 15*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := c.WaitSSH(ctx, run, ec2host.SSHOptions{User: "admin", PrivateKey: kp.PrivateKeyPEM, Within: 20 * time.Minute, HostKeys: keys})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ex.Run(ctx, remote.Command{Args: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	ex.Close()
	if err := c.Terminate(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	if d, err := c.Describe(ctx, in.ID); err != nil || d != nil {
		t.Errorf("Describe after Terminate = %+v, %v; want nil", d, err)
	}
}

// TestKilledAfterLaunch: the process that launched dies right after
// RunInstances (its ctx is cancelled as the id is recorded); a later
// destroy, from a new client that knows only the recorded id, terminates
// the instance.
func TestKilledAfterLaunch(t *testing.T) {
	sim, c := env(t, ec2sim.Options{})
	ctx, kill := context.WithCancel(context.Background())
	var recorded string
	in, err := c.Launch(ctx, ec2host.Spec{InstanceType: metal, ImageID: "ami-0a9b8c7d6e5f40312",
		OnLaunched: func(id string) { recorded = id; kill() }})
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	if _, err := c.WaitRunning(ctx, in.ID); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitRunning after the kill = %v, want context.Canceled", err)
	}
	if info, _ := sim.Instance(recorded); info.State == ec2sim.Terminated {
		t.Fatalf("instance %s already terminated before destroy", recorded)
	}
	later, err := ec2host.New(context.Background(), ec2host.Config{Region: sim.Region(), Endpoint: sim.URL,
		AccessKeyID: "AKIDPGBENCHTEST", SecretAccessKey: "s", PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := later.Terminate(ctxFor(t, 30*time.Second), recorded); err != nil {
		t.Fatalf("destroy's Terminate: %v", err)
	}
	noneRunning(t, sim)
}

// TestOnlyLaunchKeyAccepted: the instance admits the key pair it was
// launched with, not another one.
func TestOnlyLaunchKeyAccepted(t *testing.T) {
	_, c := env(t, ec2sim.Options{})
	ctx := ctxFor(t, time.Minute)
	kp, _ := ec2host.GenerateKeyPair()
	other, _ := ec2host.GenerateKeyPair()
	if _, err := c.ImportKeyPair(ctx, "k", kp.PublicKeyLine, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ImportKeyPair(ctx, "k", kp.PublicKeyLine, nil); err == nil || !strings.Contains(err.Error(), "InvalidKeyPair.Duplicate") {
		t.Errorf("second import of k = %v, want InvalidKeyPair.Duplicate", err)
	}
	in, err := c.Launch(ctx, ec2host.Spec{InstanceType: metal, ImageID: "ami-0a9b8c7d6e5f40312", KeyName: "k"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Terminate(context.Background(), in.ID) })
	run, err := c.WaitRunning(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitSSH(ctx, run, ec2host.SSHOptions{User: "admin", PrivateKey: other.PrivateKeyPEM, Within: 5 * time.Second, TrustOnFirstUse: true}); err == nil {
		t.Fatalf("WaitSSH with a key the launch did not name succeeded, want an authentication error")
	}
	ex, err := c.WaitSSH(ctx, run, ec2host.SSHOptions{User: "admin", PrivateKey: kp.PrivateKeyPEM, Within: 5 * time.Second, TrustOnFirstUse: true})
	if err != nil {
		t.Fatalf("WaitSSH with the launch key: %v", err)
	}
	defer ex.Close()
	if _, err := ex.Run(ctx, remote.Command{Args: []string{"true"}}); err != nil {
		t.Fatalf("run true: %v", err)
	}
}

func TestBootFailure(t *testing.T) {
	sim, c := env(t, ec2sim.Options{})
	ctx := ctxFor(t, time.Minute)
	sim.FailBoot(1)
	in, err := c.Launch(ctx, ec2host.Spec{InstanceType: metal, ImageID: "ami-0a9b8c7d6e5f40312"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.WaitRunning(ctx, in.ID)
	if err == nil || !strings.Contains(err.Error(), in.ID) || !strings.Contains(err.Error(), "Server.InternalError") {
		t.Fatalf("WaitRunning of an instance that failed to boot = %v, want an error naming it and EC2's reason", err)
	}
	t.Logf("boot failure, as the user sees it: %v", err)
	if err := c.Terminate(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	noneRunning(t, sim)
}
