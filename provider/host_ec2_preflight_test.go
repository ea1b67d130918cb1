package provider

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	fwpath "github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2host"
	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

// TestAccEC2Preflight: a create that EC2 would refuse for a permission or
// the vCPU quota (read from Service Quotas: a DryRun does not check it)
// fails before anything is made: no key pair imported, no security group
// created, no instance launched, and the error names what is missing.
// With GetServiceQuota denied the create goes on, and EC2's own refusal
// of the launch is the same quota error, with the key pair and the
// security group deleted again.
func TestAccEC2Preflight(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts ec2sim.Options
		deny string
		want string
		// calls are the requests of RunInstances, ImportKeyPair and
		// CreateSecurityGroup (DryRuns and real ones) made before the
		// refusal, and of GetServiceQuota.
		calls [4]int
	}{
		{"denied RunInstances", ec2sim.Options{}, "RunInstances",
			`(?s)EC2 Permission Missing.*not\s+allowed\s+to\s+call\s+ec2:RunInstances.*allow\s+ec2:RunInstances\s+in\s+the\s+IAM\s+policy.*Nothing\s+was\s+created`,
			[4]int{1, 0, 0, 0}},
		{"denied CreateSecurityGroup", ec2sim.Options{}, "CreateSecurityGroup",
			`(?s)EC2 Permission Missing.*allow\s+ec2:CreateSecurityGroup\s+in\s+the\s+IAM\s+policy.*Nothing\s+was\s+created`,
			[4]int{1, 1, 1, 1}},
		// The default host_key_policy pins the key from the console:
		// without ec2:GetConsoleOutput a billed instance would launch and
		// the apply fail on it, so the preflight asks first.
		{"denied GetConsoleOutput", ec2sim.Options{}, "GetConsoleOutput",
			`(?s)EC2 Permission Missing.*allow\s+ec2:GetConsoleOutput\s+in\s+the\s+IAM\s+policy.*Nothing\s+was\s+created`,
			[4]int{1, 1, 1, 1}},
		{"vCPU quota of 64", ec2sim.Options{VCPUQuota: 64}, "",
			`(?s)EC2 vCPU Quota Exceeded.*instance_type\s+=\s+"r8i\.metal-96xl".*384\s+vCPUs.*limit\s+of\s+64\s+vCPUs.*` +
				`Running\s+On-Demand\s+Standard\s+\(A,\s+C,\s+D,\s+H,\s+I,\s+M,\s+R,\s+T,\s+Z\)\s+instances.*L-1216C47A.*Service\s+Quotas.*Nothing\s+was\s+created`,
			[4]int{1, 0, 0, 1}},
		{"quota unchecked, launch refused", ec2sim.Options{VCPUQuota: 64}, "GetServiceQuota",
			`(?s)EC2 vCPU Quota Exceeded.*instance_type\s+=\s+"r8i\.metal-96xl".*384\s+vCPUs.*limit\s+of\s+64\s+vCPUs.*L-1216C47A.*` +
				`Service\s+Quotas.*VcpuLimitExceeded.*No\s+instance\s+was\s+launched;\s+what\s+the\s+create\s+made\s+for\s+it\s+\(a\s+generated\s+key\s+pair,\s+a\s+temporary\s+security\s+group\)\s+was\s+deleted`,
			[4]int{2, 2, 2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim := ec2TestRegionWith(t, tc.opts)
			if tc.deny != "" {
				sim.Deny(tc.deny)
			}
			dir := filepath.Join(t.TempDir(), "pgbench")
			resource.Test(t, resource.TestCase{
				PreCheck:                 func() { preCheck(t) },
				ProtoV6ProviderFactories: protoV6ProviderFactories,
				CheckDestroy:             ec2NoneRunning(sim),
				Steps: []resource.TestStep{{
					Config:      ec2HostConfig(sim, dir, "", ""),
					ExpectError: regexp.MustCompile(tc.want),
				}},
			})
			for i, a := range []string{"RunInstances", "ImportKeyPair", "CreateSecurityGroup", "GetServiceQuota"} {
				if got, want := sim.Calls(a), tc.calls[i]; got != want {
					t.Errorf("%s calls = %d, want %d", a, got, want)
				}
			}
			if got := len(sim.Instances()) + len(sim.KeyPairs()) + len(sim.SecurityGroups()); got != 0 {
				t.Errorf("instances, key pairs and security groups = %d, want none", got)
			}
		})
	}
}

// TestEC2PreflightQuotaUnchecked: with GetServiceQuota denied the
// preflight lets the create go on, with a warning on instance_type that
// says the quota was not checked and which permission would allow it.
func TestEC2PreflightQuotaUnchecked(t *testing.T) {
	sim := ec2TestRegionWith(t, ec2sim.Options{VCPUQuota: 64})
	sim.Deny("GetServiceQuota")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := ec2host.New(ctx, ec2host.Config{Region: sim.Region(), Endpoint: sim.URL, ServiceQuotasEndpoint: sim.URL})
	if err != nil {
		t.Fatal(err)
	}
	spec := ec2host.Spec{InstanceType: "r8i.metal-96xl", ImageName: ec2TestImage, ImageOwners: []string{ec2TestOwner}}
	kp, err := ec2host.GenerateKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	var diags diag.Diagnostics
	if ok := ec2Preflight(ctx, c, &ec2Model{}, spec, "pgbench-pf", kp.PublicKeyLine, nil, false, &diags); !ok || diags.HasError() {
		t.Fatalf("ec2Preflight with GetServiceQuota denied = %v, %v; want it to pass", ok, diags)
	}
	w := diags.Warnings()
	if len(w) != 1 || w[0].Summary() != "EC2 vCPU Quota Not Checked" ||
		!strings.Contains(w[0].Detail(), "allow servicequotas:GetServiceQuota in the IAM policy") || !strings.Contains(w[0].Detail(), "L-1216C47A") {
		t.Fatalf("warnings = %v, want one EC2 vCPU Quota Not Checked saying to allow servicequotas:GetServiceQuota", w)
	}
	t.Log(w[0].Detail())
	if wp, ok := w[0].(diag.DiagnosticWithPath); !ok || !wp.Path().Equal(fwpath.Root("ec2").AtName("instance_type")) {
		t.Errorf("warning is not on ec2.instance_type: %v", w[0])
	}
}
