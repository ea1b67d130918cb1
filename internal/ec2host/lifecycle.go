package ec2host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/remote"
)

// describe returns the instance as EC2 reports it, terminated included;
// nil when EC2 no longer knows the id.
func (c *Client) describe(ctx context.Context, id string) (*Instance, error) {
	out, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		if errorCode(err) == "InvalidInstanceID.NotFound" {
			return nil, nil
		}
		return nil, fmt.Errorf("describe instance %s: %w", id, err)
	}
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			if aws.ToString(i.InstanceId) == id {
				return fromSDK(i), nil
			}
		}
	}
	return nil, nil
}

// Describe returns the instance, or nil when it is terminated or unknown
// (Read drops such an instance from state).
func (c *Client) Describe(ctx context.Context, id string) (*Instance, error) {
	in, err := c.describe(ctx, id)
	if err != nil || in == nil || in.State == string(types.InstanceStateNameTerminated) {
		return nil, err
	}
	return in, nil
}

// WaitRunning polls until the instance is running and returns it. An
// instance that heads for shutdown instead is an error naming its state
// and EC2's reason; ctx bounds the wait.
func (c *Client) WaitRunning(ctx context.Context, id string) (*Instance, error) {
	start := time.Now()
	last := "unknown"
	for {
		in, err := c.describe(ctx, id)
		switch {
		case err != nil && ctx.Err() == nil:
			return nil, fmt.Errorf("wait for %s to run: %w", id, err)
		case err != nil:
		case in == nil && time.Since(start) > c.notFoundGrace:
			return nil, fmt.Errorf("wait for %s to run: the instance does not exist", id)
		case in == nil:
			// EC2 is eventually consistent: a new id can be unknown to
			// DescribeInstances for a little while.
			last = "not yet visible"
		case in.State == "running":
			return in, nil
		case in.State != "pending":
			reason := ""
			if in.StateReason != "" {
				reason = " (" + in.StateReason + ")"
			}
			return nil, fmt.Errorf("wait for %s to run: instance is %s%s", id, in.State, reason)
		default:
			last = in.State
		}
		if err := sleep(ctx, c.poll); err != nil {
			return nil, fmt.Errorf("wait for %s to run: still %s after %s: %w", id, last, roundWait(time.Since(start)), err)
		}
	}
}

// SSHOptions say how to log in to a new instance.
type SSHOptions struct {
	User       string // the image's login user (DefaultLoginUser), or root
	Port       int    // default 22
	PrivateKey []byte
	// HostKeys are the fingerprints the instance's console printed
	// (HostKeysFromConsole); the dial accepts only a key among them.
	HostKeys []string
	// TrustOnFirstUse, with no HostKeys, accepts whatever key answers at
	// the address: nothing vouches for it, so a man in the middle would be
	// pinned as readily as the instance.
	TrustOnFirstUse bool
	// UsePrivateIP dials the private address even if there is a public one.
	UsePrivateIP bool
	// Within is how long to keep retrying refused connections (metal
	// boots take 20+ minutes); zero lets ctx bound it.
	Within time.Duration
	// Bastion is an optional jump host.
	Bastion *remote.SSHConfig
}

// WaitSSH dials the instance until sshd accepts the key, checks that the
// login is a shell with root rights (stock images answer root with
// cloud-init's "Please login as the user ..." and exit 142; a non-root
// user needs passwordless sudo) and returns the connection. A host key
// outside HostKeys is a *remote.HostKeyError saying what the console
// showed and what the server presented.
func (c *Client) WaitSSH(ctx context.Context, in *Instance, o SSHOptions) (*remote.SSHExecutor, error) {
	addr := in.Address()
	if o.UsePrivateIP {
		addr = in.PrivateIP
	}
	if addr == "" {
		return nil, fmt.Errorf("ssh to %s: the instance has no address", in.ID)
	}
	cfg := remote.SSHConfig{
		Host: addr, Port: o.Port, User: o.User, PrivateKey: o.PrivateKey,
		HostKeys: o.HostKeys, TrustOnFirstUse: o.TrustOnFirstUse && len(o.HostKeys) == 0,
		ReachableWithin: o.Within, Bastion: o.Bastion,
	}
	if len(o.HostKeys) > 0 {
		cfg.HostKeySource = "the console of instance " + in.ID
	}
	if cfg.ReachableWithin == 0 {
		if dl, ok := ctx.Deadline(); ok {
			cfg.ReachableWithin = time.Until(dl)
		}
	}
	ex, err := remote.DialSSH(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("ssh to instance %s at %s: %w", in.ID, addr, err)
	}
	if err := checkLogin(ctx, ex, in.ID, cfg.User); err != nil {
		ex.Close()
		return nil, err
	}
	return ex, nil
}

// Terminate terminates the instance and waits until EC2 reports it
// terminated (ctx bounds the wait). An instance already gone is success.
func (c *Client) Terminate(ctx context.Context, id string) error {
	_, err := c.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		if errorCode(err) == "InvalidInstanceID.NotFound" {
			return nil
		}
		return fmt.Errorf("terminate %s: %w", id, err)
	}
	return c.WaitTerminated(ctx, id)
}

// WaitTerminated polls until the instance is terminated or unknown.
func (c *Client) WaitTerminated(ctx context.Context, id string) error {
	start := time.Now()
	last := "unknown"
	for {
		in, err := c.describe(ctx, id)
		switch {
		case err != nil && ctx.Err() == nil:
			return fmt.Errorf("wait for %s to terminate: %w", id, err)
		case err != nil:
		case in == nil || in.State == "terminated":
			return nil
		default:
			last = in.State
		}
		if err := sleep(ctx, c.poll); err != nil {
			return fmt.Errorf("wait for %s to terminate: still %s after %s (termination was requested; waiting again resumes): %w", id, last, roundWait(time.Since(start)), err)
		}
	}
}

// Sweep terminates every managed-by=pgbench instance whose expires-at tag
// is before now (orphans of lost state files; the dead-man switch should
// already have stopped them, this catches instances whose user data did
// not run). It does not wait for terminated and returns the ids it
// terminated.
func (c *Client) Sweep(ctx context.Context, now time.Time) ([]string, error) {
	p := ec2.NewDescribeInstancesPaginator(c.ec2, &ec2.DescribeInstancesInput{Filters: []types.Filter{
		{Name: aws.String("tag:" + TagManagedBy), Values: []string{ManagedByValue}},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running", "stopping", "stopped"}},
	}})
	var expired []string
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("sweep: list managed instances: %w", err)
		}
		for _, r := range out.Reservations {
			for _, i := range r.Instances {
				in := fromSDK(i)
				// An instance without a readable expiry is left alone:
				// sweeping must never kill what it cannot prove expired.
				if !in.ExpiresAt.IsZero() && in.ExpiresAt.Before(now) {
					expired = append(expired, in.ID)
				}
			}
		}
	}
	if len(expired) == 0 {
		return nil, nil
	}
	if _, err := c.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: expired}); err != nil {
		return nil, fmt.Errorf("sweep: terminate %v: %w", expired, err)
	}
	return expired, nil
}

// ErrNoImage is wrapped by errors for an image id or name filter the
// region has no available image for.
var ErrNoImage = errors.New("no image matches")

// roundWait rounds a waited duration for messages.
func roundWait(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}
