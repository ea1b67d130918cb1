package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

const ec2TestRoleARN = "arn:aws:iam::123456789012:role/pgbench-ci"

// ec2CredsConfig is one ec2 host per name in the simulated region, with
// the provider's aws block body given and no owner set, so the tests see
// where the credentials and the owner tag come from.
func ec2CredsConfig(sim *ec2sim.Server, dir, awsBody string, names ...string) string {
	cfg := fmt.Sprintf("provider \"pgbench\" {\n  aws {\n    endpoint = %q\n    servicequotas_endpoint = %q\n%s\n  }\n}\n", sim.URL, sim.URL, awsBody)
	for _, n := range names {
		cfg += fmt.Sprintf(`
resource "pgbench_host" %q {
  install_dir = %q
  ec2 {
    instance_type = "r8i.metal-96xl"
    image {
      name   = %q
      owners = [%q]
    }
    ssh_cidrs     = ["10.200.0.0/16"]
    poll_interval = "100ms"
  }
}
`, n, filepath.Join(dir, n), ec2TestImage, ec2TestOwner)
	}
	return cfg
}

// signedOnlyBy checks that every request of each action was signed, and
// signed with a key that ok accepts.
func signedOnlyBy(sim *ec2sim.Server, what string, ok func(string) bool, actions ...string) error {
	for _, a := range actions {
		keys := sim.AccessKeys(a)
		if len(keys) == 0 {
			return fmt.Errorf("no %s request reached the region", a)
		}
		for _, k := range keys {
			if !ok(k) {
				return fmt.Errorf("%s signed by %v, want every one by %s", a, keys, what)
			}
		}
	}
	return nil
}

// noUser unsets USER and LOGNAME for the test, as in a CI container.
func noUser(t *testing.T) {
	t.Helper()
	for _, k := range []string{"USER", "LOGNAME"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

// ownerTag checks the owner tag of the instance of resource name.
func ownerTag(sim *ec2sim.Server, name, want string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		id := s.RootModule().Resources[name].Primary.ID
		in, ok := sim.Instance(id)
		if !ok {
			return fmt.Errorf("%s: instance %s unknown to the region", name, id)
		}
		if got := in.Tags["owner"]; got != want || got == "" {
			return fmt.Errorf("%s: owner tag = %q, want %q", name, got, want)
		}
		return nil
	}
}

// TestAccEC2SharedCredentials: the aws block's shared files and profile
// give the region and the keys, and win over keys in the environment.
func TestAccEC2SharedCredentials(t *testing.T) {
	sim := ec2TestRegion(t)
	// The owner tag is not what this test is about: keep STS out of it.
	t.Setenv("USER", "ci")
	// The environment has other keys (ec2TestRegion's) and no region:
	// only the profile can make this work.
	t.Setenv("AWS_REGION", "")
	os.Unsetenv("AWS_REGION")
	t.Setenv("AWS_DEFAULT_REGION", "")
	os.Unsetenv("AWS_DEFAULT_REGION")
	files := t.TempDir()
	creds, conf := filepath.Join(files, "credentials"), filepath.Join(files, "config")
	if err := os.WriteFile(creds, []byte("[default]\naws_access_key_id = AKIDDEFAULTPROFILE\naws_secret_access_key = d\n\n"+
		"[bench]\naws_access_key_id = AKIDBENCHPROFILE\naws_secret_access_key = b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte("[profile bench]\nregion = "+sim.Region()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := ec2CredsConfig(sim, dir, fmt.Sprintf(`    profile                  = "bench"
    shared_config_files      = [%q]
    shared_credentials_files = [%q]`, conf, creds), "metal")
	bench := func(k string) bool { return k == "AKIDBENCHPROFILE" }
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy: resource.ComposeTestCheckFunc(ec2NoneRunning(sim), func(*terraform.State) error {
			return signedOnlyBy(sim, "the bench profile's key", bench, "TerminateInstances", "DeleteKeyPair")
		}),
		Steps: []resource.TestStep{{
			Config: cfg,
			Check: resource.ComposeTestCheckFunc(
				ec2Only(sim, 1, nil),
				func(*terraform.State) error {
					return signedOnlyBy(sim, "the bench profile's key", bench,
						"DescribeImages", "ImportKeyPair", "CreateSecurityGroup", "RunInstances", "DescribeInstances")
				},
			),
		}},
	})
}

// TestAccEC2AssumeRole: a role the caller may not assume fails the apply
// with STS's reason and launches nothing; an admitted one is assumed with
// the environment's keys, with the block's session name, external id and
// duration, and its temporary key signs every EC2 call. With no user
// known the role session names the owner.
func TestAccEC2AssumeRole(t *testing.T) {
	sim := ec2TestRegion(t)
	noUser(t)
	sim.RefuseRole("arn:aws:iam::123456789012:role/denied")
	dir := t.TempDir()
	roleBlock := func(arn string) string {
		return fmt.Sprintf(`    region       = "us-east-2"
    sts_endpoint = %q
    assume_role {
      role_arn     = %q
      session_name = "ci-run-7"
      external_id  = "pgbench-ext"
      duration     = "20m"
    }`, sim.URL, arn)
	}
	temporary := func(k string) bool { return strings.HasPrefix(k, "ASIA") }
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy: resource.ComposeTestCheckFunc(ec2NoneRunning(sim), func(*terraform.State) error {
			return signedOnlyBy(sim, "a temporary key", temporary, "TerminateInstances")
		}),
		Steps: []resource.TestStep{
			{
				Config:      ec2CredsConfig(sim, dir, roleBlock("arn:aws:iam::123456789012:role/denied"), "metal"),
				ExpectError: regexp.MustCompile(`(?s)EC2 Client Unavailable.*assume\s+role\s+arn:aws:iam::123456789012:role/denied.*AccessDenied.*not\s+authorized\s+to\s+perform:\s+sts:AssumeRole`),
			},
			{
				PreConfig: func() {
					if n := sim.Calls("RunInstances") + sim.Calls("ImportKeyPair"); n != 0 {
						t.Errorf("EC2 calls after the refused role = %d, want 0", n)
					}
				},
				Config: ec2CredsConfig(sim, dir, roleBlock(ec2TestRoleARN), "metal"),
				Check: resource.ComposeTestCheckFunc(
					ec2Only(sim, 1, nil),
					func(*terraform.State) error {
						calls := sim.AssumeRoleCalls()
						want := ec2sim.AssumeRoleCall{RoleARN: ec2TestRoleARN, RoleSessionName: "ci-run-7", ExternalID: "pgbench-ext",
							DurationSeconds: 1200, AccessKeyID: "AKIDPGBENCHTEST"}
						if len(calls) < 2 || calls[len(calls)-1] != want {
							return fmt.Errorf("AssumeRole calls = %+v, want the refused one, then %+v last", calls, want)
						}
						return signedOnlyBy(sim, "a temporary key", temporary,
							"DescribeImages", "ImportKeyPair", "CreateSecurityGroup", "RunInstances", "DescribeInstances", "GetCallerIdentity")
					},
					ownerTag(sim, "pgbench_host.metal", "ci-run-7"),
				),
			},
		},
	})
}

// TestAccEC2OwnerDefault: with no owner, USER or LOGNAME the owner tag is
// the caller identity's user name; with STS failing too, the host name.
func TestAccEC2OwnerDefault(t *testing.T) {
	sim := ec2TestRegion(t)
	noUser(t)
	sim.AddUser("AKIDPGBENCHTEST", "bench-ci")
	host, err := os.Hostname()
	if err != nil || host == "" {
		t.Fatalf("os.Hostname = %q, %v", host, err)
	}
	dir := t.TempDir()
	awsBody := fmt.Sprintf(`    region       = "us-east-2"
    sts_endpoint = %q`, sim.URL)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             ec2NoneRunning(sim),
		Steps: []resource.TestStep{
			{
				Config: ec2CredsConfig(sim, dir, awsBody, "a"),
				Check:  ownerTag(sim, "pgbench_host.a", "bench-ci"),
			},
			{
				PreConfig: func() { sim.DisableSTS(true) },
				Config:    ec2CredsConfig(sim, dir, awsBody, "a", "b"),
				Check: resource.ComposeTestCheckFunc(
					ownerTag(sim, "pgbench_host.a", "bench-ci"),
					ownerTag(sim, "pgbench_host.b", host),
				),
			},
		},
	})
}

// TestAccEC2AssumeRoleValidation: assume_role is checked at plan time.
func TestAccEC2AssumeRoleValidation(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"no role", `session_name = "x1"`, `(?s)aws\.assume_role\.role_arn.*must\s+be\s+specified`},
		{"user arn", `role_arn = "arn:aws:iam::123456789012:user/alice"`, `(?s)role_arn.*must be an IAM role ARN`},
		{"short account", `role_arn = "arn:aws:iam::1234:role/x"`, `(?s)role_arn.*must be an IAM role ARN`},
		{"bad session name", `role_arn = "` + ec2TestRoleARN + `"
      session_name = "my session"`, `(?s)session_name.*2 to 64 characters`},
		{"duration words", `role_arn = "` + ec2TestRoleARN + `"
      duration = "1 hour"`, `(?s)Invalid Duration.*from 15m0s to 12h0m0s`},
		{"duration too short", `role_arn = "` + ec2TestRoleARN + `"
      duration = "5m"`, `Invalid Duration`},
		{"duration too long", `role_arn = "` + ec2TestRoleARN + `"
      duration = "13h"`, `Invalid Duration`},
		{"valid", `role_arn = "arn:aws-us-gov:iam::123456789012:role/team/pgbench"
      session_name = "ci@run-7"
      external_id  = "ext:42"
      duration     = "1h"`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var want *regexp.Regexp
			if c.want != "" {
				want = regexp.MustCompile(c.want)
			}
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: protoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config: `provider "pgbench" {
  aws {
    region = "us-east-2"
    assume_role {
      ` + c.body + `
    }
  }
}

resource "pgbench_ec2_sweep" "x" {}
`,
					PlanOnly:           true,
					ExpectNonEmptyPlan: want == nil,
					ExpectError:        want,
				}},
			})
		})
	}
}
