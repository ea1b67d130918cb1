package ec2sim_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/servicequotas"
	sqtypes "github.com/aws/aws-sdk-go-v2/service/servicequotas/types"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

// quotasClient is a real Service Quotas client pointed at sim.
func quotasClient(sim *ec2sim.Server) *servicequotas.Client {
	return servicequotas.New(servicequotas.Options{
		Region:       sim.Region(),
		BaseEndpoint: aws.String(sim.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDSIMTEST", "sim-secret", ""),
		Retryer:      retry.AddWithMaxAttempts(retry.NewStandard(), 1),
	})
}

// TestGetServiceQuota: Service Quotas at the server's URL answers EC2's
// standard vCPU quota with Options.VCPUQuota, in the shape the SDK reads,
// and an unknown quota or service with NoSuchResourceException.
func TestGetServiceQuota(t *testing.T) {
	sim := ec2sim.New(t, ec2sim.Options{VCPUQuota: 64})
	sq := quotasClient(sim)
	ctx := context.Background()
	out, err := sq.GetServiceQuota(ctx, &servicequotas.GetServiceQuotaInput{ServiceCode: aws.String("ec2"), QuotaCode: aws.String("L-1216C47A")})
	if err != nil {
		t.Fatalf("GetServiceQuota(ec2, L-1216C47A): %v", err)
	}
	q := out.Quota
	if got, want := aws.ToString(q.QuotaName), "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances"; got != want {
		t.Errorf("QuotaName = %q, want %q", got, want)
	}
	if aws.ToFloat64(q.Value) != 64 || aws.ToString(q.QuotaCode) != "L-1216C47A" || aws.ToString(q.ServiceCode) != "ec2" ||
		!q.Adjustable || aws.ToString(q.Unit) != "None" {
		t.Errorf("quota = value %v, code %s, service %s, adjustable %v, unit %s; want 64, L-1216C47A, ec2, true, None",
			aws.ToFloat64(q.Value), aws.ToString(q.QuotaCode), aws.ToString(q.ServiceCode), q.Adjustable, aws.ToString(q.Unit))
	}
	if got, want := aws.ToString(q.QuotaArn), "arn:aws:servicequotas:us-east-2:123456789012:ec2/L-1216C47A"; got != want {
		t.Errorf("QuotaArn = %q, want %q", got, want)
	}
	if q.UsageMetric == nil || q.UsageMetric.MetricDimensions["Class"] != "Standard/OnDemand" {
		t.Errorf("UsageMetric = %+v, want class Standard/OnDemand", q.UsageMetric)
	}
	if got := sim.Calls("GetServiceQuota"); got != 1 {
		t.Errorf("GetServiceQuota calls = %d, want 1", got)
	}
	for _, tc := range []struct{ service, quota, msg string }{
		{"ec2", "L-00000000", "The request failed because the specified quota and service do not exist."},
		{"EC2", "L-1216C47A", "The request failed because the specified service does not exist."},
	} {
		_, err := sq.GetServiceQuota(ctx, &servicequotas.GetServiceQuotaInput{ServiceCode: aws.String(tc.service), QuotaCode: aws.String(tc.quota)})
		var nr *sqtypes.NoSuchResourceException
		if !errors.As(err, &nr) || nr.ErrorMessage() != tc.msg || status(err) != 400 {
			t.Errorf("GetServiceQuota(%s, %s) = %v (HTTP %d), want 400 NoSuchResourceException %q", tc.service, tc.quota, err, status(err), tc.msg)
		}
	}
}

// TestGetServiceQuotaDenied: Deny("GetServiceQuota") answers 400
// AccessDeniedException with IAM's text, as Service Quotas does.
func TestGetServiceQuotaDenied(t *testing.T) {
	sim := ec2sim.New(t, ec2sim.Options{})
	sim.Deny("GetServiceQuota")
	_, err := quotasClient(sim).GetServiceQuota(context.Background(),
		&servicequotas.GetServiceQuotaInput{ServiceCode: aws.String("ec2"), QuotaCode: aws.String("L-1216C47A")})
	var ad *sqtypes.AccessDeniedException
	want := "User: arn:aws:iam::123456789012:user/pgbench is not authorized to perform: servicequotas:GetServiceQuota on resource: " +
		"arn:aws:servicequotas:us-east-2:123456789012:ec2/L-1216C47A because no identity-based policy allows the servicequotas:GetServiceQuota action"
	if !errors.As(err, &ad) || ad.ErrorMessage() != want || status(err) != 400 {
		t.Errorf("denied GetServiceQuota = %v (HTTP %d), want 400 AccessDeniedException %q", err, status(err), want)
	}
}
