package ec2sim

import (
	"crypto/sha256"
	"encoding/base64"
	"net/url"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2quota"
)

// What a launch can be refused for before anything exists: IAM
// permissions (Deny), the account's vCPU quota (Options.VCPUQuota, at a
// real launch only), and the answer to a DryRun request that would have
// succeeded.

// DefaultVCPUQuota is the "Running On-Demand Standard (A, C, D, H, I, M,
// R, T, Z) instances" quota of a region whose Options name none: three
// r8i.metal-96xl, enough for every test that does not test the quota.
const DefaultVCPUQuota = 1152

// Deny makes every later request of action (e.g. "RunInstances") fail as
// EC2 does when the caller's IAM policy does not allow it: HTTP 403
// UnauthorizedOperation, DryRun or not. Denying "GetServiceQuota" makes
// Service Quotas answer AccessDeniedException (HTTP 400), as it does.
func (s *Server) Deny(action string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.denied[action] = true
}

// deniedLocked reports whether action was denied with Deny.
func (s *Server) deniedLocked(action string) bool { return s.denied[action] }

// unauthorized is EC2's answer to a call IAM does not allow, naming the
// caller, the action and the resource as AWS does. The encoded message is
// opaque, as AWS's is (only sts:DecodeAuthorizationMessage reads it).
func (s *Server) unauthorized(action string, f url.Values) *apiError {
	res := "*"
	switch action {
	case "RunInstances":
		res = "instance/*"
	case "ImportKeyPair":
		res = "key-pair/" + f.Get("KeyName")
	case "CreateSecurityGroup":
		res = "security-group/*"
	case "AuthorizeSecurityGroupIngress", "DeleteSecurityGroup":
		res = "security-group/" + f.Get("GroupId")
	case "DeleteKeyPair":
		res = "key-pair/" + f.Get("KeyName")
	}
	sum := sha256.Sum256([]byte(action + "/" + res))
	encoded := base64.RawURLEncoding.EncodeToString(append(sum[:], sum[:]...))
	return errf(403, "UnauthorizedOperation", "You are not authorized to perform this operation. "+
		"User: arn:aws:iam::%s:user/pgbench is not authorized to perform: ec2:%s on resource: arn:aws:ec2:%s:%s:%s "+
		"because no identity-based policy allows the ec2:%s action. Encoded authorization failure message: %s",
		s.opts.OwnerID, action, s.opts.Region, s.opts.OwnerID, res, action, encoded)
}

// dryRun reports whether a request asks for a DryRun.
func dryRun(f url.Values) bool { return f.Get("DryRun") == "true" }

// errDryRun is EC2's answer to a DryRun request that would have succeeded.
func errDryRun() *apiError {
	return errf(412, "DryRunOperation", "Request would have succeeded, but DryRun flag is set.")
}

// quotaValue is the value of an On-Demand vCPU quota in vCPUs:
// Options.VCPUQuota for the standard bucket, DefaultVCPUQuota for the
// others (the catalogue has no type of theirs). GetServiceQuota answers
// it and a launch is held to it.
func (s *Server) quotaValue(code string) int {
	if code == ec2quota.StandardCode {
		return s.opts.VCPUQuota
	}
	return DefaultVCPUQuota
}

// vcpuQuotaLocked refuses a launch of typ that would take the vCPUs of the
// account's pending and running instances of typ's quota bucket over the
// quota, with EC2's VcpuLimitExceeded. Only a real launch is checked: a
// DryRun allocates nothing, so EC2 does not check account limits for it.
func (s *Server) vcpuQuotaLocked(typ string) *apiError {
	q, ok := ec2quota.For(typ)
	if !ok {
		return nil
	}
	used := instanceTypes[typ].VCPUInfo.DefaultVCPUs
	for _, in := range s.instances {
		if iq, _ := ec2quota.For(in.typ); (in.state == Pending || in.state == Running) && iq.Code == q.Code {
			used += instanceTypes[in.typ].VCPUInfo.DefaultVCPUs
		}
	}
	limit := s.quotaValue(q.Code)
	if used <= limit {
		return nil
	}
	return errf(400, "VcpuLimitExceeded", "You have requested more vCPU capacity than your current vCPU limit of %d allows "+
		"for the instance bucket that the specified instance type belongs to. Please visit "+
		"http://aws.amazon.com/contact-us/ec2-request to request an adjustment to this limit.", limit)
}
