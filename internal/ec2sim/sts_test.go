package ec2sim_test

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

const role = "arn:aws:iam::123456789012:role/ci/bench"

// stsClient is a plain SDK STS client pointed at sim, signing with akid.
func stsClient(sim *ec2sim.Server, akid, secret, token string) *sts.Client {
	return sts.New(sts.Options{
		Region:       sim.Region(),
		BaseEndpoint: aws.String(sim.URL),
		Credentials:  credentials.NewStaticCredentialsProvider(akid, secret, token),
		Retryer:      retry.AddWithMaxAttempts(retry.NewStandard(), 1),
	})
}

// ec2With is a plain SDK EC2 client pointed at sim with given credentials.
func ec2With(sim *ec2sim.Server, akid, secret, token string) *ec2.Client {
	return ec2.New(ec2.Options{
		Region:       sim.Region(),
		BaseEndpoint: aws.String(sim.URL),
		Credentials:  credentials.NewStaticCredentialsProvider(akid, secret, token),
		Retryer:      retry.AddWithMaxAttempts(retry.NewStandard(), 1),
	})
}

// TestAssumeRoleCredentials: AssumeRole answers as STS does, and EC2
// accepts the temporary credentials it issued only with their session
// token; the server records which key signed each call.
func TestAssumeRoleCredentials(t *testing.T) {
	sim := ec2sim.New(t, ec2sim.Options{})
	sim.AddUser("AKIDBASEUSER", "alice")
	ctx := context.Background()
	base := stsClient(sim, "AKIDBASEUSER", "base-secret", "")

	id, err := base.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		t.Fatalf("GetCallerIdentity: %v", err)
	}
	if got, want := aws.ToString(id.Arn), "arn:aws:iam::123456789012:user/alice"; got != want {
		t.Errorf("caller arn = %q, want %q", got, want)
	}
	if got, want := aws.ToString(id.Account), "123456789012"; got != want {
		t.Errorf("caller account = %q, want %q", got, want)
	}
	if got := aws.ToString(id.UserId); !strings.HasPrefix(got, "AIDA") {
		t.Errorf("caller user id = %q, want an AIDA id", got)
	}

	before := time.Now()
	out, err := base.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String(role), RoleSessionName: aws.String("run-42"),
		ExternalId: aws.String("ext-7"), DurationSeconds: aws.Int32(900)})
	if err != nil {
		t.Fatalf("AssumeRole: %v", err)
	}
	c := out.Credentials
	if c == nil || !strings.HasPrefix(aws.ToString(c.AccessKeyId), "ASIA") || aws.ToString(c.SecretAccessKey) == "" || aws.ToString(c.SessionToken) == "" {
		t.Fatalf("credentials = %+v, want an ASIA key with a secret and a session token", c)
	}
	if exp := aws.ToTime(c.Expiration); exp.Before(before.Add(14*time.Minute)) || exp.After(before.Add(16*time.Minute)) {
		t.Errorf("expiration = %v, want 15 minutes from %v", exp, before)
	}
	if got, want := aws.ToString(out.AssumedRoleUser.Arn), "arn:aws:sts::123456789012:assumed-role/bench/run-42"; got != want {
		t.Errorf("assumed role arn = %q, want %q", got, want)
	}
	if got := aws.ToString(out.AssumedRoleUser.AssumedRoleId); !strings.HasPrefix(got, "AROA") || !strings.HasSuffix(got, ":run-42") {
		t.Errorf("assumed role id = %q, want AROA...:run-42", got)
	}
	want := ec2sim.AssumeRoleCall{RoleARN: role, RoleSessionName: "run-42", ExternalID: "ext-7", DurationSeconds: 900, AccessKeyID: "AKIDBASEUSER"}
	if got := sim.AssumeRoleCalls(); len(got) != 1 || got[0] != want {
		t.Errorf("AssumeRole calls = %+v, want [%+v]", got, want)
	}

	akid, secret, token := aws.ToString(c.AccessKeyId), aws.ToString(c.SecretAccessKey), aws.ToString(c.SessionToken)
	if _, err := ec2With(sim, akid, secret, token).DescribeInstances(ctx, &ec2.DescribeInstancesInput{}); err != nil {
		t.Fatalf("DescribeInstances with the role's credentials: %v", err)
	}
	if _, err := ec2With(sim, akid, secret, "").DescribeInstances(ctx, &ec2.DescribeInstancesInput{}); code(err) != "AuthFailure" {
		t.Errorf("DescribeInstances without the session token = %v, want AuthFailure", err)
	}
	if got, want := sim.AccessKeys("DescribeInstances"), []string{akid, akid}; !slices.Equal(got, want) {
		t.Errorf("DescribeInstances signed by %v, want %v", got, want)
	}
	role, err := stsClient(sim, akid, secret, token).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		t.Fatalf("GetCallerIdentity as the role: %v", err)
	}
	if got, want := aws.ToString(role.Arn), aws.ToString(out.AssumedRoleUser.Arn); got != want {
		t.Errorf("caller arn as the role = %q, want %q", got, want)
	}
}

// TestSTSErrors: refusals come in STS's error shape, with its codes,
// statuses and messages.
func TestSTSErrors(t *testing.T) {
	sim := ec2sim.New(t, ec2sim.Options{})
	ctx := context.Background()
	c := stsClient(sim, "AKIDSTSERR", "s", "")
	assume := func(arn string, seconds int32) error {
		in := &sts.AssumeRoleInput{RoleArn: aws.String(arn), RoleSessionName: aws.String("s1")}
		if seconds != 0 {
			in.DurationSeconds = aws.Int32(seconds)
		}
		_, err := c.AssumeRole(ctx, in)
		return err
	}
	sim.RefuseRole(role)
	for _, tc := range []struct {
		name    string
		err     error
		code    string
		status  int
		message string
	}{
		{"refused role", assume(role, 0), "AccessDenied", 403,
			"User: arn:aws:iam::123456789012:user/ec2sim-user is not authorized to perform: sts:AssumeRole on resource: " + role},
		{"other account", assume("arn:aws:iam::210987654321:role/x", 0), "AccessDenied", 403, "is not authorized to perform: sts:AssumeRole"},
		{"too long", assume("arn:aws:iam::123456789012:role/ok", 7200), "ValidationError", 400,
			"The requested DurationSeconds exceeds the MaxSessionDuration set for this role."},
		{"too short", assume("arn:aws:iam::123456789012:role/ok", 600), "ValidationError", 400, "greater than or equal to 900"},
		{"wrong token", func() error {
			_, err := stsClient(sim, "AKIDSTSERR", "s", "not-a-token").GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
			if err != nil {
				return err
			}
			// A long-term key with a token passes; a temporary key
			// with the wrong token must not.
			out, err := c.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String("arn:aws:iam::123456789012:role/ok"), RoleSessionName: aws.String("s2")})
			if err != nil {
				return err
			}
			_, err = stsClient(sim, aws.ToString(out.Credentials.AccessKeyId), "x", "not-a-token").GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
			return err
		}(), "InvalidClientTokenId", 403, "The security token included in the request is invalid."},
		{"disabled", func() error {
			sim.DisableSTS(true)
			defer sim.DisableSTS(false)
			_, err := c.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
			return err
		}(), "RegionDisabledException", 403, "STS is not activated in this region for account:123456789012."},
	} {
		var ae smithy.APIError
		var re *awshttp.ResponseError
		if !errors.As(tc.err, &ae) || !errors.As(tc.err, &re) {
			t.Errorf("%s: error = %v, want an API error", tc.name, tc.err)
			continue
		}
		if ae.ErrorCode() != tc.code || re.HTTPStatusCode() != tc.status || !strings.Contains(ae.ErrorMessage(), tc.message) {
			t.Errorf("%s: error = %s %d %q, want %s %d containing %q", tc.name, ae.ErrorCode(), re.HTTPStatusCode(), ae.ErrorMessage(), tc.code, tc.status, tc.message)
		}
		if re.ServiceRequestID() == "" {
			t.Errorf("%s: no request id reached the SDK", tc.name)
		}
	}

	// An unsigned STS request gets STS's error document.
	resp, err := http.PostForm(sim.URL, url.Values{"Action": {"GetCallerIdentity"}, "Version": {"2011-06-15"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var doc struct {
		XMLName   xml.Name `xml:"ErrorResponse"`
		Type      string   `xml:"Error>Type"`
		Code      string   `xml:"Error>Code"`
		Message   string   `xml:"Error>Message"`
		RequestID string   `xml:"RequestId"`
	}
	if err := xml.Unmarshal(body, &doc); err != nil {
		t.Fatalf("error body is not STS's error XML: %v\n%s", err, body)
	}
	if resp.StatusCode != 403 || doc.Type != "Sender" || doc.Code != "MissingAuthenticationToken" || doc.Message == "" || doc.RequestID == "" {
		t.Errorf("unsigned STS request: %d %+v, want 403 Sender MissingAuthenticationToken with a message and a RequestId", resp.StatusCode, doc)
	}
}
