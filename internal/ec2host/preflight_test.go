package ec2host_test

import (
	"encoding/base64"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2host"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

// preflightSpec is a launch as the provider asks for it before it made
// its key pair and security group.
func preflightSpec() ec2host.Spec {
	return ec2host.Spec{
		InstanceType: metal, ImageName: imageName, ImageOwners: []string{debianOwn},
		AvailabilityZones: []string{"us-east-2b", "us-east-2c"}, Owner: "alice",
		RootVolume: ec2host.RootVolume{SizeGB: 100}, ClientToken: "pgbench-preflight",
	}
}

// TestPreflight: a launch that would succeed passes the preflight, which
// sent the request Launch sends, as a DryRun, and created nothing.
func TestPreflight(t *testing.T) {
	sim, c := env(t, ec2sim.Options{})
	ctx := ctxFor(t, time.Minute)
	kp, err := ec2host.GenerateKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Preflight(ctx, preflightSpec()); err != nil {
		t.Fatalf("Preflight = %v, want nil", err)
	}
	p := sim.LastRunInstances()
	for k, want := range map[string]string{
		"DryRun": "true", "Placement.AvailabilityZone": "us-east-2b", "ImageId": "ami-0a9b8c7d6e5f40312",
		"InstanceType": metal, "BlockDeviceMapping.1.Ebs.VolumeSize": "100", "InstanceInitiatedShutdownBehavior": "terminate",
		"ClientToken": "pgbench-preflight-0",
	} {
		if got := p.Get(k); got != want {
			t.Errorf("preflight RunInstances %s = %q, want %q", k, got, want)
		}
	}
	if ud, _ := base64.StdEncoding.DecodeString(p.Get("UserData")); !strings.Contains(string(ud), "pgbench dead-man switch") {
		t.Errorf("preflight user data = %q, want the dead-man script", ud)
	}
	if err := c.PreflightKeyPair(ctx, "pgbench-pf", kp.PublicKeyLine, nil); err != nil {
		t.Errorf("PreflightKeyPair = %v, want nil", err)
	}
	if err := c.PreflightSecurityGroup(ctx, "pgbench-pf", ""); err != nil {
		t.Errorf("PreflightSecurityGroup = %v, want nil", err)
	}
	if got := len(sim.Instances()) + len(sim.KeyPairs()) + len(sim.SecurityGroups()); got != 0 {
		t.Errorf("the preflight created %d things, want 0", got)
	}
	// Capacity is Launch's business (it moves on to the next zone).
	sim.FailCapacity("us-east-2b", true)
	if err := c.Preflight(ctx, preflightSpec()); err != nil {
		t.Errorf("Preflight with the first zone full = %v, want nil", err)
	}
}

// TestPreflightDenied: a missing IAM permission is a *PermissionError
// naming the action, for each call the create will make.
func TestPreflightDenied(t *testing.T) {
	sim, c := env(t, ec2sim.Options{})
	ctx := ctxFor(t, time.Minute)
	kp, err := ec2host.GenerateKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"RunInstances", "ImportKeyPair", "CreateSecurityGroup"} {
		sim.Deny(a)
	}
	for _, tc := range []struct {
		action string
		err    error
	}{
		{"ec2:RunInstances", c.Preflight(ctx, preflightSpec())},
		{"ec2:ImportKeyPair", c.PreflightKeyPair(ctx, "pgbench-pf", kp.PublicKeyLine, nil)},
		{"ec2:CreateSecurityGroup", c.PreflightSecurityGroup(ctx, "pgbench-pf", "")},
	} {
		var pe *ec2host.PermissionError
		if !errors.As(tc.err, &pe) || pe.Action != tc.action {
			t.Errorf("denied %s: error = %v, want a PermissionError for it", tc.action, tc.err)
			continue
		}
		t.Log(tc.err)
		if msg := tc.err.Error(); !strings.Contains(msg, "allow "+tc.action+" in the IAM policy") {
			t.Errorf("denied %s: message %q does not say to allow it", tc.action, msg)
		}
	}
	if got := len(sim.Instances()) + len(sim.KeyPairs()) + len(sim.SecurityGroups()); got != 0 {
		t.Errorf("the preflight created %d things, want 0", got)
	}
}

// TestPreflightVCPUQuota: a type above the account's vCPU quota is a
// *VCPULimitError with the quota, the type's vCPUs and EC2's limit.
func TestPreflightVCPUQuota(t *testing.T) {
	sim, c := env(t, ec2sim.Options{VCPUQuota: 64})
	ctx := ctxFor(t, time.Minute)
	err := c.Preflight(ctx, preflightSpec())
	var ve *ec2host.VCPULimitError
	if !errors.As(err, &ve) {
		t.Fatalf("Preflight of %s under a 64-vCPU quota = %v, want a VCPULimitError", metal, err)
	}
	if ve.VCPUs != 384 || ve.Limit != 64 || ve.QuotaCode != "L-1216C47A" || ve.InstanceType != metal {
		t.Errorf("VCPULimitError = %+v, want 384 vCPUs, limit 64, quota L-1216C47A, %s", ve, metal)
	}
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{"384 vCPUs", "limit of 64 vCPUs", `"Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances" (L-1216C47A)`,
		"Service Quotas", "--quota-code L-1216C47A", "us-east-2"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
	small := preflightSpec()
	small.InstanceType = "m7i.2xlarge"
	if err := c.Preflight(ctx, small); err != nil {
		t.Errorf("Preflight of m7i.2xlarge (8 vCPUs) under 64 = %v, want nil", err)
	}
	if got := len(sim.Instances()); got != 0 {
		t.Errorf("instances = %d, want 0", got)
	}
}

// TestPreflightUnknown: a type or an image the region does not have is an
// error saying so, typed for the caller.
func TestPreflightUnknown(t *testing.T) {
	_, c := env(t, ec2sim.Options{})
	ctx := ctxFor(t, time.Minute)
	typ := preflightSpec()
	typ.InstanceType = "m9z.huge"
	t.Log(c.Preflight(ctx, typ))
	if err := c.Preflight(ctx, typ); !errors.Is(err, ec2host.ErrUnknownInstanceType) || !strings.Contains(err.Error(), "m9z.huge") {
		t.Errorf("Preflight of an unknown type = %v, want ErrUnknownInstanceType naming it", err)
	}
	id := preflightSpec()
	id.ImageName, id.ImageID = "", "ami-0000000000000dead"
	if err := c.Preflight(ctx, id); !errors.Is(err, ec2host.ErrNoImage) || !strings.Contains(err.Error(), "ami-0000000000000dead") {
		t.Errorf("Preflight of a missing image id = %v, want ErrNoImage naming it", err)
	}
	name := preflightSpec()
	name.ImageName = "nosuch-os-*"
	if err := c.Preflight(ctx, name); !errors.Is(err, ec2host.ErrNoImage) || !strings.Contains(err.Error(), "nosuch-os-*") {
		t.Errorf("Preflight of an image name nothing matches = %v, want ErrNoImage naming it", err)
	}
}

func TestVCPUQuotaNames(t *testing.T) {
	for typ, want := range map[string]string{"r8i.metal-96xl": "L-1216C47A", "t3.micro": "L-1216C47A", "g5.xlarge": "L-DB2E81BA",
		"vt1.3xlarge": "L-DB2E81BA", "p5.48xlarge": "L-417A185B", "x2idn.metal": "L-7295265B", "inf2.xlarge": "", "u-6tb1.metal": ""} {
		if _, got := ec2host.VCPUQuota(typ); got != want {
			t.Errorf("VCPUQuota(%s) code = %q, want %q", typ, got, want)
		}
	}
}

// TestDeadManAtExpiresAt: the dead-man script holds the expires-at
// tag's epoch, and an instance whose user data runs late still powers off
// at the tag's time, not max_lifetime after boot.
func TestDeadManAtExpiresAt(t *testing.T) {
	sim, c := env(t, ec2sim.Options{PendingDelay: 2 * time.Second})
	ctx := ctxFor(t, time.Minute)
	in, err := c.Launch(ctx, ec2host.Spec{InstanceType: "t3.micro", ImageID: "ami-0a9b8c7d6e5f40312", MaxLifetime: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ud, _ := base64.StdEncoding.DecodeString(sim.LastRunInstances().Get("UserData"))
	m := regexp.MustCompile(`(?m)^expires=(\d+)$`).FindSubmatch(ud)
	if m == nil {
		t.Fatalf("user data has no expires= epoch:\n%s", ud)
	}
	epoch, _ := strconv.ParseInt(string(m[1]), 10, 64)
	if got, want := time.Unix(epoch, 0).UTC(), in.ExpiresAt; !got.Equal(want) {
		t.Errorf("script epoch = %v, want the expires-at tag %v", got, want)
	}
	if _, err := c.WaitRunning(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	info, _ := sim.Instance(in.ID)
	// The user data ran 2s after the launch; the tag is truncated to the
	// second, so the power-off is at most 1s before launch + 10m.
	if d := info.PowerOffAt.Sub(in.ExpiresAt); d < -100*time.Millisecond || d > 100*time.Millisecond {
		t.Errorf("power-off at %v, %v from expires-at %v; want at expires-at", info.PowerOffAt, d, in.ExpiresAt)
	}
	if err := c.Terminate(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
}
