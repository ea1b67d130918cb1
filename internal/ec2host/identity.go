package ec2host

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// AssumeRole is an IAM role to assume for every EC2 call, as the AWS CLI's
// role_arn profiles and terraform-provider-aws's assume_role block do.
type AssumeRole struct {
	RoleARN string
	// SessionName names the role session (CloudTrail shows it, and it is
	// the owner tag when no user is known); default "pgbench".
	SessionName string
	// ExternalID is the role's sts:ExternalId condition, if it has one.
	ExternalID string
	// Duration of the temporary credentials (default 15m); they are
	// renewed before they expire.
	Duration time.Duration
}

// DefaultSessionName is the role session name when AssumeRole gives none.
const DefaultSessionName = "pgbench"

// identityTimeout bounds the caller-identity lookup of Owner: the tag is
// worth a few seconds, not a launch held up by an unreachable STS.
const identityTimeout = 15 * time.Second

// assumeRole replaces the credentials of awsCfg with the role's, obtained
// through STS with the original ones. It fetches them at once so that a
// refused role is reported as such, not as the first EC2 call failing.
func assumeRole(ctx context.Context, awsCfg *aws.Config, role AssumeRole, stsOpts func(*sts.Options)) error {
	name := role.SessionName
	if name == "" {
		name = DefaultSessionName
	}
	p := stscreds.NewAssumeRoleProvider(sts.NewFromConfig(*awsCfg, stsOpts), role.RoleARN, func(o *stscreds.AssumeRoleOptions) {
		o.RoleSessionName = name
		o.Duration = role.Duration
		if role.ExternalID != "" {
			o.ExternalID = aws.String(role.ExternalID)
		}
	})
	awsCfg.Credentials = aws.NewCredentialsCache(p)
	if _, err := awsCfg.Credentials.Retrieve(ctx); err != nil {
		return fmt.Errorf("assume role %s: %w", role.RoleARN, err)
	}
	return nil
}

// CallerIdentity returns the ARN of the identity whose credentials the
// client signs with (STS GetCallerIdentity, which needs no permission).
func (c *Client) CallerIdentity(ctx context.Context) (string, error) {
	arn, _, err := c.identity(ctx)
	return arn, err
}

// identity is the ARN and the account id of the caller (STS
// GetCallerIdentity).
func (c *Client) identity(ctx context.Context) (arn, account string, err error) {
	out, err := c.sts.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}, func(o *sts.Options) {
		o.RetryMaxAttempts = 2
	})
	if err != nil {
		return "", "", fmt.Errorf("get caller identity: %w", err)
	}
	return aws.ToString(out.Arn), aws.ToString(out.Account), nil
}

// AccountNotAllowedError is a caller whose account is not one of the
// allowed ones.
type AccountNotAllowedError struct {
	Account, ARN string
	Allowed      []string
}

func (e *AccountNotAllowedError) Error() string {
	return fmt.Sprintf("the AWS credentials (%s) are of account %s, which is not one of the allowed accounts %s",
		e.ARN, e.Account, strings.Join(e.Allowed, ", "))
}

// CheckAccount refuses credentials of an account not in allowed (STS
// GetCallerIdentity), so that nothing is made in the wrong account; an
// empty allowed admits every account without asking STS.
func (c *Client) CheckAccount(ctx context.Context, allowed []string) error {
	if len(allowed) == 0 {
		return nil
	}
	arn, account, err := c.identity(ctx)
	if err != nil {
		return fmt.Errorf("check the account against allowed_account_ids: %w", err)
	}
	if !slices.Contains(allowed, account) {
		return &AccountNotAllowedError{Account: account, ARN: arn, Allowed: allowed}
	}
	return nil
}

// Owner returns the owner tag for an instance, never empty, so that a
// sweep or a bill can always be traced to someone: explicit if given,
// else the user running the process ($USER, then $LOGNAME, both unset in
// many CI containers), else the last part of the caller identity's ARN
// (the IAM user name or the role session name), else the host name.
// err is the caller-identity failure when the host name had to be used.
func (c *Client) Owner(ctx context.Context, explicit string) (owner string, err error) {
	if explicit != "" {
		return explicit, nil
	}
	for _, v := range []string{"USER", "LOGNAME"} {
		if u := os.Getenv(v); u != "" {
			return u, nil
		}
	}
	ictx, cancel := context.WithTimeout(ctx, identityTimeout)
	defer cancel()
	arn, err := c.CallerIdentity(ictx)
	if err == nil && arn != "" {
		return ARNOwner(arn), nil
	}
	host, herr := os.Hostname()
	if herr != nil || host == "" {
		host = "unknown-host"
	}
	return host, err
}

// ARNOwner is the owner an identity ARN stands for: its last path part,
// the user name of arn:aws:iam::123456789012:user/alice or the session
// name of arn:aws:sts::123456789012:assumed-role/ci/run-42; the whole ARN
// where there is no path (an account's root user).
func ARNOwner(arn string) string {
	if i := strings.LastIndexByte(arn, '/'); i >= 0 && i < len(arn)-1 {
		return arn[i+1:]
	}
	return arn
}
