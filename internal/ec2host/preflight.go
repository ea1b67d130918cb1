package ec2host

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// The preflight asks EC2, with DryRun, whether the calls of a create
// would succeed, before any of them is made for real, and Service Quotas
// whether the vCPU quota leaves room (quota.go): a launch refused for a
// permission or the vCPU quota then leaves nothing to undo (no key pair
// imported, no security group created, no instance).

// PermissionError is a call the credentials are not allowed to make
// (EC2's UnauthorizedOperation).
type PermissionError struct {
	// Action is the IAM action, e.g. "ec2:RunInstances".
	Action string
	Err    error
}

func (e *PermissionError) Error() string {
	return fmt.Sprintf("the AWS credentials are not allowed to call %s: allow %s in the IAM policy of the user or role "+
		"the provider runs as (`aws sts decode-authorization-message` decodes EC2's encoded message for the details): %v",
		e.Action, e.Action, e.Err)
}

func (e *PermissionError) Unwrap() error { return e.Err }

// ErrUnknownInstanceType is wrapped by errors for an instance type the
// region does not offer.
var ErrUnknownInstanceType = errors.New("no such instance type")

// Preflight asks EC2 whether Launch(spec) would be allowed, with a DryRun
// RunInstances of the request Launch makes (the image resolved, the
// first of spec.AvailabilityZones, block devices, user data, tags), and
// creates nothing. It leaves out what does not exist yet: give it the
// spec without a key pair the create will generate and import, or a
// security group it will create (check those calls with PreflightKeyPair
// and PreflightSecurityGroup). A zone's capacity is not checked: EC2
// knows it only at launch, and Launch moves on to the next zone. Nor does
// EC2 check the vCPU quota for a DryRun: Preflight reads it from Service
// Quotas and counts the vCPUs in use itself.
//
// It returns nil when the launch would be allowed, a *PermissionError for
// a missing IAM permission, a *VCPULimitError for the vCPU quota, an
// error wrapping ErrUnknownInstanceType or ErrNoImage for a type or image
// the region does not have, else EC2's error. unchecked is non-nil when
// the quota could not be checked (no servicequotas:GetServiceQuota, say):
// the launch may go on, and EC2 checks the quota when it launches.
func (c *Client) Preflight(ctx context.Context, spec Spec) (unchecked *QuotaUncheckedError, err error) {
	in, token, _, err := c.runInput(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("preflight: %w", preflightError("RunInstances", err))
	}
	in.DryRun = aws.Bool(true)
	in.ClientToken = aws.String(zoneToken(token, 0))
	zones, err := c.placementZones(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("preflight: %w", err)
	}
	zone := ""
	if len(zones) > 0 {
		zone = zones[0]
	}
	in.Placement = placement(spec, zone)
	_, err = c.ec2.RunInstances(ctx, in)
	switch {
	case notRetried[errorCode(err)]:
		// A zone without capacity or offer: Launch tries the next.
	case errorCode(err) == "VcpuLimitExceeded":
		// Not EC2's answer to a DryRun, but an endpoint's that checks.
		return nil, fmt.Errorf("preflight: %w", c.vcpuLimitError(ctx, spec.InstanceType, err))
	default:
		if err = dryRunResult("RunInstances", err); err != nil {
			return nil, fmt.Errorf("preflight: %w", err)
		}
	}
	unchecked, err = c.checkVCPUQuota(ctx, spec.InstanceType)
	if err != nil {
		return nil, fmt.Errorf("preflight: %w", err)
	}
	return unchecked, nil
}

// PreflightKeyPair asks EC2, with DryRun, whether ImportKeyPair(name,
// publicKeyLine, tags) would be allowed; it imports nothing.
// PreflightConsoleOutput asks EC2, with DryRun, whether the credentials
// may read instance consoles (ec2:GetConsoleOutput), which pinning the
// host key from the console needs once the instance runs. No instance
// exists yet, so it names a well-formed one that does not: IAM answers
// before EC2 looks the instance up.
func (c *Client) PreflightConsoleOutput(ctx context.Context) error {
	_, err := c.ec2.GetConsoleOutput(ctx, &ec2.GetConsoleOutputInput{InstanceId: aws.String(preflightInstanceID), DryRun: aws.Bool(true)})
	if errorCode(err) == "InvalidInstanceID.NotFound" {
		return nil // allowed: EC2 got as far as the lookup
	}
	if err = dryRunResult("GetConsoleOutput", err); err != nil {
		return fmt.Errorf("preflight read of instance consoles: %w", err)
	}
	return nil
}

// preflightInstanceID is the instance the console preflight names.
const preflightInstanceID = "i-00000000000000000"

func (c *Client) PreflightKeyPair(ctx context.Context, name, publicKeyLine string, tags map[string]string) error {
	in := importKeyPairInput(name, publicKeyLine, tags)
	in.DryRun = aws.Bool(true)
	_, err := c.ec2.ImportKeyPair(ctx, in)
	if err = dryRunResult("ImportKeyPair", err); err != nil {
		return fmt.Errorf("preflight import of key pair %s: %w", name, err)
	}
	return nil
}

// PreflightSecurityGroup asks EC2, with DryRun, whether
// CreateSSHSecurityGroup(name, vpcID, ...) could create its group; it
// creates nothing. (Its ingress rule cannot be tried: the group does
// not exist yet.)
func (c *Client) PreflightSecurityGroup(ctx context.Context, name, vpcID string) error {
	in := createGroupInput(name, vpcID)
	in.DryRun = aws.Bool(true)
	_, err := c.ec2.CreateSecurityGroup(ctx, in)
	if err = dryRunResult("CreateSecurityGroup", err); err != nil {
		return fmt.Errorf("preflight creation of security group %s: %w", name, err)
	}
	return nil
}

// dryRunResult turns the answer to a DryRun of action into nil (it would
// have succeeded) or an error that says what to do.
func dryRunResult(action string, err error) error {
	if err == nil {
		// EC2 never succeeds a DryRun; an endpoint that does ignored
		// the flag and may have made the thing.
		return fmt.Errorf("a DryRun %s succeeded: the endpoint ignored DryRun (check what it created)", action)
	}
	if errorCode(err) == "DryRunOperation" {
		return nil
	}
	return preflightError(action, err)
}

// unauthorizedRE finds the action in UnauthorizedOperation's message.
var unauthorizedRE = regexp.MustCompile(`not authorized to perform: (\S+:\w+)`)

// preflightError types a missing permission (on action, or the one EC2's
// message names), which the caller tells apart; it keeps other errors as
// they are.
func preflightError(action string, err error) error {
	if errorCode(err) == "UnauthorizedOperation" {
		act := "ec2:" + action
		if m := unauthorizedRE.FindStringSubmatch(err.Error()); m != nil {
			act = m[1]
		}
		return &PermissionError{Action: act, Err: err}
	}
	return err
}

// importKeyPairInput is the ImportKeyPair request of ImportKeyPair and
// PreflightKeyPair.
func importKeyPairInput(name, publicKeyLine string, tags map[string]string) *ec2.ImportKeyPairInput {
	in := &ec2.ImportKeyPairInput{KeyName: aws.String(name), PublicKeyMaterial: []byte(publicKeyLine)}
	if len(tags) > 0 {
		in.TagSpecifications = []types.TagSpecification{{ResourceType: types.ResourceTypeKeyPair, Tags: sdkTags(tags)}}
	}
	return in
}

// createGroupInput is the CreateSecurityGroup request of
// CreateSSHSecurityGroup and PreflightSecurityGroup.
func createGroupInput(name, vpcID string) *ec2.CreateSecurityGroupInput {
	in := &ec2.CreateSecurityGroupInput{
		GroupName:   aws.String(name),
		Description: aws.String("pgbench: SSH to benchmark hosts (deleted on destroy)"),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSecurityGroup,
			Tags: sdkTags(map[string]string{TagManagedBy: ManagedByValue})}},
	}
	if vpcID != "" {
		in.VpcId = aws.String(vpcID)
	}
	return in
}
