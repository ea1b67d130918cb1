package ec2host

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// The preflight asks EC2, with DryRun, whether the calls of a create
// would succeed, before any of them is made for real: a launch refused
// for a permission or the vCPU quota then leaves nothing to undo (no key
// pair imported, no security group created, no instance).

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

// VCPULimitError is a launch that would take the account over its
// On-Demand vCPU quota for the type's family (EC2's VcpuLimitExceeded).
type VCPULimitError struct {
	InstanceType string
	// VCPUs is what one instance of the type needs; Limit is the quota
	// EC2 named (0 if its message did not say).
	VCPUs, Limit int
	// QuotaName and QuotaCode name the quota in Service Quotas.
	QuotaName, QuotaCode string
	Region               string
	Err                  error
}

func (e *VCPULimitError) Error() string {
	quota, code := "its family's On-Demand vCPU quota", "<quota code>"
	if e.QuotaCode != "" {
		quota, code = fmt.Sprintf("the quota %q (%s)", e.QuotaName, e.QuotaCode), e.QuotaCode
	}
	limit := "the limit"
	if e.Limit > 0 {
		limit = fmt.Sprintf("the limit of %d vCPUs", e.Limit)
	}
	return fmt.Sprintf("launching %s needs %d vCPUs, which, with the instances already running in %s, exceeds %s of %s: "+
		"request an increase to at least %d vCPUs plus those already running, in the Service Quotas console "+
		"(Amazon Elastic Compute Cloud (Amazon EC2), %s) or with `aws service-quotas request-service-quota-increase "+
		"--service-code ec2 --quota-code %s --desired-value N --region %s`; or terminate instances that use the quota, "+
		"or choose a smaller instance type (EC2 said: %v)",
		e.InstanceType, e.VCPUs, e.Region, limit, quota, e.VCPUs, code, code, e.Region, e.Err)
}

func (e *VCPULimitError) Unwrap() error { return e.Err }

// ErrUnknownInstanceType is wrapped by errors for an instance type the
// region does not offer.
var ErrUnknownInstanceType = errors.New("no such instance type")

// vcpuQuotas are the On-Demand vCPU quotas of Service Quotas, by the
// instance-type prefixes that count against them, longest prefixes first.
var vcpuQuotas = []struct {
	prefixes   string
	name, code string
}{
	{"vt g", "Running On-Demand G and VT instances", "L-DB2E81BA"},
	{"p", "Running On-Demand P instances", "L-417A185B"},
	{"x", "Running On-Demand X instances", "L-7295265B"},
	{"f", "Running On-Demand F instances", "L-74FC7D96"},
	{"a c d h i m r t z", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances", "L-1216C47A"},
}

// VCPUQuota names the Service Quotas quota an instance type's vCPUs count
// against; both are empty for a family this package does not know.
func VCPUQuota(instanceType string) (name, code string) {
	for _, q := range vcpuQuotas {
		for _, p := range strings.Fields(q.prefixes) {
			// A family prefix is followed by a generation digit
			// (m6i, g5, vt1), so "inf2" is not an "i".
			if rest, ok := strings.CutPrefix(instanceType, p); ok && rest != "" && rest[0] >= '0' && rest[0] <= '9' {
				return q.name, q.code
			}
		}
	}
	return "", ""
}

var vcpuLimitRE = regexp.MustCompile(`vCPU limit of (\d+)`)

// Preflight asks EC2 whether Launch(spec) would be allowed, with a DryRun
// RunInstances of the request Launch makes (the image resolved, the
// first of spec.AvailabilityZones, block devices, user data, tags), and
// creates nothing. It leaves out what does not exist yet: give it the
// spec without a key pair the create will generate and import, or a
// security group it will create (check those calls with PreflightKeyPair
// and PreflightSecurityGroup). A zone's capacity is not checked: EC2
// knows it only at launch, and Launch moves on to the next zone.
//
// It returns nil when EC2 answers that the request would have succeeded,
// a *PermissionError for a missing IAM permission, a *VCPULimitError for
// the vCPU quota, an error wrapping ErrUnknownInstanceType or ErrNoImage
// for a type or image the region does not have, else EC2's error.
func (c *Client) Preflight(ctx context.Context, spec Spec) error {
	in, token, _, err := c.runInput(ctx, spec)
	if err != nil {
		return fmt.Errorf("preflight: %w", preflightError("RunInstances", err))
	}
	in.DryRun = aws.Bool(true)
	in.ClientToken = aws.String(zoneToken(token, 0))
	if len(spec.AvailabilityZones) > 0 {
		in.Placement = &types.Placement{AvailabilityZone: aws.String(spec.AvailabilityZones[0])}
	}
	_, err = c.ec2.RunInstances(ctx, in)
	if notRetried[errorCode(err)] {
		// A zone without capacity or offer: Launch tries the next.
		return nil
	}
	err = dryRunResult("RunInstances", err)
	var ve *VCPULimitError
	if errors.As(err, &ve) {
		ve.InstanceType, ve.Region = spec.InstanceType, c.region
		ve.QuotaName, ve.QuotaCode = VCPUQuota(spec.InstanceType)
		info, ierr := c.DescribeInstanceType(ctx, spec.InstanceType)
		if ierr != nil {
			return fmt.Errorf("preflight: %w (and describing the type failed: %v)", err, ierr)
		}
		ve.VCPUs = int(info.VCPUs)
	}
	if err != nil {
		return fmt.Errorf("preflight: %w", err)
	}
	return nil
}

// PreflightKeyPair asks EC2, with DryRun, whether ImportKeyPair(name,
// publicKeyLine, tags) would be allowed; it imports nothing.
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

// preflightError types the errors of a preflight the caller tells apart:
// a missing permission (on action, or the one EC2's message names) and
// the vCPU quota; it keeps others as they are.
func preflightError(action string, err error) error {
	switch errorCode(err) {
	case "UnauthorizedOperation":
		act := "ec2:" + action
		if m := unauthorizedRE.FindStringSubmatch(err.Error()); m != nil {
			act = m[1]
		}
		return &PermissionError{Action: act, Err: err}
	case "VcpuLimitExceeded":
		ve := &VCPULimitError{Err: err}
		if m := vcpuLimitRE.FindStringSubmatch(err.Error()); m != nil {
			ve.Limit, _ = strconv.Atoi(m[1])
		}
		return ve
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
