// Package ec2host is the EC2 lifecycle of a benchmark host: launch with a
// termination guarantee (client token, terminate-on-shutdown, a dead-man
// power-off in user data, expiry tags), wait for running and for SSH,
// terminate and wait for terminated, sweep expired orphans, and price.
// It returns Go errors; the provider turns them into diagnostics.
//
// The create of an ec2 host goes:
//
//	c, _ := ec2host.New(ctx, ec2host.Config{Region: "us-east-2"})
//	kp, _ := ec2host.GenerateKeyPair()          // unless key_name is given
//	unchecked, err := c.Preflight(ctx, spec)    // DryRuns and the vCPU quota: nothing exists yet
//	err = c.PreflightKeyPair(ctx, name, kp.PublicKeyLine, nil)
//	err = c.PreflightSecurityGroup(ctx, name, vpc)
//	c.ImportKeyPair(ctx, name, kp.PublicKeyLine, nil)
//	sg, _ := c.CreateSSHSecurityGroup(ctx, name, vpc, cidrs, 22) // unless security_group_ids
//	in, err := c.Launch(ctx, ec2host.Spec{..., ClientToken: tok,
//		OnLaunched: func(id string) { /* save id in state now */ }})
//	in, err = c.WaitRunning(ctx, in.ID)
//	keys, err := c.HostKeysFromConsole(ctx, in.ID, 10*time.Minute)
//	ex, err := c.WaitSSH(ctx, in, ec2host.SSHOptions{User: "admin", PrivateKey: kp.PrivateKeyPEM, HostKeys: keys})
//
// and its destroy is Terminate (waits for terminated), DeleteSecurityGroup
// (retries while the instance still holds the group), DeleteKeyPair. Every
// error after OnLaunched leaves the id with the caller, so a tainted
// resource's destroy terminates it; Launch itself terminates an instance
// whose RunInstances response was an error.
package ec2host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/servicequotas"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
)

// Config says how to reach EC2 and how patiently.
type Config struct {
	Region string
	// Endpoint overrides the EC2 endpoint (tests: an ec2sim URL),
	// STSEndpoint the STS one (AssumeRole, GetCallerIdentity), and
	// ServiceQuotasEndpoint the Service Quotas one (the preflight's
	// vCPU quota).
	Endpoint, STSEndpoint, ServiceQuotasEndpoint string
	// AccessKeyID and SecretAccessKey (and SessionToken) give static
	// credentials; empty means the SDK's default chain (environment,
	// shared files, profile, container and instance roles).
	AccessKeyID, SecretAccessKey, SessionToken string
	// Profile selects a shared-config profile for the default chain; it
	// wins over credentials in the environment, as the AWS CLI does.
	Profile string
	// SharedConfigFiles and SharedCredentialsFiles replace ~/.aws/config
	// and ~/.aws/credentials (and AWS_CONFIG_FILE,
	// AWS_SHARED_CREDENTIALS_FILE) when not empty.
	SharedConfigFiles, SharedCredentialsFiles []string
	// AssumeRole, when set, makes every call with temporary credentials
	// of that role, obtained with the credentials above.
	AssumeRole *AssumeRole

	// MaxAttempts bounds the SDK's attempts per call, throttling included
	// (default 8). MaxBackoff caps the jittered exponential backoff
	// between them (default 20s).
	MaxAttempts int
	MaxBackoff  time.Duration

	// PollInterval is the delay between state checks while waiting for
	// running or terminated (default 15s; metal takes minutes).
	PollInterval time.Duration
	// NotFoundGrace is how long WaitRunning accepts "no such instance"
	// for a just-launched id, EC2 being eventually consistent (default 2m).
	NotFoundGrace time.Duration
	// Now is the clock for expiry tags and sweeps (default time.Now).
	Now func() time.Time
}

// Client is an EC2 client with the waiting behaviour of this package.
type Client struct {
	ec2           *ec2.Client
	sts           *sts.Client
	quotas        *servicequotas.Client
	region        string
	poll          time.Duration
	notFoundGrace time.Duration
	now           func() time.Time
}

// notRetried are error codes that another attempt in the same zone cannot
// fix (the capacity ones come with HTTP 500, which the SDK would retry):
// Launch moves to the next zone instead.
var notRetried = map[string]bool{
	"InsufficientInstanceCapacity": true,
	"InsufficientHostCapacity":     true,
	"Unsupported":                  true,
	// A cluster placement group that another launch has just put in
	// another zone: the next zone may be that one.
	"InvalidPlacementGroup.InUse": true,
}

// New builds a Client from cfg.
func New(ctx context.Context, cfg Config) (*Client, error) {
	maxAttempts := cfg.MaxAttempts
	if maxAttempts == 0 {
		maxAttempts = 8
	}
	maxBackoff := cfg.MaxBackoff
	if maxBackoff == 0 {
		maxBackoff = 20 * time.Second
	}
	retryer := func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = maxAttempts
			o.MaxBackoff = maxBackoff
			o.Backoff = retry.NewExponentialJitterBackoff(maxBackoff)
			// The client-side retry budget would stop retrying a long
			// throttling spell; the attempt cap is the bound instead.
			o.RateLimiter = ratelimit.None
			o.Retryables = append([]retry.IsErrorRetryable{retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
				var ae smithy.APIError
				if errors.As(err, &ae) && notRetried[ae.ErrorCode()] {
					return aws.FalseTernary
				}
				return aws.UnknownTernary
			})}, o.Retryables...)
		})
	}
	opts := []func(*config.LoadOptions) error{config.WithRetryer(retryer)}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(cfg.Profile))
	}
	if len(cfg.SharedConfigFiles) > 0 {
		opts = append(opts, config.WithSharedConfigFiles(cfg.SharedConfigFiles))
	}
	if len(cfg.SharedCredentialsFiles) > 0 {
		opts = append(opts, config.WithSharedCredentialsFiles(cfg.SharedCredentialsFiles))
	}
	if cfg.AccessKeyID != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load aws config: %w", err)
	}
	if awsCfg.Region == "" {
		return nil, fmt.Errorf("no aws region: set region or AWS_REGION")
	}
	stsOpts := func(o *sts.Options) {
		if cfg.STSEndpoint != "" {
			o.BaseEndpoint = aws.String(cfg.STSEndpoint)
		}
	}
	if cfg.AssumeRole != nil {
		if err := assumeRole(ctx, &awsCfg, *cfg.AssumeRole, stsOpts); err != nil {
			return nil, err
		}
	}
	cl := &Client{
		sts: sts.NewFromConfig(awsCfg, stsOpts),
		ec2: ec2.NewFromConfig(awsCfg, func(o *ec2.Options) {
			if cfg.Endpoint != "" {
				o.BaseEndpoint = aws.String(cfg.Endpoint)
			}
		}),
		quotas: servicequotas.NewFromConfig(awsCfg, func(o *servicequotas.Options) {
			if cfg.ServiceQuotasEndpoint != "" {
				o.BaseEndpoint = aws.String(cfg.ServiceQuotasEndpoint)
			}
			// The quota check is advice (quotaTimeout): a second try
			// is enough before the create goes on without it.
			o.RetryMaxAttempts = min(maxAttempts, 2)
		}),
		region: awsCfg.Region,
		poll:   cfg.PollInterval, notFoundGrace: cfg.NotFoundGrace, now: cfg.Now,
	}
	if cl.poll == 0 {
		cl.poll = 15 * time.Second
	}
	if cl.notFoundGrace == 0 {
		cl.notFoundGrace = 2 * time.Minute
	}
	if cl.now == nil {
		cl.now = time.Now
	}
	return cl, nil
}

// Region is the region the client talks to: Config.Region, else the
// one the SDK's configuration chain found (AWS_REGION, the profile).
func (c *Client) Region() string { return c.region }

// errorCode returns the EC2 error code of err ("" if it has none).
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
