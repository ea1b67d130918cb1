package ec2host

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// FindLaunch returns the instance that a Launch with this client token and
// this many zones created, or nil when it created none that EC2 still
// lists. It is how a create killed after RunInstances finds its instance
// again: Launch tags no id anywhere before it returns, but EC2 keeps the
// token (one per zone attempt, see zoneToken) on the instance. A live
// instance wins over a terminated one of an earlier zone attempt.
func (c *Client) FindLaunch(ctx context.Context, token string, zones int) (*Instance, error) {
	tokens := []string{}
	for i := 0; i < max(zones, 1); i++ {
		tokens = append(tokens, zoneToken(token, i))
	}
	out, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []types.Filter{
		{Name: aws.String("client-token"), Values: tokens},
	}})
	if err != nil {
		return nil, fmt.Errorf("look up the instance of client token %s: %w", token, err)
	}
	var found *Instance
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			in := fromSDK(i)
			if found == nil || found.State == "terminated" {
				found = in
			}
		}
	}
	return found, nil
}
