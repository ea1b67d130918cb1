package ec2host

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// PlacementStrategies are the strategies of a placement group: cluster
// packs its instances close together in one availability zone (the lowest
// latency between a server and its client), spread and partition keep
// them apart.
var PlacementStrategies = []string{"cluster", "spread", "partition"}

// PlacementGroup is a placement group as EC2 reports it.
type PlacementGroup struct {
	ID, Name, Strategy, State, ARN string
	Tags                           map[string]string
}

// CreatePlacementGroup creates the placement group name with strategy,
// tagged with tags and the managed-by tag.
func (c *Client) CreatePlacementGroup(ctx context.Context, name, strategy string, tags map[string]string) (*PlacementGroup, error) {
	all := map[string]string{TagManagedBy: ManagedByValue}
	maps.Copy(all, tags)
	out, err := c.ec2.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{
		GroupName: aws.String(name), Strategy: types.PlacementStrategy(strategy),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypePlacementGroup, Tags: sdkTags(all)}},
	})
	if err != nil {
		return nil, fmt.Errorf("create placement group %s: %w", name, err)
	}
	if out.PlacementGroup == nil {
		return nil, fmt.Errorf("create placement group %s: EC2 returned no group", name)
	}
	return placementGroupFromSDK(*out.PlacementGroup), nil
}

// DescribePlacementGroup returns the placement group name, nil when EC2
// does not know it.
func (c *Client) DescribePlacementGroup(ctx context.Context, name string) (*PlacementGroup, error) {
	out, err := c.ec2.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{name}})
	if errorCode(err) == "InvalidPlacementGroup.Unknown" {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("describe placement group %s: %w", name, err)
	}
	for _, g := range out.PlacementGroups {
		if aws.ToString(g.GroupName) == name {
			return placementGroupFromSDK(g), nil
		}
	}
	return nil, nil
}

// DeletePlacementGroup deletes the placement group, retrying while an
// instance that is still terminating holds it (InvalidPlacementGroup.InUse)
// until ctx ends. A group already gone is success.
func (c *Client) DeletePlacementGroup(ctx context.Context, name string) error {
	for {
		_, err := c.ec2.DeletePlacementGroup(ctx, &ec2.DeletePlacementGroupInput{GroupName: aws.String(name)})
		switch code := errorCode(err); {
		case err == nil, code == "InvalidPlacementGroup.Unknown":
			return nil
		case code != "InvalidPlacementGroup.InUse":
			return fmt.Errorf("delete placement group %s: %w", name, err)
		}
		if serr := sleep(ctx, c.poll); serr != nil {
			return fmt.Errorf("delete placement group %s: still in use: %w", name, err)
		}
	}
}

func placementGroupFromSDK(g types.PlacementGroup) *PlacementGroup {
	p := &PlacementGroup{ID: aws.ToString(g.GroupId), Name: aws.ToString(g.GroupName), Strategy: string(g.Strategy),
		State: string(g.State), ARN: aws.ToString(g.GroupArn), Tags: map[string]string{}}
	for _, t := range g.Tags {
		p.Tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return p
}

// placementZones are the zones a launch into spec's placement group may
// try: a cluster group lives in one zone, so once an instance holds a
// place in it, the launch goes to that zone, which must be one of
// spec.AvailabilityZones when they are given.
func (c *Client) placementZones(ctx context.Context, spec Spec) ([]string, error) {
	zones := spec.AvailabilityZones
	if spec.PlacementGroup == "" {
		return zones, nil
	}
	out, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []types.Filter{
		{Name: aws.String("placement-group-name"), Values: []string{spec.PlacementGroup}},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running", "shutting-down", "stopping"}},
	}})
	if err != nil {
		return nil, fmt.Errorf("find the zone of placement group %s: %w", spec.PlacementGroup, err)
	}
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			if i.Placement == nil || aws.ToString(i.Placement.AvailabilityZone) == "" {
				continue
			}
			zone := aws.ToString(i.Placement.AvailabilityZone)
			if len(zones) > 0 && !slices.Contains(zones, zone) {
				return nil, fmt.Errorf("placement group %s holds %s in %s, which is not one of the availability zones %s",
					spec.PlacementGroup, aws.ToString(i.InstanceId), zone, strings.Join(zones, ", "))
			}
			return []string{zone}, nil
		}
	}
	return zones, nil
}

// placement is the Placement of a launch in zone ("" lets EC2 choose)
// into spec's placement group; nil for neither.
func placement(spec Spec, zone string) *types.Placement {
	if zone == "" && spec.PlacementGroup == "" {
		return nil
	}
	p := &types.Placement{}
	if zone != "" {
		p.AvailabilityZone = aws.String(zone)
	}
	if spec.PlacementGroup != "" {
		p.GroupName = aws.String(spec.PlacementGroup)
	}
	return p
}
