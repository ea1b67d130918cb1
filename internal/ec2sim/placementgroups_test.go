package ec2sim_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

// TestPlacementGroups: a placement group is created once, with its tags;
// a launch into an unknown group is refused; a cluster group holds its
// instances in one zone; a group cannot be deleted while an instance that
// has not finished terminating is in it, and can be after.
func TestPlacementGroups(t *testing.T) {
	sim := ec2sim.New(t, ec2sim.Options{})
	c := client(t, sim)
	ctx := context.Background()
	create := func(name string, strategy types.PlacementStrategy) (*ec2.CreatePlacementGroupOutput, error) {
		return c.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{GroupName: aws.String(name), Strategy: strategy,
			TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypePlacementGroup,
				Tags: []types.Tag{{Key: aws.String("managed-by"), Value: aws.String("pgbench")}}}}})
	}
	out, err := create("bench", types.PlacementStrategyCluster)
	if err != nil {
		t.Fatal(err)
	}
	if g := out.PlacementGroup; g == nil || aws.ToString(g.GroupName) != "bench" || g.Strategy != types.PlacementStrategyCluster ||
		g.State != types.PlacementGroupStateAvailable || len(aws.ToString(g.GroupId)) < 4 || len(g.Tags) != 1 {
		t.Fatalf("created group = %+v, want bench, cluster, available, with an id and its tag", out.PlacementGroup)
	}
	if _, err := create("bench", types.PlacementStrategySpread); code(err) != "InvalidPlacementGroup.Duplicate" {
		t.Errorf("a second group bench: %v, want InvalidPlacementGroup.Duplicate", err)
	}
	if _, err := create("odd", "rack"); code(err) != "InvalidParameterValue" {
		t.Errorf("strategy rack: %v, want InvalidParameterValue", err)
	}
	if _, err := c.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{"nope"}}); code(err) != "InvalidPlacementGroup.Unknown" {
		t.Errorf("describe an unknown group: %v, want InvalidPlacementGroup.Unknown", err)
	}
	d, err := c.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{Filters: []types.Filter{{Name: aws.String("tag:managed-by"), Values: []string{"pgbench"}}}})
	if err != nil || len(d.PlacementGroups) != 1 || aws.ToString(d.PlacementGroups[0].GroupName) != "bench" {
		t.Errorf("groups tagged managed-by = pgbench: %+v, %v; want bench", d, err)
	}

	launch := func(group, zone string) (string, error) {
		in := run(func(in *ec2.RunInstancesInput) {
			in.DryRun = nil
			in.Placement = &types.Placement{GroupName: aws.String(group)}
			if zone != "" {
				in.Placement.AvailabilityZone = aws.String(zone)
			}
		})
		out, err := c.RunInstances(ctx, in)
		if err != nil {
			return "", err
		}
		return aws.ToString(out.Instances[0].InstanceId), nil
	}
	if _, err := launch("nope", ""); code(err) != "InvalidPlacementGroup.Unknown" {
		t.Errorf("launch into an unknown group: %v, want InvalidPlacementGroup.Unknown", err)
	}
	id, err := launch("bench", "us-east-2b")
	if err != nil {
		t.Fatal(err)
	}
	if in, _ := sim.Instance(id); in.PlacementGroup != "bench" || in.Zone != "us-east-2b" {
		t.Errorf("instance in group %q, zone %s; want bench, us-east-2b", in.PlacementGroup, in.Zone)
	}
	di, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []types.Filter{{Name: aws.String("placement-group-name"), Values: []string{"bench"}}}})
	if err != nil || len(di.Reservations) != 1 || aws.ToString(di.Reservations[0].Instances[0].Placement.GroupName) != "bench" {
		t.Errorf("instances of group bench: %+v, %v; want the one launched, placed in bench", di, err)
	}
	// A cluster group is in one zone: EC2 picks none for a launch without
	// one (us-east-2a here), and refuses it.
	if _, err := launch("bench", ""); code(err) != "InvalidPlacementGroup.InUse" {
		t.Errorf("launch into bench in another zone: %v, want InvalidPlacementGroup.InUse", err)
	}
	if _, err := c.DeletePlacementGroup(ctx, &ec2.DeletePlacementGroupInput{GroupName: aws.String("bench")}); code(err) != "InvalidPlacementGroup.InUse" {
		t.Errorf("delete bench with an instance in it: %v, want InvalidPlacementGroup.InUse", err)
	}
	if _, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := c.DeletePlacementGroup(ctx, &ec2.DeletePlacementGroupInput{GroupName: aws.String("bench")})
		if err == nil {
			break
		}
		if code(err) != "InvalidPlacementGroup.InUse" || time.Now().After(deadline) {
			t.Fatalf("delete bench after its instance terminated: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if in, _ := sim.Instance(id); in.State != ec2sim.Terminated {
		t.Errorf("bench was deleted while its instance was %s", in.State)
	}
	if g := sim.PlacementGroups(); len(g) != 0 {
		t.Errorf("groups after the delete: %v, want none", g)
	}
	if _, err := c.DeletePlacementGroup(ctx, &ec2.DeletePlacementGroupInput{GroupName: aws.String("bench")}); code(err) != "InvalidPlacementGroup.Unknown" {
		t.Errorf("delete bench again: %v, want InvalidPlacementGroup.Unknown", err)
	}
}
