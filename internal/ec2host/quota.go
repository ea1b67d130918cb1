package ec2host

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/servicequotas"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2quota"
)

// The On-Demand vCPU quota is an account limit, and EC2 checks account
// limits only when a launch allocates something: a DryRun RunInstances
// never answers VcpuLimitExceeded. So the preflight reads the quota from
// Service Quotas and counts the vCPUs of the account's pending and
// running instances of the type's bucket itself, and Launch types EC2's
// VcpuLimitExceeded for the case the preflight could not check.

// quotaTimeout bounds the quota check: it is advice, and an unreachable
// Service Quotas must not hold up a create.
const quotaTimeout = 30 * time.Second

// VCPULimitError is a launch that would take the account over its
// On-Demand vCPU quota for the type's family: found by the preflight from
// Service Quotas, or EC2's VcpuLimitExceeded at launch.
type VCPULimitError struct {
	InstanceType string
	// VCPUs is what one instance of the type needs; Limit is the quota's
	// value (0 if neither Service Quotas nor EC2's message said); InUse
	// is the vCPUs of the pending and running instances of the quota's
	// bucket, -1 when they could not be counted.
	VCPUs, Limit, InUse int
	// QuotaName and QuotaCode name the quota in Service Quotas.
	QuotaName, QuotaCode string
	Region               string
	// Err is EC2's VcpuLimitExceeded; nil when the preflight found it.
	Err error
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
	inUse, want, desired := "the instances already running", fmt.Sprintf("%d vCPUs plus those already running", e.VCPUs), "N"
	if e.InUse >= 0 {
		inUse = fmt.Sprintf("the %d vCPUs of the instances already pending or running", e.InUse)
		want, desired = fmt.Sprintf("%d vCPUs", e.InUse+e.VCPUs), strconv.Itoa(e.InUse+e.VCPUs)
	}
	msg := fmt.Sprintf("launching %s needs %d vCPUs, which, with %s in %s, exceeds %s of %s: "+
		"request an increase to at least %s, in the Service Quotas console (Amazon Elastic Compute Cloud (Amazon EC2), %s) "+
		"or with `aws service-quotas request-service-quota-increase --service-code ec2 --quota-code %s --desired-value %s --region %s`; "+
		"or terminate instances that use the quota, or choose a smaller instance type",
		e.InstanceType, e.VCPUs, inUse, e.Region, limit, quota, want, code, code, desired, e.Region)
	if e.Err != nil {
		msg += fmt.Sprintf(" (EC2 said: %v)", e.Err)
	}
	return msg
}

func (e *VCPULimitError) Unwrap() error { return e.Err }

// QuotaUncheckedError says why the preflight could not check the vCPU
// quota. It is not a refusal: the launch goes on, and EC2 checks the
// quota itself when it launches.
type QuotaUncheckedError struct {
	QuotaName, QuotaCode string
	// Action is the IAM action the check was refused or failed on,
	// e.g. "servicequotas:GetServiceQuota".
	Action string
	// Denied is true when IAM refused Action.
	Denied bool
	Err    error
}

func (e *QuotaUncheckedError) Error() string {
	fix := fmt.Sprintf("allow %s in the IAM policy of the user or role the provider runs as to have it checked before anything is made", e.Action)
	if !e.Denied {
		fix = fmt.Sprintf("the check needs %s and a reachable Service Quotas endpoint (aws.servicequotas_endpoint for a private one)", e.Action)
	}
	return fmt.Sprintf("the vCPU quota %q (%s) could not be checked before the launch (%s failed: %v); EC2 still checks it at launch, "+
		"after the key pair and security group were made (they are deleted again if it refuses); %s",
		e.QuotaName, e.QuotaCode, e.Action, e.Err, fix)
}

func (e *QuotaUncheckedError) Unwrap() error { return e.Err }

// VCPUQuota names the Service Quotas quota an instance type's vCPUs count
// against; both are empty for a family without a known quota.
func VCPUQuota(instanceType string) (name, code string) {
	q, _ := ec2quota.For(instanceType)
	return q.Name, q.Code
}

// checkVCPUQuota compares what a launch of typ needs, with the vCPUs of
// the pending and running instances of its bucket, to the bucket's quota:
// a *VCPULimitError when it would exceed it, a *QuotaUncheckedError when
// the quota or the usage could not be read, nil when it fits or the type
// has no known quota.
func (c *Client) checkVCPUQuota(ctx context.Context, typ string) (*QuotaUncheckedError, error) {
	q, ok := ec2quota.For(typ)
	if !ok {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, quotaTimeout)
	defer cancel()
	unchecked := func(action, code string, err error) *QuotaUncheckedError {
		return &QuotaUncheckedError{QuotaName: q.Name, QuotaCode: q.Code, Action: action, Err: err,
			Denied: code == "AccessDeniedException" || code == "UnauthorizedOperation"}
	}
	out, err := c.quotas.GetServiceQuota(ctx, &servicequotas.GetServiceQuotaInput{
		ServiceCode: aws.String(ec2quota.ServiceCode), QuotaCode: aws.String(q.Code)})
	if err != nil || out.Quota == nil || out.Quota.Value == nil {
		if err == nil {
			err = errors.New("the answer has no value")
		}
		return unchecked("servicequotas:GetServiceQuota", errorCode(err), err), nil
	}
	info, err := c.DescribeInstanceType(ctx, typ)
	if err != nil {
		return unchecked("ec2:DescribeInstanceTypes", errorCode(err), err), nil
	}
	inUse, action, err := c.vcpusInUse(ctx, q.Code)
	if err != nil {
		return unchecked(action, errorCode(err), err), nil
	}
	limit := int(aws.ToFloat64(out.Quota.Value))
	if inUse+int(info.VCPUs) <= limit {
		return nil, nil
	}
	return nil, &VCPULimitError{InstanceType: typ, VCPUs: int(info.VCPUs), Limit: limit, InUse: inUse,
		QuotaName: q.Name, QuotaCode: q.Code, Region: c.region}
}

// vcpusInUse adds up the vCPUs of the account's pending and running
// instances in the region whose type counts against the quota code, as
// EC2 counts them for the quota (each type's default vCPUs). On error,
// action is the IAM action of the call that failed.
func (c *Client) vcpusInUse(ctx context.Context, code string) (vcpus int, action string, err error) {
	p := ec2.NewDescribeInstancesPaginator(c.ec2, &ec2.DescribeInstancesInput{
		Filters:    []types.Filter{{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}}},
		MaxResults: aws.Int32(1000),
	})
	count := map[string]int{}
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return 0, "ec2:DescribeInstances", fmt.Errorf("describe running instances: %w", err)
		}
		for _, r := range out.Reservations {
			for _, in := range r.Instances {
				if q, ok := ec2quota.For(string(in.InstanceType)); ok && q.Code == code {
					count[string(in.InstanceType)]++
				}
			}
		}
	}
	for typ, n := range count {
		info, err := c.DescribeInstanceType(ctx, typ)
		if err != nil {
			return 0, "ec2:DescribeInstanceTypes", err
		}
		vcpus += n * int(info.VCPUs)
	}
	return vcpus, "", nil
}

var vcpuLimitRE = regexp.MustCompile(`vCPU limit of (\d+)`)

// vcpuLimitError types EC2's VcpuLimitExceeded for a launch of typ: the
// quota it names, the type's vCPUs and those in use are filled in as far
// as they can be read (the error stands without them).
func (c *Client) vcpuLimitError(ctx context.Context, typ string, err error) *VCPULimitError {
	ve := &VCPULimitError{InstanceType: typ, Region: c.region, InUse: -1, Err: err}
	if m := vcpuLimitRE.FindStringSubmatch(err.Error()); m != nil {
		ve.Limit, _ = strconv.Atoi(m[1])
	}
	ve.QuotaName, ve.QuotaCode = VCPUQuota(typ)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), quotaTimeout)
	defer cancel()
	if info, ierr := c.DescribeInstanceType(ctx, typ); ierr == nil {
		ve.VCPUs = int(info.VCPUs)
	}
	if ve.QuotaCode != "" {
		if n, _, uerr := c.vcpusInUse(ctx, ve.QuotaCode); uerr == nil {
			ve.InUse = n
		}
	}
	return ve
}
