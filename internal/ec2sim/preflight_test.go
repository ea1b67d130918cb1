package ec2sim_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"golang.org/x/crypto/ssh"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

// answer is an EC2 error as a client sees it: HTTP status, code, message.
func answer(err error) (status int, errCode, message string) {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	var ae interface{ ErrorMessage() string }
	if errors.As(err, &ae) {
		message = ae.ErrorMessage()
	}
	return status, code(err), message
}

// TestDryRunRunInstances: a DryRun that would succeed answers 412
// DryRunOperation and creates nothing; one that would fail answers what
// the real call would, having checked everything a launch checks.
func TestDryRunRunInstances(t *testing.T) {
	sim := ec2sim.New(t, ec2sim.Options{})
	c := client(t, sim)
	ctx := context.Background()
	sg, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("g"), Description: aws.String("d")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.RunInstances(ctx, run(func(in *ec2.RunInstancesInput) {
		in.ClientToken = aws.String("tok-dry")
		in.SecurityGroupIds = []string{aws.ToString(sg.GroupId)}
		in.Placement = &types.Placement{AvailabilityZone: aws.String("us-east-2b")}
	}))
	status, code, msg := answer(err)
	if status != 412 || code != "DryRunOperation" || msg != "Request would have succeeded, but DryRun flag is set." {
		t.Errorf("DryRun answer = %d %s %q, want 412 DryRunOperation \"Request would have succeeded, but DryRun flag is set.\"", status, code, msg)
	}
	if got := len(sim.Instances()); got != 0 {
		t.Fatalf("a DryRun made %d instances, want 0", got)
	}
	// The DryRun did not take the token: the real call with it launches.
	out, err := c.RunInstances(ctx, run(func(in *ec2.RunInstancesInput) {
		in.DryRun = nil
		in.ClientToken = aws.String("tok-dry")
	}))
	if err != nil || len(out.Instances) != 1 {
		t.Fatalf("RunInstances after a DryRun with its token = %v, %v; want one instance", out, err)
	}

	sim.FailCapacity("us-east-2a", true)
	for _, tc := range []struct {
		name   string
		edit   func(*ec2.RunInstancesInput)
		status int
		code   string
	}{
		{"unknown image", func(in *ec2.RunInstancesInput) { in.ImageId = aws.String("ami-0000000000000dead") }, 400, "InvalidAMIID.NotFound"},
		{"unknown type", func(in *ec2.RunInstancesInput) { in.InstanceType = "m9z.huge" }, 400, "InvalidParameterValue"},
		{"unknown zone", func(in *ec2.RunInstancesInput) {
			in.Placement = &types.Placement{AvailabilityZone: aws.String("us-east-2z")}
		}, 400, "InvalidParameterValue"},
		{"unknown key pair", func(in *ec2.RunInstancesInput) { in.KeyName = aws.String("nobody") }, 400, "InvalidKeyPair.NotFound"},
		{"unknown group", func(in *ec2.RunInstancesInput) { in.SecurityGroupIds = []string{"sg-0000000000000dead"} }, 400, "InvalidGroup.NotFound"},
		{"root volume below the snapshot", func(in *ec2.RunInstancesInput) {
			in.BlockDeviceMappings = []types.BlockDeviceMapping{{DeviceName: aws.String("/dev/xvda"), Ebs: &types.EbsBlockDevice{VolumeSize: aws.Int32(2)}}}
		}, 400, "InvalidBlockDeviceMapping"},
		{"bad user data", func(in *ec2.RunInstancesInput) { in.UserData = aws.String("not base64!") }, 400, "InvalidParameterValue"},
		// Capacity is known only at launch: a DryRun does not check it.
		{"zone without capacity", func(in *ec2.RunInstancesInput) {
			in.Placement = &types.Placement{AvailabilityZone: aws.String("us-east-2a")}
		}, 412, "DryRunOperation"},
	} {
		_, err := c.RunInstances(ctx, run(tc.edit))
		if status, code, _ := answer(err); status != tc.status || code != tc.code {
			t.Errorf("%s: DryRun answer = %d %s (%v), want %d %s", tc.name, status, code, err, tc.status, tc.code)
		}
	}
	if got := len(sim.Instances()); got != 1 {
		t.Errorf("instances = %d after the DryRuns, want the 1 real launch", got)
	}
}

// TestDryRunKeyPairAndGroup: ImportKeyPair and CreateSecurityGroup
// accept DryRun as EC2 does, checking their parameters and creating
// nothing.
func TestDryRunKeyPairAndGroup(t *testing.T) {
	sim := ec2sim.New(t, ec2sim.Options{})
	c := client(t, sim)
	ctx := context.Background()
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	sp, _ := ssh.NewPublicKey(pub)
	_, err = c.ImportKeyPair(ctx, &ec2.ImportKeyPairInput{KeyName: aws.String("k"), PublicKeyMaterial: ssh.MarshalAuthorizedKey(sp), DryRun: aws.Bool(true)})
	if status, code, _ := answer(err); status != 412 || code != "DryRunOperation" {
		t.Errorf("DryRun ImportKeyPair = %d %s (%v), want 412 DryRunOperation", status, code, err)
	}
	_, err = c.ImportKeyPair(ctx, &ec2.ImportKeyPairInput{KeyName: aws.String("k"), PublicKeyMaterial: []byte("not a key"), DryRun: aws.Bool(true)})
	if _, code, _ := answer(err); code != "InvalidKey.Format" {
		t.Errorf("DryRun ImportKeyPair of garbage = %s (%v), want InvalidKey.Format", code, err)
	}
	_, err = c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("g"), Description: aws.String("d"), DryRun: aws.Bool(true)})
	if status, code, _ := answer(err); status != 412 || code != "DryRunOperation" {
		t.Errorf("DryRun CreateSecurityGroup = %d %s (%v), want 412 DryRunOperation", status, code, err)
	}
	if k, g := sim.KeyPairs(), sim.SecurityGroups(); len(k)+len(g) != 0 {
		t.Errorf("after DryRuns key pairs = %v, groups = %v; want none", k, g)
	}
}

// TestDeny: a denied action answers 403 UnauthorizedOperation with AWS's
// text, DryRun or not; other actions still work.
func TestDeny(t *testing.T) {
	sim := ec2sim.New(t, ec2sim.Options{})
	c := client(t, sim)
	ctx := context.Background()
	for _, a := range []string{"RunInstances", "ImportKeyPair", "CreateSecurityGroup"} {
		sim.Deny(a)
	}
	for _, dry := range []bool{true, false} {
		_, err := c.RunInstances(ctx, run(func(in *ec2.RunInstancesInput) { in.DryRun = aws.Bool(dry) }))
		status, code, msg := answer(err)
		want := "You are not authorized to perform this operation. User: arn:aws:iam::123456789012:user/pgbench is not authorized " +
			"to perform: ec2:RunInstances on resource: arn:aws:ec2:us-east-2:123456789012:instance/* because no identity-based " +
			"policy allows the ec2:RunInstances action. Encoded authorization failure message: "
		if status != 403 || code != "UnauthorizedOperation" || !strings.HasPrefix(msg, want) || len(msg) < len(want)+40 {
			t.Errorf("denied RunInstances (DryRun %v) = %d %s %q, want 403 UnauthorizedOperation %q and an encoded message", dry, status, code, msg, want)
		}
	}
	_, err := c.ImportKeyPair(ctx, &ec2.ImportKeyPairInput{KeyName: aws.String("k"), PublicKeyMaterial: []byte("x"), DryRun: aws.Bool(true)})
	if status, code, msg := answer(err); status != 403 || code != "UnauthorizedOperation" || !strings.Contains(msg, "ec2:ImportKeyPair on resource: arn:aws:ec2:us-east-2:123456789012:key-pair/k ") {
		t.Errorf("denied ImportKeyPair = %d %s %q, want 403 UnauthorizedOperation on key-pair/k", status, code, msg)
	}
	_, err = c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("g"), Description: aws.String("d")})
	if status, code, msg := answer(err); status != 403 || code != "UnauthorizedOperation" || !strings.Contains(msg, "ec2:CreateSecurityGroup") {
		t.Errorf("denied CreateSecurityGroup = %d %s %q, want 403 UnauthorizedOperation", status, code, msg)
	}
	if _, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{}); err != nil {
		t.Errorf("DescribeInstances, not denied: %v", err)
	}
	if got := len(sim.Instances()) + len(sim.KeyPairs()) + len(sim.SecurityGroups()); got != 0 {
		t.Errorf("denied calls created %d things, want 0", got)
	}
}

// TestVCPUQuota: a launch whose vCPUs, with those of the pending and
// running standard instances, exceed the quota fails with
// VcpuLimitExceeded; a DryRun, which allocates nothing, is not checked
// against the quota, as on EC2; terminated instances free their vCPUs.
func TestVCPUQuota(t *testing.T) {
	sim := ec2sim.New(t, ec2sim.Options{VCPUQuota: 10})
	c := client(t, sim)
	ctx := context.Background()
	want := "You have requested more vCPU capacity than your current vCPU limit of 10 allows for the instance bucket that the " +
		"specified instance type belongs to. Please visit http://aws.amazon.com/contact-us/ec2-request to request an adjustment to this limit."
	metal := func(in *ec2.RunInstancesInput) { in.InstanceType = "r8i.metal-96xl" }
	if _, err := c.RunInstances(ctx, run(metal)); code(err) != "DryRunOperation" {
		t.Errorf("DryRun of r8i.metal-96xl under a 10-vCPU quota = %v, want DryRunOperation (a DryRun checks no limits)", err)
	}
	_, err := c.RunInstances(ctx, run(func(in *ec2.RunInstancesInput) { metal(in); in.DryRun = nil }))
	if status, code, msg := answer(err); status != 400 || code != "VcpuLimitExceeded" || msg != want {
		t.Errorf("r8i.metal-96xl under a 10-vCPU quota = %d %s %q, want 400 VcpuLimitExceeded %q", status, code, msg, want)
	}
	real := func(typ string) func(*ec2.RunInstancesInput) {
		return func(in *ec2.RunInstancesInput) { in.InstanceType = types.InstanceType(typ); in.DryRun = nil }
	}
	out, err := c.RunInstances(ctx, run(real("m7i.2xlarge"))) // 8 vCPUs
	if err != nil {
		t.Fatalf("m7i.2xlarge (8 of 10 vCPUs): %v", err)
	}
	if _, err := c.RunInstances(ctx, run(nil)); code(err) != "DryRunOperation" {
		t.Errorf("DryRun of a second m7i.2xlarge with 8 of 10 vCPUs used = %v, want DryRunOperation", err)
	}
	if _, err = c.RunInstances(ctx, run(real("m7i.2xlarge"))); code(err) != "VcpuLimitExceeded" { // 8+8
		t.Errorf("a second m7i.2xlarge with 8 of 10 vCPUs used = %v, want VcpuLimitExceeded", err)
	}
	if got := len(sim.Instances()); got != 1 {
		t.Errorf("instances = %d, want the 1 within the quota", got)
	}
	small, err := c.RunInstances(ctx, run(real("c6i.large"))) // 8+2
	if err != nil {
		t.Fatalf("c6i.large with 8 of 10 vCPUs used: %v", err)
	}
	for _, o := range []*ec2.RunInstancesOutput{out, small} {
		id := aws.ToString(o.Instances[0].InstanceId)
		if _, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
			t.Fatal(err)
		}
		waitState(t, sim, id, ec2sim.Terminated)
	}
	if _, err := c.RunInstances(ctx, run(real("m7i.2xlarge"))); err != nil {
		t.Errorf("m7i.2xlarge after the others terminated = %v, want a launch", err)
	}
}

// waitState waits up to 10s for an instance to reach state.
func waitState(t *testing.T, sim *ec2sim.Server, id, state string) ec2sim.InstanceInfo {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		info, _ := sim.Instance(id)
		if info.State == state {
			return info
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s is %s after 10s, want %s", id, info.State, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// deadMan is the absolute dead-man script ec2host writes, for an epoch
// and a floor; timer is its systemd-run line.
func deadMan(epoch int64, floor int, timer string) string {
	return fmt.Sprintf("#!/bin/sh\nexpires=%d\nleft=$(( expires - $(date +%%s) ))\n[ \"$left\" -ge %d ] || left=%d\n"+
		"if command -v systemd-run >/dev/null 2>&1; then\n  %s\nelse\n  shutdown -P +$(( (left + 59) / 60 ))\nfi\n",
		epoch, floor, floor, timer)
}

// TestDeadManAbsolute: the sim schedules the power-off of an absolute
// dead-man script at its epoch, counted when the user data runs (the
// instance enters running), not launch + a duration; at least the floor
// after boot; and a script it cannot read schedules nothing.
func TestDeadManAbsolute(t *testing.T) {
	sim := ec2sim.New(t, ec2sim.Options{PendingDelay: 1500 * time.Millisecond})
	c := client(t, sim)
	ctx := context.Background()
	const timer = `systemd-run --unit=pgbench-dead-man --on-active="${left}s" /bin/systemctl poweroff --force`
	epoch := time.Now().Add(10 * time.Minute).Truncate(time.Second)
	past := time.Now().Add(-time.Hour).Truncate(time.Second)
	for _, tc := range []struct {
		name     string
		script   string
		at       time.Time // DeadManAt
		earliest time.Duration
	}{
		{"absolute", deadMan(epoch.Unix(), 60, timer), epoch, 0},
		{"past its epoch", deadMan(past.Unix(), 60, timer), past, time.Minute},
		{"unreadable timer", deadMan(epoch.Unix(), 60, `systemd-run --on-active="${lef}s" /bin/systemctl poweroff`), time.Time{}, 0},
		{"floor mismatch", strings.Replace(deadMan(epoch.Unix(), 60, timer), "|| left=60", "|| left=6", 1), time.Time{}, 0},
	} {
		out, err := c.RunInstances(ctx, run(func(in *ec2.RunInstancesInput) {
			in.DryRun = nil
			in.InstanceType = "t3.micro"
			in.UserData = aws.String(base64.StdEncoding.EncodeToString([]byte(tc.script)))
		}))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		id := aws.ToString(out.Instances[0].InstanceId)
		launched := time.Now()
		info := waitState(t, sim, id, ec2sim.Running)
		booted := time.Now()
		if !info.DeadManAt.Equal(tc.at) {
			t.Errorf("%s: DeadManAt = %v, want %v", tc.name, info.DeadManAt, tc.at)
		}
		switch {
		case tc.at.IsZero():
			if !info.PowerOffAt.IsZero() {
				t.Errorf("%s: an unreadable script scheduled a power-off at %v, want none", tc.name, info.PowerOffAt)
			}
		case tc.earliest > 0:
			if d := info.PowerOffAt.Sub(launched); d < tc.earliest+time.Second || d > tc.earliest+booted.Sub(launched)+time.Second {
				t.Errorf("%s: power-off %v after launch, want the floor %v after boot (%v after launch)", tc.name, d, tc.earliest, booted.Sub(launched))
			}
		default:
			// Booted 1.5s late, and still off at the epoch: not at boot
			// + the 10 minutes the launch had left.
			if d := info.PowerOffAt.Sub(epoch); d < -100*time.Millisecond || d > 100*time.Millisecond {
				t.Errorf("%s: power-off at %v, %v from the epoch %v, want the epoch", tc.name, info.PowerOffAt, d, epoch)
			}
		}
	}
}
