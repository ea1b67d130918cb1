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
	if unchecked, err := c.Preflight(ctx, preflightSpec()); err != nil || unchecked != nil {
		t.Fatalf("Preflight = %v (quota unchecked: %v), want nil", err, unchecked)
	}
	if got := sim.Calls("GetServiceQuota"); got != 1 {
		t.Errorf("GetServiceQuota calls = %d, want 1 (the quota is read from Service Quotas)", got)
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
	if _, err := c.Preflight(ctx, preflightSpec()); err != nil {
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
	_, runErr := c.Preflight(ctx, preflightSpec())
	for _, tc := range []struct {
		action string
		err    error
	}{
		{"ec2:RunInstances", runErr},
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

// TestPreflightVCPUQuota: a type above the account's vCPU quota, which
// Service Quotas gives and a DryRun does not check, is a *VCPULimitError
// with the quota, the type's vCPUs, the quota's value and the vCPUs in use.
func TestPreflightVCPUQuota(t *testing.T) {
	sim, c := env(t, ec2sim.Options{VCPUQuota: 64})
	ctx := ctxFor(t, time.Minute)
	unchecked, err := c.Preflight(ctx, preflightSpec())
	var ve *ec2host.VCPULimitError
	if !errors.As(err, &ve) || unchecked != nil {
		t.Fatalf("Preflight of %s under a 64-vCPU quota = %v (unchecked %v), want a VCPULimitError", metal, err, unchecked)
	}
	if ve.VCPUs != 384 || ve.Limit != 64 || ve.InUse != 0 || ve.QuotaCode != "L-1216C47A" || ve.InstanceType != metal || ve.Err != nil {
		t.Errorf("VCPULimitError = %+v, want 384 vCPUs, limit 64, 0 in use, quota L-1216C47A, %s, from the preflight", ve, metal)
	}
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{"384 vCPUs", "limit of 64 vCPUs", `"Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances" (L-1216C47A)`,
		"Service Quotas", "--quota-code L-1216C47A --desired-value 384", "us-east-2", "the 0 vCPUs of the instances already pending or running"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
	if got := sim.Calls("GetServiceQuota"); got != 1 {
		t.Errorf("GetServiceQuota calls = %d, want 1", got)
	}
	// The instances already running count: two m7i.2xlarge (16 vCPUs) fit
	// in 64, and leave too little for an m6i.metal (128).
	small := preflightSpec()
	small.InstanceType = "m7i.2xlarge"
	for i := 0; i < 2; i++ {
		if _, err := c.Preflight(ctx, small); err != nil {
			t.Fatalf("Preflight of m7i.2xlarge (8 vCPUs) with %d in use under 64 = %v, want nil", 8*i, err)
		}
		if _, err := c.Launch(ctx, ec2host.Spec{InstanceType: "m7i.2xlarge", ImageID: "ami-0a9b8c7d6e5f40312"}); err != nil {
			t.Fatal(err)
		}
	}
	many := preflightSpec()
	many.InstanceType = "m6i.metal" // 128
	_, err = c.Preflight(ctx, many)
	if !errors.As(err, &ve) || ve.InUse != 16 || ve.VCPUs != 128 || !strings.Contains(err.Error(), "--desired-value 144") {
		t.Errorf("Preflight of m6i.metal with 16 of 64 vCPUs in use = %v, want a VCPULimitError with 16 in use asking for 144", err)
	}
	if got := len(sim.Instances()); got != 2 {
		t.Errorf("instances = %d, want the 2 launched", got)
	}
}

// TestPreflightQuotaUnchecked: when Service Quotas refuses or cannot be
// reached, the preflight passes and says the quota was not checked and
// what would allow it; EC2 then refuses the launch itself, typed.
func TestPreflightQuotaUnchecked(t *testing.T) {
	sim, c := env(t, ec2sim.Options{VCPUQuota: 64})
	ctx := ctxFor(t, time.Minute)
	sim.Deny("GetServiceQuota")
	unchecked, err := c.Preflight(ctx, preflightSpec())
	if err != nil || unchecked == nil {
		t.Fatalf("Preflight with GetServiceQuota denied = %v, unchecked %v; want nil and a QuotaUncheckedError", err, unchecked)
	}
	t.Log(unchecked)
	if unchecked.Action != "servicequotas:GetServiceQuota" || !unchecked.Denied || unchecked.QuotaCode != "L-1216C47A" ||
		!strings.Contains(unchecked.Error(), "allow servicequotas:GetServiceQuota in the IAM policy") {
		t.Errorf("QuotaUncheckedError = %+v (%v), want a denied servicequotas:GetServiceQuota on L-1216C47A saying to allow it", unchecked, unchecked)
	}

	// Service Quotas unreachable (nothing listens there).
	down, err := ec2host.New(ctx, ec2host.Config{Region: sim.Region(), Endpoint: sim.URL, ServiceQuotasEndpoint: "http://127.0.0.1:1",
		AccessKeyID: "AKIDPGBENCHTEST", SecretAccessKey: "pgbench-test-secret", MaxAttempts: 2, MaxBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	unchecked, err = down.Preflight(ctx, preflightSpec())
	if err != nil || unchecked == nil || unchecked.Denied || !strings.Contains(unchecked.Error(), "servicequotas_endpoint") {
		t.Errorf("Preflight with Service Quotas unreachable = %v, unchecked %v; want nil and a QuotaUncheckedError naming the endpoint", err, unchecked)
	}
	if got := len(sim.Instances()); got != 0 {
		t.Errorf("instances = %d, want 0", got)
	}
}

// TestLaunchVCPULimit: a launch EC2 refuses with VcpuLimitExceeded is the
// same *VCPULimitError as the preflight's, with EC2's answer, and no
// instance exists.
func TestLaunchVCPULimit(t *testing.T) {
	sim, c := env(t, ec2sim.Options{VCPUQuota: 64})
	ctx := ctxFor(t, time.Minute)
	var launched []string
	_, err := c.Launch(ctx, ec2host.Spec{InstanceType: metal, ImageID: "ami-0a9b8c7d6e5f40312", AvailabilityZones: []string{"us-east-2a", "us-east-2b"},
		OnLaunched: func(id string) { launched = append(launched, id) }})
	var ve *ec2host.VCPULimitError
	if !errors.As(err, &ve) {
		t.Fatalf("Launch of %s under a 64-vCPU quota = %v, want a VCPULimitError", metal, err)
	}
	t.Log(err)
	if ve.VCPUs != 384 || ve.Limit != 64 || ve.InUse != 0 || ve.QuotaCode != "L-1216C47A" || ve.Err == nil {
		t.Errorf("VCPULimitError = %+v, want 384 vCPUs, limit 64, 0 in use, L-1216C47A, EC2's error", ve)
	}
	if msg := err.Error(); !strings.Contains(msg, "EC2 said:") || !strings.Contains(msg, "VcpuLimitExceeded") {
		t.Errorf("message %q does not carry EC2's VcpuLimitExceeded", msg)
	}
	// The quota is the account's, not a zone's: one attempt, no other zone.
	if got := sim.Calls("RunInstances"); got != 1 || len(launched) != 0 || len(sim.Instances()) != 0 {
		t.Errorf("RunInstances calls = %d, launched %v, instances %d; want 1 call and nothing", got, launched, len(sim.Instances()))
	}
}

// TestPreflightUnknown: a type or an image the region does not have is an
// error saying so, typed for the caller.
func TestPreflightUnknown(t *testing.T) {
	_, c := env(t, ec2sim.Options{})
	ctx := ctxFor(t, time.Minute)
	typ := preflightSpec()
	typ.InstanceType = "m9z.huge"
	preflight := func(spec ec2host.Spec) error { _, err := c.Preflight(ctx, spec); return err }
	t.Log(preflight(typ))
	if err := preflight(typ); !errors.Is(err, ec2host.ErrUnknownInstanceType) || !strings.Contains(err.Error(), "m9z.huge") {
		t.Errorf("Preflight of an unknown type = %v, want ErrUnknownInstanceType naming it", err)
	}
	id := preflightSpec()
	id.ImageName, id.ImageID = "", "ami-0000000000000dead"
	if err := preflight(id); !errors.Is(err, ec2host.ErrNoImage) || !strings.Contains(err.Error(), "ami-0000000000000dead") {
		t.Errorf("Preflight of a missing image id = %v, want ErrNoImage naming it", err)
	}
	name := preflightSpec()
	name.ImageName = "nosuch-os-*"
	if err := preflight(name); !errors.Is(err, ec2host.ErrNoImage) || !strings.Contains(err.Error(), "nosuch-os-*") {
		t.Errorf("Preflight of an image name nothing matches = %v, want ErrNoImage naming it", err)
	}
}

func TestVCPUQuotaNames(t *testing.T) {
	for typ, want := range map[string]string{"r8i.metal-96xl": "L-1216C47A", "t3.micro": "L-1216C47A", "g5.xlarge": "L-DB2E81BA",
		"vt1.3xlarge": "L-DB2E81BA", "p5.48xlarge": "L-417A185B", "x2idn.metal": "L-7295265B", "im4gn.large": "L-1216C47A", "inf2.xlarge": "L-1945791B", "u-6tb1.metal": ""} {
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
