package ec2sim_test

// Test helpers that more than one test file uses.

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"

	"github.com/pgbench-tf/terraform-provider-pgbench/internal/ec2sim"
)

const image = "ami-0a9b8c7d6e5f40312"

// client is a plain SDK client (no ec2host) pointed at sim, retries off so
// each call is one request.
func client(t *testing.T, sim *ec2sim.Server) *ec2.Client {
	t.Helper()
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	return ec2.New(ec2.Options{
		Region:       sim.Region(),
		BaseEndpoint: aws.String(sim.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDSIMTEST", "sim-secret", ""),
		Retryer:      retry.AddWithMaxAttempts(retry.NewStandard(), 1),
	})
}

func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// status is the HTTP status of an SDK error (0 for none).
func status(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// run is a valid one-instance RunInstances request; edit changes it.
func run(edit func(*ec2.RunInstancesInput)) *ec2.RunInstancesInput {
	in := &ec2.RunInstancesInput{ImageId: aws.String(image), InstanceType: "m7i.2xlarge",
		MinCount: aws.Int32(1), MaxCount: aws.Int32(1), DryRun: aws.Bool(true)}
	if edit != nil {
		edit(in)
	}
	return in
}
