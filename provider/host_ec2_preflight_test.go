package provider

import (
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

// TestAccEC2Preflight: a create that EC2 would refuse for a permission or
// the vCPU quota fails before anything is made: no key pair imported, no
// security group created, no instance launched, and the error names what
// is missing.
func TestAccEC2Preflight(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts ec2sim.Options
		deny string
		want string
		// calls are the DryRuns of RunInstances, ImportKeyPair and
		// CreateSecurityGroup made before the refusal.
		calls [3]int
	}{
		{"denied RunInstances", ec2sim.Options{}, "RunInstances",
			`(?s)EC2 Permission Missing.*not\s+allowed\s+to\s+call\s+ec2:RunInstances.*allow\s+ec2:RunInstances\s+in\s+the\s+IAM\s+policy.*Nothing\s+was\s+created`,
			[3]int{1, 0, 0}},
		{"denied CreateSecurityGroup", ec2sim.Options{}, "CreateSecurityGroup",
			`(?s)EC2 Permission Missing.*allow\s+ec2:CreateSecurityGroup\s+in\s+the\s+IAM\s+policy.*Nothing\s+was\s+created`,
			[3]int{1, 1, 1}},
		{"vCPU quota of 64", ec2sim.Options{VCPUQuota: 64}, "",
			`(?s)EC2 vCPU Quota Exceeded.*instance_type\s+=\s+"r8i\.metal-96xl".*384\s+vCPUs.*limit\s+of\s+64\s+vCPUs.*` +
				`Running\s+On-Demand\s+Standard\s+\(A,\s+C,\s+D,\s+H,\s+I,\s+M,\s+R,\s+T,\s+Z\)\s+instances.*L-1216C47A.*Service\s+Quotas.*Nothing\s+was\s+created`,
			[3]int{1, 0, 0}},
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
			for i, a := range []string{"RunInstances", "ImportKeyPair", "CreateSecurityGroup"} {
				if got, want := sim.Calls(a), tc.calls[i]; got != want {
					t.Errorf("%s calls = %d, want %d (only the preflight's DryRuns)", a, got, want)
				}
			}
			if got := len(sim.Instances()) + len(sim.KeyPairs()) + len(sim.SecurityGroups()); got != 0 {
				t.Errorf("instances, key pairs and security groups = %d, want none", got)
			}
		})
	}
}
