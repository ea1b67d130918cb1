package provider

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

// TestAccEC2HostTags: credentials of an account allowed_account_ids does
// not list are refused before anything is made; the provider's
// default_tags go under the host's tags on the instance and its root
// volume; a change of either, and a tag added outside Terraform, are
// in-place updates (CreateTags, DeleteTags) of the same instance and its
// volume, read back with the SDK.
func TestAccEC2HostTags(t *testing.T) {
	sim := ec2TestRegion(t)
	dir := filepath.Join(t.TempDir(), "pgbench")
	cfg := func(allowed, defaults, tags string) string {
		return fmt.Sprintf(`
provider "pgbench" {
  aws {
    endpoint               = %q
    sts_endpoint           = %q
    servicequotas_endpoint = %q
    region                 = "us-east-2"
    allowed_account_ids    = %s
    default_tags           = %s
  }
}
`, sim.URL, sim.URL, sim.URL, allowed, defaults) + ec2HostResource(dir, "    tags = "+tags, "")
	}
	first := cfg(`["123456789012", "111111111111"]`, `{ cost-center = "bench", team = "platform" }`, `{ project = "a", team = "x", temp = "1" }`)
	second := cfg(`["123456789012"]`, `{ cost-center = "bench2", team = "platform" }`, `{ project = "b" }`)
	name := "pgbench_host.metal"
	var launched []ec2sim.InstanceInfo
	var expires string
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { preCheck(t) },
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy:             ec2NoneRunning(sim),
		Steps: []resource.TestStep{
			{
				Config:      cfg(`["111111111111", "222222222222"]`, `{}`, `{}`),
				ExpectError: regexp.MustCompile(`(?s)AWS Account Not Allowed.*account\s+123456789012.*111111111111,\s+222222222222`),
			},
			{
				PreConfig: func() {
					if n, calls := len(sim.Instances()), sim.Calls("RunInstances"); n+calls != 0 {
						t.Errorf("after the refused account: %d instances, %d RunInstances calls; want none", n, calls)
					}
					if k, g := sim.KeyPairs(), sim.SecurityGroups(); len(k)+len(g) != 0 {
						t.Errorf("after the refused account: key pairs %v, security groups %v; want none", k, g)
					}
					if sim.Calls("GetCallerIdentity") == 0 {
						t.Errorf("the account was refused without asking STS GetCallerIdentity")
					}
				},
				Config: first,
				Check: resource.ComposeTestCheckFunc(ec2Only(sim, 1, &launched), func(s *terraform.State) error {
					expires = s.RootModule().Resources[name].Primary.Attributes["ec2.expires_at"]
					return ec2WantTags(t, sim, launched[0].ID, map[string]string{"cost-center": "bench", "team": "x", "project": "a", "temp": "1",
						"Name": "pgbench", "managed-by": "pgbench", "owner": "ci", "expires-at": expires})
				}),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(name, tfjsonpath.New("ec2").AtMapKey("tags_all"), knownvalue.MapExact(map[string]knownvalue.Check{
						"cost-center": knownvalue.StringExact("bench"), "team": knownvalue.StringExact("x"),
						"project": knownvalue.StringExact("a"), "temp": knownvalue.StringExact("1")})),
				},
			},
			{
				// Both tag sets change: the same instance, updated in place.
				Config: second,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(name, plancheck.ResourceActionUpdate)}},
				Check: resource.ComposeTestCheckFunc(ec2Only(sim, 1, nil), func(*terraform.State) error {
					return ec2WantTags(t, sim, launched[0].ID, map[string]string{"cost-center": "bench2", "team": "platform", "project": "b",
						"Name": "pgbench", "managed-by": "pgbench", "owner": "ci", "expires-at": expires})
				}),
			},
			{
				// A tag added outside Terraform is drift: refresh sees it
				// and the update takes it away again.
				PreConfig: func() {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					if _, err := ec2SDK(sim).CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{launched[0].ID},
						Tags: []ec2types.Tag{{Key: aws.String("stray"), Value: aws.String("1")}}}); err != nil {
						t.Fatalf("tag %s outside Terraform: %v", launched[0].ID, err)
					}
				},
				Config: second,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(name, plancheck.ResourceActionUpdate)}},
				Check: func(*terraform.State) error {
					if in, _ := sim.Instance(launched[0].ID); in.Tags["stray"] != "" {
						return fmt.Errorf("instance tags after the update = %v, want no stray tag", in.Tags)
					}
					return nil
				},
			},
			{
				Config:           second,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// ec2SDK is a plain EC2 client of the simulated region, to read back
// what the provider did as EC2 reports it.
func ec2SDK(sim *ec2sim.Server) *ec2.Client {
	return ec2.New(ec2.Options{Region: sim.Region(), BaseEndpoint: aws.String(sim.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDPGBENCHTEST", "pgbench-test-secret", "")})
}

// ec2WantTags checks the tags of instance id and of every volume
// DescribeInstances lists for it (DescribeVolumes) against want.
func ec2WantTags(t *testing.T, sim *ec2sim.Server, id string, want map[string]string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := ec2SDK(sim)
	d, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		return err
	}
	in := d.Reservations[0].Instances[0]
	if got := sdkTagMap(in.Tags); !maps.Equal(got, want) {
		return fmt.Errorf("instance %s tags = %v, want %v", id, got, want)
	}
	var vols []string
	for _, b := range in.BlockDeviceMappings {
		vols = append(vols, aws.ToString(b.Ebs.VolumeId))
	}
	if len(vols) == 0 {
		return fmt.Errorf("instance %s lists no volumes", id)
	}
	v, err := c.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: vols})
	if err != nil {
		return err
	}
	for _, vol := range v.Volumes {
		if got := sdkTagMap(vol.Tags); !maps.Equal(got, want) {
			return fmt.Errorf("volume %s of %s tags = %v, want %v", aws.ToString(vol.VolumeId), id, got, want)
		}
	}
	return nil
}

func sdkTagMap(tags []ec2types.Tag) map[string]string {
	m := map[string]string{}
	for _, tg := range tags {
		m[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	return m
}
